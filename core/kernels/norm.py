"""Row-wise layer normalization, forward and backward, over the last axis of (M, K) rows.

Forward: ``mean = x.mean(1)``, ``rstd = 1 / sqrt(x.var(1) + eps)`` (biased variance),
``y = (x - mean) * rstd * w + b``; returns ``(y, mean, rstd)`` (``mean``/``rstd`` shaped
(M,), in x's dtype, kept for the backward). Backward, with ``xhat = (x - mean) * rstd``::

    gw = sum_rows(g * xhat);  gb = sum_rows(g)
    gx = rstd * (g*w - mean_k(g*w) - xhat * mean_k(g*w * xhat))

``w``/``b`` may be None (no affine). The numpy reference makes a memory pass per ufunc
(about ten each way); the compiled kernel reads each row once per direction while it sits
in L1/L2 (two short passes over the cached row), rows split over ember's threads, and the
weight/bias gradients summed per thread then combined.

    >>> import numpy as np
    >>> y, mean, rstd = layer_norm(np.array([[1.0, 3.0]], np.float32), None, None, 0.0)
    >>> y.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [2.0], [1.0])
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import chunks, compiled_dtype, contiguous, split

__all__ = ["layer_norm", "layer_norm_backward"]


def _rows(x):
    if x.ndim != 2:
        raise ValueError(f"layer_norm kernels take (M, K) rows, got shape {x.shape}")
    return x.shape


# ----------------------------------------------------------------------------- reference

def layer_norm_reference(x, w=None, b=None, eps=1e-5):
    """Layer norm over the last axis of (M, K): ``(y, mean, rstd)`` (numpy passes)."""
    _rows(x)
    mean = x.mean(axis=1, keepdims=True)
    xc = x - mean
    var = np.einsum("ij,ij->i", xc, xc)[:, None] / x.shape[1] if x.shape[1] else mean * 0
    rstd = 1.0 / np.sqrt(var + x.dtype.type(eps))
    y = xc * rstd
    if w is not None:
        y *= w
    if b is not None:
        y += b
    return y.astype(x.dtype, copy=False), mean[:, 0], rstd[:, 0].astype(x.dtype, copy=False)


def layer_norm_backward_reference(g, x, mean, rstd, w=None, need_affine=True):
    """``(gx, gw, gb)`` of ``layer_norm`` (``gw``/``gb`` None without ``w``/affine)."""
    _rows(x)
    K = x.shape[1]
    xhat = (x - mean[:, None]) * rstd[:, None]
    gxh = g * w if w is not None else g
    a = gxh.mean(axis=1, keepdims=True)
    c = np.einsum("ij,ij->i", gxh, xhat)[:, None] / K
    gx = (gxh - a - xhat * c) * rstd[:, None]
    gw = gb = None
    if need_affine:
        gw = np.einsum("ij,ij->j", g, xhat)
        gb = g.sum(axis=0)
    return gx.astype(x.dtype, copy=False), gw, gb


# ----------------------------------------------------------------------------- compiled

@jit
def _ln_fwd(x, w, b, y, mean, rstd, inv_k, eps, lo, hi):
    K = x.shape[1]
    zero = x.dtype.type(0)
    one = x.dtype.type(1)
    for r in range(lo, hi):
        xr = x[r]
        s = zero
        for k in range(K):
            s += xr[k]
        mu = s * inv_k
        q = zero
        for k in range(K):
            d = xr[k] - mu
            q += d * d
        rs = one / np.sqrt(q * inv_k + eps)
        mean[r] = mu
        rstd[r] = rs
        yr = y[r]
        for k in range(K):
            yr[k] = (xr[k] - mu) * rs * w[k] + b[k]


@jit
def _ln_bwd(g, x, mean, rstd, w, gx, gw, gb, inv_k, lo, hi):
    """Rows ``lo..hi``: ``gx``, and this range's ``gw``/``gb`` partial sums (added to)."""
    K = x.shape[1]
    zero = x.dtype.type(0)
    for r in range(lo, hi):
        xr, gr = x[r], g[r]
        mu, rs = mean[r], rstd[r]
        a = zero
        c = zero
        for k in range(K):
            xh = (xr[k] - mu) * rs
            gk = gr[k]
            gwk = gk * w[k]
            a += gwk
            c += gwk * xh
            gw[k] += gk * xh
            gb[k] += gk
        a *= inv_k
        c *= inv_k
        gxr = gx[r]
        for k in range(K):
            xh = (xr[k] - mu) * rs
            gxr[k] = rs * (gr[k] * w[k] - a - xh * c)


def layer_norm(x, w=None, b=None, eps=1e-5):
    """Layer norm over the last axis of (M, K), compiled: ``(y, mean, rstd)``."""
    if not compiled_dtype(x, *(t for t in (w, b) if t is not None)):
        return layer_norm_reference(x, w, b, eps)
    M, K = _rows(x)
    dt = x.dtype
    x = contiguous(x)
    w = np.ones(K, dt) if w is None else contiguous(w)
    b = np.zeros(K, dt) if b is None else contiguous(b)
    y = np.empty_like(x)
    mean, rstd = np.empty(M, dt), np.empty(M, dt)
    inv_k, e = dt.type(1.0 / max(K, 1)), dt.type(eps)
    split(lambda lo, hi: _ln_fwd(x, w, b, y, mean, rstd, inv_k, e, lo, hi), M, 2 * M * K)
    return y, mean, rstd


def layer_norm_backward(g, x, mean, rstd, w=None, need_affine=True):
    """``(gx, gw, gb)`` of ``layer_norm``, compiled: one read of each row of ``g`` and
    ``x`` (kept in cache for the second short pass)."""
    if not compiled_dtype(g, x, mean, rstd, *(() if w is None else (w,))):
        return layer_norm_backward_reference(g, x, mean, rstd, w, need_affine)
    M, K = _rows(x)
    dt = x.dtype
    g, x, mean, rstd = contiguous(g), contiguous(x), contiguous(mean), contiguous(rstd)
    wk = np.ones(K, dt) if w is None else contiguous(w)
    gx = np.empty_like(x)
    parts = chunks(M, 3 * M * K)
    gw = np.zeros((max(len(parts), 1), K), dt)
    gb = np.zeros((max(len(parts), 1), K), dt)
    inv_k = dt.type(1.0 / max(K, 1))

    def run(lo, hi):
        for p in range(lo, hi):
            r0, r1 = parts[p]
            _ln_bwd(g, x, mean, rstd, wk, gx, gw[p], gb[p], inv_k, r0, r1)

    split(run, len(parts), 3 * M * K)
    if not need_affine:
        return gx, None, None
    return gx, gw.sum(axis=0), gb.sum(axis=0)


register("layer_norm", reference=layer_norm_reference, cpu=layer_norm)
register("layer_norm_backward", reference=layer_norm_backward_reference,
         cpu=layer_norm_backward)
