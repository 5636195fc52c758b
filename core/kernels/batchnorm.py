"""Batch normalization over (N, C, L), forward (with a fused activation) and backward.

``x`` is seen as (N, C, L) (``L`` the spatial size), statistics per channel over N and L.

* ``batch_norm_stats(x) -> (mean, var)``: per channel, biased variance, (C,) in x's dtype;
* ``batch_norm_apply(x, scale, shift, act) -> y``: ``y = act(x * scale[c] + shift[c])``,
  ``act`` one of ``ACTS`` ("none", "relu", "relu6", "hardswish", "hardsigmoid", "silu"):
  the eval-mode norm is ``scale = w * invstd``, ``shift = b - mean * scale``, and a
  following activation costs no extra pass;
* ``batch_norm_backward(g, x, mean, invstd, w, batch, need_x, need_wb) -> (gx, gw, gb)``::

      gb = sum(g);  gw = invstd * (sum(g * x) - mean * gb)
      gx = g * k1 + x * k2 + k3,  k1 = invstd * w
      (batch statistics: k2 = -k1 * invstd * gw / M, k3 = -k1 * gb / M - mean * k2;
       running statistics: k2 = k3 = 0)

The numpy references make a pass per ufunc (about eight forward, ten backward in training).
The compiled kernels work a channel at a time (its N rows of L stay in L2 between the two
short passes), channels split over ember's threads: the statistics read x twice from cache,
the backward reads g and x for the sums and again for ``gx``.

    >>> import numpy as np
    >>> x = np.array([[[1.0, 3.0]], [[5.0, 7.0]]], np.float32)   # (N=2, C=1, L=2)
    >>> [v.tolist() for v in batch_norm_stats(x)]
    [[4.0], [5.0]]
    >>> batch_norm_apply(x, np.float32([1]), np.float32([-4]), "relu").ravel().tolist()
    [0.0, 0.0, 1.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import compiled_dtype, contiguous, split

__all__ = ["ACTS", "batch_norm_stats", "batch_norm_apply", "batch_norm_backward"]

ACTS = ("none", "relu", "relu6", "hardswish", "hardsigmoid", "silu")


def _ncl(x):
    if x.ndim != 3:
        raise ValueError(f"batch_norm kernels take x as (N, C, L), got shape {x.shape}")
    return x.shape


def _act_code(act):
    try:
        return ACTS.index(act)
    except ValueError:
        raise ValueError(f"batch_norm_apply: act must be one of {ACTS}, got {act!r}") from None


# ----------------------------------------------------------------------------- reference

def act_reference(z, act):
    """``act(z)`` in numpy (z's dtype), in place on ``z``."""
    f = z.dtype.type
    if act == "relu":
        np.maximum(z, f(0), out=z)
    elif act == "relu6":
        np.clip(z, f(0), f(6), out=z)
    elif act == "hardswish":
        z *= np.clip(z + f(3), f(0), f(6)) * f(1 / 6)
    elif act == "hardsigmoid":
        z += f(3)
        np.clip(z, f(0), f(6), out=z)
        z *= f(1 / 6)
    elif act == "silu":
        with np.errstate(over="ignore"):
            z /= np.exp(-z) + f(1)
    elif act != "none":
        _act_code(act)
    return z


def batch_norm_stats_reference(x):
    """Per-channel ``(mean, var)`` (biased) of (N, C, L) x."""
    N, C, L = _ncl(x)
    m = max(N * L, 1)
    mean = x.sum(axis=(0, 2)) / x.dtype.type(m)
    xc = x - mean[:, None]
    var = np.einsum("ncl,ncl->c", xc, xc) / x.dtype.type(m)
    return mean.astype(x.dtype, copy=False), var.astype(x.dtype, copy=False)


def batch_norm_apply_reference(x, scale, shift, act="none"):
    """``act(x * scale[c] + shift[c])`` for (N, C, L) x."""
    _ncl(x)
    _act_code(act)
    y = x * scale[:, None]
    y += shift[:, None]
    return act_reference(y.astype(x.dtype, copy=False), act)


def batch_norm_backward_reference(g, x, mean, invstd, w=None, batch=True, need_x=True,
                                  need_wb=True):
    """``(gx, gw, gb)`` (see the module doc); ``gw``/``gb`` None without ``need_wb``,
    ``gx`` None without ``need_x``."""
    N, C, L = _ncl(x)
    m = x.dtype.type(max(N * L, 1))
    gb = g.sum(axis=(0, 2))
    sgx = np.einsum("ncl,ncl->c", g, x)
    gw = invstd * (sgx - mean * gb)
    gx = None
    if need_x:
        k1 = invstd if w is None else invstd * w
        gx = g * k1[:, None]
        if batch:
            k2 = -k1 * invstd * gw / m
            k3 = -k1 * gb / m - mean * k2
            gx += x * k2[:, None]
            gx += k3[:, None]
        gx = gx.astype(x.dtype, copy=False)
    if not need_wb:
        return gx, None, None
    return gx, gw.astype(x.dtype, copy=False), gb.astype(x.dtype, copy=False)


# ----------------------------------------------------------------------------- compiled

@jit
def _stats(x, mean, var, lo, hi):
    """Channels ``lo..hi``: mean, then the centred sum of squares (rows from cache)."""
    N, L = x.shape[0], x.shape[2]
    zero = x.dtype.type(0)
    inv = x.dtype.type(1.0) / x.dtype.type(max(N * L, 1))
    for c in range(lo, hi):
        s = 0.0
        for n in range(N):
            row = x[n, c]
            t = zero
            for k in range(L):
                t += row[k]
            s += t
        mu = x.dtype.type(s) * inv
        q = 0.0
        for n in range(N):
            row = x[n, c]
            t = zero
            for k in range(L):
                d = row[k] - mu
                t += d * d
            q += t
        mean[c] = mu
        var[c] = x.dtype.type(q) * inv


@jit(inline="always")
def _act_row(src, dst, sc, sh, act):
    """``dst[k] = act(src[k] * sc + sh)``; the branch on ``act`` is outside the loops."""
    n = src.shape[0]
    zero = src.dtype.type(0)
    one = src.dtype.type(1)
    three = src.dtype.type(3)
    six = src.dtype.type(6)
    sixth = src.dtype.type(1.0 / 6.0)
    if act == 0:
        for k in range(n):
            dst[k] = src[k] * sc + sh
    elif act == 1:
        for k in range(n):
            dst[k] = max(src[k] * sc + sh, zero)
    elif act == 2:
        for k in range(n):
            dst[k] = min(max(src[k] * sc + sh, zero), six)
    elif act == 3:
        for k in range(n):
            z = src[k] * sc + sh
            dst[k] = z * min(max(z + three, zero), six) * sixth
    elif act == 4:
        for k in range(n):
            z = src[k] * sc + sh
            dst[k] = min(max(z + three, zero), six) * sixth
    else:
        for k in range(n):
            z = src[k] * sc + sh
            dst[k] = z / (np.exp(-z) + one)


@jit
def _apply(x, scale, shift, y, act, lo, hi):
    """Planes ``lo..hi`` of (N * C)."""
    C = x.shape[1]
    for pl in range(lo, hi):
        n, c = pl // C, pl % C
        _act_row(x[n, c], y[n, c], scale[c], shift[c], act)


@jit
def _bwd(g, x, mean, invstd, w, gx, gw, gb, batch, need_x, lo, hi):
    """Channels ``lo..hi``: the sums, then ``gx`` (rows of g and x again from cache)."""
    N, L = x.shape[0], x.shape[2]
    zero = x.dtype.type(0)
    m = x.dtype.type(max(N * L, 1))
    for c in range(lo, hi):
        s1 = 0.0
        s2 = 0.0
        for n in range(N):
            gr, xr = g[n, c], x[n, c]
            t1 = zero
            t2 = zero
            for k in range(L):
                gk = gr[k]
                t1 += gk
                t2 += gk * xr[k]
            s1 += t1
            s2 += t2
        sb = x.dtype.type(s1)
        mu, rs = mean[c], invstd[c]
        swv = rs * (x.dtype.type(s2) - mu * sb)
        gb[c] = sb
        gw[c] = swv
        if not need_x:
            continue
        k1 = rs * w[c]
        k2 = zero
        k3 = zero
        if batch:
            k2 = -k1 * rs * swv / m
            k3 = -k1 * sb / m - mu * k2
        for n in range(N):
            gr, xr, orow = g[n, c], x[n, c], gx[n, c]
            for k in range(L):
                orow[k] = gr[k] * k1 + xr[k] * k2 + k3


def batch_norm_stats(x):
    """Per-channel ``(mean, var)`` of (N, C, L) x, compiled."""
    if not compiled_dtype(x):
        return batch_norm_stats_reference(x)
    N, C, L = _ncl(x)
    x = contiguous(x)
    mean, var = np.empty(C, x.dtype), np.empty(C, x.dtype)
    split(lambda lo, hi: _stats(x, mean, var, lo, hi), C, 2 * x.size)
    return mean, var


def batch_norm_apply(x, scale, shift, act="none", out=None):
    """``act(x * scale[c] + shift[c])``, compiled: one pass (``out`` may be ``x``)."""
    code = _act_code(act)
    if not compiled_dtype(x, scale, shift):
        y = batch_norm_apply_reference(x, scale, shift, act)
        if out is not None:
            out[...] = y
            return out
        return y
    N, C, L = _ncl(x)
    x, scale, shift = contiguous(x), contiguous(scale), contiguous(shift)
    y = np.empty_like(x) if out is None else out
    split(lambda lo, hi: _apply(x, scale, shift, y, code, lo, hi), N * C, 2 * x.size)
    return y


def batch_norm_backward(g, x, mean, invstd, w=None, batch=True, need_x=True, need_wb=True):
    """``(gx, gw, gb)`` of the batch norm, compiled (see the module doc)."""
    if not compiled_dtype(g, x, mean, invstd, *(() if w is None else (w,))):
        return batch_norm_backward_reference(g, x, mean, invstd, w, batch, need_x, need_wb)
    N, C, L = _ncl(x)
    dt = x.dtype
    g, x = contiguous(g), contiguous(x)
    mean, invstd = contiguous(mean), contiguous(invstd)
    wk = np.ones(C, dt) if w is None else contiguous(w)
    gx = np.empty_like(x) if need_x else np.empty((N, C, 0), dt)
    gw, gb = np.empty(C, dt), np.empty(C, dt)
    split(lambda lo, hi: _bwd(g, x, mean, invstd, wk, gx, gw, gb, batch, need_x, lo, hi), C,
          (4 if need_x else 2) * x.size)
    return (gx if need_x else None), (gw if need_wb else None), (gb if need_wb else None)


register("batch_norm_stats", reference=batch_norm_stats_reference, cpu=batch_norm_stats)
register("batch_norm_apply", reference=batch_norm_apply_reference, cpu=batch_norm_apply)
register("batch_norm_backward", reference=batch_norm_backward_reference,
         cpu=batch_norm_backward)
