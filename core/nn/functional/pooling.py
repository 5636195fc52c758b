"""Pooling: max/avg/lp pools (1d/2d/3d), adaptive avg/max pools, max_unpool.

Inputs are (N, C, *spatial) or unbatched (C, *spatial), as in PyTorch.

- Max pools take a running maximum over the kernel taps of a strided window view of the
  (-inf padded) input. When indices are needed (``return_indices`` or autograd) the loop
  also keeps the first tap holding the maximum (PyTorch's rule: a later tap wins only when
  strictly greater, or NaN); the flat index within each input plane follows from it.
- The max-pool output equals ``x.flat[index]``, so its gradient is a scatter-add of the
  output gradient to those indices (a direct write when windows do not overlap); the
  scatter and the gather are recorded ops that differentiate into each other.
- Average pools sum the windows one spatial dim at a time (``sum(k)`` passes instead of
  ``prod(k)``) and divide by PyTorch's divisor per window (``count_include_pad``,
  ``ceil_mode`` edge windows, ``divisor_override``); the transposed sum is the gradient.
- Adaptive average pools contract each dim with an averaging matrix (windows
  ``[floor(i*L/out), ceil((i+1)*L/out))``); adaptive max pools gather those windows.
"""
from __future__ import annotations

import numpy as np

from ... import _backend as B
from ..._parallel import parallel_for
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops import _util as U
from ...ops._util import wrap
from .conv import _extent, _pad_to, _prod, _taps, _windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d"]

_WORDS = {1: "one", 2: "two", 3: "three"}


# =========================================================================== arguments

def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _pool_tuple(op, nd, v, what, verb="must either be a single int, or a tuple of"):
    if _is_int(v):
        return (int(v),) * nd
    if isinstance(v, (tuple, list)) and all(_is_int(e) for e in v) and len(v) in (1, nd):
        return tuple(int(e) for e in v) * (nd if len(v) == 1 else 1)
    raise RuntimeError(f"{op}: {what} {verb} {_WORDS[nd]} int{'s' if nd > 1 else ''}")


def _pool_args(op, nd, kernel_size, stride, padding, dilation=1):
    k = _pool_tuple(op, nd, kernel_size, "kernel_size")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        s = k
    else:
        s = _pool_tuple(op, nd, stride, "stride",
                        "must either be omitted, a single int, or a tuple of")
    p = _pool_tuple(op, nd, padding, "padding")
    d = _pool_tuple(op, nd, dilation, "dilation", "must be either a single int, or a tuple of")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size should be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got {list(s)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {list(p)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got {list(d)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pp}, "
                f"kernel_size={kk} and dilation={dd}")
    return k, s, p, d


def _batched(op, nd, input):
    """(N, C, *S) view of ``input`` and whether it was unbatched; checks the rank."""
    if not isinstance(input, U.Tensor):
        raise TypeError(f"{op}(): input must be a Tensor, got {type(input).__name__}")
    sh = tuple(input.shape)
    if len(sh) not in (nd + 1, nd + 2) or any(n == 0 for n in sh[-(nd + 1):]):
        raise RuntimeError(
            f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim "
            f"batch size for input, but got:{list(sh)}")
    if input.array.dtype.kind in "bc":
        raise RuntimeError(f"\"{op}\" not implemented for '{input.dtype}'")
    unbatched = len(sh) == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _pool_out(L, k, s, p, d, ceil_mode):
    """PyTorch's pooling output length."""
    o = (L + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= L + p:
        o -= 1
    return o


def _out_sizes(op, C, S, k, s, p, d, ceil_mode):
    O = tuple(_pool_out(*a, ceil_mode) for a in zip(S, k, s, p, d))
    if any(o < 1 for o in O):
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (C,) + tuple(S)))}). Calculated output "
            f"size: ({'x'.join(map(str, (C,) + O))}). Output size is too small")
    return O


def _unbatch(out, unbatched):
    return out.squeeze(0) if unbatched else out


# =========================================================================== index scatter/gather

def _add_at(out, lin, vals):
    from ...ops.index import _add_at as add_at

    add_at(out, 0, lin, vals)


class IndexGatherBackward(Node):
    """out = x.flat[lin]: the gradient scatter-adds into x's shape."""
    __slots__ = ("lin", "shape", "unique")

    def backward(self, g):
        return (_scatter(g, self.lin, self.shape, self.unique),)


