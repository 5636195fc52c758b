"""Softmax / log_softmax / class-index cross-entropy kernels against their numpy references
(float32/float64, odd shapes, non-contiguous rows, -inf and NaN), the references against
torch, and the wiring in ``F.softmax``/``F.log_softmax``/``F.cross_entropy`` (kernel path
taken for contiguous last-dim inputs, numpy path for others, double backward intact)."""
import importlib.util

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import kernels

needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None,
    reason="numba is not installed: only the numpy references can be tested")

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
SHAPES = [(1, 1), (7, 13), (33, 257), (3, 1000), (2, 4099)]


def compiled(name):
    k = kernels.lookup(name)
    assert k.cpu is not None and k.cpu is not k.reference
    return k.cpu, k.reference


def noncontig(a):
    big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    v = big[..., ::2]
    assert not v.flags.c_contiguous or a.shape[-1] < 2
    return v


def close(a, b, dt):
    np.testing.assert_allclose(a, b, **TOL[dt])


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_reference(dt, shape, log):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 8).astype(dt)
    g = rng.standard_normal(shape).astype(dt)
    fwd, fwd_ref = compiled("softmax")
    bwd, bwd_ref = compiled("softmax_backward")
    y_ref = fwd_ref(x, log)
    close(fwd(x, log), y_ref, dt)
    close(fwd(noncontig(x), log), y_ref, dt)
    gx_ref = bwd_ref(g, y_ref, log)
    close(bwd(g, y_ref, log), gx_ref, dt)
    close(bwd(noncontig(g), noncontig(y_ref), log), gx_ref, dt)
    assert fwd(x, log).dtype == dt and bwd(g, y_ref, log).dtype == dt


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
def test_softmax_masked_and_nan_rows(dt):
    x = np.array([[0.0, -np.inf, 1.0, -np.inf],   # masked entries: exactly 0 / -inf
                  [np.nan, 1.0, 2.0, 3.0],         # NaN propagates to the row
                  [-200.0, 0.0, -100.0, 5.0]],     # underflow far below exp's range
                 dt)
    fwd, fwd_ref = compiled("softmax")
    with np.errstate(invalid="ignore"):
        for log in (False, True):
            y, r = fwd(x, log), fwd_ref(x, log)
            np.testing.assert_array_equal(np.isnan(y), np.isnan(r))
            ok = ~np.isnan(r)
            np.testing.assert_allclose(y[ok], r[ok], **TOL[dt])
    y = fwd(x, False)
    assert y[0, 1] == 0 and y[0, 3] == 0 and y[2, 0] == 0 and np.isnan(y[1]).all()


def test_softmax_references_match_torch():
    x = np.random.default_rng(1).standard_normal((9, 31))
    g = np.random.default_rng(2).standard_normal((9, 31))
    ref, bref = kernels.lookup("softmax").reference, kernels.lookup("softmax_backward").reference
    for log, tf in ((False, torch.softmax), (True, torch.log_softmax)):
        tx = torch.from_numpy(x).requires_grad_()
        ty = tf(tx, -1)
        ty.backward(torch.from_numpy(g))
        np.testing.assert_allclose(ref(x, log), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(bref(g, ty.detach().numpy(), log), tx.grad.numpy(),
                                   rtol=1e-12, atol=1e-13)


def _targets(rng, n, c, ignore=-100):
    t = rng.integers(0, c, n)
    t[::5] = ignore
    return t


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_cross_entropy_matches_reference(dt, shape):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 8).astype(dt)
    t = _targets(rng, shape[0], shape[1], ignore=1 if shape[1] > 1 else -100)
    ign = 1 if shape[1] > 1 else -100
    fwd, fwd_ref = compiled("cross_entropy")
    bwd, bwd_ref = compiled("cross_entropy_backward")
    loss_ref, lse_ref = fwd_ref(x, t, ign)
    for xx in (x, noncontig(x)):
        loss, lse = fwd(xx, t, ign)
        close(loss, loss_ref, dt)
        close(lse, lse_ref, dt)
    assert (loss[t == ign] == 0).all()
    coef = rng.random(shape[0]).astype(dt)
    gx_ref = bwd_ref(x, t, lse_ref, coef, ign)
    close(bwd(x, t, lse_ref, coef, ign), gx_ref, dt)
    close(bwd(noncontig(x), t, lse_ref, coef, ign), gx_ref, dt)
    assert (gx_ref[t == ign] == 0).all()


