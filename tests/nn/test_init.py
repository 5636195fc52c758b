"""nn.init against torch: exact for deterministic initialisers, by bounds and moments for
random ones (the two libraries' random streams differ)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
from ember.nn import init


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                        ("tanh", None), ("relu", None), ("leaky_relu", None),
                                        ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param))


@pytest.mark.parametrize("shape", [(4, 3), (8, 4, 3, 3), (5, 2, 7)])
def test_fans(shape):
    want = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(ember.empty(*shape)) == want


def test_deterministic_initialisers_match_torch():
    for fn, shape, kw in [("eye_", (3, 5), {}), ("dirac_", (4, 2, 3, 3), {}),
                          ("dirac_", (6, 3, 3), {"groups": 2}), ("constant_", (2, 3),
                                                                   {"val": 0.25}),
                          ("ones_", (2,), {}), ("zeros_", (2, 2), {})]:
        e, t = ember.empty(*shape), torch.empty(shape)
        getattr(init, fn)(e, **kw)
        getattr(torch.nn.init, fn)(t, **kw)
        np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=fn)


def _big():
    return ember.empty(256, 512)


@pytest.mark.parametrize("fn,kw,bound", [
    ("uniform_", {"a": -0.3, "b": 0.7}, (-0.3, 0.7)),
    ("xavier_uniform_", {"gain": 2.0}, (-2 * math.sqrt(6 / 768), 2 * math.sqrt(6 / 768))),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, (-1 / math.sqrt(512), 1 / math.sqrt(512))),
    ("trunc_normal_", {"std": 1.0, "a": -0.5, "b": 1.5}, (-0.5, 1.5)),
])
def test_bounded_initialisers(fn, kw, bound):
    w = getattr(init, fn)(_big(), **kw)
    lo, hi = bound
    a = w.numpy()
    assert a.dtype == np.float32
    assert lo <= a.min() and a.max() <= hi
    assert a.min() < lo + 0.05 * (hi - lo) and a.max() > hi - 0.05 * (hi - lo)


@pytest.mark.parametrize("fn,kw,std", [
    ("normal_", {"mean": 0.0, "std": 0.02}, 0.02),
    ("xavier_normal_", {}, math.sqrt(2 / 768)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2 / 256)),
])
def test_normal_initialisers_moments(fn, kw, std):
    a = getattr(init, fn)(_big(), **kw).numpy()
    assert abs(a.mean()) < 0.02 * std * 10
    assert a.std() == pytest.approx(std, rel=0.02)


def test_trunc_normal_moments_match_the_truncated_distribution():
    a = init.trunc_normal_(_big(), mean=0.0, std=1.0, a=-1.0, b=1.0).numpy()
    t = torch.nn.init.trunc_normal_(torch.empty(256, 512), a=-1.0, b=1.0).numpy()
    assert a.std() == pytest.approx(t.std(), rel=0.02)  # ~0.538 for [-1, 1]


def test_orthogonal_and_sparse():
    for shape in [(6, 4), (4, 6), (3, 2, 2)]:
        w = init.orthogonal_(ember.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1)
        g = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(g, 4 * np.eye(g.shape[0]), atol=1e-5)
    s = init.sparse_(ember.empty(10, 7), sparsity=0.3).numpy()
    assert ((s == 0).sum(0) >= 3).all()


def test_generator_makes_draws_reproducible_and_no_graph():
    w = ember.empty(3, 4, requires_grad=True)
    a = init.kaiming_uniform_(w, generator=ember.Generator().manual_seed(5)).detach().numpy().copy()
    b = init.kaiming_uniform_(w, generator=ember.Generator().manual_seed(5)).detach().numpy()
    np.testing.assert_array_equal(a, b)
    assert w.grad_fn is None and w.requires_grad


def test_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
