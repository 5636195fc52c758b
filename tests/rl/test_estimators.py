"""The keyed value estimators (GAE, TD0, TD1, TD(lambda)) against float64 numpy loops written
here from the formulas, on trajectories with terminations and truncations; keys, gradients
and the losses' make_value_estimator."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.rl import TensorDict
from ember.rl.modules import ValueOperator
from ember.rl.objectives import ClipPPOLoss, DQNLoss, ValueEstimators
from ember.rl.objectives.value import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator

GAMMA, LMBDA = 0.9, 0.8


# --------------------------------------------------------------------------- references
def ref_gae(v, nv, r, done, term):
    """[..., T] float64 loop: delta = r + g (1 - term) nv - v; A = delta + g l (1 - done) A'."""
    adv = np.zeros_like(r)
    run = np.zeros(r.shape[:-1])
    for t in reversed(range(r.shape[-1])):
        delta = r[..., t] + GAMMA * (1 - term[..., t]) * nv[..., t] - v[..., t]
        run = delta + GAMMA * LMBDA * (1 - done[..., t]) * run
        adv[..., t] = run
    return adv, adv + v


def ref_td_lambda(nv, r, done, term, lmbda):
    """G_t = r + g ((1 - l) V'_t + l (V'_t if done_t or t = T-1 else G_{t+1})), V' = (1-term) nv."""
    vp = (1 - term) * nv
    out = np.zeros_like(r)
    g = vp[..., -1]
    for t in reversed(range(r.shape[-1])):
        boot = np.where(done[..., t] > 0, vp[..., t], g)
        g = r[..., t] + GAMMA * ((1 - lmbda) * vp[..., t] + lmbda * boot)
        out[..., t] = g
    return out


def make_traj(shape, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal(shape + (3,)).astype(np.float32)
    nobs = rng.standard_normal(shape + (3,)).astype(np.float32)
    r = rng.standard_normal(shape + (1,)).astype(np.float32)
    term = np.zeros(shape + (1,), bool)
    trunc = np.zeros(shape + (1,), bool)
    term[..., 3, :] = True
    trunc[..., 7, :] = True
    td = TensorDict({"observation": ember.tensor(obs), "next": {
        "observation": ember.tensor(nobs), "reward": ember.tensor(r),
        "done": ember.tensor(term | trunc), "terminated": ember.tensor(term)}}, list(shape))
    return td, obs, nobs, r, term | trunc, term


def critic_and_numpy():
    ember.manual_seed(0)
    lin = nn.Linear(3, 1)
    w = lin.weight.detach().numpy().astype(np.float64)
    b = lin.bias.detach().numpy().astype(np.float64)
    return ValueOperator(lin), (lambda x: (x.astype(np.float64) @ w.T + b)[..., 0])


@pytest.mark.parametrize("shape", [(10,), (2, 10)])
@pytest.mark.parametrize("vectorized", [True, False])
def test_gae_module_matches_reference(shape, vectorized):
    td, obs, nobs, r, done, term = make_traj(shape)
    critic, f = critic_and_numpy()
    out = GAE(gamma=GAMMA, lmbda=LMBDA, value_network=critic, vectorized=vectorized)(td)
    adv, target = ref_gae(f(obs), f(nobs), r[..., 0].astype(np.float64),
                          done[..., 0].astype(np.float64), term[..., 0].astype(np.float64))
    np.testing.assert_allclose(out["advantage"].numpy()[..., 0], adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["value_target"].numpy()[..., 0], target, rtol=1e-5,
                               atol=1e-5)
    # the values it computed are written where torchrl writes them
    np.testing.assert_allclose(out["state_value"].numpy()[..., 0], f(obs), rtol=1e-5, atol=1e-6)
    assert ("next", "state_value") in out.keys(True)
    assert not out["advantage"].requires_grad


def test_gae_average_and_skip_existing():
    td, obs, nobs, r, done, term = make_traj((10,))
    critic, f = critic_and_numpy()
    out = GAE(gamma=GAMMA, lmbda=LMBDA, value_network=critic, average_gae=True)(td.clone())
    a = out["advantage"].numpy()
    assert abs(a.mean()) < 1e-5 and abs(a.std(ddof=1) - 1) < 1e-4
    # skip_existing: stored values are used instead of the network's
    td2 = td.clone()
    td2.set("state_value", ember.zeros(10, 1))
    td2.set(("next", "state_value"), ember.zeros(10, 1))
    out2 = GAE(gamma=GAMMA, lmbda=LMBDA, value_network=critic, skip_existing=True)(td2)
    z = np.zeros(10)
    adv, _ = ref_gae(z, z, r[..., 0].astype(np.float64), done[..., 0].astype(np.float64),
                     term[..., 0].astype(np.float64))
    np.testing.assert_allclose(out2["advantage"].numpy()[..., 0], adv, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,lmbda", [(TD0Estimator, 0.0), (TD1Estimator, 1.0),
                                       (TDLambdaEstimator, LMBDA)])
