"""rl.modules: MLP/ConvNet/dueling nets against torch with the same weights, the actors'
keys and specs, QValueModule, and the exploration modules (schedules, masks, the OU
recursion written out in numpy)."""
import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.rl import TensorDict
from ember.rl.envs import Bounded, Categorical, OneHot
from ember.rl.modules import (MLP, Actor, AdditiveGaussianModule, ConvNet, DuelingMlpDQNet,
                              EGreedyModule, ExplorationType, NormalParamExtractor,
                              OrnsteinUhlenbeckProcessModule, ProbabilisticActor, QValueActor,
                              QValueModule, TanhNormal, TensorDictModule, ValueOperator,
                              set_exploration_type)


def to_torch(module, tmod):
    """Load ember ``module``'s state dict into the torch module ``tmod`` (same keys)."""
    sd = {k: torch.tensor(v.detach().numpy().copy()) for k, v in module.state_dict().items()}
    tmod.load_state_dict(sd)
    return tmod


# --------------------------------------------------------------------------- networks
def test_mlp_matches_torch_and_keys():
    ember.manual_seed(0)
    net = MLP(in_features=5, out_features=3, num_cells=[16, 8], activation_class=nn.ReLU)
    assert list(net.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
                                      "4.bias"]
    ref = to_torch(net, torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(),
                                            torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                            torch.nn.Linear(8, 3)))
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    np.testing.assert_allclose(net(ember.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # defaults: three hidden layers of 32 with tanh; depth + int num_cells
    assert MLP(in_features=2, out_features=1).num_cells == [32, 32, 32]
    assert MLP(in_features=2, out_features=1, depth=2, num_cells=4).num_cells == [4, 4]
    with pytest.raises(ValueError, match="out_features"):
        MLP(in_features=2)
    with pytest.raises(ValueError, match="depth=3"):
        MLP(in_features=2, out_features=1, depth=3, num_cells=[4, 4])


def test_mlp_lazy_shape_and_options():
    net = MLP(out_features=(2, 3), depth=1, num_cells=8, activate_last_layer=True,
              activation_class=nn.ReLU, dropout=0.5)
    y = net(ember.randn(4, 6))
    assert y.shape == (4, 2, 3) and float(y.min().item()) >= 0
    assert net[0].weight.shape == (8, 6)
    net.eval()
    y2 = MLP(in_features=3, out_features=2, num_cells=[4], norm_class=nn.LayerNorm,
             norm_kwargs={"normalized_shape": 4})(ember.randn(5, 3))
    assert y2.shape == (5, 2)
    # several inputs are concatenated (a Q-network on observation and action)
    assert MLP(in_features=5, out_features=1, num_cells=[4])(ember.randn(3, 4),
                                                             ember.randn(3, 1)).shape == (3, 1)


def test_convnet_matches_torch():
    ember.manual_seed(1)
    net = ConvNet(in_features=3, num_cells=[4, 6], kernel_sizes=[3, 2], strides=[1, 2],
                  paddings=[1, 0], activation_class=nn.ReLU)
    ref = to_torch(net, torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, 1, 1), torch.nn.ReLU(),
                                            torch.nn.Conv2d(4, 6, 2, 2, 0), torch.nn.ReLU()))
    x = np.random.default_rng(1).standard_normal((2, 5, 3, 8, 8)).astype(np.float32)
    got = net(ember.tensor(x)).detach().numpy()
    want = ref(torch.tensor(x.reshape(10, 3, 8, 8))).reshape(2, 5, -1).detach().numpy()
    assert got.shape == (2, 5, 6 * 4 * 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="kernel_sizes"):
        ConvNet(in_features=3, num_cells=[4, 6], kernel_sizes=[3])


