"""TensorDictModule, TensorDictSequential, ProbabilisticTensorDictModule(/Sequential),
NormalParamExtractor, Delta and TanhNormal (against torch.distributions)."""
import math

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.distributions import Categorical, Normal
from ember.rl import TensorDict
from ember.rl.modules import (Delta, InteractionType, NormalParamExtractor,
                              ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential,
                              TanhNormal, TensorDictModule, TensorDictSequential,
                              set_interaction_type)
from ember.rl.tensordict.nn import interaction_type, mappings


def obs_td(b=5, n=3):
    return TensorDict({"obs": ember.randn(b, n)}, [b])


# ----------------------------------------------------------------------------- TensorDictModule
def test_module_reads_and_writes_keys():
    lin = nn.Linear(3, 2)
    m = TensorDictModule(lin, in_keys=["obs"], out_keys=["action"])
    td = obs_td()
    out = m(td)
    assert out is td and np.allclose(td["action"].detach().numpy(),
                                     lin(td["obs"]).detach().numpy())
    assert list(m.state_dict()) == ["module.weight", "module.bias"]
    assert [p.shape for p in m.parameters()] == [(2, 3), (2,)]
    m(td)["action"].sum().backward()
    assert lin.weight.grad is not None
    assert repr(m).startswith("TensorDictModule(\n    module=Linear(")
    assert "in_keys=['obs']" in repr(m)


def test_module_nested_keys_multiple_outputs_and_drop():
    m = TensorDictModule(lambda a, b: (a + b, a - b, a * b), in_keys=[("x", "a"), "b"],
                         out_keys=[("y", "sum"), "_", "prod"])
    assert m.in_keys == [("x", "a"), "b"] and m.out_keys == [("y", "sum"), "_", "prod"]
    td = TensorDict({"x": {"a": ember.full((2,), 3.0)}, "b": ember.full((2,), 2.0)}, [2])
    m(td)
    assert td["y", "sum"].tolist() == [5, 5] and td["prod"].tolist() == [6, 6]
    assert "_" not in td
    with pytest.raises(RuntimeError, match="3 outputs for 2 out_keys"):
        TensorDictModule(lambda a, b: (a, b, a), ["x", "b"], ["p", "q"])(
            TensorDict({"x": ember.ones(1), "b": ember.ones(1)}, [1]))


def test_module_dict_in_keys_both_directions():
    td = TensorDict({"obs": ember.full((2,), 5.0), "goal": ember.full((2,), 1.0)}, [2])
    m = TensorDictModule(lambda x, g: x - g, in_keys={"x": "obs", "g": "goal"}, out_keys="d")
    assert m.in_keys == ["obs", "goal"] and m(td)["d"].tolist() == [4, 4]
    m2 = TensorDictModule(lambda x, g: x - g, in_keys={"obs": "g", "goal": "x"}, out_keys="e",
                          out_to_in_map=False)
    assert m2(td)["e"].tolist() == [-4, -4]


def test_module_inplace_modes_and_strict():
    td = obs_td(4)
    m = TensorDictModule(lambda o: o * 2, ["obs"], ["o2"], inplace=False)
    out = m(td)
    assert out is not td and list(out.keys()) == ["o2"] and out.batch_size == () and "o2" not in td
    e = TensorDictModule(lambda o: o * 2, ["obs"], ["o2"], inplace="empty")(td)
    assert e.batch_size == (4,) and list(e.keys()) == ["o2"]
    given = TensorDict({}, [4])
    assert m(td, tensordict_out=given) is given and "o2" in given
    with pytest.raises(KeyError, match="'missing'"):
        TensorDictModule(lambda o: o, ["missing"], ["y"], strict=True)(td)
    seen = []
    TensorDictModule(lambda o: seen.append(o) or ember.zeros(4), ["missing"], ["y"])(td)
    assert seen == [None]


