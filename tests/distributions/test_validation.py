"""Argument validation: parameters (errors name the parameter and its constraint), values
against the support, shapes, and the switches that turn validation off; constraints against
torch's."""
import math

import numpy as np
import pytest
import torch
import torch.distributions.constraints as TC

import ember
import ember.distributions as D
from ember.distributions import constraints as C


@pytest.mark.parametrize("build,param,constraint", [
    (lambda: D.Normal(0.0, -1.0), "scale", "GreaterThan"),
    (lambda: D.Normal(ember.tensor([0.0, math.nan]), 1.0), "loc", "Real"),
    (lambda: D.Bernoulli(probs=ember.tensor([0.2, 1.5])), "probs", "Interval"),
    (lambda: D.Categorical(probs=ember.tensor([0.5, -0.1, 0.6])), "probs", "Simplex"),
    (lambda: D.OneHotCategorical(probs=ember.tensor([0.5, -0.1, 0.6])), "probs", "Simplex"),
    (lambda: D.Categorical(logits=ember.tensor([0.5, math.nan])), "logits", "IndependentConst"),
    (lambda: D.Gamma(ember.tensor([1.0, 0.0]), 1.0), "concentration", "GreaterThan"),
    (lambda: D.Gamma(1.0, -2.0), "rate", "GreaterThan"),
    (lambda: D.Beta(1.0, ember.tensor([2.0, -1.0])), "concentration0", "GreaterThan"),
    (lambda: D.Dirichlet(ember.tensor([[1.0, 2.0], [0.0, 1.0]])), "concentration",
     "IndependentConstraint"),
    (lambda: D.Uniform(ember.tensor([0.0, 2.0]), 1.0), "low", "LessThan"),
])
def test_bad_parameters_name_the_parameter(build, param, constraint):
    with pytest.raises(ValueError, match=f"Expected parameter {param} .*{constraint}"):
        build()


@pytest.mark.parametrize("d,value", [
    (D.Normal(0.0, 1.0), ember.tensor(math.nan)),
    (D.Bernoulli(0.3), ember.tensor([0.5])),
    (D.Categorical(logits=ember.zeros(3)), ember.tensor([3])),
    (D.Categorical(logits=ember.zeros(3)), ember.tensor([1.5])),
    (D.OneHotCategorical(logits=ember.zeros(3)), ember.tensor([1.0, 1.0, 0.0])),
    (D.Gamma(2.0, 1.0), ember.tensor([-1.0])),
    (D.Beta(2.0, 1.0), ember.tensor([1.5])),
    (D.Dirichlet(ember.ones(3)), ember.tensor([0.5, 0.2, 0.2])),
    (D.Uniform(0.0, 1.0), ember.tensor([1.5])),
])
def test_values_outside_the_support_are_refused(d, value):
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(value)


def test_value_shape_and_type_errors():
    d = D.Normal(ember.zeros(3), 1.0)
    with pytest.raises(ValueError, match="does not broadcast with batch_shape"):
        d.log_prob(ember.zeros(2))
    with pytest.raises(ValueError, match="must be a Tensor"):
        d.log_prob(0.5)
    with pytest.raises(ValueError, match="must match event_shape"):
        D.Dirichlet(ember.ones(3)).log_prob(ember.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="cdf must be a Tensor|log_prob/cdf"):
        d.cdf([0.1])


def test_validation_can_be_turned_off():
    d = D.Normal(0.0, -1.0, validate_args=False)
    assert math.isnan(d.log_prob(ember.tensor(0.0)).item())
    assert D.Uniform(0.0, 1.0, validate_args=False).log_prob(ember.tensor(2.0)).item() == -math.inf
    try:
        D.Distribution.set_default_validate_args(False)
        D.Gamma(-1.0, 1.0)
        D.Bernoulli(0.5).log_prob(ember.tensor(0.5))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Gamma(-1.0, 1.0)
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args("yes")
    assert D.Normal(0.0, 1.0, validate_args=False).expand((3,))._validate_args is False


def test_constructor_argument_errors():
    for cls in (D.Bernoulli, D.Categorical, D.OneHotCategorical):
        with pytest.raises(ValueError, match="exactly one of probs or logits"):
            cls()
        with pytest.raises(ValueError, match="exactly one of probs or logits"):
            cls(probs=ember.ones(2) / 2, logits=ember.zeros(2))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Categorical(logits=ember.tensor(0.0))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(ember.tensor(1.0))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims must be an int in"):
        D.Independent(D.Normal(ember.zeros(3), 1.0), 2)
    with pytest.raises(ValueError, match="Tensor or a number"):
        D.Normal("0", 1.0)
    with pytest.raises(NotImplementedError, match="does not define cdf"):
        D.Beta(1.0, 2.0).cdf(ember.tensor(0.5))


CHECKS = [
    ("real", C.real, TC.real, [0.0, math.inf, math.nan]),
    ("positive", C.positive, TC.positive, [-1.0, 0.0, 2.0]),
    ("nonnegative", C.nonnegative, TC.nonnegative, [-1.0, 0.0, 2.0]),
    ("unit_interval", C.unit_interval, TC.unit_interval, [-0.1, 0.0, 1.0, 1.1]),
    ("boolean", C.boolean, TC.boolean, [0.0, 1.0, 0.5]),
    ("integer_interval", C.integer_interval(0, 3), TC.integer_interval(0, 3),
     [0.0, 3.0, 1.5, 4.0]),
    ("half_open", C.half_open_interval(0.0, 1.0), TC.half_open_interval(0.0, 1.0),
     [0.0, 1.0, 0.5]),
    ("simplex", C.simplex, TC.simplex, [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]),
    ("one_hot", C.one_hot, TC.one_hot, [[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]]),
    ("real_vector", C.real_vector, TC.real_vector, [[0.0, 1.0], [math.nan, 0.0]]),
    ("lower_cholesky", C.lower_cholesky, TC.lower_cholesky,
     [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]]),
    ("positive_definite", C.positive_definite, TC.positive_definite,
     [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("positive_semidefinite", C.positive_semidefinite, TC.positive_semidefinite,
     [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
]


@pytest.mark.parametrize("name,ce,ct,values", CHECKS, ids=[c[0] for c in CHECKS])
def test_constraints_match_torch(name, ce, ct, values):
    v = np.array(values)
    assert np.array_equal(ce.check(ember.tensor(v)).numpy(), ct.check(torch.tensor(v)).numpy())
    assert ce.event_dim == ct.event_dim and ce.is_discrete == ct.is_discrete
    assert repr(ce).split("(")[0] == repr(ct).split("(")[0]


def test_dependent_constraints():
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="cannot be checked"):
        C.dependent.check(ember.zeros(1))
    assert C.is_dependent(D.Uniform.support) and C.is_dependent(D.Categorical.support)
    assert isinstance(D.Uniform(0.0, 1.0).support, C.Constraint)
    ind = C.independent(C.positive, 1)
    assert ind.event_dim == 1
    assert ind.check(ember.tensor([[1.0, 2.0], [1.0, -2.0]])).tolist() == [True, False]
