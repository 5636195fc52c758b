"""MultivariateNormal from scale_tril, covariance_matrix or precision_matrix, against torch."""
import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
from dist_helpers import close, leaf

RNG = np.random.default_rng(0)
_A = RNG.normal(size=(2, 3, 3))
COV = _A @ _A.transpose(0, 2, 1) + np.eye(3)           # batch (2,)
LOC = RNG.normal(size=(4, 1, 3))                        # batch (4, 1): broadcasts to (4, 2)
MATS = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
        "scale_tril": np.linalg.cholesky(COV)}


@pytest.mark.parametrize("kind", list(MATS))
def test_matches_torch(kind):
    le, lt = leaf(LOC)
    me, mt = leaf(MATS[kind])
    de = D.MultivariateNormal(le, **{kind: me})
    dtc = TD.MultivariateNormal(lt, **{kind: mt})
    assert de.batch_shape == (4, 2) == tuple(dtc.batch_shape)
    assert de.event_shape == (3,)
    for prop in ("mean", "mode", "variance", "stddev", "scale_tril", "covariance_matrix",
                 "precision_matrix"):
        close(getattr(de, prop), getattr(dtc, prop))
    v = RNG.normal(size=(5, 4, 2, 3))
    le_, lt_ = de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v))
    close(le_, lt_)
    close(de.entropy(), dtc.entropy())
    (le_.sum() + de.entropy().sum()).backward()
    (lt_.sum() + dtc.entropy().sum()).backward()
    close(le.grad, lt.grad)
    close(me.grad, mt.grad, rtol=1e-8, atol=1e-10)


def test_float32_log_prob():
    cov = COV.astype(np.float32)
    de = D.MultivariateNormal(ember.zeros(3), covariance_matrix=ember.tensor(cov))
    dtc = TD.MultivariateNormal(torch.zeros(3), covariance_matrix=torch.tensor(cov))
    v = RNG.normal(size=(6, 2, 3)).astype(np.float32)
    close(de.log_prob(ember.tensor(v)), dtc.log_prob(torch.tensor(v)), np.float32, rtol=1e-4)


def test_sampling_shapes_and_moments():
    d = D.MultivariateNormal(ember.tensor([1.0, -2.0], dtype=ember.float64),
                             covariance_matrix=ember.tensor([[2.0, 0.6], [0.6, 0.5]],
                                                            dtype=ember.float64))
    assert d.sample().shape == (2,)
    assert d.sample((3, 4)).shape == (3, 4, 2)
    ember.manual_seed(3)
    s = d.sample((100000,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -2.0], atol=0.02)
    np.testing.assert_allclose(np.cov(s.T), [[2.0, 0.6], [0.6, 0.5]], atol=0.03)


def test_expand_keeps_the_factor_and_matches_torch():
    de = D.MultivariateNormal(ember.tensor(LOC[0, 0]), covariance_matrix=ember.tensor(COV[0]))
    dtc = TD.MultivariateNormal(torch.tensor(LOC[0, 0]), covariance_matrix=torch.tensor(COV[0]))
    ee, et = de.expand((2, 5)), dtc.expand(torch.Size((2, 5)))
    assert ee.batch_shape == (2, 5) and ee.covariance_matrix.shape == (2, 5, 3, 3)
    assert ee._unbroadcasted_scale_tril.shape == (3, 3)
    v = RNG.normal(size=(2, 5, 3))
    close(ee.log_prob(ember.tensor(v)), et.log_prob(torch.tensor(v)))


def test_argument_errors():
    loc = ember.zeros(3)
    with pytest.raises(ValueError, match="exactly one of"):
        D.MultivariateNormal(loc)
    with pytest.raises(ValueError, match="exactly one of"):
        D.MultivariateNormal(loc, covariance_matrix=ember.eye(3), scale_tril=ember.eye(3))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.MultivariateNormal(ember.tensor(0.0), covariance_matrix=ember.eye(1))
    with pytest.raises(ValueError, match="must be \\(3, 3\\)"):
        D.MultivariateNormal(loc, covariance_matrix=ember.eye(2))
    with pytest.raises(ValueError, match="at least two-dimensional"):
        D.MultivariateNormal(loc, scale_tril=ember.ones(3))
    not_pd = ember.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="parameter covariance_matrix .* PositiveDefinite"):
        D.MultivariateNormal(loc, covariance_matrix=not_pd)
    not_sym = ember.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="parameter precision_matrix"):
        D.MultivariateNormal(loc, precision_matrix=not_sym)
    with pytest.raises(ValueError, match="parameter scale_tril .* LowerCholesky"):
        D.MultivariateNormal(loc, scale_tril=-ember.eye(3))