def test_module_called_with_tensors():
    m = TensorDictModule(lambda a, b: (a + b, a * b), [("in", "a"), "b"], ["s", "p"])
    s, p = m(ember.ones(2), ember.full((2,), 3.0))
    assert s.tolist() == [4, 4] and p.tolist() == [3, 3]
    s2, _ = m(in_a=ember.ones(2), b=ember.ones(2))
    assert s2.tolist() == [2, 2]
    with pytest.raises(TypeError, match="unexpected input"):
        m(zz=ember.ones(2))


def test_module_method_and_dict_output():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def act(self, x, scale=1.0):
            return {"logits": self.lin(x) * scale, "other": x}

    net = Net()
    m = TensorDictModule(net, ["obs"], ["logits"], method="act", method_kwargs={"scale": 0.0})
    assert m(obs_td())["logits"].abs().sum().item() == 0
    assert "module.lin.weight" in m.state_dict()


# ----------------------------------------------------------------------------- Sequential
def test_sequential_keys_and_forward():
    seq = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), ["obs"], ["hidden"]),
        TensorDictModule(nn.Linear(4, 2), ["hidden"], ["action"]),
        TensorDictModule(lambda a, g: a + g, ["action", "goal"], ["shifted"]))
    assert seq.in_keys == ["obs", "goal"] and seq.out_keys == ["hidden", "action", "shifted"]
    td = obs_td()
    td["goal"] = ember.ones(5, 2)
    seq(td)
    assert np.allclose((td["shifted"] - td["action"]).detach().numpy(), 1.0)
    assert len(seq) == 3 and isinstance(seq[0], TensorDictModule)
    assert seq[:2].out_keys == ["hidden", "action"]
    assert "module.0.module.weight" in seq.state_dict()
    act = seq(obs_td()["obs"], ember.zeros(5, 2))
    assert len(act) == 3 and act[1].shape == (5, 2)


def test_sequential_selected_out_keys_partial_tolerant_and_functions():
    seq = TensorDictSequential(
        TensorDictModule(lambda o: o + 1, ["obs"], ["h"]),
        TensorDictModule(lambda h: h * 2, ["h"], ["y"]),
        selected_out_keys=["y"])
    td = seq(obs_td())
    assert "y" in td and "h" not in td and seq.out_keys == ["y"]
    tol = TensorDictSequential(
        TensorDictModule(lambda z: z, ["absent"], ["a"]),
        TensorDictModule(lambda o: o, ["obs"], ["b"]),
        lambda t: t.set("c", ember.zeros(5)),
        partial_tolerant=True)
    out = tol(obs_td())
    assert "a" not in out and "b" in out and "c" in out


# ----------------------------------------------------------------------------- distributions
def test_normal_param_extractor_matches_formula():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32) * 3
    loc, scale = NormalParamExtractor()(ember.tensor(x))
    bias = math.log(math.expm1(1.0 - 0.01))
    want = np.log1p(np.exp(x[:, 3:] + bias)) + 0.01
    assert np.allclose(loc.numpy(), x[:, :3]) and np.allclose(scale.numpy(), want, rtol=1e-5)
    assert abs(NormalParamExtractor()(ember.zeros(1, 2))[1].item() - 1.0) < 1e-6
    _, s = NormalParamExtractor("exp", scale_lb=0.5)(ember.tensor([[0.0, -10.0]]))
    assert s.item() == 0.5
    _, s2 = NormalParamExtractor("biased_softplus_2.0_0.5")(ember.zeros(1, 2))
    assert abs(s2.item() - 2.0) < 1e-6
    expln = mappings("expln")(ember.tensor([-1.0, 0.0, 2.0]))
    assert np.allclose(expln.numpy(), [math.exp(-1), 1.0, math.log1p(2) + 1])
    with pytest.raises(ValueError, match="unknown scale mapping"):
        mappings("nope")
    with pytest.raises(ValueError, match="even"):
        NormalParamExtractor()(ember.zeros(2, 3))


