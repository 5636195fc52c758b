"""Every family against torch.distributions on the same parameters: log_prob, entropy,
moments, mode, cdf/icdf, shapes, expand, and gradients of log_prob/entropy in the parameters."""
import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
from dist_helpers import close, to_torch


def _values(name, dt, rng):
    """Points in the support, shaped (4,) + batch + event (or broadcastable)."""
    if name in ("normal", "normal_scalar"):
        return rng.normal(size=(4, 3)).astype(dt)
    if name.startswith("bernoulli"):
        return rng.integers(0, 2, size=(4, 3)).astype(dt)
    if name.startswith("categorical"):
        return rng.integers(0, 4, size=(4, 2))
    if name == "onehot":
        return np.eye(4, dtype=dt)[rng.integers(0, 4, size=(4, 2))]
    if name == "gamma":
        return rng.gamma(2.0, size=(4, 3)).astype(dt) + 0.01
    if name == "beta":
        return rng.uniform(0.01, 0.99, size=(4, 3)).astype(dt)
    if name == "dirichlet":
        return rng.dirichlet([1.0, 2.0, 3.0], size=(4, 2)).astype(dt)
    if name == "uniform":
        lo, hi = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.5, 5.0])
        return (lo + rng.uniform(size=(4, 3)) * (hi - lo)).astype(dt)
    raise KeyError(name)


# name -> (params, builder(module, **params)); the same builder runs on ember and torch
CASES = {
    "normal": (dict(loc=[0.3, -1.2, 2.0], scale=[0.5, 1.5, 3.0]),
               lambda M, loc, scale: M.Normal(loc, scale)),
    "normal_scalar": (dict(), lambda M: M.Normal(0.5, 2.0)),
    "bernoulli_probs": (dict(probs=[0.1, 0.5, 0.8]), lambda M, probs: M.Bernoulli(probs=probs)),
    "bernoulli_logits": (dict(logits=[-2.0, 0.0, 3.0]),
                         lambda M, logits: M.Bernoulli(logits=logits)),
    "categorical_probs": (dict(probs=[[0.1, 0.2, 0.3, 0.4], [2.0, 1.0, 0.5, 0.5]]),
                          lambda M, probs: M.Categorical(probs=probs)),
    "categorical_logits": (dict(logits=[[0.1, -2.0, 0.3, 1.4], [2.0, 1.0, 0.5, -0.5]]),
                           lambda M, logits: M.Categorical(logits=logits)),
    "onehot": (dict(logits=[[0.1, -2.0, 0.3, 1.4], [2.0, 1.0, 0.5, -0.5]]),
               lambda M, logits: M.OneHotCategorical(logits=logits)),
    "gamma": (dict(concentration=[0.4, 1.0, 5.5], rate=[0.7, 2.0, 1.0]),
              lambda M, concentration, rate: M.Gamma(concentration, rate)),
    "beta": (dict(c1=[0.5, 2.0, 3.0], c0=[0.7, 1.0, 6.0]), lambda M, c1, c0: M.Beta(c1, c0)),
    "dirichlet": (dict(concentration=[[0.5, 2.0, 3.0], [1.5, 1.0, 4.0]]),
                  lambda M, concentration: M.Dirichlet(concentration)),
    "uniform": (dict(low=[-1.0, 0.0, 2.0], high=[1.0, 0.5, 5.0]),
                lambda M, low, high: M.Uniform(low, high)),
}
HAS_CDF = {"normal", "normal_scalar", "uniform", "gamma"}
HAS_ICDF = {"normal", "normal_scalar", "uniform"}
PROPS = ("mean", "mode", "variance", "stddev")


