"""The one-pass dropout kernels against their references (bit-identical), and F.dropout
through them: same values as the ufunc formula under one seed, gradients, double backward."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import kernels

from .test_kernels import DTYPES, compiled, needs_numba, noncontig


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7, 13), (3, 70001)])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_kernels_match_reference(dt, shape, p):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dt)
    x.reshape(-1)[0] = np.nan
    u = rng.random(shape, dtype=dt)
    app, aref = compiled("dropout_apply")
    (o1, m1), (o2, m2) = app(x, u, p, 1 / (1 - p)), aref(x, u, p, 1 / (1 - p))
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(m1, m2)
    assert m1.dtype == np.uint8 and o1.dtype == dt
    bwd, bref = compiled("dropout_backward")
    g = rng.standard_normal(shape).astype(dt)
    np.testing.assert_array_equal(bwd(g, m1, 1 / (1 - p)), bref(g, m1, 1 / (1 - p)))
    # non-contiguous inputs
    xn, un = noncontig(x), noncontig(u)
    np.testing.assert_array_equal(app(xn, un, p, 2.0)[0], aref(x, u, p, 2.0)[0])
    np.testing.assert_array_equal(bwd(noncontig(g), m1, 3.0), bref(g, m1, 3.0))


def test_shape_mismatch_names_the_input():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="u must have the input's shape"):
        kernels.get("dropout_apply", x)(x, np.zeros((3, 2), np.float32), 0.5, 2.0)


@needs_numba
@pytest.mark.parametrize("dt", [ember.float32, ember.float64])
def test_functional_dropout_same_values_as_ufunc_formula(dt):
    x = ember.randn(33, 17, dtype=dt)
    ember.manual_seed(3)
    y = F.dropout(x, 0.3)
    ember.manual_seed(3)
    from ember.random import _gen

    u = _gen(None, x.device).random(tuple(x.shape), dtype=x.numpy().dtype)
    want = x.numpy() * ((u >= 0.3).astype(u.dtype) * u.dtype.type(1 / 0.7))
    np.testing.assert_array_equal(y.numpy(), want)


@needs_numba
def test_functional_dropout_gradients_and_double_backward():
    x = ember.randn(40, 9, dtype=ember.float64, requires_grad=True)
    ember.manual_seed(1)
    y = F.dropout(x, 0.25)
    keep = y.detach().numpy() != 0
    g = np.random.default_rng(0).standard_normal((40, 9))
    (y * ember.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g * keep / 0.75, rtol=1e-12)
    # double backward: d/dx of sum(dropout(x)^2) = 2 * dropout(x) * mask * scale
    x.grad = None
    ember.manual_seed(1)
    y = F.dropout(x, 0.25)
    (gx,) = ember.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), 2 * y.detach().numpy() * keep / 0.75)
    (ggx,) = ember.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(ggx.numpy(), 2 * keep / 0.75 ** 2, rtol=1e-12)


def test_functional_dropout_same_in_both_modes():
    x = ember.randn(8, 8)
    outs = []
    for m in ("auto", "numpy"):
        old = kernels.set_mode(m)
        try:
            ember.manual_seed(5)
            outs.append(F.dropout(x, 0.5).numpy())
        finally:
            kernels.set_mode(old)
    np.testing.assert_array_equal(*outs)