@pytest.mark.parametrize("shape", [(10,), (2, 10)])
def test_td_estimators_match_reference(cls, lmbda, shape):
    td, obs, nobs, r, done, term = make_traj(shape, seed=1)
    critic, f = critic_and_numpy()
    kw = {"lmbda": lmbda} if cls is TDLambdaEstimator else {}
    est = cls(gamma=GAMMA, value_network=critic, **kw)
    out = est(td)
    nv, rr = f(nobs), r[..., 0].astype(np.float64)
    d, t = done[..., 0].astype(np.float64), term[..., 0].astype(np.float64)
    if cls is TD0Estimator:
        target = rr + GAMMA * (1 - t) * nv
    else:
        target = ref_td_lambda(nv, rr, d, t, lmbda)
    np.testing.assert_allclose(out["value_target"].numpy()[..., 0], target, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(out["advantage"].numpy()[..., 0], target - f(obs), rtol=1e-5,
                               atol=1e-5)
    # value_estimate alone, and with an overriding next value
    np.testing.assert_allclose(est.value_estimate(td).numpy()[..., 0], target, rtol=1e-5,
                               atol=1e-5)
    zero = ember.zeros(*shape, 1)
    if cls is TD0Estimator:
        np.testing.assert_allclose(est.value_estimate(td, next_value=zero).numpy()[..., 0], rr,
                                   rtol=1e-6)


def test_differentiable_flag_and_target_params():
    td, obs, nobs, r, done, term = make_traj((10,))
    critic, f = critic_and_numpy()
    est = TDLambdaEstimator(gamma=GAMMA, lmbda=LMBDA, value_network=critic, differentiable=True)
    est(td)["value_target"].sum().backward()
    assert critic.module.weight.grad is not None
    critic.zero_grad()
    est2 = GAE(gamma=GAMMA, lmbda=LMBDA, value_network=critic)
    assert not est2(td.clone())["value_target"].requires_grad
    # target_params: another network (the loss's target copy) gives the next values
    other = ValueOperator(nn.Linear(3, 1))
    with ember.no_grad():
        other.module.weight.zero_()
        other.module.bias.zero_()
    est0 = TD0Estimator(gamma=GAMMA, value_network=critic)
    tgt = est0.value_estimate(td.clone(), target_params=other)
    np.testing.assert_allclose(tgt.numpy(), r, rtol=1e-6)


def test_set_keys_and_errors():
    td, *_ = make_traj((10,))
    td.rename_key_(("next", "reward"), ("next", "r"))
    critic, _ = critic_and_numpy()
    est = GAE(gamma=GAMMA, lmbda=LMBDA, value_network=critic, advantage_key="adv")
    with pytest.raises(KeyError, match="reward"):
        est(td.clone())
    est.set_keys(reward="r", value_target="ret")
    out = est(td)
    assert "adv" in out.keys() and "ret" in out.keys()
    with pytest.raises(KeyError, match="not a key"):
        est.set_keys(rewardz="x")
    with pytest.raises(RuntimeError, match="time dim"):
        est(td[0])


def test_value_only_estimator_reads_values():
    td, obs, nobs, r, done, term = make_traj((10,))
    td.set("state_value", ember.ones(10, 1))
    td.set(("next", "state_value"), ember.ones(10, 1) * 2)
    out = TD0Estimator(gamma=GAMMA)(td)
    want = r[..., 0] + GAMMA * (1 - term[..., 0]) * 2
    np.testing.assert_allclose(out["value_target"].numpy()[..., 0], want, rtol=1e-6)
    np.testing.assert_allclose(out["advantage"].numpy()[..., 0], want - 1, rtol=1e-6)


def test_loss_make_value_estimator():
    from ember.distributions import Categorical
    from ember.rl.modules import ProbabilisticActor, QValueActor, TensorDictModule
    actor = ProbabilisticActor(TensorDictModule(nn.Linear(3, 2), ["observation"], ["logits"]),
                               ["logits"], distribution_class=Categorical, return_log_prob=True)
    critic, _ = critic_and_numpy()
    loss = ClipPPOLoss(actor, critic)
    assert isinstance(loss.value_estimator, GAE)          # the default, built on first use
    loss.make_value_estimator(ValueEstimators.TDLambda, gamma=0.5, lmbda=0.7)
    assert isinstance(loss.value_estimator, TDLambdaEstimator)
    assert loss.value_estimator.gamma == 0.5 and loss.value_estimator.lmbda == 0.7
    loss.set_keys(value_target="ret")                       # forwarded to the estimator
    assert loss.value_estimator.tensor_keys.value_target == "ret"
    dqn = DQNLoss(QValueActor(nn.Linear(3, 2), action_space="categorical"))
    with pytest.raises(ValueError, match="GAE"):
        dqn.make_value_estimator(ValueEstimators.GAE)