def _build(name, dt, requires_grad=True):
    params, build = CASES[name]
    ep = {k: ember.tensor(np.asarray(v, dtype=dt), requires_grad=requires_grad)
          for k, v in params.items()}
    tp = {k: torch.tensor(np.asarray(v, dtype=dt), requires_grad=requires_grad)
          for k, v in params.items()}
    return build(D, **ep), build(TD, **tp), ep, tp


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name, dt):
    de, dtc, ep, tp = _build(name, dt)
    assert de.batch_shape == tuple(dtc.batch_shape)
    assert de.event_shape == tuple(dtc.event_shape)
    assert de.has_rsample == dtc.has_rsample
    v = _values(name, dt, np.random.default_rng(1))
    le, lt = de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v))
    close(le, lt, dt)
    close(de.entropy(), dtc.entropy(), dt)
    for prop in PROPS:
        close(getattr(de, prop), getattr(dtc, prop), dt)
    if name in HAS_CDF:
        close(de.cdf(ember.tensor(v)), dtc.cdf(torch.tensor(v)), dt)
    if name in HAS_ICDF:
        q = np.random.default_rng(2).uniform(0.001, 0.999, size=(4, 3)).astype(dt)
        close(de.icdf(ember.tensor(q)), dtc.icdf(torch.tensor(q)), dt,
              **({"rtol": 2e-4} if dt == np.float32 else {}))
    # gradients of log_prob and entropy in every parameter
    if ep:
        (le.sum() + de.entropy().sum()).backward()
        (lt.sum() + dtc.entropy().sum()).backward()
        for k in ep:
            close(ep[k].grad, tp[k].grad, dt, **({"rtol": 1e-4} if dt == np.float32 else {}))


@pytest.mark.parametrize("name", sorted(HAS_CDF))
def test_cdf_gradients_match_torch(name):
    de, dtc, ep, tp = _build(name, np.float64)
    if name == "gamma":
        tp["concentration"].requires_grad_(False)  # torch: no derivative of gammainc in a
    v = _values(name, np.float64, np.random.default_rng(3))
    ve, vt = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    de.cdf(ve).sum().backward()
    dtc.cdf(vt).sum().backward()
    close(ve.grad, vt.grad)
    for k in ep:
        if k == "concentration":  # by finite differences of torch's cdf
            h = 1e-6
            c = np.asarray(CASES[name][0]["concentration"])
            r = torch.tensor(CASES[name][0]["rate"], dtype=torch.float64)

            def cdf(cc):
                return TD.Gamma(torch.tensor(cc), r).cdf(torch.tensor(v)).sum(0)
            fd = (cdf(c + h) - cdf(c - h)) / (2 * h)
            close(ep[k].grad, fd, rtol=1e-6)
        else:
            close(ep[k].grad, tp[k].grad)


def test_gamma_cdf_matches_torch_in_float32():
    d = D.Gamma(ember.tensor([0.3, 2.0, 50.0]), ember.tensor([1.0, 0.5, 2.0]))
    t = TD.Gamma(torch.tensor([0.3, 2.0, 50.0]), torch.tensor([1.0, 0.5, 2.0]))
    v = np.array([[0.01, 3.0, 24.0], [2.0, 9.0, 26.5]], dtype=np.float32)
    close(d.cdf(ember.tensor(v)), t.cdf(torch.tensor(v)), np.float32)


@pytest.mark.parametrize("name", list(CASES))
def test_sample_shapes_and_dtypes(name):
    de, dtc, _, _ = _build(name, np.float32, requires_grad=False)
    for shape in [(), (5,), (2, 3)]:
        s = de.sample(shape)
        assert s.shape == shape + de.batch_shape + de.event_shape
        assert s.dtype == (ember.int64 if name.startswith("categorical") else ember.float32)
        assert not s.requires_grad
        assert tuple(dtc.sample(shape).shape) == s.shape
        assert bool(de.support.check(s).all())


