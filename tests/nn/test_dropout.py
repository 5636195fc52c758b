"""Dropout functionals: masks cannot match PyTorch's RNG, so the tests check statistics
(fraction dropped, scaling, channel structure, SELU moments), determinism under
ember.manual_seed, identities (eval, p=0), p=1, gradients through kept elements only,
in-place variants and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F

ALPHA_S = 1.7580993408473766


def _warnless(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p, device):
    x = ember.ones(200, 100, device=device)
    y = F.dropout(x, p).cpu().numpy()
    kept = y != 0
    assert abs(1 - kept.mean() - p) < 0.02
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)
    assert y.dtype == np.float32


def test_dropout_deterministic_under_seed():
    x = ember.randn(50, 20)
    ember.manual_seed(123)
    a = F.dropout(x, 0.3).numpy()
    ember.manual_seed(123)
    b = F.dropout(x, 0.3).numpy()
    c = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("fn,shape,kw", [
    (F.dropout, (4, 5), {}), (F.dropout1d, (2, 3, 4), {}), (F.dropout2d, (2, 3, 2, 2), {}),
    (F.dropout3d, (2, 3, 2, 2, 2), {}), (F.alpha_dropout, (4, 5), {"training": True}),
    (F.feature_alpha_dropout, (2, 3, 4), {"training": True})])
def test_identity_eval_and_p0_zero_p1(fn, shape, kw):
    x = ember.randn(*shape)
    kw_eval = dict(kw, training=False)
    assert fn(x, 0.5, **kw_eval) is x
    assert fn(x, 0.0, **kw) is x
    y = fn(x, 1.0, **kw)
    assert y is not x and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), 0)


def test_alpha_dropout_default_is_eval():
    x = ember.randn(10)
    assert F.alpha_dropout(x) is x and F.feature_alpha_dropout(x.reshape(2, 5)) is not None


@pytest.mark.parametrize("fn,shape,unit", [
    (F.dropout1d, (40, 30, 7), (40, 30, 1)), (F.dropout1d, (300, 7), (300, 1)),
    (F.dropout2d, (40, 30, 3, 2), (40, 30, 1, 1)), (F.dropout2d, (40, 30, 5), (40, 30, 1)),
    (F.dropout3d, (40, 30, 2, 2, 2), (40, 30, 1, 1, 1)),
    (F.dropout3d, (300, 2, 3, 2), (300, 1, 1, 1)),
])
def test_channel_dropout_structure(fn, shape, unit):
    p = 0.4
    y = _warnless(fn, ember.ones(*shape), p).numpy()
    # each channel is all kept (at 1 / (1 - p)) or all dropped
    axes = tuple(i for i, u in enumerate(unit) if u == 1)
    lo, hi = y.min(axis=axes), y.max(axis=axes)
    np.testing.assert_array_equal(lo, hi)
    assert set(np.unique(lo)) <= {0.0, np.float32(1 / (1 - p))}
    assert abs((lo == 0).mean() - p) < 0.05


def test_dropout2d_warnings_match_torch():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3))
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(ember.ones(2, 3, 4))


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_values_and_moments(feature):
    p = 0.3
    a = 1 / np.sqrt((ALPHA_S ** 2 * p + 1) * (1 - p))
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    shape = (400, 300, 1) if feature else (400, 300)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = fn(ember.tensor(x), p, training=True).numpy()
    dropped_val = np.float32(-ALPHA_S * a + ALPHA_S * a * p)
    dropped = np.isclose(y, dropped_val, atol=1e-6) & ~np.isclose(x * a + ALPHA_S * a * p,
                                                                     dropped_val, atol=1e-6)
    assert abs(dropped.mean() - p) < 0.02
    kept = ~dropped
    np.testing.assert_allclose(y[kept], (x * a + ALPHA_S * a * p)[kept], rtol=1e-5, atol=1e-5)
    # the point of alpha dropout: zero-mean unit-variance input keeps its moments
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    t = TF.alpha_dropout(torch.from_numpy(x), p, training=True).numpy()
    assert abs(t.mean() - y.mean()) < 0.03 and abs(t.std() - y.std()) < 0.03


@pytest.mark.parametrize("fn,shape,kw", [
    (F.dropout, (30, 20), {}), (F.dropout2d, (6, 5, 3, 2), {}),
    (F.alpha_dropout, (30, 20), {"training": True}),
    (F.feature_alpha_dropout, (6, 5, 4), {"training": True})])
def test_grad_flows_through_kept_only(fn, shape, kw, device):
    x = ember.randn(*shape, device=device, requires_grad=True)
    y = fn(x, 0.4, **kw)
    g = ember.randn(*shape, device=device)
    (gx,) = ember.autograd.grad([y], [x], [g], create_graph=True)
    xn, yn, gn, gxn = (t.detach().cpu().numpy() for t in (x, y, g, gx))
    # the gradient is g times the (constant) per-element slope: 0 where dropped
    slope = gxn / gn
    kept = slope != 0
    assert 0 < kept.mean() < 1
    scale = slope[kept]
    np.testing.assert_allclose(scale, scale[0], rtol=1e-5)
    if fn in (F.dropout, F.dropout2d):
        np.testing.assert_allclose(yn[~kept], 0)
        np.testing.assert_allclose(scale[0], 1 / 0.6, rtol=1e-5)
    # linear in x: the gradient does not depend on x (as in PyTorch, it needs no graph)
    if gx.requires_grad:
        (ggx,) = ember.autograd.grad([(gx * gx).sum()], [x], allow_unused=True)
        assert ggx is None or np.all(ggx.cpu().numpy() == 0)


def test_inplace_variants():
    x = ember.ones(100, 10)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    x = ember.ones(4, 8, 3)
    y = F.dropout1d(x, 0.5, inplace=True)
    assert y is x and np.all(x.numpy().min(axis=2) == x.numpy().max(axis=2))
    x = ember.randn(50, 4)
    y = F.alpha_dropout(x, 0.5, True, inplace=True)
    assert y is x
    # in place on a non-leaf keeps the graph
    w = ember.ones(20, requires_grad=True)
    h = w * 2
    F.dropout(h, 0.5, inplace=True).sum().backward()
    assert set(np.unique(w.grad.numpy())) <= {0.0, 4.0}
    with pytest.raises(RuntimeError, match="in-place"):
        F.dropout(ember.ones(3, requires_grad=True), 0.5, inplace=True)


def test_dtypes_kept():
    for dt in (ember.float64, ember.float16):
        x = ember.ones(10, 10, dtype=dt)
        assert F.dropout(x, 0.3).dtype == dt
        assert F.alpha_dropout(x, 0.3, True).dtype == dt


@pytest.mark.parametrize("fn", [F.dropout, F.dropout1d, F.dropout2d, F.dropout3d,
                                F.alpha_dropout, F.feature_alpha_dropout])
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_p_out_of_range(fn, p):
    with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                         f"but got {p}"):
        fn(ember.ones(2, 3, 4, 4), p)


def test_shape_errors():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                                           "4D input"):
        F.dropout1d(ember.ones(2, 3, 4, 4))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        _warnless(F.dropout2d, ember.ones(5), 0.5)