class IndexScatterBackward(Node):
    """out = zeros(shape) with out.flat[lin] (+)= v: the gradient gathers."""
    __slots__ = ("lin",)

    def backward(self, g):
        return (_gather(g, self.lin),)


def _scatter(v, lin, shape, unique=False):
    """zeros(shape) with ``v`` added at the flat indices ``lin`` (``lin.shape == v.shape``)."""
    d = v.array
    xp = B.namespace(d)
    out = xp.zeros(_prod(shape), d.dtype)
    if unique:
        out[lin.reshape(-1)] = d.reshape(-1)
    else:
        _add_at(out, lin.reshape(-1), d.reshape(-1))
    res = wrap(out.reshape(shape))
    if STATE.enabled and v.requires_grad:
        n = new_node(IndexScatterBackward)
        n.lin = lin
        record(n, res, v)
    return res


def _gather(x, lin, unique=False):
    """x.flat[lin] (shape of ``lin``), recorded."""
    d = x.array
    xp = B.namespace(d)
    res = wrap(xp.take(d.reshape(-1), lin))
    if STATE.enabled and x.requires_grad:
        n = new_node(IndexGatherBackward)
        n.lin, n.shape, n.unique = lin, d.shape, unique
        record(n, res, x)
    return res


def _global_index(flat, plane):
    """Plane indices (N, C, *O) -> indices into the flat (N, C, *S) array."""
    xp = B.namespace(flat)
    N, C = flat.shape[:2]
    nd = flat.ndim - 2
    nc = xp.arange(N * C, dtype=np.int64).reshape((N, C) + (1,) * nd) * plane
    return flat + nc


# =========================================================================== max pool

def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _max_separable(xpad, k, s, d, O, xp):
    """Window maxima of ``xpad`` (N, C, *E), one spatial dim at a time (a box maximum is
    separable): ``sum(k)`` passes instead of ``prod(k)``, the outer dims first, so that their
    passes read whole rows and the strided passes along the last dim run on reduced data.
    On numpy, images are split over threads."""
    nd = len(k)

    def part(a):
        for i in range(nd):
            sl = [slice(None)] * a.ndim
            taps = []
            for t in range(k[i]):
                sl[2 + i] = slice(t * d[i], t * d[i] + s[i] * (O[i] - 1) + 1, s[i])
                taps.append(a[tuple(sl)])
            r = xp.maximum(taps[0], taps[1]) if len(taps) > 1 else taps[0].copy()
            for v in taps[2:]:
                xp.maximum(r, v, out=r)
            a = r
        return a

    if xp is not np:
        return part(xpad)
    out = np.empty(xpad.shape[:2] + tuple(O), xpad.dtype)

    def rows(lo, hi):
        out[lo:hi] = part(xpad[lo:hi])

    parallel_for(rows, xpad.shape[0], work=xpad.size)
    return out


