"""Transforms and TransformedDistribution against torch, including the SAC policy case
(a tanh-squashed Normal scored on its own reparameterised samples)."""
import math

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT

import ember
import ember.distributions as D
from dist_helpers import close, leaf, to_torch

X = np.linspace(-4.0, 4.0, 13)


def _pairs():
    return [
        ("exp", D.ExpTransform(), TT.ExpTransform()),
        ("sigmoid", D.SigmoidTransform(), TT.SigmoidTransform()),
        ("tanh", D.TanhTransform(), TT.TanhTransform()),
        ("affine", D.AffineTransform(0.5, -2.0), TT.AffineTransform(0.5, -2.0)),
        ("affine_tensor", D.AffineTransform(ember.tensor([1.0, -1.0], dtype=ember.float64),
                                            ember.tensor([3.0, 0.25], dtype=ember.float64)),
         TT.AffineTransform(torch.tensor([1.0, -1.0], dtype=torch.float64),
                            torch.tensor([3.0, 0.25], dtype=torch.float64))),
        ("compose", D.ComposeTransform([D.AffineTransform(0.1, 0.5), D.TanhTransform(),
                                        D.AffineTransform(2.0, 3.0)]),
         TT.ComposeTransform([TT.AffineTransform(0.1, 0.5), TT.TanhTransform(),
                              TT.AffineTransform(2.0, 3.0)])),
    ]


@pytest.mark.parametrize("name,te,tt", _pairs(), ids=[p[0] for p in _pairs()])
def test_transform_matches_torch(name, te, tt):
    x = np.stack([X, X[::-1] / 2], -1)  # (13, 2)
    xe, xt = leaf(x)
    ye, yt = te(xe), tt(xt)
    close(ye, yt)
    close(te.inv(ye), tt.inv(yt), rtol=1e-7, atol=1e-9)
    je, jt = te.log_abs_det_jacobian(xe, ye), tt.log_abs_det_jacobian(xt, yt)
    close(je, jt)
    (ye.sum() + je.sum()).backward()
    (yt.sum() + jt.sum()).backward()
    close(xe.grad, xt.grad)
    assert te.bijective == tt.bijective
    s_e, s_t = te.sign, tt.sign
    if isinstance(s_t, torch.Tensor):
        close(s_e, s_t)
    else:
        assert s_e == s_t
    assert repr(te.domain) == repr(tt.domain) and repr(te.codomain) == repr(tt.codomain)
    # the inverse's log-det is minus the forward's, with the roles of x and y swapped
    close(te.inv.log_abs_det_jacobian(ye, xe), -jt)


def test_sigmoid_stays_inside_the_unit_interval():
    x = ember.tensor([-200.0, 0.0, 200.0])
    y = D.SigmoidTransform()(x)
    close(y, TT.SigmoidTransform()(torch.tensor([-200.0, 0.0, 200.0])), np.float32)
    assert float(y.min()) > 0 and float(y.max()) < 1


def test_affine_event_dim_sums_the_log_det():
    te = D.AffineTransform(ember.zeros(3), ember.tensor([2.0, 3.0, 0.5]), event_dim=1)
    tt = TT.AffineTransform(torch.zeros(3), torch.tensor([2.0, 3.0, 0.5]), event_dim=1)
    x = np.ones((4, 3), dtype=np.float32)
    close(te.log_abs_det_jacobian(ember.tensor(x), te(ember.tensor(x))),
          tt.log_abs_det_jacobian(torch.tensor(x), tt(torch.tensor(x))), np.float32)
    assert te.domain.event_dim == 1 and repr(te.codomain) == repr(tt.codomain)


def test_inverse_structure_equality_and_cache():
    t = D.TanhTransform()
    assert t.inv.inv is t and t.inv is t.inv
    assert D.TanhTransform() == D.TanhTransform() and D.ExpTransform() != D.TanhTransform()
    assert D.AffineTransform(1.0, 2.0) == D.AffineTransform(1.0, 2.0)
    assert D.AffineTransform(1.0, 2.0) != D.AffineTransform(1.0, 3.0)
    c = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)])
    assert c.inv.parts[0] == D.AffineTransform(1.0, 2.0).inv
    assert c == D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)])
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.ExpTransform(cache_size=2)
    cached = D.TanhTransform(cache_size=1)
    assert t.with_cache(1)._cache_size == 1 and cached.with_cache(1) is cached
    x = ember.tensor([20.0])  # tanh(20) == 1.0 in float32: atanh would give inf
    y = cached(x)
    assert cached(x) is y
    assert cached.inv(y) is x
    assert math.isinf(t.inv(y).item())
    cc = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)], cache_size=1)
    y = cc(x)
    assert cc.inv(y) is not None and all(p._cache_size == 1 for p in cc.parts)
    assert D.identity_transform(x) is x


def _normal_pair(dt=np.float64):
    le, lt = leaf([0.2, -0.5, 1.0], dt)
    se, st = leaf([0.3, 1.0, 2.0], dt)
    return le, lt, se, st


def test_lognormal_log_prob_cdf_icdf_match_torch():
    le, lt, se, st = _normal_pair()
    de = D.TransformedDistribution(D.Normal(le, se), [D.ExpTransform()])
    dtc = TD.TransformedDistribution(TD.Normal(lt, st), [TT.ExpTransform()])
    assert de.batch_shape == (3,) and de.event_shape == ()
    assert repr(de.support) == repr(dtc.support) and de.has_rsample
    v = np.exp(np.random.default_rng(0).normal(size=(5, 3)))
    lpe, lpt = de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v))
    close(lpe, lpt)
    close(de.cdf(ember.tensor(v)), dtc.cdf(torch.tensor(v)))
    q = np.random.default_rng(1).uniform(0.01, 0.99, size=(5, 3))
    close(de.icdf(ember.tensor(q)), dtc.icdf(torch.tensor(q)), rtol=1e-8)
    lpe.sum().backward()
    lpt.sum().backward()
    close(le.grad, lt.grad)
    close(se.grad, st.grad)
    assert de.sample((4,)).shape == (4, 3) and float(de.sample((4,)).min()) > 0


