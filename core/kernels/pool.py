"""2-D max pooling, forward (max and its index) and backward (scatter of the gradient).

``max_pool2d(x, k, s, p, d, O) -> (values, indices)``: ``x`` (N, C, H, W); ``k, s, p, d``
pairs (kernel, stride, padding, dilation); ``O`` the output size (the caller's, so
``ceil_mode`` is settled there). ``indices`` are flat positions within each (H, W) plane,
PyTorch's ``return_indices``. As PyTorch: taps are visited in (kh, kw) order from -inf, a tap
wins when strictly greater or NaN, and a window with no greater value keeps its first tap
inside the input. ``max_pool2d_backward(g, indices, (H, W))`` adds each output gradient at
its index (overlapping windows add up).

The numpy reference builds the padded windows and compares tap by tap (a pass per tap);
the kernels read each input row once per tap row, planes split over ember's threads.

    >>> import numpy as np
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> v, i = max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (2, 2))
    >>> v[0, 0].tolist(), i[0, 0].tolist()
    ([[5.0, 7.0], [13.0, 15.0]], [[5, 7], [13, 15]])
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import FLOATS, contiguous, split

__all__ = ["max_pool2d", "max_pool2d_backward"]


def _check(x, k, s, p, d, O):
    if x.ndim != 4:
        raise ValueError(f"max_pool2d: x must be (N, C, H, W), got shape {x.shape}")
    if any(v < 1 for v in (*k, *s, *d, *O)) or any(v < 0 for v in p):
        raise ValueError(f"max_pool2d: kernel {k}, stride {s}, dilation {d} and output {O} "
                         f"must be positive and padding {p} non-negative")


# ----------------------------------------------------------------------------- reference

def max_pool2d_reference(x, k, s, p, d, O):
    """``(values, plane indices)`` by a pass per tap over the padded windows."""
    _check(x, k, s, p, d, O)
    N, C, H, W = x.shape
    best = np.full((N, C) + tuple(O), -np.inf, x.dtype)
    idx = np.full((N, C) + tuple(O), -1, np.int64)
    oh, ow = np.arange(O[0]), np.arange(O[1])
    for kh in range(k[0]):
        ih = oh * s[0] - p[0] + kh * d[0]
        okh = (ih >= 0) & (ih < H)
        for kw in range(k[1]):
            iw = ow * s[1] - p[1] + kw * d[1]
            okw = (iw >= 0) & (iw < W)
            inb = okh[:, None] & okw[None, :]
            v = x[:, :, np.clip(ih, 0, H - 1)[:, None], np.clip(iw, 0, W - 1)[None, :]]
            pos = (ih[:, None] * W + iw[None, :])
            win = inb & ((v > best) | np.isnan(v) | (idx < 0))
            best = np.where(win, v, best)
            idx = np.where(win, pos, idx)
    return best.astype(x.dtype, copy=False), idx


def max_pool2d_backward_reference(g, indices, size):
    """(N, C, H, W): each output gradient added at its plane index."""
    N, C = g.shape[:2]
    H, W = size
    plane = (np.arange(N * C, dtype=np.int64) * (H * W))[:, None]
    flat = (indices.reshape(N * C, -1) + plane).reshape(-1)
    out = np.bincount(flat, weights=g.reshape(-1), minlength=N * C * H * W)
    return out.astype(g.dtype, copy=False).reshape(N, C, H, W)


# ----------------------------------------------------------------------------- compiled

@jit
def _fwd(x, kh_, kw_, sh, sw, ph, pw, dh, dw, out, idx, lo, hi):
    H, W = x.shape[1], x.shape[2]
    OH, OW = out.shape[1], out.shape[2]
    ninf = -np.inf
    for pl in range(lo, hi):
        xp_, op_, ip_ = x[pl], out[pl], idx[pl]
        for oh in range(OH):
            orow, irow = op_[oh], ip_[oh]
            h0 = oh * sh - ph
            for ow in range(OW):  # every window starts from -inf, no tap yet
                orow[ow] = ninf
                irow[ow] = -1
            for kh in range(kh_):
                ih = h0 + kh * dh
                if ih < 0 or ih >= H:
                    continue
                row = xp_[ih]
                base = ih * W
                for kw in range(kw_):
                    off = kw * dw - pw
                    # outputs whose tap kw lies inside the row: 0 <= ow * sw + off < W
                    a = 0 if off >= 0 else (-off + sw - 1) // sw
                    b = min(OW, (W - 1 - off) // sw + 1) if W - 1 - off >= 0 else 0
                    for ow in range(a, b):
                        iw = ow * sw + off
                        v = row[iw]
                        cur = orow[ow]
                        if v > cur or v != v or irow[ow] < 0:
                            orow[ow] = v
                            irow[ow] = base + iw


@jit
def _bwd(g, idx, out, lo, hi):
    n = g.shape[1]
    zero = out.dtype.type(0)
    for pl in range(lo, hi):
        o, gr, ir = out[pl], g[pl], idx[pl]
        for j in range(o.shape[0]):
            o[j] = zero
        for j in range(n):
            o[ir[j]] += gr[j]


def max_pool2d(x, k, s, p, d, O):
    """``max_pool2d_reference``, compiled: planes split over ember's threads."""
    _check(x, k, s, p, d, O)
    if x.dtype not in FLOATS or type(x) is not np.ndarray:
        return max_pool2d_reference(x, k, s, p, d, O)
    N, C, H, W = x.shape
    xc = contiguous(x).reshape(N * C, H, W)
    out = np.empty((N * C,) + tuple(O), x.dtype)
    idx = np.empty((N * C,) + tuple(O), np.int64)
    work = N * C * O[0] * O[1] * k[0] * k[1]
    split(lambda lo, hi: _fwd(xc, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], out, idx,
                              lo, hi), N * C, work)
    return out.reshape((N, C) + tuple(O)), idx.reshape((N, C) + tuple(O))


def max_pool2d_backward(g, indices, size):
    """``max_pool2d_backward_reference``, compiled: one pass, planes over threads."""
    if g.dtype not in FLOATS or type(g) is not np.ndarray:
        return max_pool2d_backward_reference(g, indices, size)
    N, C = g.shape[:2]
    H, W = size
    if indices.shape != g.shape:
        raise ValueError(f"max_pool2d_backward: indices must have the gradient's shape "
                         f"{g.shape}, got {indices.shape}")
    gc = contiguous(g).reshape(N * C, -1)
    ic = contiguous(indices).astype(np.int64, copy=False).reshape(N * C, -1)
    if ic.size and (int(ic.min()) < 0 or int(ic.max()) >= H * W):
        raise IndexError(f"max_pool2d_backward: indices out of range for a {H}x{W} plane")
    out = np.empty((N * C, H * W), g.dtype)
    split(lambda lo, hi: _bwd(gc, ic, out, lo, hi), N * C, out.size + gc.size)
    return out.reshape(N, C, H, W)


register("max_pool2d", reference=max_pool2d_reference, cpu=max_pool2d)
register("max_pool2d_backward", reference=max_pool2d_backward_reference,
         cpu=max_pool2d_backward)