def _max_with_taps(win, k, s, p, d, O, xp, has_nan):
    """Maximum and the tap holding it, PyTorch's way: start from -inf at the first tap
    inside the input; a later tap wins when strictly greater, or NaN. Taps are visited in
    increasing order, so "tap t wins" is ``tap = max(tap, t * wins)`` (no masked writes)."""
    nd = len(k)
    dt = win.dtype
    lead = win.shape[:2]
    # first in-bounds tap of each output position (every in-bounds tap comes after it)
    first = np.zeros(O, np.int64)
    for i in range(nd):
        o = np.arange(O[i])
        t0 = np.clip(-((o * s[i] - p[i]) // d[i]), 0, k[i] - 1)
        first = first + (t0 * _prod(k[i + 1:])).reshape((-1,) + (1,) * (nd - 1 - i))
    tdt = np.int8 if _prod(k) < 128 else (np.int16 if _prod(k) < 32768 else np.int64)
    tap_idx = xp.empty(lead + tuple(O), tdt)
    tap_idx[...] = xp.asarray(first.astype(tdt))
    best = xp.full(lead + tuple(O), _lowest(dt), dt)
    mask = xp.empty(best.shape, bool)
    cand = xp.empty(best.shape, tdt)
    rest = (slice(None),) * nd
    for t, tap in enumerate(_taps(k)):
        v = win[(slice(None), slice(None)) + tap + rest]
        xp.greater(v, best, out=mask)
        if has_nan:
            mask |= xp.isnan(v)
        xp.maximum(best, v, out=best)
        xp.multiply(mask, t, out=cand)
        xp.maximum(tap_idx, cand, out=tap_idx)
    return best, tap_idx


def _plane_index(tap_idx, k, s, p, d, S, O, xp):
    """Tap of each window -> flat index within the (unpadded) input plane."""
    nd = len(k)
    R = [_prod(S[i + 1:]) for i in range(nd)]
    table = np.zeros(k, np.int64)
    base = np.zeros(O, np.int64)
    for i in range(nd):
        sh = (-1,) + (1,) * (nd - 1 - i)
        table = table + (np.arange(k[i]) * d[i] * R[i]).reshape(sh)
        base = base + ((np.arange(O[i]) * s[i] - p[i]) * R[i]).reshape(sh)
    return xp.take(xp.asarray(table.reshape(-1)), tap_idx.astype(np.intp)) + xp.asarray(base)


def _max_pool(nd, op, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    k, s, p, d = _pool_args(op, nd, kernel_size, stride, padding, dilation)
    x, unbatched = _batched(op, nd, input)
    xd = x.array
    xp = B.namespace(xd)
    N, C = xd.shape[:2]
    S = xd.shape[2:]
    O = _out_sizes(op, C, S, k, s, p, d, ceil_mode)
    grad = STATE.enabled and x.requires_grad
    if nd == 2 and type(xd) is np.ndarray and xd.dtype in (np.float32, np.float64) and \
            _kernels_on():
        return _max_pool2d_kernel(x, xd, k, s, p, d, O, grad, return_indices, unbatched)
    xpad = _pad_to(xd, p, _extent(O, k, s, d), _lowest(xd.dtype))
    if not (grad or return_indices):
        out = wrap(_max_separable(xpad, k, s, d, O, xp))
        return _unbatch(out, unbatched)
    win = _windows(xpad, k, s, d, O)
    has_nan = xd.dtype.kind == "f" and bool(xp.isnan(xd).any())
    vals, taps = _max_with_taps(win, k, s, p, d, O, xp, has_nan)
    flat = _plane_index(taps, k, s, p, d, S, O, xp)
    if grad:
        unique = all(ss >= (kk - 1) * dd + 1 for kk, ss, dd in zip(k, s, d))
        out = _gather(x, _global_index(flat, _prod(S)), unique)
    else:
        out = wrap(vals)
    out = _unbatch(out, unbatched)
    if return_indices:
        return out, _unbatch(wrap(flat), unbatched)
    return out


def _kernels_on():
    from ... import kernels

    return kernels.available()


class MaxPool2dBackward(Node):
    """The gradient of a compiled 2-D max pool: added at each window's maximum."""
    __slots__ = ("idx", "size")

    def backward(self, g):
        if STATE.enabled:  # create_graph: the differentiable scatter
            shape = tuple(g.shape[:2]) + self.size
            return (_scatter(g, _global_index(self.idx, _prod(self.size)), shape),)
        from ... import kernels

        ga = g.array
        return (wrap(kernels.get("max_pool2d_backward", ga)(ga, self.idx, self.size)),)


def _max_pool2d_kernel(x, xd, k, s, p, d, O, grad, return_indices, unbatched):
    """2-D max pool of a float numpy array by ``ember.kernels``' compiled ``max_pool2d``
    (values and plane indices in one pass) and ``max_pool2d_backward`` (one scatter pass).
    Without the kernels (no numba, ``EMBER_KERNELS=numpy``) the ufunc path above runs."""
    from ... import kernels

    vals, idx = kernels.get("max_pool2d", xd)(xd, k, s, p, d, O)
    out = wrap(vals)
    if grad:
        n = new_node(MaxPool2dBackward)
        n.idx, n.size = idx, tuple(xd.shape[2:])
        n.saved = ()
        record(n, out, x)
    out = _unbatch(out, unbatched)
    if return_indices:
        return out, _unbatch(wrap(idx), unbatched)
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L). ``stride`` defaults to ``kernel_size``;
    ``padding`` (at most half the dilated kernel) pads with -inf. With ``return_indices``
    also returns each maximum's index within its input row (int64).

    >>> max_pool1d(ember.tensor([[[1., 3., 2., 5.]]]), 2)
    tensor([[[3., 5.]]])
    """
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out), with
    ``H_out = floor_or_ceil((H + 2p - dilation*(k-1) - 1) / stride) + 1``. Indices (with
    ``return_indices``) are flat positions ``h * W + w`` within each input plane.

    >>> max_pool2d(ember.randn(1, 3, 8, 8), 3, stride=2, padding=1).shape
    (1, 3, 4, 4)
    """
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W).

    >>> max_pool3d(ember.randn(1, 2, 4, 4, 4), 2).shape
    (1, 2, 2, 2, 2)
    """
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """``max_pool1d`` returning ``(output, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """``max_pool2d`` returning ``(output, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """``max_pool3d`` returning ``(output, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# =========================================================================== max unpool

def _max_unpool(nd, op, input, indices, kernel_size, stride, padding, output_size):
    k = _pool_tuple(op, nd, kernel_size, "kernel_size")
    s = k if stride is None else _pool_tuple(
        op, nd, stride, "stride", "must either be omitted, a single int, or a tuple of")
    p = _pool_tuple(op, nd, padding, "padding")
    x, unbatched = _batched(op, nd, input)
    if not isinstance(indices, U.Tensor):
        raise TypeError(f"{op}(): indices must be a Tensor, got {type(indices).__name__}")
    if indices.array.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    idx = indices.unsqueeze(0) if unbatched else indices
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    I = tuple(x.shape[2:])
    default = tuple((i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(I, s, p, k))
    if output_size is None:
        OS = default
    else:
        OS = tuple(int(v) for v in output_size)
        if len(OS) == nd + 2 or (len(OS) == nd + 1 and unbatched):
            OS = OS[-nd:]
        if len(OS) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(output_size)}'")
        for i, (o, df, ss) in enumerate(zip(OS, default, s)):
            if not df - ss < o < df + ss:
                raise ValueError(f"invalid output_size \"{tuple(output_size)}\" (dim {i} must "
                                 f"be between {df - ss} and {df + ss})")
    plane = _prod(OS)
    xp = B.namespace(x.array)
    flat = idx.array
    if flat.size and (bool((flat < 0).any()) or bool((flat >= plane).any())):
        bad = int(flat[(flat < 0) | (flat >= plane)].reshape(-1)[0])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, OS))})")
    N, C = x.shape[:2]
    out = _scatter(x, _global_index(xp.asarray(flat), plane), (N, C) + OS, unique=True)
    return _unbatch(out, unbatched)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool1d``: places each value at its index, zeros elsewhere.
    The output length defaults to ``(L-1)*stride - 2*padding + kernel_size``.

    >>> out, idx = max_pool1d(ember.tensor([[[1., 3., 2., 5.]]]), 2, return_indices=True)
    >>> max_unpool1d(out, idx, 2)
    tensor([[[0., 3., 0., 5.]]])
    """
    return _max_unpool(1, "max_unpool1d", input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool2d`` (indices from ``return_indices=True``);
    ``output_size`` resolves the ambiguity of the output shape.

    >>> out, idx = max_pool2d(ember.randn(1, 1, 4, 4), 2, return_indices=True)
    >>> max_unpool2d(out, idx, 2).shape
    (1, 1, 4, 4)
    """
    return _max_unpool(2, "max_unpool2d", input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of ``max_pool3d``."""
    return _max_unpool(3, "max_unpool3d", input, indices, kernel_size, stride, padding,
                       output_size)


# =========================================================================== avg pool

def _box_sum(a, k, s, O, acc_dt):
    """Sum over windows, one spatial dim at a time: (..., *E) -> (..., *O)."""
    xp = B.namespace(a)
    nd = len(k)
    for i in range(nd):
        ax = a.ndim - nd + i
        pre = (slice(None),) * ax
        acc = None
        for t in range(k[i]):
            v = a[pre + (slice(t, t + s[i] * (O[i] - 1) + 1, s[i]),)]
            if t == 0:
                acc = v
            elif t == 1:
                acc = xp.add(acc, v, dtype=acc_dt)
            else:
                acc += v
        a = acc
    return a


def _box_sum_t(g, k, s, E):
    """Adjoint of ``_box_sum``: (..., *O) -> (..., *E)."""
    xp = B.namespace(g)
    nd = len(k)
    a = g
    for i in reversed(range(nd)):
        ax = a.ndim - nd + i
        pre = (slice(None),) * ax
        O = a.shape[ax]
        shape = a.shape[:ax] + (E[i],) + a.shape[ax + 1:]
        if k[i] == 1 and s[i] == 1 and O == E[i]:
            continue
        buf = xp.zeros(shape, a.dtype)
        for t in range(k[i]):
            v = buf[pre + (slice(t, t + s[i] * (O - 1) + 1, s[i]),)]
            v += a
        a = buf
    return a


def _divide(total, div, dt):
    """total / div in the output dtype (integer division truncates, as in PyTorch)."""
    xp = B.namespace(total)
    if dt.kind == "f":
        return xp.divide(total, div, dtype=dt) if total.dtype == dt else \
            xp.divide(total, div).astype(dt)
    q = xp.floor_divide(total, div)
    q += ((total % div) != 0) & ((total < 0) != (xp.asarray(div) < 0))  # toward zero
    return q.astype(dt)


class AvgPoolBackward(Node):
    __slots__ = ("k", "s", "p", "S", "O", "div")

    def backward(self, g):
        return (_avg_t(g, self.k, self.s, self.p, self.S, self.O, self.div),)


class AvgPoolAdjointBackward(Node):
    __slots__ = ("k", "s", "p", "S", "O", "div")

    def backward(self, g):
        return (_avg(g, self.k, self.s, self.p, self.S, self.O, self.div),)


def _record_avg(cls, out, x, k, s, p, S, O, div):
    if STATE.enabled and x.requires_grad:
        n = new_node(cls)
        n.k, n.s, n.p, n.S, n.O, n.div = k, s, p, S, O, div
        record(n, out, x)
    return out


def _avg(x, k, s, p, S, O, div):
    """Recorded op: window sums of the zero-padded x (N, C, *S), divided by ``div``."""
    xd = x.array
    dt = xd.dtype
    acc = np.dtype(np.int64) if dt.kind != "f" else (
        np.dtype(np.float32) if dt == np.float16 else dt)  # float16 sums in float32
    xpad = _pad_to(xd, p, _extent(O, k, s, (1,) * len(k)))
    out = _divide(_box_sum(xpad, k, s, O, acc), div, dt)
    return _record_avg(AvgPoolBackward, wrap(out), x, k, s, p, S, O, div)


def _avg_t(g, k, s, p, S, O, div):
    """Recorded op: the adjoint of ``_avg`` (its gradient), (N, C, *O) -> (N, C, *S)."""
    gd = g.array
    xp = B.namespace(gd)
    E = tuple(max(e, a + n) for e, a, n in zip(_extent(O, k, s, (1,) * len(k)), p, S))
    buf = _box_sum_t(_divide(gd, div, gd.dtype), k, s, E)
    out = buf[(Ellipsis,) + tuple(slice(a, a + n) for a, n in zip(p, S))]
    if out.base is not None:
        out = xp.ascontiguousarray(out)
    return _record_avg(AvgPoolAdjointBackward, wrap(out), g, k, s, p, S, O, div)


def _divisor(S, k, s, p, O, count_include_pad, divisor_override, dt, xp):
    """PyTorch's divisor of each window: a Python number when it is the same everywhere,
    else an array (*O) (separable: a product of per-dim window lengths)."""
    if divisor_override is not None:
        return divisor_override
    nd = len(k)
    div = np.ones(O, np.int64)
    for i in range(nd):
        start = np.arange(O[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], S[i] + p[i])
        n = end - start
        if not count_include_pad:
            n = np.minimum(end, S[i]) - np.maximum(start, 0)
        div = div * n.reshape((-1,) + (1,) * (nd - 1 - i))
    if (div == div.reshape(-1)[0]).all():
        return int(div.reshape(-1)[0])
    return xp.asarray(div.astype(dt if dt.kind == "f" else np.int64))


def _avg_pool(nd, op, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    k, s, p, _ = _pool_args(op, nd, kernel_size, stride, padding)
    x, unbatched = _batched(op, nd, input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    C = x.shape[1]
    S = tuple(x.shape[2:])
    O = _out_sizes(op, C, S, k, s, p, (1,) * nd, ceil_mode)
    div = _divisor(S, k, s, p, O, count_include_pad, divisor_override, x.array.dtype,
                   B.namespace(x.array))
    return _unbatch(_avg(x, k, s, p, S, O, div), unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over (N, C, L) or (C, L). ``count_include_pad`` counts the zero
    padding in each window's divisor.

    >>> avg_pool1d(ember.tensor([[[1., 2., 3., 4.]]]), 2)
    tensor([[[1.5000, 3.5000]]])
    """
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W). ``divisor_override`` replaces
    every window's divisor.

    >>> avg_pool2d(ember.ones(1, 1, 4, 4), 3, stride=2, padding=1, count_include_pad=False)
    tensor([[[[1., 1.],
              [1., 1.]]]])
    """
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W).

    >>> avg_pool3d(ember.randn(1, 2, 4, 4, 4), 2).shape
    (1, 2, 2, 2, 2)
    """
    return _avg_pool(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# =========================================================================== lp pool

def _lp_pool(nd, op, input, norm_type, kernel_size, stride, ceil_mode):
    k = _pool_tuple(op, nd, kernel_size, "kernel_size")
    pooled = _avg_pool(nd, op, input.pow(norm_type), k, stride, 0, ceil_mode, True, None)
    return (pooled.sign() * pooled.abs().relu()).mul(_prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x**p) ** (1/p)``, over (N, C, L).

    >>> lp_pool1d(ember.tensor([[[3., 4.]]]), 2, 2)
    tensor([[[5.]]])
    """
    return _lp_pool(1, "lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, H, W); ``norm_type`` 1 is sum pooling, infinity
    max pooling.

    >>> lp_pool2d(ember.ones(1, 1, 4, 4), 2, 2).shape
    (1, 1, 2, 2)
    """
    return _lp_pool(2, "lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, D, H, W)."""
    return _lp_pool(3, "lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode)


# =========================================================================== adaptive pools

def _adaptive_size(op, nd, output_size, S):
    if _is_int(output_size) or output_size is None:
        O = (output_size,) * nd
    else:
        O = tuple(output_size)
        if len(O) != nd:
            raise ValueError(f"{op}: output_size must be an int or a tuple of {nd} ints, got "
                             f"{output_size!r}")
    O = tuple(s if o is None else int(o) for o, s in zip(O, S))
    if any(o < 0 for o in O):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(O)}")
    return O


def _adaptive_input(op, nd, input):
    if not isinstance(input, U.Tensor):
        raise TypeError(f"{op}(): input must be a Tensor, got {type(input).__name__}")
    sh = tuple(input.shape)
    if len(sh) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(sh)}")
    for i in range(len(sh) - nd, len(sh)):
        if sh[i] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(sh)} with dimension {i} being empty")
    unbatched = len(sh) == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _windows_1d(L, O):
    start = (np.arange(O) * L) // O
    end = ((np.arange(O) + 1) * L + O - 1) // O
    return start, end