def test_delta():
    p = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    d = Delta(p)
    assert d.batch_shape == (2,) and d.event_shape == (2,)
    assert d.sample().tolist() == p.tolist() and d.rsample((3,)).shape == (3, 2, 2)
    lp = d.log_prob(ember.tensor([[1.0, 2.0], [3.0, 5.0]]))
    assert lp[0].item() == 0 and lp[1].item() == -math.inf
    assert d.deterministic_sample is p and d.mode is p


def _torch_tanh_normal(loc, scale, low, high):
    D = torch.distributions
    base = D.Independent(D.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    ts = [D.transforms.TanhTransform()]
    if (low, high) != (-1.0, 1.0):
        ts.append(D.transforms.AffineTransform((high + low) / 2, (high - low) / 2))
    return D.TransformedDistribution(base, ts)


@pytest.mark.parametrize("low,high", [(-1.0, 1.0), (-2.0, 3.0)])
def test_tanh_normal_matches_torch(low, high):
    rng = np.random.default_rng(1)
    loc = rng.standard_normal((5, 3))
    scale = rng.random((5, 3)) + 0.3
    d = TanhNormal(ember.tensor(loc), ember.tensor(scale), low=low, high=high)
    ref = _torch_tanh_normal(loc, scale, low, high)
    pre = rng.standard_normal((5, 3)) * 0.8
    y = low + (high - low) * (np.tanh(pre) + 1) / 2
    got = d.log_prob(ember.tensor(y)).numpy()
    want = ref.log_prob(torch.tensor(y)).numpy()
    assert got.shape == (5,) and np.allclose(got, want, rtol=1e-6, atol=1e-6)
    det = d.deterministic_sample.numpy()
    assert np.allclose(det, low + (high - low) * (np.tanh(loc) + 1) / 2)
    s = d.rsample((100,)).numpy()
    assert s.shape == (100, 5, 3) and s.min() > low and s.max() < high
    assert d.support.check(d.sample()).all()


def test_tanh_normal_gradients_tanh_loc_and_bounds():
    loc = ember.zeros(4, 2, requires_grad=True)
    scale = ember.ones(4, 2, requires_grad=True)
    d = TanhNormal(loc, scale)
    a = d.rsample()
    (d.log_prob(a).sum() + a.sum()).backward()
    assert loc.grad is not None and scale.grad is not None
    assert np.isfinite(loc.grad.numpy()).all()
    edge = TanhNormal(ember.zeros(2), ember.ones(2)).log_prob(ember.tensor([1.0, -1.0]))
    assert np.isfinite(edge.item())
    t = TanhNormal(ember.full((3,), 100.0), ember.ones(3), upscale=5.0, tanh_loc=True)
    assert np.allclose(t.loc.numpy(), 5 * np.tanh(20.0))
    with pytest.raises(ValueError, match="greater than low"):
        TanhNormal(ember.zeros(2), ember.ones(2), low=1.0, high=1.0)
    assert TanhNormal(ember.zeros(3), ember.ones(3), event_dims=0).log_prob(
        ember.zeros(3)).shape == (3,)


# ----------------------------------------------------------------------------- probabilistic
def policy(**kw):
    return ProbabilisticTensorDictModule(["loc", "scale"], ["action"], distribution_class=Normal,
                                         **kw)


def loc_scale_td():
    return TensorDict({"loc": ember.tensor([[0.5, -1.0]]), "scale": ember.tensor([[1.0, 2.0]])},
                      [1])


def test_probabilistic_deterministic_random_and_log_prob():
    m = policy(return_log_prob=True)
    assert m.out_keys == ["action", "action_log_prob"] and m.log_prob_key == "action_log_prob"
    td = m(loc_scale_td())
    assert td["action"].tolist() == [[0.5, -1.0]]
    lp = td["action_log_prob"].numpy()
    want = -0.5 * np.log(2 * np.pi) - np.log([[1.0, 2.0]])
    assert np.allclose(lp, want)
    ember.manual_seed(0)
    with set_interaction_type(InteractionType.RANDOM):
        assert interaction_type() is InteractionType.RANDOM
        a1 = m(loc_scale_td())["action"]
        a2 = m(loc_scale_td())["action"]
    assert interaction_type() is None and a1.tolist() != a2.tolist()
    assert np.allclose(m.log_prob(td).numpy(), want)


def test_probabilistic_rsample_is_differentiable_and_modes():
    loc = ember.zeros(2, 2, requires_grad=True)
    td = TensorDict({"loc": loc, "scale": ember.ones(2, 2)}, [2])
    m = policy(default_interaction_type="random")
    m(td)["action"].sum().backward()
    assert loc.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert policy(default_interaction_type=InteractionType.MODE)(loc_scale_td())[
        "action"].tolist() == [[0.5, -1.0]]
    assert policy(default_interaction_type="MEAN")(loc_scale_td())["action"].tolist() == [
        [0.5, -1.0]]

    @set_interaction_type("mode")
    def act(t):
        return policy(default_interaction_type="random")(t)["action"]

    assert act(loc_scale_td()).tolist() == [[0.5, -1.0]]


def test_probabilistic_empirical_mean_and_categorical_mode():
    tn = ProbabilisticTensorDictModule(["loc", "scale"], ["a"], distribution_class=TanhNormal,
                                       default_interaction_type="mean", n_empirical_estimate=4000)
    ember.manual_seed(1)
    td = tn(TensorDict({"loc": ember.zeros(1, 2), "scale": ember.full((1, 2), 0.1)}, [1]))
    assert np.abs(td["a"].numpy()).max() < 0.02
    cat = ProbabilisticTensorDictModule(["logits"], ["a"], distribution_class=Categorical)
    out = cat(TensorDict({"logits": ember.tensor([[0.0, 3.0, 1.0]])}, [1]))
    assert out["a"].tolist() == [1]


def test_probabilistic_default_delta_dict_in_keys_and_errors():
    m = ProbabilisticTensorDictModule({"param": "p"}, ["out"], return_log_prob=True)
    td = m(TensorDict({"p": ember.ones(2, 3)}, [2]))
    assert td["out"].tolist() == [[1.0] * 3] * 2 and td["out_log_prob"].tolist() == [0.0, 0.0]
    nested = ProbabilisticTensorDictModule([("agent", "loc"), ("agent", "scale")],
                                           [("agent", "action")], distribution_class=Normal,
                                           return_log_prob=True)
    assert nested.log_prob_key == ("agent", "action_log_prob")
    t = nested(TensorDict({"agent": {"loc": ember.zeros(2), "scale": ember.ones(2)}}, [2]))
    assert ("agent", "action_log_prob") in t
    with pytest.raises(KeyError, match="'scale'"):
        policy()(TensorDict({"loc": ember.zeros(2)}, [2]))


def test_probabilistic_sequential_actor():
    ember.manual_seed(0)
    actor = ProbabilisticTensorDictSequential(
        TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()), ["obs"],
                         ["loc", "scale"]),
        ProbabilisticTensorDictModule(["loc", "scale"], ["action"], distribution_class=TanhNormal,
                                      return_log_prob=True))
    assert actor.in_keys == ["obs"] and actor.out_keys == ["loc", "scale", "action",
                                                           "action_log_prob"]
    td = obs_td(6)
    with set_interaction_type("random"):
        actor(td)
    assert td["action"].shape == (6, 2) and td["action_log_prob"].shape == (6,)
    dist = actor.get_dist(obs_td(6))
    assert isinstance(dist, TanhNormal) and dist.batch_shape == (6,)
    lp = actor.log_prob(td)
    assert np.allclose(lp.detach().numpy(), td["action_log_prob"].detach().numpy(), atol=1e-5)
    lp.sum().backward()
    assert actor[0].module[0].weight.grad is not None
    with pytest.raises(TypeError, match="last module"):
        ProbabilisticTensorDictSequential(TensorDictModule(lambda o: o, ["obs"], ["x"]))