def test_dueling_head():
    ember.manual_seed(2)
    net = DuelingMlpDQNet(3, mlp_kwargs_feature={"in_features": 4, "num_cells": [8],
                                                 "out_features": 8},
                          mlp_kwargs_output={"num_cells": [8]})
    x = ember.randn(5, 4)
    h = net.features(x)
    a, v = net.advantage(h).detach().numpy(), net.value(h).detach().numpy()
    np.testing.assert_allclose(net(x).detach().numpy(), v + a - a.mean(-1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- actors
def test_actor_value_operator_keys_and_safe():
    spec = Bounded(-1.0, 1.0, (2,))
    actor = Actor(nn.Linear(3, 2), spec=spec, safe=True)
    assert actor.in_keys == ["observation"] and actor.out_keys == ["action"]
    with ember.no_grad():
        actor.module.weight.fill_(10.0)
    td = actor(TensorDict({"observation": ember.ones(4, 3)}, [4]))
    assert float(td["action"].abs().max().item()) <= 1.0
    assert ValueOperator(nn.Linear(3, 1)).out_keys == ["state_value"]
    q = ValueOperator(MLP(in_features=5, out_features=1, num_cells=[4]),
                      in_keys=["observation", "action"])
    assert q.out_keys == ["state_action_value"]
    td = q(TensorDict({"observation": ember.randn(4, 3), "action": ember.randn(4, 2)}, [4]))
    assert td["state_action_value"].shape == (4, 1)
    with pytest.raises(ValueError, match="spec"):
        Actor(nn.Linear(3, 2), safe=True)


def test_probabilistic_actor_tanh_normal_uses_spec_bounds():
    spec = Bounded(-2.0, 2.0, (1,))
    actor = ProbabilisticActor(
        TensorDictModule(nn.Sequential(nn.Linear(3, 2), NormalParamExtractor()),
                         ["observation"], ["loc", "scale"]),
        ["loc", "scale"], spec=spec, distribution_class=TanhNormal, return_log_prob=True)
    td = TensorDict({"observation": ember.randn(64, 3) * 10}, [64])
    with set_exploration_type(ExplorationType.RANDOM):
        a = actor(td)["action"]
    assert a.shape == (64, 1) and float(a.abs().max().item()) < 2.0
    assert float(a.abs().max().item()) > 1.0          # the bounds are 2, not tanh's 1
    assert td["action_log_prob"].shape == (64,)
    det = actor(td.clone())["action"]
    loc = td["loc"].detach().numpy()
    np.testing.assert_allclose(det.detach().numpy(), 2.0 * np.tanh(loc), rtol=1e-5, atol=1e-6)


def test_qvalue_module_spaces_and_mask():
    vals = ember.tensor([[0.1, 0.5, 0.2], [0.9, -1.0, 0.3]])
    td = QValueModule(spec=Categorical(3))(TensorDict({"action_value": vals}, [2]))
    assert td["action"].tolist() == [1, 0]
    np.testing.assert_allclose(td["chosen_action_value"].numpy(), [[0.5], [0.9]])
    td = QValueModule(action_space="one_hot")(TensorDict({"action_value": vals}, [2]))
    assert td["action"].tolist() == [[0, 1, 0], [1, 0, 0]]
    assert QValueModule(spec=OneHot(3)).action_space == "one_hot"
    mask = ember.tensor([[True, False, True], [False, True, True]])
    td = QValueModule(action_space="categorical", action_mask_key="mask")(
        TensorDict({"action_value": vals, "mask": mask}, [2]))
    assert td["action"].tolist() == [2, 2]
    with pytest.raises(ValueError, match="action_space"):
        QValueModule(action_space="continuous")
    actor = QValueActor(nn.Linear(4, 3), spec=Categorical(3))
    td = actor(TensorDict({"observation": ember.randn(6, 4)}, [6]))
    q = td["action_value"].detach().numpy()
    assert td["action"].tolist() == q.argmax(-1).tolist()


# --------------------------------------------------------------------------- exploration
def test_egreedy_schedule_randomness_and_modes():
    ember.manual_seed(0)
    spec = Categorical(4)
    eg = EGreedyModule(spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=100)
    eg.step(50)
    assert abs(eg.eps.item() - 0.55) < 1e-6
    eg.step(1000)
    assert abs(eg.eps.item() - 0.1) < 1e-6            # floored at eps_end
    n = 4000
    td = TensorDict({"action": ember.zeros(n, dtype=ember.int64)}, [n])
    eg.eps.fill_(0.5)
    a = eg(td.clone())["action"].numpy()
    # an action changes with probability eps * 3/4 (a random pick can be the greedy one)
    assert abs((a != 0).mean() - 0.375) < 0.04
    assert set(np.unique(a)) <= {0, 1, 2, 3}
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        assert (eg(td.clone())["action"].numpy() == 0).all()
    eg.eps.fill_(1.0)
    mask = ember.tensor(np.tile([False, True, False, True], (n, 1)))
    eg_m = EGreedyModule(spec, eps_init=1.0, action_mask_key="mask")
    a = eg_m(TensorDict({"action": ember.zeros(n, dtype=ember.int64), "mask": mask}, [n]))
    assert set(np.unique(a["action"].numpy())) == {1, 3}
    with pytest.raises(KeyError, match="after the policy"):
        eg(TensorDict({"observation": ember.zeros(2, 3)}, [2]))


def test_additive_gaussian():
    spec = Bounded(-1.0, 1.0, (2,))
    m = AdditiveGaussianModule(spec, sigma_init=0.5, sigma_end=0.1, annealing_num_steps=10)
    ember.manual_seed(0)
    td = TensorDict({"action": ember.zeros(5000, 2)}, [5000])
    a = m(td)["action"].numpy()
    assert abs(a.std() - 0.5) < 0.03 and np.abs(a).max() <= 1.0
    m.step(10)
    assert abs(m.sigma.item() - 0.1) < 1e-6


def test_ornstein_uhlenbeck_recursion():
    spec = Bounded(-10.0, 10.0, (2,))
    kw = dict(theta=0.15, mu=0.1, sigma=0.3, dt=0.05, sigma_min=0.1, n_steps_annealing=4)
    ou = OrnsteinUhlenbeckProcessModule(spec, eps_init=1.0, **kw)
    ember.manual_seed(3)
    got = []
    for _ in range(6):
        got.append(ou(TensorDict({"action": ember.zeros(3, 2)}, [3]))["action"].numpy())
    ember.manual_seed(3)
    x = np.zeros((3, 2))
    for n in range(6):
        sigma = max(0.1, 0.3 - (0.3 - 0.1) / 4 * n)
        eps = ember.randn(3, 2, dtype=ember.float64).numpy()
        x = x + 0.15 * (0.1 - x) * 0.05 + sigma * np.sqrt(0.05) * eps
        np.testing.assert_allclose(got[n], x.astype(np.float32), rtol=1e-5, atol=1e-6)
    # is_init restarts the process where it is set
    ou2 = OrnsteinUhlenbeckProcessModule(spec, is_init_key="is_init", **kw)
    td = TensorDict({"action": ember.zeros(2, 2), "is_init": ember.tensor([[True], [True]])},
                    [2])
    ou2(td.clone())
    td.set("is_init", ember.tensor([[True], [False]]))
    out = ou2(td)
    assert out["_ou_steps"].tolist() == [1, 2]