def _adaptive_avg(nd, op, input, output_size):
    x, unbatched = _adaptive_input(op, nd, input)
    if x.array.dtype.kind != "f":
        raise RuntimeError(f"\"{op}\" not implemented for '{x.dtype}'")
    S = tuple(x.shape[2:])
    O = _adaptive_size(op, nd, output_size, S)
    if any(o == 0 for o in O):
        return _unbatch(x.new_zeros(tuple(x.shape[:2]) + O), unbatched)
    if all(s % o == 0 for s, o in zip(S, O)):  # regular windows: a plain average pool
        k = tuple(s // o for s, o in zip(S, O))
        if all(kk == s for kk, s in zip(k, S)):
            out = x.mean(tuple(range(2, 2 + nd)), keepdim=True)
        else:
            out = _avg(x, k, k, (0,) * nd, S, O, _prod(k))
        return _unbatch(out, unbatched)
    xp = B.namespace(x.array)
    out = x
    for i in range(nd):
        if S[i] == O[i]:
            continue
        start, end = _windows_1d(S[i], O[i])
        P = np.zeros((S[i], O[i]), x.array.dtype)  # averaging matrix, transposed
        for o in range(O[i]):
            P[start[o]:end[o], o] = 1.0 / (end[o] - start[o])
        Pt = wrap(xp.asarray(P))
        ax = 2 + i
        out = out.transpose(ax, -1).matmul(Pt).transpose(ax, -1)
    return _unbatch(out.contiguous(), unbatched)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length over (N, C, L) or (C, L): window ``i``
    covers ``[floor(i*L/out), ceil((i+1)*L/out))``.

    >>> adaptive_avg_pool1d(ember.tensor([[[1., 2., 3., 4., 5.]]]), 2)
    tensor([[[2., 4.]]])
    """
    return _adaptive_avg(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (H_out, W_out) (an int, a pair, ``None`` keeps the input
    size) over (N, C, H, W) or (C, H, W).

    >>> adaptive_avg_pool2d(ember.randn(2, 3, 7, 7), 1).shape
    (2, 3, 1, 1)
    """
    return _adaptive_avg(2, "adaptive_avg_pool2d", input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling to a fixed (D_out, H_out, W_out) over (N, C, D, H, W)."""
    return _adaptive_avg(3, "adaptive_avg_pool3d", input, output_size)


def _adaptive_max(nd, op, input, output_size, return_indices):
    x, unbatched = _adaptive_input(op, nd, input)
    if x.array.dtype.kind in "bc":
        raise RuntimeError(f"\"{op}\" not implemented for '{x.dtype}'")
    xd = x.array
    xp = B.namespace(xd)
    N, C = xd.shape[:2]
    S = tuple(xd.shape[2:])
    O = _adaptive_size(op, nd, output_size, S)
    if any(o == 0 for o in O):
        out = x.new_zeros((N, C) + O)
        idx = wrap(xp.zeros((N, C) + O, np.int64))
        return (_unbatch(out, unbatched), _unbatch(idx, unbatched)) if return_indices else \
            _unbatch(out, unbatched)
    # per dim: (O_i, K_i) input positions of each window, short windows repeat their last one
    tables, K = [], []
    for i in range(nd):
        start, end = _windows_1d(S[i], O[i])
        Ki = int((end - start).max())
        pos = np.minimum(start[:, None] + np.arange(Ki), end[:, None] - 1)
        tables.append(pos)
        K.append(Ki)
    key = [slice(None), slice(None)]
    for i in range(nd):
        sh = [1] * (2 * nd)
        sh[i], sh[nd + i] = O[i], K[i]
        key.append(xp.asarray(tables[i].reshape(sh)))
    win = xd[tuple(key)].reshape((N, C) + tuple(O) + (_prod(K),))  # (N, C, *O, *K) flattened
    arg = xp.argmax(win, axis=-1)  # the first maximum; a NaN counts as the maximum
    if win.dtype.kind == "f":
        isn = xp.isnan(win)
        if bool(isn.any()):  # PyTorch keeps the last NaN of a window
            last = win.shape[-1] - 1 - xp.argmax(isn[..., ::-1], axis=-1)
            arg = xp.where(isn.any(-1), last, arg)
    R = [_prod(S[i + 1:]) for i in range(nd)]
    flat_tab = np.zeros(tuple(O) + tuple(K), np.int64)
    for i in range(nd):
        sh = [1] * (2 * nd)
        sh[i], sh[nd + i] = O[i], K[i]
        flat_tab = flat_tab + (tables[i] * R[i]).reshape(sh)
    flat_tab = xp.asarray(flat_tab.reshape(tuple(O) + (_prod(K),)))
    flat = xp.take_along_axis(xp.broadcast_to(flat_tab, (N, C) + flat_tab.shape), arg[..., None],
                              axis=-1)[..., 0]
    if STATE.enabled and x.requires_grad:
        out = _gather(x, _global_index(flat, _prod(S)))
    else:
        out = wrap(xp.take_along_axis(win, arg[..., None], axis=-1)[..., 0])
    out = _unbatch(out, unbatched)
    if return_indices:
        return out, _unbatch(wrap(flat), unbatched)
    return out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length over (N, C, L) or (C, L).

    >>> adaptive_max_pool1d(ember.tensor([[[1., 5., 2., 4., 3.]]]), 2)
    tensor([[[5., 4.]]])
    """
    return _adaptive_max(1, "adaptive_max_pool1d", input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed (H_out, W_out) over (N, C, H, W) or (C, H, W); indices are
    flat positions within each input plane.

    >>> adaptive_max_pool2d(ember.randn(1, 2, 5, 7), (2, 3)).shape
    (1, 2, 2, 3)
    """
    return _adaptive_max(2, "adaptive_max_pool2d", input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling to a fixed (D_out, H_out, W_out) over (N, C, D, H, W)."""
    return _adaptive_max(3, "adaptive_max_pool3d", input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool1d`` returning ``(output, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool2d`` returning ``(output, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool3d`` returning ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)