def test_cross_entropy_references_match_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10, 7))
    t = _targets(rng, 10, 7)
    tx = torch.from_numpy(x).requires_grad_()
    tl = torch.nn.functional.cross_entropy(tx, torch.from_numpy(t), reduction="sum")
    tl.backward()
    ref = kernels.lookup("cross_entropy").reference
    bref = kernels.lookup("cross_entropy_backward").reference
    loss, lse = ref(x, t)
    np.testing.assert_allclose(loss.sum(), tl.item(), rtol=1e-12)
    np.testing.assert_allclose(bref(x, t, lse, np.ones(10)), tx.grad.numpy(), atol=1e-13)


# ------------------------------------------------------------------------- wiring in F.*

@needs_numba
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_functional_softmax_uses_kernel_and_keeps_double_backward(fn, monkeypatch):
    calls = []
    for name in ("softmax", "softmax_backward"):
        k = kernels.lookup(name)
        orig = k.cpu
        monkeypatch.setattr(k, "cpu", lambda *a, _o=orig, _n=name, **kw: (
            calls.append(_n), _o(*a, **kw))[1])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 17))
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.from_numpy(x).requires_grad_()
    ey, ty = getattr(F, fn)(ex, -1), getattr(torch, fn)(tx, -1)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = rng.standard_normal(x.shape)
    (eg,) = ember.autograd.grad((ey * ember.tensor(w)).sum(), ex, create_graph=True)
    (tg,) = torch.autograd.grad((ty * torch.from_numpy(w)).sum(), tx, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-11, atol=1e-13)
    assert calls == ["softmax"]  # create_graph: the differentiable path, not the raw kernel
    (eg * eg).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    calls.clear()
    ey = getattr(F, fn)(ember.tensor(x, requires_grad=True), 2)
    ey.backward(ember.tensor(w))
    assert calls == ["softmax", "softmax_backward"]
    calls.clear()
    getattr(F, fn)(ember.tensor(x), 1)                          # not the last dim
    getattr(F, fn)(ember.tensor(x).transpose(0, 2), -1)         # non-contiguous rows
    assert calls == []


@needs_numba
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_functional_cross_entropy_uses_kernel(reduction, monkeypatch):
    calls = []
    for name in ("cross_entropy", "cross_entropy_backward"):
        k = kernels.lookup(name)
        orig = k.cpu
        monkeypatch.setattr(k, "cpu", lambda *a, _o=orig, _n=name, **kw: (
            calls.append(_n), _o(*a, **kw))[1])
    rng = np.random.default_rng(6)
    x = rng.standard_normal((11, 9)).astype(np.float32)
    t = rng.integers(0, 9, 11)
    t[2] = 4
    ex, tx = ember.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    el = F.cross_entropy(ex, ember.tensor(t), ignore_index=4, reduction=reduction)
    tl = torch.nn.functional.cross_entropy(tx, torch.from_numpy(t), ignore_index=4,
                                           reduction=reduction)
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), rtol=2e-6, atol=1e-6)
    el.sum().backward()
    tl.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert calls == ["cross_entropy", "cross_entropy_backward"]
    calls.clear()
    F.cross_entropy(ex, ember.tensor(t), label_smoothing=0.1)
    F.cross_entropy(ex, ember.tensor(t), weight=ember.ones(9))
    assert calls == []


@needs_numba
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_functional_cross_entropy_kernel_double_backward(reduction):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5))
    t = np.array([0, 4, 2, 2, 1, 3])
    ex, tx = ember.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    el = F.cross_entropy(ex, ember.tensor(t), ignore_index=2, reduction=reduction)
    tl = torch.nn.functional.cross_entropy(tx, torch.from_numpy(t), ignore_index=2,
                                           reduction=reduction)
    assert type(el.grad_fn).__name__ == "CrossEntropyBackward"
    (eg,) = ember.autograd.grad(el, ex, create_graph=True)
    (tg,) = torch.autograd.grad(tl, tx, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = rng.standard_normal(x.shape)
    (eg * ember.tensor(w)).sum().backward()
    (tg * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