@pytest.mark.parametrize("name", list(CASES))
def test_sample_moments(name):
    de, _, _, _ = _build(name, np.float64, requires_grad=False)
    ember.manual_seed(1234)
    n = 40000
    s = de.sample((n,)).double().numpy()
    if name.startswith("categorical"):
        freq = np.stack([(s == k).mean(0) for k in range(4)], -1)
        np.testing.assert_allclose(freq, de.probs.numpy(), atol=0.01)
        return
    mean, var = de.mean.detach().numpy(), de.variance.detach().numpy()
    np.testing.assert_allclose(s.mean(0), mean, atol=4 * np.sqrt(var.max() / n) + 1e-12)
    np.testing.assert_allclose(s.var(0), var, rtol=0.05, atol=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_expand(name):
    de, dtc, _, _ = _build(name, np.float64, requires_grad=False)
    new_batch = (5,) + de.batch_shape
    ee, et = de.expand(new_batch), dtc.expand(torch.Size(new_batch))
    assert type(ee) is type(de)
    assert ee.batch_shape == new_batch == tuple(et.batch_shape)
    assert ee.event_shape == de.event_shape
    v = ee.sample()
    assert v.shape == new_batch + de.event_shape
    close(ee.log_prob(v), et.log_prob(to_torch(v)))
    close(ee.entropy(), et.entropy())
    assert ee.sample((2,)).shape == (2,) + new_batch + de.event_shape
    assert ee._validate_args == de._validate_args


def test_gamma_log_prob_gradient_at_concentration_one():
    # d/dc xlogy(c - 1, v) at c == 1 is log(v) (ember.xlogy's gradient drops it there; the
    # distributions use their own xlogy), checked by finite differences
    v = torch.tensor([0.3, 2.0], dtype=torch.float64)
    c = ember.tensor([1.0, 1.0], dtype=ember.float64, requires_grad=True)
    D.Gamma(c, 1.5).log_prob(ember.tensor(v.numpy())).backward(ember.ones(2, dtype=ember.float64))
    h = 1e-6
    fd = (TD.Gamma(torch.tensor(1.0 + h, dtype=torch.float64), 1.5).log_prob(v) -
          TD.Gamma(torch.tensor(1.0 - h, dtype=torch.float64), 1.5).log_prob(v)) / (2 * h)
    close(c.grad, fd, rtol=1e-7)


def test_scalar_parameters_give_empty_batch_shape():
    assert D.Normal(0.0, 1.0).batch_shape == ()
    assert D.Gamma(2.0, 1.0).sample().shape == ()
    assert D.Beta(2.0, 3.0).batch_shape == ()
    assert D.Bernoulli(0.3).sample((4,)).shape == (4,)
    d = D.Normal(ember.zeros(2, 1), ember.ones(3))  # broadcast
    assert d.batch_shape == (2, 3)


def test_enumerate_support_matches_torch():
    for name in ("bernoulli_probs", "categorical_logits", "onehot"):
        de, dtc, _, _ = _build(name, np.float64, requires_grad=False)
        for expand in (True, False):
            close(de.enumerate_support(expand).double(),
                  dtc.enumerate_support(expand).double())


def test_mode_special_cases_match_torch():
    p = [0.5, 0.2, 0.9]
    close(D.Bernoulli(ember.tensor(p)).mode, TD.Bernoulli(torch.tensor(p)).mode, np.float32)
    c = [[0.5, 0.3, 0.9], [2.0, 3.0, 0.5], [1.0, 1.0, 1.0]]
    close(D.Dirichlet(ember.tensor(c)).mode, TD.Dirichlet(torch.tensor(c)).mode, np.float32)
    b1, b0 = [0.5, 2.0, 0.5, 1.0], [0.7, 3.0, 2.0, 1.0]
    close(D.Beta(ember.tensor(b1), ember.tensor(b0)).mode,
          TD.Beta(torch.tensor(b1), torch.tensor(b0)).mode, np.float32)
    close(D.Gamma(ember.tensor([0.5, 3.0]), 2.0).mode, TD.Gamma(torch.tensor([0.5, 3.0]), 2.0).mode,
          np.float32)


def test_categorical_sampling_skips_zero_probability_classes():
    p = ember.tensor([[0.0, 0.5, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    s = D.Categorical(p).sample((5000,)).numpy()
    assert set(np.unique(s[:, 0])) == {1, 3}
    assert (s[:, 1] == 3).all() and (s[:, 2] == 0).all()


def test_sampling_is_reproducible_with_manual_seed():
    for d in (D.Normal(ember.zeros(3), 1.0), D.Gamma(ember.ones(3), 1.0),
              D.Categorical(logits=ember.zeros(3, 5)), D.Dirichlet(ember.ones(2, 3)),
              D.Bernoulli(ember.full((3,), 0.5)), D.Uniform(0.0, ember.ones(3))):
        ember.manual_seed(7)
        a = d.sample((4,)).numpy()
        ember.manual_seed(7)
        assert np.array_equal(a, d.sample((4,)).numpy())


def test_log_prob_value_broadcasts_with_batch():
    de, dtc, _, _ = _build("normal", np.float64, requires_grad=False)
    v = np.array([[0.1], [0.7]])
    close(de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v)))


def test_perplexity_and_repr():
    d = D.Categorical(logits=ember.zeros(4))
    close(d.perplexity(), torch.tensor(4.0), np.float32)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert "Beta(concentration1: 2.0" in repr(D.Beta(2.0, 3.0))
    assert math.isnan(D.Uniform(0.0, 1.0).mode.item())