def test_decreasing_transform_flips_the_cdf():
    de = D.TransformedDistribution(D.Uniform(0.0, 1.0), [D.AffineTransform(1.0, -2.0)])
    dtc = TD.TransformedDistribution(TD.Uniform(0.0, 1.0), [TT.AffineTransform(1.0, -2.0)])
    v = np.array([-0.5, 0.0, 0.9], dtype=np.float32)
    close(de.cdf(ember.tensor(v)), dtc.cdf(torch.tensor(v)), np.float32)
    close(de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v)), np.float32)


def test_event_dim_transform_reinterprets_batch_dims():
    base = D.Normal(ember.zeros(4, 3), ember.ones(4, 3))
    tbase = TD.Normal(torch.zeros(4, 3), torch.ones(4, 3))
    aff = D.AffineTransform(ember.zeros(3), ember.tensor([1.0, 2.0, 3.0]), event_dim=1)
    taff = TT.AffineTransform(torch.zeros(3), torch.tensor([1.0, 2.0, 3.0]), event_dim=1)
    de, dtc = D.TransformedDistribution(base, aff), TD.TransformedDistribution(tbase, taff)
    assert de.batch_shape == (4,) == tuple(dtc.batch_shape)
    assert de.event_shape == (3,) == tuple(dtc.event_shape)
    assert isinstance(de.base_dist, D.Independent)
    v = np.random.default_rng(2).normal(size=(2, 4, 3)).astype(np.float32)
    close(de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v)), np.float32)
    ee, et = de.expand((5, 4)), dtc.expand(torch.Size((5, 4)))
    assert ee.batch_shape == (5, 4) == tuple(et.batch_shape)
    close(ee.log_prob(ember.tensor(v[:1])), et.log_prob(torch.tensor(v[:1])), np.float32)


@pytest.mark.parametrize("independent", [False, True])
def test_sac_tanh_normal_matches_torch(monkeypatch, independent):
    """The SAC policy: a = tanh(u), u = mu + sigma eps, scored with log_prob(a); the cached
    pre-tanh sample keeps log_prob finite and exact even where tanh(u) rounds to +-1."""
    mu = np.array([[0.1, -2.0, 6.0], [1.0, 0.0, -9.5]], dtype=np.float32)
    sigma = np.array([[0.5, 1.0, 2.0], [0.2, 3.0, 1.5]], dtype=np.float32)
    me, mt = leaf(mu, np.float32)
    se, st = leaf(sigma, np.float32)

    def build(M, T, m, s):
        base = M.Normal(m, s)
        if independent:
            base = M.Independent(base, 1)
        return M.TransformedDistribution(base, [T.TanhTransform(cache_size=1)])
    de, dtc = build(D, D, me, se), build(TD, TT, mt, st)
    assert de.batch_shape == tuple(dtc.batch_shape)
    assert de.event_shape == tuple(dtc.event_shape)
    ember.manual_seed(4)
    eps = ember.randn((8, 2, 3))
    ember.manual_seed(4)
    monkeypatch.setattr(TD.normal, "_standard_normal", lambda *a, **k: to_torch(eps))
    ae, at = de.rsample((8,)), dtc.rsample((8,))
    close(ae, at, np.float32)
    assert bool((ae.abs() == 1).any())  # some actions saturate in float32
    lpe, lpt = de.log_prob(ae), dtc.log_prob(at)
    assert bool(ember.isfinite(lpe).all())
    close(lpe, lpt, np.float32, rtol=1e-5, atol=1e-4)
    # a SAC actor loss: alpha * log_prob - Q(a), with a toy Q
    qe, qt = (ae * 3.0).sin(), (at * 3.0).sin()
    if independent:
        qe, qt = qe.sum(-1), qt.sum(-1)
    (0.2 * lpe - qe).sum().backward()
    (0.2 * lpt - qt).sum().backward()
    close(me.grad, mt.grad, np.float32, rtol=1e-4, atol=1e-4)
    close(se.grad, st.grad, np.float32, rtol=1e-4, atol=1e-4)


def test_tanh_normal_log_prob_of_external_actions_matches_torch():
    # actions not produced by the transform go through atanh
    de = D.TransformedDistribution(D.Normal(ember.tensor([0.3, -0.4], dtype=ember.float64),
                                            ember.tensor([0.8, 1.2], dtype=ember.float64)),
                                   [D.TanhTransform()])
    dtc = TD.TransformedDistribution(TD.Normal(torch.tensor([0.3, -0.4], dtype=torch.float64),
                                               torch.tensor([0.8, 1.2], dtype=torch.float64)),
                                     [TT.TanhTransform()])
    a = np.array([[-0.999, 0.0], [0.5, 0.9999]])
    close(de.log_prob(ember.tensor(a)), dtc.log_prob(torch.tensor(a)), rtol=1e-8)


def test_transformed_distribution_argument_errors():
    with pytest.raises(ValueError, match="Transform or a list of Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [lambda x: x])
    with pytest.raises(TypeError, match="base_distribution must be a Distribution"):
        D.TransformedDistribution("normal", [D.ExpTransform()])
    with pytest.raises(TypeError, match="every part must be a Transform"):
        D.ComposeTransform([D.ExpTransform(), 3])
