"""Batch-norm and activation kernels against their numpy references (float32/float64, odd
shapes, non-contiguous inputs, in place, NaN), and the references against torch."""
import importlib.util
import math

import numpy as np
import pytest
import torch

from ember import kernels
from ember.kernels import activation as A
from ember.kernels import batchnorm as BN

needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None,
    reason="numba is not installed: only the numpy references can be tested")

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=3e-6, atol=3e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def compiled(name):
    k = kernels.lookup(name)
    assert k.cpu is not None and k.cpu is not k.reference
    return k.cpu, k.reference


def close(a, b, dt, scale=1.0):
    np.testing.assert_allclose(a, b, rtol=TOL[dt]["rtol"] * scale,
                               atol=TOL[dt]["atol"] * scale)


def noncontig(a):
    big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    v = big[..., ::2]
    assert not v.flags.c_contiguous or a.shape[-1] < 2
    return v


# ----------------------------------------------------------------------------- batch norm

BN_SHAPES = [(3, 5, 37), (1, 1, 1), (2, 7, 1), (4, 3, 4099)]


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_kernels_match_reference(dt, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 10).astype(dt)  # offset mean: centring matters
    st, st_ref = compiled("batch_norm_stats")
    for a, b in zip(st(noncontig(x)), st_ref(x)):
        close(a, b, dt, scale=10)
    C = shape[1]
    scale, shift = rng.standard_normal(C).astype(dt), rng.standard_normal(C).astype(dt)
    ap, ap_ref = compiled("batch_norm_apply")
    for act in BN.ACTS:
        close(ap(noncontig(x), scale, shift, act), ap_ref(x, scale, shift, act), dt)
    y = x.copy()
    ap(y, scale, shift, "relu", out=y)  # in place
    close(y, ap_ref(x, scale, shift, "relu"), dt)
    mean, var = st_ref(x)
    invstd = (1 / np.sqrt(var + dt(1e-5))).astype(dt)
    g = rng.standard_normal(shape).astype(dt)
    w = rng.standard_normal(C).astype(dt)
    bw, bw_ref = compiled("batch_norm_backward")
    for batch in (True, False):
        for wt in (w, None):
            got = bw(noncontig(g), x, mean, invstd, wt, batch)
            ref = bw_ref(g, x, mean, invstd, wt, batch)
            for a, b in zip(got, ref):
                close(a, b, dt, scale=100 * math.sqrt(x.size))
    gx, gw, gb = bw(g, x, mean, invstd, w, True, need_x=False)
    assert gx is None and gw is not None
    assert bw(g, x, mean, invstd, w, True, need_wb=False)[1:] == (None, None)


@needs_numba
def test_batch_norm_nan_propagates():
    x = np.ones((2, 2, 5), np.float32)
    x[1, 0, 3] = np.nan
    mean, var = kernels.lookup("batch_norm_stats").cpu(x)
    assert np.isnan(mean[0]) and np.isnan(var[0]) and mean[1] == 1 and var[1] == 0
    y = kernels.lookup("batch_norm_apply").cpu(x, np.ones(2, np.float32),
                                                np.zeros(2, np.float32), "none")
    assert np.isnan(y[1, 0, 3]) and np.isfinite(np.delete(y.ravel(), 13)).all()


def test_batch_norm_reference_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 6, 5))
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    tx = torch.tensor(x, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    ty = torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True, eps=1e-5)
    g = rng.standard_normal(ty.shape)
    ty.backward(torch.tensor(g))
    x3 = x.reshape(4, 3, 30)
    mean, var = BN.batch_norm_stats_reference(x3)
    invstd = 1 / np.sqrt(var + 1e-5)
    y = BN.batch_norm_apply_reference(x3, invstd * w, b - mean * invstd * w, "none")
    np.testing.assert_allclose(y.reshape(x.shape), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    gx, gw, gb = BN.batch_norm_backward_reference(g.reshape(x3.shape), x3, mean, invstd, w)
    np.testing.assert_allclose(gx.reshape(x.shape), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-10)
    for act, tf in (("relu", torch.relu), ("relu6", torch.nn.functional.relu6),
                    ("hardswish", torch.nn.functional.hardswish),
                    ("hardsigmoid", torch.nn.functional.hardsigmoid),
                    ("silu", torch.nn.functional.silu)):
        np.testing.assert_allclose(BN.act_reference(y.copy(), act).reshape(x.shape),
                                   tf(ty.detach()).numpy(), rtol=1e-12, atol=1e-12)


def test_batch_norm_rejects_bad_input():
    with pytest.raises(ValueError):
        BN.batch_norm_stats_reference(np.ones((2, 3)))
    with pytest.raises(ValueError):
        BN.batch_norm_apply(np.ones((1, 2, 3), np.float32), np.ones(2, np.float32),
                            np.zeros(2, np.float32), "tanh")


# ----------------------------------------------------------------------------- activations

def _act_input(dt, n=10007):  # odd, several blocks of 4096
    x = (np.random.default_rng(2).standard_normal(n) * 4).astype(dt)
    x[:9] = [-3, 3, 0, 6, -100, 100, -88, 89, 1e-3]
    return x


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("kind", A.KINDS)
def test_activation_matches_reference(dt, kind):
    fn, ref = compiled("activation")
    x = _act_input(dt)
    scale = 2.0 if kind in ("relu", "relu6", "hardswish", "hardsigmoid") else 1.0
    y, dy = fn(x, kind, True)
    yr, dr = ref(x, kind, True)
    close(y, yr, dt, scale)
    close(dy, dr, dt, scale=scale * (3 if dt == np.float32 else 1))
    y2, none = fn(noncontig(x.reshape(-1, 1)).reshape(-1), kind, False)  # strided input
    assert none is None
    close(y2, yr, dt, scale)
    z = x.reshape(1, 10007).copy()
    fn(z, kind, False, out=z)  # in place
    close(z.reshape(-1), yr, dt, scale)
    xn = x.copy()
    xn[5] = np.nan
    yn, dn = fn(xn, kind, True)
    assert np.isnan(yn[5])


@pytest.mark.parametrize("kind", A.KINDS)
def test_activation_reference_matches_torch(kind):
    x = _act_input(np.float64)
    tx = torch.tensor(x, requires_grad=True)
    F = torch.nn.functional
    tf = {"relu": F.relu, "relu6": F.relu6, "hardswish": F.hardswish,
          "hardsigmoid": F.hardsigmoid, "silu": F.silu, "gelu": F.gelu,
          "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[kind]
    ty = tf(tx)
    ty.sum().backward()
    y, dy = A.activation_reference(x, kind, True)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    # torch's float64 hardsigmoid gradient is its float32 constant 1/6
    rtol = 1e-7 if kind == "hardsigmoid" else 1e-12
    np.testing.assert_allclose(dy, tx.grad.numpy(), rtol=rtol, atol=1e-14)


@needs_numba
def test_activation_float32_within_torch_accuracy():
    """float32 exp/erf approximations: no further from float64 truth than torch's float32."""
    x = np.linspace(-10, 10, 200001).astype(np.float32)
    fn = kernels.lookup("activation").cpu
    F = torch.nn.functional
    for kind, tf in (("silu", F.silu), ("gelu", F.gelu),
                     ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"))):
        truth, _ = A.activation_reference(x.astype(np.float64), kind)
        ours = np.abs(fn(x, kind)[0] - truth).max()
        theirs = np.abs(tf(torch.from_numpy(x)).numpy() - truth).max()
        assert ours <= 4 * theirs + 1e-7, (kind, ours, theirs)
