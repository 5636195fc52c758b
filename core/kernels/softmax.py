"""Row-wise softmax / log_softmax over the last axis of (M, K) rows, forward and backward.

Forward (one row at a time, max-subtracted)::

    m = max_k x;  e = exp(x - m);  s = sum_k e
    softmax:      y = e / s
    log_softmax:  y = x - m - log(s)

Backward, from the output ``y`` (what the autograd node keeps)::

    softmax:      gx = y * (g - sum_k(g * y))
    log_softmax:  gx = g - exp(y) * sum_k(g)

The numpy reference makes about five memory passes each way; the compiled kernel reads a
row, keeps it in L1/L2 for the short passes over it (max, exp+sum, scale), rows split over
ember's threads. float32 uses the vectorisable ``exp`` of ``activation.py``.

    >>> import numpy as np
    >>> softmax(np.array([[0.0, 0.0]], np.float32), False).tolist()
    [[0.5, 0.5]]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import compiled_dtype, contiguous, split
from .activation import _exp_block

__all__ = ["softmax", "softmax_backward", "cross_entropy", "cross_entropy_backward"]


def _rows(x):
    if x.ndim != 2:
        raise ValueError(f"softmax kernels take (M, K) rows, got shape {x.shape}")
    return x.shape


# ----------------------------------------------------------------------------- reference

def softmax_reference(x, log=False):
    """softmax (``log``: log_softmax) over the last axis of (M, K) (numpy passes)."""
    _rows(x)
    if x.size == 0:
        return x.copy()
    z = x - x.max(axis=1, keepdims=True)
    if log:
        z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    else:
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
    return z.astype(x.dtype, copy=False)


def softmax_backward_reference(g, y, log=False):
    """``gx`` of ``softmax`` (``log``: of log_softmax) from the output ``y``."""
    _rows(y)
    if log:
        gx = g - np.exp(y) * g.sum(axis=1, keepdims=True)
    else:
        gx = (g - np.einsum("ij,ij->i", g, y)[:, None]) * y
    return gx.astype(y.dtype, copy=False)


# ----------------------------------------------------------------------------- compiled

@jit(inline="always")
def _row_exp_sum(xr, m, e, ib, fast):
    """``e = exp(xr - m)`` (exactly 0 below float32 exp's range), returns its sum."""
    K = xr.shape[0]
    zero = xr.dtype.type(0)
    for k in range(K):
        e[k] = xr[k] - m
    _exp_block(e, e, ib, fast)
    s = zero
    under = xr.dtype.type(-87.3)  # the fast exp clamps there: exp(-inf) must be 0
    for k in range(K):
        v = e[k] if xr[k] - m > under else zero
        e[k] = v
        s += v
    return s


@jit(inline="always")
def _row_max(xr):
    """The row's max; -inf rows give 0 (so -inf - m stays -inf, not NaN); NaN stays."""
    m = xr[0]
    for k in range(1, xr.shape[0]):
        v = xr[k]
        m = v if v > m else m
    if m == -np.inf:
        m = xr.dtype.type(0)
    return m


@jit
def _sm_fwd(x, y, e, ib, fast, lo, hi):
    """softmax of rows ``lo..hi``; ``e`` (K,) and ``ib`` (K,) int32: this range's scratch."""
    one = x.dtype.type(1)
    for r in range(lo, hi):
        xr = x[r]
        yr = y[r]
        m = _row_max(xr)
        if m != m:  # NaN row: NaN out, as numpy's max propagates it
            yr[:] = m
            continue
        inv = one / _row_exp_sum(xr, m, e, ib, fast)
        for k in range(xr.shape[0]):
            yr[k] = e[k] * inv


@jit
def _lsm_fwd(x, y, e, ib, fast, lo, hi):
    """log_softmax of rows ``lo..hi``."""
    for r in range(lo, hi):
        xr = x[r]
        yr = y[r]
        m = _row_max(xr)
        if m != m:
            yr[:] = m
            continue
        c = m + np.log(_row_exp_sum(xr, m, e, ib, fast))
        for k in range(xr.shape[0]):
            yr[k] = xr[k] - c


@jit
def _sm_bwd(g, y, gx, lo, hi):
    K = y.shape[1]
    zero = y.dtype.type(0)
    for r in range(lo, hi):
        gr = g[r]
        yr = y[r]
        gxr = gx[r]
        s = zero
        for k in range(K):
            s += gr[k] * yr[k]
        for k in range(K):
            gxr[k] = yr[k] * (gr[k] - s)


@jit
def _lsm_bwd(g, y, gx, ib, fast, lo, hi):
    K = y.shape[1]
    zero = y.dtype.type(0)
    for r in range(lo, hi):
        gr = g[r]
        yr = y[r]
        gxr = gx[r]
        s = zero
        for k in range(K):
            s += gr[k]
        _exp_block(yr, gxr, ib, fast)
        for k in range(K):
            gxr[k] = gr[k] - gxr[k] * s


def _scratch(K, dt):
    return np.empty(max(K, 1), dt), np.empty(max(K, 1), np.int32)


def softmax(x, log=False):
    """softmax (``log``: log_softmax) over the last axis of (M, K), compiled."""
    if not compiled_dtype(x):
        return softmax_reference(x, log)
    M, K = _rows(x)
    if x.size == 0:
        return x.copy()
    x = contiguous(x)
    y = np.empty_like(x)
    fast = x.dtype == np.float32

    fn = _lsm_fwd if log else _sm_fwd

    def run(lo, hi):
        e, ib = _scratch(K, x.dtype)
        fn(x, y, e, ib, fast, lo, hi)

    split(run, M, 3 * M * K)
    return y


def softmax_backward(g, y, log=False):
    """``gx`` of ``softmax``/log_softmax from its output ``y``, compiled: one read of each
    row of ``g`` and ``y``."""
    if not compiled_dtype(g, y):
        return softmax_backward_reference(g, y, log)
    M, K = _rows(y)
    if y.size == 0:
        return np.zeros_like(y)
    g, y = contiguous(g), contiguous(y)
    gx = np.empty_like(y)
    fast = y.dtype == np.float32

    def run(lo, hi):
        if log:
            _lsm_bwd(g, y, gx, np.empty(K, np.int32), fast, lo, hi)
        else:
            _sm_bwd(g, y, gx, lo, hi)

    split(run, M, 3 * M * K)
    return gx


# ------------------------------------------------------- cross entropy with class indices

def cross_entropy_reference(x, t, ignore_index=-100):
    """Per-row ``(loss, lse)`` of logits (M, K) against class indices ``t`` (M,):
    ``lse = logsumexp(x[r])``, ``loss = lse - x[r, t[r]]`` (0 where ``t == ignore_index``;
    ``lse`` is kept for the backward). Targets must be checked in range by the caller."""
    _rows(x)
    valid = t != ignore_index
    tt = np.where(valid, t, 0).astype(np.int64)
    m = x.max(axis=1)
    lse = np.log(np.exp(x - m[:, None]).sum(axis=1)) + m
    loss = np.where(valid, lse - x[np.arange(x.shape[0]), tt], 0)
    lse = np.where(valid, lse, 0)
    return loss.astype(x.dtype, copy=False), lse.astype(x.dtype, copy=False)


def cross_entropy_backward_reference(x, t, lse, coef, ignore_index=-100):
    """``gx = coef[r] * (softmax(x[r]) - onehot(t[r]))``; 0 on ignored rows."""
    _rows(x)
    valid = t != ignore_index
    gx = np.exp(x - lse[:, None])
    gx[np.arange(x.shape[0])[valid], t[valid]] -= 1
    gx *= np.where(valid, coef, 0)[:, None]
    return gx.astype(x.dtype, copy=False)


@jit
def _ce_fwd(x, t, loss, lse, e, ib, ignore, fast, lo, hi):
    K = x.shape[1]
    zero = x.dtype.type(0)
    under = x.dtype.type(-87.3)
    for r in range(lo, hi):
        tr = t[r]
        if tr == ignore:
            loss[r] = zero
            lse[r] = zero
            continue
        xr = x[r]
        m = xr[0]
        for k in range(1, K):
            v = xr[k]
            m = v if v > m else m
        if m != m or m == np.inf or m == -np.inf:  # NaN/inf rows: numpy's arithmetic
            s = zero
            for k in range(K):
                s += np.exp(xr[k] - m)
            c = m + np.log(s)
        else:
            for k in range(K):
                e[k] = xr[k] - m
            _exp_block(e, e, ib, fast)
            s = zero
            for k in range(K):
                v = e[k] if xr[k] - m > under else zero
                s += v
            c = m + np.log(s)
        lse[r] = c
        loss[r] = c - xr[tr]


@jit
def _ce_bwd(x, t, lse, coef, gx, ignore, fast, lo, hi):
    K = x.shape[1]
    zero = x.dtype.type(0)
    under = x.dtype.type(-87.3)
    ib = np.empty(K, np.int32)
    for r in range(lo, hi):
        tr = t[r]
        gxr = gx[r]
        if tr == ignore:
            for k in range(K):
                gxr[k] = zero
            continue
        xr = x[r]
        c, a = lse[r], coef[r]
        for k in range(K):
            gxr[k] = xr[k] - c
        _exp_block(gxr, gxr, ib, fast)
        for k in range(K):
            v = gxr[k] if xr[k] - c > under else zero
            gxr[k] = v * a
        gxr[tr] -= a


def cross_entropy(x, t, ignore_index=-100):
    """Per-row ``(loss, lse)`` as ``cross_entropy_reference``, compiled: one read of each
    row (max, then exp-sum over the row in cache); no softmax is written."""
    if not compiled_dtype(x) or type(t) is not np.ndarray:
        return cross_entropy_reference(x, t, ignore_index)
    M, K = _rows(x)
    x = contiguous(x)
    t = np.ascontiguousarray(t, dtype=np.int64)
    loss, lse = np.empty(M, x.dtype), np.empty(M, x.dtype)
    if K == 0:
        return cross_entropy_reference(x, t, ignore_index)
    fast = x.dtype == np.float32

    def run(lo, hi):
        e, ib = _scratch(K, x.dtype)
        _ce_fwd(x, t, loss, lse, e, ib, np.int64(ignore_index), fast, lo, hi)

    split(run, M, 2 * M * K)
    return loss, lse


def cross_entropy_backward(x, t, lse, coef, ignore_index=-100):
    """``gx`` of ``cross_entropy``, compiled: softmax - onehot scaled per row, one pass."""
    if not compiled_dtype(x, lse, coef) or type(t) is not np.ndarray or x.shape[1] == 0:
        return cross_entropy_backward_reference(x, t, lse, coef, ignore_index)
    M, K = _rows(x)
    x, lse, coef = contiguous(x), contiguous(lse), contiguous(coef)
    t = np.ascontiguousarray(t, dtype=np.int64)
    gx = np.empty_like(x)
    fast = x.dtype == np.float32
    split(lambda lo, hi: _ce_bwd(x, t, lse, coef, gx, np.int64(ignore_index), fast, lo, hi),
          M, 2 * M * K)
    return gx


register("cross_entropy", reference=cross_entropy_reference, cpu=cross_entropy)
register("cross_entropy_backward", reference=cross_entropy_backward_reference,
         cpu=cross_entropy_backward)
register("softmax", reference=softmax_reference, cpu=softmax)
register("softmax_backward", reference=softmax_backward_reference, cpu=softmax_backward)
