"""Shared array helpers of the convolutions (core/nn/functional/conv.py): output sizes,
per-thread scratch buffers, padding, sliding-window views and their adjoint (col2im)."""
from __future__ import annotations

import itertools
import math
import threading

import numpy as np

from ... import _backend as B

# scratch buffers larger than this many bytes are not kept between calls
_SCRATCH_MAX = 128 << 20


def _out_size(S, lo, hi, k, s, d):
    return tuple((Si + a + b - dd * (kk - 1) - 1) // ss + 1
                 for Si, a, b, kk, ss, dd in zip(S, lo, hi, k, s, d))


def _extent(O, k, s, d):
    """Padded length that ``O`` windows of a dilated kernel span."""
    return tuple((o - 1) * ss + (kk - 1) * dd + 1 for o, kk, ss, dd in zip(O, k, s, d))


def _prod(t):
    return math.prod(t)


# =========================================================================== scratch memory

_WS = threading.local()


def _scratch(key, shape, dtype, xp):
    """A reusable buffer for temporaries that never leave an op (numpy only: cupy has a
    memory pool). Per thread, so concurrent callers do not share one."""
    if xp is not np:
        return xp.empty(shape, dtype)
    n = _prod(shape)
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    bufs = getattr(_WS, "bufs", None)
    if bufs is None:
        bufs = _WS.bufs = {}
    k = (key, np.dtype(dtype))
    buf = bufs.get(k)
    if buf is None or buf.size < n:
        buf = bufs[k] = np.empty(max(n, 1), dtype)
    return buf[:n].reshape(shape)


# =========================================================================== array kernels

def _as_strided(xp, a, shape, strides):
    if xp is np:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def _pad_to(x, plo, E, fill=0, key="pad"):
    """``x`` (..., *S) as (..., *E): padded coordinate ``p`` holds input ``p - plo`` and
    ``fill`` outside the input; input past ``E`` is cropped. ``x`` itself (or a view of it)
    when no padding is needed; otherwise a scratch buffer (valid until the next call)."""
    nd = len(E)
    S = x.shape[-nd:]
    if not any(plo) and all(e <= s for e, s in zip(E, S)):
        if tuple(E) == tuple(S):
            return x
        return x[(Ellipsis,) + tuple(slice(0, e) for e in E)]
    xp = B.namespace(x)
    lead = x.shape[:-nd]
    buf = _scratch(key, lead + tuple(E), x.dtype, xp)
    dst, src = [], []
    for a, e, s in zip(plo, E, S):
        hi = min(e, a + s)
        dst.append(slice(a, max(hi, a)))
        src.append(slice(0, max(hi - a, 0)))
    pre = (slice(None),) * len(lead)
    for i, (a, sl) in enumerate(zip(plo, dst)):  # fill the borders only
        if a:
            buf[pre + (slice(None),) * i + (slice(0, a),)] = fill
        if sl.stop < E[i]:
            buf[pre + (slice(None),) * i + (slice(sl.stop, None),)] = fill
    buf[pre + tuple(dst)] = x[pre + tuple(src)]
    return buf


def _windows(xpad, k, s, d, O):
    """Read-only view (..., *k, *O) of the sliding windows of ``xpad`` (..., *E)."""
    nd = len(k)
    st = xpad.strides
    sp = st[-nd:]
    shape = xpad.shape[:-nd] + tuple(k) + tuple(O)
    strides = st[:-nd] + tuple(a * b for a, b in zip(sp, d)) + tuple(a * b for a, b in zip(sp, s))
    return _as_strided(B.namespace(xpad), xpad, shape, strides)


def _taps(k):
    return itertools.product(*(range(kk) for kk in k))


def _tap_slices(tap, s, d, O):
    return tuple(slice(t * dd, t * dd + ss * (o - 1) + 1, ss) for t, dd, ss, o in zip(tap, d, s, O))


def _col2im_add(dst, cols, k, s, d, O):
    """``dst[..., tap*d + s*o] += cols[..., tap, o]`` over every tap (the adjoint of
    ``_windows``); ``dst`` (..., *E) is updated in place."""
    nd = len(k)
    rest = (slice(None),) * nd
    for tap in _taps(k):
        v = dst[(Ellipsis,) + _tap_slices(tap, s, d, O)]
        v += cols[(Ellipsis,) + tap + rest]


def _crop(buf, plo, S):
    """The (..., *S) region at ``plo`` of a padded buffer, as an array of its own."""
    nd = len(S)
    if not any(plo) and tuple(buf.shape[-nd:]) == tuple(S):
        return buf
    xp = B.namespace(buf)
    return xp.ascontiguousarray(buf[(Ellipsis,) + tuple(slice(a, a + n) for a, n in zip(plo, S))])


def _strided_1x1(xpad, s, O):
    return xpad[(Ellipsis,) + tuple(slice(0, (o - 1) * ss + 1, ss) for o, ss in zip(O, s))]
