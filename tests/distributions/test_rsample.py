"""Reparameterised sampling: gradients of samples in the parameters, against torch on the
same base noise (Normal, Uniform, MultivariateNormal), against torch's implicit Gamma gradient
at the same samples (Gamma), and by exactness at fixed Gamma draws plus unbiasedness
(Beta, Dirichlet)."""
import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
import ember.distributions.dirichlet as ember_dirichlet
from dist_helpers import close, leaf, to_torch


def _same_noise(draw, seed=11):
    """ember's next draw (so rsample after re-seeding sees the same noise) and its torch copy."""
    ember.manual_seed(seed)
    e = draw()
    ember.manual_seed(seed)
    return e, to_torch(e)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_normal_rsample_and_gradients_match_torch(monkeypatch, dt):
    le, lt = leaf([0.3, -1.0, 2.0], dt)
    se, st = leaf([0.5, 1.5, 0.1], dt)
    shape = (6, 3)
    eps_e, eps_t = _same_noise(lambda: ember.randn(shape, dtype=le.dtype))
    monkeypatch.setattr(TD.normal, "_standard_normal", lambda *a, **k: eps_t)
    xe, xt = D.Normal(le, se).rsample((6,)), TD.Normal(lt, st).rsample((6,))
    close(xe, xt, dt)
    w = np.random.default_rng(0).normal(size=shape).astype(dt)
    (xe * ember.tensor(w)).pow(2).sum().backward()
    (xt * torch.tensor(w)).pow(2).sum().backward()
    close(le.grad, lt.grad, dt)
    close(se.grad, st.grad, dt)


def test_uniform_rsample_and_gradients_match_torch(monkeypatch):
    lo_e, lo_t = leaf([-1.0, 0.0, 2.0])
    hi_e, hi_t = leaf([1.0, 0.5, 5.0])
    u_e, u_t = _same_noise(lambda: ember.rand((5, 3), dtype=ember.float64))
    monkeypatch.setattr(torch, "rand", lambda *a, **k: u_t)
    xe, xt = D.Uniform(lo_e, hi_e).rsample((5,)), TD.Uniform(lo_t, hi_t).rsample((5,))
    close(xe, xt)
    xe.exp().sum().backward()
    xt.exp().sum().backward()
    close(lo_e.grad, lo_t.grad)
    close(hi_e.grad, hi_t.grad)


def test_mvn_rsample_and_gradients_match_torch(monkeypatch):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(2, 3, 3))
    L = np.linalg.cholesky(A @ A.transpose(0, 2, 1) + np.eye(3))
    le, lt = leaf(rng.normal(size=(2, 3)))
    Le, Lt = leaf(L)
    eps_e, eps_t = _same_noise(lambda: ember.randn((4, 2, 3), dtype=ember.float64))
    monkeypatch.setattr(TD.multivariate_normal, "_standard_normal", lambda *a, **k: eps_t)
    xe = D.MultivariateNormal(le, scale_tril=Le).rsample((4,))
    xt = TD.MultivariateNormal(lt, scale_tril=Lt).rsample((4,))
    close(xe, xt)
    xe.pow(3).sum().backward()
    xt.pow(3).sum().backward()
    close(le.grad, lt.grad)
    close(Le.grad, Lt.grad)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_gamma_rsample_gradient_matches_torch_at_the_same_samples(dt):
    # one leaf per sample, so each sample's d x / d concentration is seen separately
    conc = np.repeat(np.array([[0.3, 0.9, 2.5, 7.0, 40.0]]), 300, 0).astype(dt)
    rate = np.array([0.5, 1.0, 2.0, 1.0, 3.0], dtype=dt)
    ce, re = ember.tensor(conc, requires_grad=True), ember.tensor(rate, requires_grad=True)
    x = D.Gamma(ce, re).rsample()
    assert x.shape == conc.shape and float(x.min()) > 0
    x.sum().backward()
    g = torch.tensor(x.detach().numpy() * rate)  # the standard-gamma draws
    want = torch._standard_gamma_grad(torch.tensor(conc), g) / torch.tensor(rate)
    close(ce.grad, want, dt, rtol=1e-3, atol=1e-6)
    close(re.grad, -(x.detach().numpy() / rate).sum(0), dt, rtol=1e-5)


def test_gamma_rsample_gradient_is_unbiased():
    c = ember.tensor([0.2, 1.5, 6.0], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(5)
    x = D.Gamma(c, 2.0).rsample((100000,))
    x.pow(2).mean(0).sum().backward()  # E[x^2] = c (c + 1) / rate^2
    cn = c.detach().numpy()
    np.testing.assert_allclose(c.grad.numpy(), (2 * cn + 1) / 4, rtol=0.04)


def test_dirichlet_gradient_is_exact_at_fixed_gamma_draws(monkeypatch):
    rng = np.random.default_rng(8)
    alpha = np.array([[0.4, 1.0, 3.0], [2.0, 0.7, 5.0]])
    g = rng.gamma(alpha, size=(4, 2, 3))
    monkeypatch.setattr(ember_dirichlet, "_draw_standard_gamma", lambda a, dt, dev: g.copy())
    ae = ember.tensor(alpha, requires_grad=True)
    x = D.Dirichlet(ae).rsample((4,))
    close(x, g / g.sum(-1, keepdims=True))
    w = rng.normal(size=(4, 2, 3))
    (x * ember.tensor(w)).sum().backward()
    # chain rule through x = g / sum(g) with torch's implicit d g / d alpha
    gt = torch.tensor(g, requires_grad=True)
    ((gt / gt.sum(-1, keepdim=True)) * torch.tensor(w)).sum().backward()
    dg = torch._standard_gamma_grad(torch.tensor(np.broadcast_to(alpha, g.shape).copy()),
                                    torch.tensor(g))
    close(ae.grad, (gt.grad * dg).sum(0), rtol=1e-3)


@pytest.mark.parametrize("family", ["beta", "dirichlet"])
def test_beta_dirichlet_rsample_gradients_are_unbiased(family):
    if family == "beta":
        c1e, c1t = leaf([0.5, 2.0, 3.0])
        c0e, c0t = leaf([0.7, 1.0, 6.0])
        de, dtc, pe, pt = D.Beta(c1e, c0e), TD.Beta(c1t, c0t), [c1e, c0e], [c1t, c0t]
    else:
        ce, ct = leaf([[0.5, 2.0, 3.0], [1.5, 1.0, 0.3]])
        de, dtc, pe, pt = D.Dirichlet(ce), TD.Dirichlet(ct), [ce], [ct]
    ember.manual_seed(21)
    x = de.rsample((200000,))
    # E[x] and E[x^2] = var + mean^2, differentiated exactly by torch
    (x.mean(0).sum() + x.pow(2).mean(0).sum()).backward()
    (dtc.mean.sum() + (dtc.variance + dtc.mean.pow(2)).sum()).backward()
    for e, t in zip(pe, pt):
        close(e.grad, t.grad, rtol=0.01, atol=0.005)


def test_sample_is_detached_and_rsample_is_not():
    loc = ember.zeros(2, requires_grad=True)
    d = D.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    c = ember.ones(2, requires_grad=True)
    assert D.Gamma(c, 1.0).rsample().requires_grad
    assert not D.Gamma(c, 1.0).sample().requires_grad
    assert D.Beta(c, 2.0).rsample().requires_grad and D.Dirichlet(c).rsample().requires_grad


def test_no_rsample_for_discrete_families():
    for d in (D.Bernoulli(0.3), D.Categorical(logits=ember.zeros(3)),
              D.OneHotCategorical(logits=ember.zeros(3))):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError, match="no reparameterised sampler"):
            d.rsample()


def test_straight_through_one_hot_gradient_matches_torch():
    logits = np.array([0.2, -1.0, 1.5])
    le, lt = leaf(logits)
    de = D.OneHotCategoricalStraightThrough(logits=le)
    dtc = TD.OneHotCategoricalStraightThrough(logits=lt)
    s = de.rsample()
    assert bool(((s == 0) | (s == 1)).all()) and float(s.sum()) == 1
    w = np.array([1.0, 2.0, -3.0])
    (s * ember.tensor(w)).sum().backward()
    st = dtc.rsample()
    (st * torch.tensor(w)).sum().backward()
    close(le.grad, lt.grad)
