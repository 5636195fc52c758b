"""Reductions (sum, mean, prod, max/min, var/std, norm, logsumexp, all/any), scans (cumsum,
cumprod, cummax/cummin, logcumsumexp), sorting and selection (sort, topk, kthvalue, median,
mode), counting (unique, bincount, histc), softmax/log_softmax and diff.

Each op computes on raw arrays against the namespace ``xp`` of its input (numpy or cupy) and
records its backward node only when grad is on. Backward formulas use ember ops, so they are
differentiable again. A few backwards also have a raw-array path for speed (softmax,
log_softmax, logsumexp, and prod/cumprod on inputs holding zeros), taken only when no graph
is being built (``create_graph=False``); the tests check both paths (gradcheck runs the raw
one, the double-backward comparison with PyTorch the differentiable one).

Value-selecting ops (max/min with dim, sort, topk, kthvalue, median, mode, cummax/cummin) pick
elements of the input by index; their gradient scatters back to those indices through the
pair ``_take``/``_put`` below, each the other's backward.
"""
from __future__ import annotations

import builtins as _bi
import math
from collections import namedtuple

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record, saved_output
from . import _util as U
from ._util import expand_to, norm_dim, norm_dims, wrap
from .index import _add_at, masked_fill as _masked_fill
from .shape import cat as _cat, flip, narrow

_int64 = np.dtype(np.int64)
_INF = math.inf


class return_types:
    """Named tuples returned by the ops that give ``(values, indices)``, like
    ``torch.return_types``: ``v, i = x.max(1)`` or ``x.max(1).indices``."""

    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])
    sort = namedtuple("sort", ["values", "indices"])
    topk = namedtuple("topk", ["values", "indices"])
    kthvalue = namedtuple("kthvalue", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    nanmedian = namedtuple("nanmedian", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])


# ------------------------------------------------------------------------------------------ helpers

def _is_float(dt):
    return dt.kind == "f" or dt == D.bfloat16


def _low_precision(dt):
    return dt.itemsize == 2 and _is_float(dt)


def _saved(t):
    """A ``Node.saved`` entry for an input tensor (version-checked when unpacked)."""
    return (t, 0 if t._version is None else t._version[0])


def _dims(dim, ndim):
    """Reduction dims as a sorted tuple; ``None`` and ``()`` mean all dims (as in PyTorch)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return norm_dims(dim, ndim)


def _keep_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _numel(shape, dims):
    n = 1
    for i in dims:
        n *= shape[i]
    return n


def _restore_dims(g, shape, dims, keepdim):
    """Reshape a reduced gradient so it broadcasts back against the input ``shape``."""
    if keepdim or not dims:
        return g
    return g.reshape(_keep_shape(shape, dims))


def _index(nd, ax, sl):
    """A tuple index selecting ``sl`` along axis ``ax`` of an ``nd``-dim array."""
    idx = [slice(None)] * nd
    idx[ax] = sl
    return tuple(idx)


def _check_float(input, op):
    dt = input.array.dtype
    if not _is_float(dt):
        raise RuntimeError(f"{op}(): expected a floating point input, but got a tensor of dtype "
                           f"{D.name(dt)}")


def _scan(xp, ufunc, d, ax):
    """Inclusive scan of an associative ufunc (maximum, minimum, logaddexp) along ``ax``."""
    if xp is np:
        return getattr(np, ufunc).accumulate(d, axis=ax)
    # cupy has no general ufunc.accumulate: a doubling (Hillis-Steele) scan, log2(n) passes
    f = getattr(xp, ufunc)
    out = d.copy()
    n, step, nd = d.shape[ax], 1, d.ndim
    while step < n:
        out[_index(nd, ax, slice(step, None))] = f(out[_index(nd, ax, slice(step, None))],
                                                     out[_index(nd, ax, slice(None, -step))])
        step *= 2
    return out


def _argsort(xp, d, ax, descending=False, stable=True):
    """Argsort along ``ax``; NaN sorts as the largest value (last ascending, first
    descending), as in PyTorch. ``stable``: equal elements keep their index order (also when
    descending); without it numpy may use its faster SIMD quicksort."""
    kind = "stable" if stable else None
    if not descending:
        return xp.argsort(d, axis=ax, kind=kind) if xp is np else xp.argsort(d, axis=ax)
    n = d.shape[ax]
    r = xp.flip(d, ax)
    i = xp.argsort(r, axis=ax, kind=kind) if xp is np else xp.argsort(r, axis=ax)
    return xp.flip(n - 1 - i, ax)


def _extreme_weights(xd, od, dims):
    """Weights that split a gradient evenly among the elements equal to the reduced value."""
    xp = B.namespace(xd)
    mask = xd == od
    if _is_float(xd.dtype):
        mask |= xp.isnan(xd) & xp.isnan(od)
    m = mask.astype(xd.dtype)
    return m / m.sum(axis=dims, keepdims=True)


# --------------------------------------------------------------------------------------- take / put
# Differentiable gather and scatter-add along one dim with a fixed index array; each one is
# the other's backward, so value-selecting ops get gradients of any order.

def _flat_index(xp, idx, ax, shape):
    """Positions in a C-ordered array of ``shape`` of ``idx`` along ``ax`` (own position
    elsewhere); ``idx`` has the array's shape except along ``ax``."""
    nd = len(shape)
    strides = [1] * nd
    for k in range(nd - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    lin = idx.astype(_int64) * strides[ax]
    for k in range(nd):
        if k != ax and idx.shape[k] > 1:
            bshape = [1] * nd
            bshape[k] = idx.shape[k]
            lin = lin + (xp.arange(idx.shape[k], dtype=_int64) * strides[k]).reshape(bshape)
    return lin


class TakeBackward(Node):
    __slots__ = ("idx", "dim", "shape", "unique")

    def backward(self, g):
        return (_put(g, self.idx, self.dim, self.shape, self.unique),)


class PutBackward(Node):
    __slots__ = ("idx", "dim")

    def backward(self, g):
        return (_take(g, self.idx, self.dim),)


def _take(x, idx, dim, unique=True):
    """``x`` gathered at ``idx`` along ``dim`` (``unique``: no index repeats in a slice)."""
    d = x.array
    out = wrap(B.namespace(d).take_along_axis(d, idx, axis=dim))
    if STATE.enabled and x.requires_grad:
        n = new_node(TakeBackward)
        n.idx, n.dim, n.shape, n.unique = idx, dim, d.shape, unique
        record(n, out, x)
    return out


def _put(g, idx, dim, shape, unique=True):
    """Zeros of ``shape`` with ``g`` added at ``idx`` along ``dim``."""
    gd = g.array
    xp = B.namespace(gd)
    out = xp.zeros(math.prod(shape), dtype=gd.dtype)
    lin = _flat_index(xp, idx, dim, shape).reshape(-1)
    vals = gd.reshape(-1)
    if unique:
        out[lin] = vals
    else:
        _add_at(out, 0, lin, vals)
    res = wrap(out.reshape(shape))
    if STATE.enabled and g.requires_grad:
        n = new_node(PutBackward)
        n.idx, n.dim = idx, dim
        record(n, res, g)
    return res


def _flip(x, dim):
    return flip(x, (dim,))


def _revcumsum(x, dim):
    return _flip(cumsum(_flip(x, dim), dim), dim)


# --------------------------------------------------------------------------------------- sum / mean

class SumBackward(Node):
    __slots__ = ("shape", "dims", "keepdim", "dtype", "scale")

    def backward(self, g):
        gd = g.array
        if not STATE.enabled and type(gd) is np.ndarray and gd.dtype is self.dtype:
            # no graph to build: the same steps on the array (a read-only broadcast view)
            if self.scale is not None:
                gd = gd * self.scale
            if self.dims and not self.keepdim:
                gd = gd.reshape(_keep_shape(self.shape, self.dims))
            return (U._make(gd if gd.shape == self.shape else np.broadcast_to(gd, self.shape)),)
        if self.scale is not None:
            g = g * self.scale
        g = expand_to(_restore_dims(g, self.shape, self.dims, self.keepdim), self.shape)
        if g.array.dtype is not self.dtype:
            g = g._cast(self.dtype)
        return (g,)


_GEMV_MIN = 4096  # below this a ufunc reduction is as fast as a BLAS call
_ONES: dict = {}


def _ones(xp, d, m):
    """A cached vector of ``m`` ones like ``d`` (dtype, device); never written to."""
    dev = getattr(getattr(d, "device", None), "id", None)
    key = (xp.__name__, d.dtype, m, dev)
    v = _ONES.get(key)
    if v is None:
        if len(_ONES) > 64:
            _ONES.clear()
        v = _ONES[key] = xp.ones(m, dtype=d.dtype)
    return v


def _gemv_sum(d, dims, keepdim):
    """Sum of a large contiguous float32/64 array over its leading or trailing dims as a
    product with a vector of ones: BLAS GEMV runs several times faster than the ufunc
    reduction (which also matters for mean, var, norm and softmax). None if not applicable."""
    nd, k = d.ndim, len(dims)
    xp = B.namespace(d)
    if k == nd:  # all dims: rows of the trailing dims holding >= 256 elements, then the rows
        m, j = 1, nd
        while j > 0 and m < 256:
            j -= 1
            m *= d.shape[j]
        if m > 1 << 16 or m == d.size:
            return None
        r = (d.reshape(-1, m) @ _ones(xp, d, m)).sum()
        shape = ()
    elif dims == tuple(range(nd - k, nd)):
        m = math.prod(d.shape[nd - k:])
        if m > 1 << 16:
            return None
        r = d.reshape(-1, m) @ _ones(xp, d, m)
        shape = d.shape[:nd - k]
    elif dims == tuple(range(k)):
        m = math.prod(d.shape[:k])
        if m > 1 << 16:
            return None
        r = _ones(xp, d, m) @ d.reshape(m, -1)
        shape = d.shape[k:]
    else:
        return None
    return r.reshape(_keep_shape(d.shape, dims) if keepdim else shape)


def _sum_arr(d, dims, keepdim, dt):
    if _low_precision(dt or d.dtype):  # accumulate half precision in float32, like PyTorch
        return d.sum(axis=dims, keepdims=keepdim, dtype=np.float32).astype(dt or d.dtype)
    if dt is None and dims and d.size >= _GEMV_MIN and d.dtype.kind == "f" and \
            d.flags.c_contiguous:
        r = _gemv_sum(d, dims, keepdim)
        if r is not None:
            return r
    return d.sum(axis=dims, keepdims=keepdim, dtype=dt)


def _reduce_node(out, input, dims, keepdim, scale):
    n = new_node(SumBackward)
    n.shape, n.dims, n.keepdim, n.dtype, n.scale = input.array.shape, dims, keepdim, \
        input.array.dtype, scale
    record(n, out, input)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    d = input.array
    dims = _dims(dim, d.ndim)
    dt = D.to_dtype(dtype)
    if dt is None and d.dtype.kind in "bui":
        dt = _int64
    out = wrap(_sum_arr(d, dims, keepdim, dt))
    if STATE.enabled and input.requires_grad:
        _reduce_node(out, input, dims, keepdim, None)
    return out


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    d = input.array
    if not _is_float(d.dtype):
        return sum(input, dim, keepdim, dtype=dtype)
    return sum(_masked_fill(input, wrap(B.namespace(d).isnan(d)), 0.0), dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    d = input.array
    dt = D.to_dtype(dtype)
    if not _is_float(dt or d.dtype):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {D.name(dt or d.dtype)}")
    if dt is not None and dt is not d.dtype:
        input = input._cast(dt)
        d = input.array
    dims = _dims(dim, d.ndim)
    count = _numel(d.shape, dims)
    if count == 0:
        shape = _keep_shape(d.shape, dims) if keepdim else \
            tuple(s for i, s in enumerate(d.shape) if i not in dims)
        r = B.namespace(d).full(shape, np.nan, dtype=d.dtype)
    elif _low_precision(d.dtype):
        r = (d.sum(axis=dims, keepdims=keepdim, dtype=np.float32) / count).astype(d.dtype)
    else:
        r = _sum_arr(d, dims, keepdim, None) / count
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        _reduce_node(out, input, dims, keepdim, 1.0 / count if count else 0.0)
    return out


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    d = input.array
    if not _is_float(D.to_dtype(dtype) or d.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {D.name(d.dtype)}")
    count = wrap(~B.namespace(d).isnan(d)).sum(dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


# --------------------------------------------------------------------------------------------- prod

class ProdBackward(Node):
    __slots__ = ("shape", "dim", "keepdim")

    def backward(self, g):
        x, out = self.unpack()
        shape, dim = self.shape, self.dim
        dims = tuple(range(len(shape))) if dim is None else (dim,)
        g = _restore_dims(g, shape, dims, self.keepdim)
        xd = x.array
        if xd.size == 0 or xd.size == _numel(shape, [i for i in range(len(shape))
                                                        if i not in dims]):
            return (expand_to(g, shape),)  # nothing reduced away: d prod / dx = 1
        if not bool((xd == 0).any()):
            return ((g * _restore_dims(out, shape, dims, self.keepdim)) / x,)
        return (g * _prod_others(x, dim),)


def _prod_others(x, dim):
    """For each element, the product of the others in its slice (dim ``None``: all), exact
    with zeros. Differentiable (O(n^2) per slice) only when a graph is being built."""
    shape = x.array.shape
    xm = x.reshape(-1) if dim is None else x.transpose(dim, -1)
    xd = xm.array
    xp = B.namespace(xd)
    n = xd.shape[-1]
    if STATE.enabled:  # create_graph: row k of z is the slice with x_k replaced by 1
        z = _masked_fill(xm.unsqueeze(-2), wrap(xp.eye(n, dtype=bool)), 1.0)
        o = prod(z, -1)
    else:  # exclusive products from the left and from the right
        left = xp.ones_like(xd)
        right = xp.ones_like(xd)
        left[..., 1:] = xp.cumprod(xd[..., :-1], axis=-1)
        right[..., :-1] = xp.flip(xp.cumprod(xp.flip(xd, -1)[..., :-1], axis=-1), -1)
        o = wrap(left * right)
    return o.reshape(shape) if dim is None else o.transpose(dim, -1)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    d = input.array
    dt = D.to_dtype(dtype)
    if dt is None and d.dtype.kind in "bui":
        dt = _int64
    if dt is not None and dt is not d.dtype:
        input = input._cast(dt)
        d = input.array
    xp = B.namespace(d)
    acc = np.float32 if _low_precision(d.dtype) else None
    if dim is None or d.ndim == 0:
        ax = None
        if dim is not None:
            norm_dim(dim, 0)
        r = xp.prod(d, keepdims=keepdim and d.ndim == 0, dtype=acc)
    else:
        ax = norm_dim(dim, d.ndim)
        r = xp.prod(d, axis=ax, keepdims=keepdim, dtype=acc)
    if acc is not None:
        r = r.astype(d.dtype)
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(ProdBackward)
        n.shape, n.dim, n.keepdim = d.shape, ax, keepdim
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    return out


# -------------------------------------------------------------------------- max / min / amax / amin

class AmaxBackward(Node):
    """amax/amin, and max/min/median over all elements: the gradient is split evenly among
    the elements equal to the result."""
    __slots__ = ("shape", "dims", "keepdim")

    def backward(self, g):
        x, out = self.unpack()
        od = out.array if self.keepdim else out.array.reshape(_keep_shape(self.shape, self.dims))
        w = _extreme_weights(x.array, od, self.dims)
        return (_restore_dims(g, self.shape, self.dims, self.keepdim) * wrap(w),)


def _amax_like(input, dims, keepdim, r):
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(AmaxBackward)
        n.shape, n.dims, n.keepdim = input.array.shape, dims, keepdim
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    return out


def _check_nonempty(name, d, dims, all_dims):
    if d.size == 0:
        if all_dims:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.")
        for i in dims:
            if d.shape[i] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {i} to have non-zero size.")


def _amax(input, dim, keepdim, is_max, name):
    d = input.array
    all_dims = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    dims = _dims(dim, d.ndim)
    _check_nonempty(name, d, dims, all_dims)
    r = (d.max if is_max else d.min)(axis=dims, keepdims=keepdim)
    return _amax_like(input, dims, keepdim, r)


def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, True, "amax")


def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, False, "amin")


def _select_dim(input, ax, idx, keepdim, rtype):
    """(values, indices) from keepdim-shaped indices ``idx`` along ``ax``."""
    if not keepdim:
        shape = idx.shape[:ax] + idx.shape[ax + 1:]
    if STATE.enabled and input.requires_grad:
        vals = _take(input, idx, ax)
        if not keepdim:
            vals = vals.reshape(shape)
    else:
        d = input.array
        v = B.namespace(d).take_along_axis(d, idx, axis=ax)
        vals = wrap(v if keepdim else v.reshape(shape))
    if not keepdim:
        idx = idx.reshape(shape)
    return rtype(vals, wrap(idx.astype(_int64, copy=False)))


def _scalar_as_1d(fn, input, *args, **kw):
    """Run a dim-op on a 0-dim tensor as a 1-element vector, and give back 0-dim results."""
    res = fn(input.reshape(1), *args, **kw)
    return type(res)(*(t.reshape(()) if t.array.size == 1 else t for t in res))


def _extreme(input, dim, keepdim, other, is_max):
    name = "max" if is_max else "min"
    if other is None and isinstance(dim, U.Tensor):
        dim, other = None, dim
    if other is not None:
        from .elementwise import maximum, minimum

        return maximum(input, other) if is_max else minimum(input, other)
    d = input.array
    if dim is None:
        _check_nonempty(name, d, (), True)
        return _amax_like(input, tuple(range(d.ndim)), False, d.max() if is_max else d.min())
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return _scalar_as_1d(_extreme, input, 0, keepdim, None, is_max)
    _check_nonempty(name, d, (ax,), False)
    idx = (d.argmax if is_max else d.argmin)(axis=ax, keepdims=True)
    rtype = return_types.max if is_max else return_types.min
    if STATE.enabled and input.requires_grad:
        return _select_dim(input, ax, idx, keepdim, rtype)
    vals = (d.max if is_max else d.min)(axis=ax, keepdims=keepdim)  # same values, no gather
    idx = idx.astype(_int64, copy=False)
    return rtype(wrap(vals), wrap(idx if keepdim else idx.reshape(vals.shape)))


def max(input, dim=None, keepdim=False, *, other=None):
    """``max(x)``: the largest value; ``max(x, dim, keepdim=False)``: ``(values, indices)``;
    ``max(x, other_tensor)``: elementwise maximum."""
    return _extreme(input, dim, keepdim, other, True)


def min(input, dim=None, keepdim=False, *, other=None):
    return _extreme(input, dim, keepdim, other, False)


def _arg_extreme(input, dim, keepdim, is_max):
    name = "argmax" if is_max else "argmin"
    d = input.array
    if d.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    xp = B.namespace(d)
    f = d.argmax if is_max else d.argmin
    if dim is None:
        if d.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        r = f()
        if keepdim:
            r = xp.asarray(r).reshape((1,) * d.ndim)
        return wrap(xp.asarray(r, dtype=_int64))
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return wrap(xp.zeros((), dtype=_int64))
    _check_nonempty(name, d, (ax,), False)
    return wrap(f(axis=ax, keepdims=keepdim).astype(_int64, copy=False))


def argmax(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
    return _arg_extreme(input, dim, keepdim, False)


# ---------------------------------------------------------------------------------------- var / std

class VarBackward(Node):
    __slots__ = ("dims", "keepdim", "shape", "dof", "is_std")

    def backward(self, g):
        x, out = self.unpack()
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        if self.is_std:  # d std = d var / (2 std); zero where std == 0, as in PyTorch
            o = _restore_dims(out, self.shape, self.dims, self.keepdim)
            zero = wrap(o.array == 0)
            g = _masked_fill(g / _masked_fill(o * 2, zero, 1.0), zero, 0.0)
        xc = x - mean(x, self.dims, keepdim=True)
        return (g * xc * (2.0 / self.dof if self.dof else _INF),)


def _correction(name, unbiased, correction):
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}(): pass only one of 'unbiased' and 'correction'")
    if correction is not None:
        return correction
    return 1 if unbiased is None else int(_bi.bool(unbiased))


def _var_std(input, dim, unbiased, keepdim, correction, is_std):
    name = "std" if is_std else "var"
    if isinstance(dim, _bi.bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    corr = _correction(name, unbiased, correction)
    d = input.array
    if not _is_float(d.dtype):
        raise RuntimeError(f"std and var only support floating point and complex dtypes, but "
                           f"{name}() got {D.name(d.dtype)}")
    dims = _dims(dim, d.ndim)
    n = _numel(d.shape, dims)
    dof = _bi.max(0, n - corr)
    xp = B.namespace(d)
    w = d.astype(np.float32) if _low_precision(d.dtype) else d
    with np.errstate(divide="ignore", invalid="ignore"):
        c = w - _sum_arr(w, dims, True, None) / n if n else w.copy()
        c *= c
        r = _sum_arr(c, dims, keepdim, None)
        r = r / dof if dof else (r * _INF if n else r * np.nan)
        if is_std:
            r = xp.sqrt(r)
    out = wrap(xp.asarray(r, dtype=d.dtype))
    if STATE.enabled and input.requires_grad:
        nd = new_node(VarBackward)
        nd.dims, nd.keepdim, nd.shape, nd.dof, nd.is_std = dims, keepdim, d.shape, dof, is_std
        nd.saved = (_saved(input), saved_output(out) if is_std else None)
        record(nd, out, input)
    return out


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with ``correction`` (1 by default: the unbiased estimate)."""
    return _var_std(input, dim, unbiased, keepdim, correction, False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(input, dim, unbiased, keepdim, correction, True)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    if isinstance(dim, _bi.bool):
        dim, unbiased = None, dim
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, _bi.bool):
        dim, unbiased = None, dim
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


# --------------------------------------------------------------------------------------------- norm

class NormBackward(Node):
    __slots__ = ("p", "dims", "keepdim", "shape")

    def backward(self, g):
        x, out = self.unpack()
        p, shape, dims = self.p, self.shape, self.dims
        g = _restore_dims(g, shape, dims, self.keepdim)
        if p == 0:
            return (expand_to(g * 0.0, shape),)
        if p == 1:
            return (g * x.sign(),)
        o = _restore_dims(out, shape, dims, self.keepdim)
        if p == _INF or p == -_INF:
            w = _extreme_weights(B.namespace(x.array).abs(x.array), o.array, dims)
            return (g * x.sign() * wrap(w),)
        zero = wrap(o.array == 0)
        onz = _masked_fill(o, zero, 1.0)
        if p == 2:
            return (x * _masked_fill(g / onz, zero, 0.0),)
        a = x.abs()
        if p < 1:
            xz = wrap(x.array == 0)
            xs = _masked_fill(x.sign() * _masked_fill(a, xz, 1.0).pow(p - 1), xz, 0.0)
        elif p < 2:
            xs = x.sign() * a.pow(p - 1)
        else:
            xs = x * a.pow(p - 2)
        return (xs * _masked_fill(g / onz.pow(p - 1), zero, 0.0),)


def _vector_norm(input, p, dims, keepdim):
    d = input.array
    if not _is_float(d.dtype):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.name(d.dtype)}")
    xp = B.namespace(d)
    p = float(p)
    dt = d.dtype
    if _low_precision(dt):  # accumulate half precision in float32
        d = d.astype(np.float32)
    if p == 2:
        if len(dims) == d.ndim and d.ndim and d.dtype.kind == "f" and d.flags.c_contiguous:
            flat = d.reshape(-1)
            r = xp.sqrt(flat @ flat)  # BLAS dot
            if keepdim:
                r = r.reshape((1,) * d.ndim)
        else:
            r = xp.sqrt(_sum_arr(d * d, dims, keepdim, None))
    elif p == _INF or p == -_INF:
        _check_nonempty("linalg.vector_norm", d, dims, False)
        r = (xp.amax if p > 0 else xp.amin)(xp.abs(d), axis=dims, keepdims=keepdim)
    elif p == 0:
        r = (d != 0).sum(axis=dims, keepdims=keepdim).astype(d.dtype)
    elif p == 1:
        r = _sum_arr(xp.abs(d), dims, keepdim, None)
    else:
        r = _sum_arr(xp.abs(d) ** p, dims, keepdim, None) ** (1.0 / p)
    out = wrap(xp.asarray(r, dtype=dt))
    if STATE.enabled and input.requires_grad:
        n = new_node(NormBackward)
        n.p, n.dims, n.keepdim, n.shape = p, dims, keepdim, d.shape
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    return out


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over ``dim`` (all elements when ``None``); ``p`` is a number (``inf``,
    ``-inf`` and 0 included) or ``'fro'`` (the 2-norm over at most two dims)."""
    if dtype is not None:
        input = input._cast(D.to_dtype(dtype))
    nd = input.array.ndim
    if isinstance(p, str):
        if p != "fro":
            raise RuntimeError(f"norm(): p={p!r} is not supported; use 'fro' or a number")
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError(f"norm(): 'fro' norm expects at most 2 dims, got {tuple(dim)}")
        p = 2
    elif p is None:
        p = 2
    return _vector_norm(input, p, _dims(dim, nd), keepdim)


# ------------------------------------------------------------------------------ logsumexp / softmax

class LogsumexpBackward(Node):
    __slots__ = ("shape", "dims", "keepdim")

    def backward(self, g):
        x, out = self.unpack()
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        out = _restore_dims(out, self.shape, self.dims, self.keepdim)
        if not STATE.enabled:  # no graph to build: array arithmetic
            r = B.namespace(x.array).exp(x.array - out.array)
            r *= g.array
            return (wrap(r),)
        return (g * (x - out).exp(),)


def logsumexp(input, dim, keepdim=False):
    d = input.array
    if not _is_float(d.dtype):
        d = d.astype(D.get_default_dtype())
    dims = _dims(dim, d.ndim)
    xp = B.namespace(d)
    if _bi.any(d.shape[i] == 0 for i in dims):
        shape = _keep_shape(d.shape, dims) if keepdim else \
            tuple(s for i, s in enumerate(d.shape) if i not in dims)
        r = xp.full(shape, -_INF, dtype=d.dtype)
    else:
        m = d.max(axis=dims, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)  # rows of -inf (or holding inf) need no shift
        with np.errstate(divide="ignore"):  # log(0) = -inf for rows of -inf
            r = xp.log(_sum_arr(xp.exp(d - m), dims, True, None)) + m
        if not keepdim:
            r = r.reshape(tuple(s for i, s in enumerate(d.shape) if i not in dims))
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(LogsumexpBackward)
        n.shape, n.dims, n.keepdim = d.shape, dims, keepdim
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    return out


class SoftmaxBackward(Node):
    __slots__ = ("dims", "log")

    def backward(self, g):
        (y,) = self.unpack()
        if not STATE.enabled:  # no graph to build: array arithmetic with fewer temporaries
            gd, yd = g.array, y.array
            xp = B.namespace(yd)
            if self.log:
                r = xp.exp(yd)
                r *= -_sum_arr(gd, self.dims, True, None)
                r += gd
                return (wrap(r),)
            if self.dims == (yd.ndim - 1,):  # row-wise dot products, no temporary
                s = xp.einsum("...i,...i->...", gd, yd)[..., None]
            else:
                s = _sum_arr(gd * yd, self.dims, True, None)
            r = gd - s
            r *= yd
            return (wrap(r),)
        if self.log:
            return (g - y.exp() * sum(g, self.dims, keepdim=True),)
        gy = g * y
        return (gy - y * sum(gy, self.dims, keepdim=True),)


def _softmax(input, dim, dtype, log):
    name = "log_softmax" if log else "softmax"
    if dim is None:
        raise TypeError(f"{name}() missing required argument 'dim'")
    if dtype is not None:
        input = input._cast(D.to_dtype(dtype))
    _check_float(input, name)
    d = input.array
    dims = (norm_dim(dim, d.ndim),) if d.ndim else ()
    xp = B.namespace(d)
    if d.size == 0:
        r = d.copy()
    else:
        z = xp.asarray(d - d.max(axis=dims, keepdims=True))  # 0-d: an array, not a scalar
        if log:
            z -= xp.log(_sum_arr(xp.exp(z), dims, True, None))
        else:
            xp.exp(z, out=z)
            z /= _sum_arr(z, dims, True, None)
        r = z
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(SoftmaxBackward)
        n.dims, n.log = dims, log
        n.saved = (saved_output(out),)
        record(n, out, input)
    return out


def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably (shifted by the max)."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim=None, dtype=None):
    return _softmax(input, dim, dtype, True)


# --------------------------------------------------------------------------------- cumsum / cumprod

class CumsumBackward(Node):
    __slots__ = ("dim",)

    def backward(self, g):
        return (g if g.array.ndim == 0 else _revcumsum(g, self.dim),)


def _cum_input(input, dtype):
    dt = D.to_dtype(dtype)
    if dt is None and input.array.dtype.kind in "bui":
        dt = _int64
    if dt is not None and dt is not input.array.dtype:
        input = input._cast(dt)
    return input


def _cum_forward(name, input, dim, dtype):
    """``(input, axis, out)`` of ``xp.cumsum``/``xp.cumprod`` (float16/bfloat16 accumulate in
    float32), before any graph is recorded."""
    input = _cum_input(input, dtype)
    d = input.array
    ax = norm_dim(dim, d.ndim)
    fn = getattr(B.namespace(d), name)
    if d.ndim == 0:
        r = d.copy()
    elif _low_precision(d.dtype):
        r = fn(d, axis=ax, dtype=np.float32).astype(d.dtype)
    else:
        r = fn(d, axis=ax)
    return input, ax, wrap(r)


def cumsum(input, dim, *, dtype=None):
    input, ax, out = _cum_forward("cumsum", input, dim, dtype)
    if STATE.enabled and input.requires_grad:
        n = new_node(CumsumBackward)
        n.dim = ax
        record(n, out, input)
    return out


class CumprodBackward(Node):
    __slots__ = ("dim",)

    def backward(self, g):
        x, y = self.unpack()
        ax, xd = self.dim, x.array
        if xd.ndim == 0 or xd.size == 0 or xd.shape[ax] == 1:
            return (g,)
        xp = B.namespace(xd)
        if not bool((xd == 0).any()):
            return (_revcumsum(g * y, ax) / x,)
        if not STATE.enabled:
            return (wrap(_cumprod_grad_zeros(xp, xd, y.array, g.array, ax)),)
        # create_graph with zeros: d y_j / d x_k = cumprod of the slice with x_k replaced by
        # 1, taken at j >= k. Exact to every order; O(n^2) per slice.
        n = xd.shape[ax]
        xm, gm = x.transpose(ax, -1), g.transpose(ax, -1)
        z = _masked_fill(xm.unsqueeze(-2), wrap(xp.eye(n, dtype=bool)), 1.0)
        tri = wrap(xp.triu(xp.ones((n, n), dtype=xd.dtype)))
        gk = sum(cumprod(z, -1) * tri * gm.unsqueeze(-2), -1)
        return (gk.transpose(ax, -1),)


def _cumprod_grad_zeros(xp, x, y, g, ax):
    """First-order cumprod gradient on arrays for slices holding zeros, O(n)."""
    x, y, g = (xp.moveaxis(a, ax, -1) for a in (x, y, g))
    c = xp.cumsum(x == 0, axis=-1)  # zeros seen so far
    before = c == 0
    safe = xp.where(before, x, 1)
    rc = xp.flip(xp.cumsum(xp.flip(xp.where(before, g * y, 0), -1), axis=-1), -1)
    out = xp.where(before, rc / safe, 0)
    # the first zero z1: prod(x[:z1]) * sum_{z1 <= k < z2} g_k * prod(x[z1+1:k+1])
    first = (x == 0) & (c == 1)
    p = xp.cumprod(xp.where((c == 1) & ~first, x, 1), axis=-1)
    s = (g * p * (c == 1)).sum(axis=-1, keepdims=True)
    e = safe.prod(axis=-1, keepdims=True)
    out = xp.where(first, e * s, out).astype(x.dtype, copy=False)
    return xp.moveaxis(out, -1, ax)


def cumprod(input, dim, *, dtype=None):
    input, ax, out = _cum_forward("cumprod", input, dim, dtype)
    if STATE.enabled and input.requires_grad:
        n = new_node(CumprodBackward)
        n.dim = ax
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    return out


# ------------------------------------------------------------------- cummax / cummin / logcumsumexp

def _cum_extreme(input, dim, is_max):
    d = input.array
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return _scalar_as_1d(_cum_extreme, input, 0, is_max)
    xp = B.namespace(d)
    v = _scan(xp, "maximum" if is_max else "minimum", d, ax)
    # the index is the last position so far holding the running value (ties take the later
    # one; once NaN appears it is the running value and the last NaN is the index)
    hit = d == v
    if _is_float(d.dtype):
        hit |= xp.isnan(d)
    shape = [1] * d.ndim
    shape[ax] = d.shape[ax]
    pos = xp.where(hit, xp.arange(d.shape[ax], dtype=_int64).reshape(shape), 0)
    idx = _scan(xp, "maximum", pos, ax)
    rtype = return_types.cummax if is_max else return_types.cummin
    return rtype(_take(input, idx, ax, unique=False), wrap(idx))


def cummax(input, dim):
    """Running maximum along ``dim``: ``(values, indices)``."""
    return _cum_extreme(input, dim, True)


def cummin(input, dim):
    return _cum_extreme(input, dim, False)


class LogcumsumexpBackward(Node):
    __slots__ = ("dim",)

    def backward(self, g):
        x, y = self.unpack()
        ax = self.dim
        # sum_{k >= i} g_k exp(x_i - y_k), in log space with the signs of g kept apart
        gd = g.array
        if gd.dtype == D.bfloat16:
            import ml_dtypes

            info = ml_dtypes.finfo(gd.dtype)
        else:
            info = np.finfo(gd.dtype)
        la = _masked_fill(g.abs(), wrap(gd == 0), 1.0).log()
        out = g * 0.0
        for sel, sign in ((gd > 0, 1.0), (gd < 0, -1.0)):
            if bool(sel.any()):
                lg = _masked_fill(la, wrap(~sel), float(info.min) / 2)  # finite: no inf - inf
                t = (_flip(logcumsumexp(_flip(lg - y, ax), ax), ax) + x).exp()
                out = out + t if sign > 0 else out - t
        return (out,)


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) along ``dim``, computed stably."""
    _check_float(input, "logcumsumexp")
    d = input.array
    ax = norm_dim(dim, d.ndim)
    xp = B.namespace(d)
    r = d.copy() if d.ndim == 0 else _scan(xp, "logaddexp", d, ax)
    out = wrap(r)
    if d.ndim and STATE.enabled and input.requires_grad:
        n = new_node(LogcumsumexpBackward)
        n.dim = ax
        n.saved = (_saved(input), saved_output(out))
        record(n, out, input)
    elif STATE.enabled and input.requires_grad:
        _reduce_node(out, input, (), True, None)
    return out


# ------------------------------------------------------------------------ all / any / count_nonzero

def _logical_reduce(input, dim, keepdim, is_all):
    d = input.array
    dims = _dims(dim, d.ndim)
    xp = B.namespace(d)
    r = (xp.all if is_all else xp.any)(d, axis=dims, keepdims=keepdim)
    if d.dtype == np.uint8:  # PyTorch keeps uint8 for uint8 inputs
        r = xp.asarray(r, dtype=np.uint8)
    return wrap(xp.asarray(r))


def all(input, dim=None, keepdim=False):
    return _logical_reduce(input, dim, keepdim, True)


def any(input, dim=None, keepdim=False):
    return _logical_reduce(input, dim, keepdim, False)


def count_nonzero(input, dim=None):
    d = input.array
    dims = _dims(dim, d.ndim)
    xp = B.namespace(d)
    r = (d != 0).sum(axis=dims, dtype=_int64)
    return wrap(xp.asarray(r, dtype=_int64))


# --------------------------------------------------------------------------- sort / topk / kthvalue

def sort(input, dim=-1, descending=False, stable=False):
    """``(values, indices)`` sorted along ``dim``. With ``stable=True`` equal elements keep
    their order; without it the order of equal elements is unspecified (as in PyTorch)."""
    d = input.array
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return _scalar_as_1d(sort, input, 0, descending)
    idx = _argsort(B.namespace(d), d, ax, descending, stable)
    return return_types.sort(_take(input, idx, ax), wrap(idx.astype(_int64, copy=False)))


def argsort(input, dim=-1, descending=False, stable=False):
    d = input.array
    ax = norm_dim(dim, d.ndim)
    xp = B.namespace(d)
    if d.ndim == 0:
        return wrap(xp.zeros((), dtype=_int64))
    return wrap(_argsort(xp, d, ax, descending, stable).astype(_int64, copy=False))


def msort(input):
    return sort(input, 0).values


def _topk_indices(xp, d, ax, k, largest):
    n = d.shape[ax]
    nd = d.ndim
    if k == 1 and largest:  # argmax takes the first of equal maxima (and NaN), like the sort
        return xp.argmax(d, axis=ax, keepdims=True)
    if 0 < k and 8 * k < n:  # partition first: O(n) to find the candidates
        kth = n - k if largest else k - 1
        part = xp.argpartition(d, kth, axis=ax)
        cand = part[_index(nd, ax, slice(n - k, None) if largest else slice(0, k))]
        cand = xp.sort(cand, axis=ax)  # index order, so ties come out in index order
        order = _argsort(xp, xp.take_along_axis(d, cand, axis=ax), ax, largest)
        return xp.take_along_axis(cand, order, axis=ax)
    return _argsort(xp, d, ax, largest)[_index(nd, ax, slice(0, k))]


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` as
    ``(values, indices)``, in sorted order."""
    d = input.array
    ax = norm_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    k = int(k)
    if k < 0 or k > n:
        raise RuntimeError(f"topk(): selected index k out of range: k={k} but dimension {ax} "
                           f"has size {n}")
    if d.ndim == 0:
        return _scalar_as_1d(topk, input, k, 0, largest, sorted)
    idx = _topk_indices(B.namespace(d), d, ax, k, largest)
    return return_types.topk(_take(input, idx, ax), wrap(idx.astype(_int64, copy=False)))


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``."""
    d = input.array
    ax = norm_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    k = int(k)
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {ax}: "
                           f"k={k} but the size is {n}")
    if d.ndim == 0:
        return _scalar_as_1d(kthvalue, input, k, 0, keepdim)
    xp = B.namespace(d)
    idx = _argsort(xp, d, ax)[_index(d.ndim, ax, slice(k - 1, k))]
    return _select_dim(input, ax, idx, keepdim, return_types.kthvalue)


# ------------------------------------------------------------------------------------ median / mode

def _median_all(input, ignore_nan):
    d = input.array
    xp = B.namespace(d)
    flat = d.reshape(-1)
    if _is_float(d.dtype):
        nan = xp.isnan(flat)
        if ignore_nan:
            flat = flat[~nan]
        elif bool(nan.any()):
            flat = flat[:0]
    if flat.size == 0:
        r = xp.full((), np.nan if _is_float(d.dtype) else 0, dtype=d.dtype)
    else:
        k = (flat.size - 1) // 2
        r = xp.partition(flat, k)[k]
    return _amax_like(input, tuple(range(d.ndim)), False, xp.asarray(r))


def _median_dim(input, dim, keepdim, ignore_nan):
    name = "nanmedian" if ignore_nan else "median"
    d = input.array
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return _scalar_as_1d(_median_dim, input, 0, keepdim, ignore_nan)
    _check_nonempty(name, d, (ax,), False)
    xp = B.namespace(d)
    n = d.shape[ax]
    order = _argsort(xp, d, ax)  # NaN last
    if _is_float(d.dtype):
        isn = xp.isnan(d)
        if ignore_nan:  # lower median of the non-NaN elements (the first NaN when all are)
            cnt = n - isn.sum(axis=ax, keepdims=True)
            pos = xp.maximum(cnt - 1, 0) // 2
            idx = xp.take_along_axis(order, pos, axis=ax)
        else:  # any NaN makes the median NaN, at the first NaN
            idx = order[_index(d.ndim, ax, slice((n - 1) // 2, (n + 1) // 2))]
            idx = xp.where(isn.any(axis=ax, keepdims=True),
                           xp.argmax(isn, axis=ax, keepdims=True), idx)
    else:
        idx = order[_index(d.ndim, ax, slice((n - 1) // 2, (n + 1) // 2))]
    rtype = return_types.nanmedian if ignore_nan else return_types.median
    return _select_dim(input, ax, idx, keepdim, rtype)


def median(input, dim=None, keepdim=False):
    """``median(x)``: the lower median of all elements (NaN if any is NaN);
    ``median(x, dim, keepdim=False)``: ``(values, indices)``."""
    if dim is None:
        return _median_all(input, False)
    return _median_dim(input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN."""
    if dim is None:
        return _median_all(input, True)
    return _median_dim(input, dim, keepdim, True)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest on ties) and the index of its last
    occurrence: ``(values, indices)``."""
    d = input.array
    ax = norm_dim(dim, d.ndim)
    if d.ndim == 0:
        return _scalar_as_1d(mode, input, 0, keepdim)
    _check_nonempty("mode", d, (ax,), False)
    xp = B.namespace(d)
    nd, n = d.ndim, d.shape[ax]
    order = _argsort(xp, d, ax)
    sv = xp.take_along_axis(d, order, axis=ax)
    shape = [1] * nd
    shape[ax] = n
    ar = xp.arange(n, dtype=_int64).reshape(shape)
    new = xp.ones(sv.shape, dtype=bool)
    new[_index(nd, ax, slice(1, None))] = \
        sv[_index(nd, ax, slice(1, None))] != sv[_index(nd, ax, slice(None, -1))]
    start = _scan(xp, "maximum", xp.where(new, ar, 0), ax)
    run = ar - start  # position inside the run of equal values
    best = xp.argmax(run, axis=ax, keepdims=True)  # end of the first longest run
    idx = xp.take_along_axis(order, best, axis=ax)
    return _select_dim(input, ax, idx, keepdim, return_types.mode)


# ------------------------------------------------------------------------ unique / bincount / histc

def _rows(d, ax):
    """Slices along ``ax`` as rows of a 2-D array (for unique over a dim)."""
    xp = B.namespace(d)
    m = xp.moveaxis(d, ax, 0)
    return m.reshape(m.shape[0], -1), m.shape


def _row_change(xp, r):
    """True where a row differs from the previous one (the first row always)."""
    ch = xp.ones(r.shape[0], dtype=bool)
    if r.shape[0] > 1:
        if r.shape[1]:
            ch[1:] = (r[1:] != r[:-1]).any(axis=1)
        else:
            ch[1:] = False
    return ch


def _unique_out(input, d, ax, keys, order, change, return_inverse, return_counts):
    """Assemble unique's outputs from sorted keys (``order``) and run starts (``change``)."""
    xp = B.namespace(d)
    n = change.shape[0]
    starts = xp.flatnonzero(change)
    if ax is None:
        vals = keys[order][starts] if order is not None else keys[starts]
    else:
        rows = keys[order] if order is not None else keys
        vals, mshape = rows[starts], _rows(d, ax)[1]
        vals = xp.moveaxis(vals.reshape((starts.shape[0],) + mshape[1:]), 0, ax)
    out = [wrap(xp.ascontiguousarray(vals))]
    if return_inverse:
        ids = xp.cumsum(change) - 1
        inv = xp.empty(n, dtype=_int64)
        if order is not None:
            inv[order] = ids
        else:
            inv[...] = ids
        out.append(wrap(inv.reshape(d.shape) if ax is None else inv))
    if return_counts:
        bounds = xp.concatenate([starts, xp.asarray([n], dtype=starts.dtype)])
        out.append(wrap(xp.diff(bounds).astype(_int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or, with ``dim``, slices), in sorted order, with optionally the
    index of each input element in them and their counts. Not differentiable."""
    d = input.array
    xp = B.namespace(d)
    if dim is None:
        flat = d.reshape(-1)
        order = _argsort(xp, flat, 0)
        s = flat[order]
        change = xp.ones(s.shape[0], dtype=bool)
        if s.shape[0] > 1:
            change[1:] = s[1:] != s[:-1]
        return _unique_out(input, d, None, flat, order, change, return_inverse, return_counts)
    ax = norm_dim(dim, d.ndim)
    rows, _ = _rows(d, ax)
    if rows.shape[0] > 1 and rows.shape[1]:
        order = xp.lexsort(rows.T[::-1])  # first column is the primary key
    else:
        order = xp.arange(rows.shape[0])
    change = _row_change(xp, rows[order])
    return _unique_out(input, d, ax, rows, order, change, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (slices with ``dim``)."""
    d = input.array
    xp = B.namespace(d)
    if dim is None:
        flat = d.reshape(-1)
        change = xp.ones(flat.shape[0], dtype=bool)
        if flat.shape[0] > 1:
            change[1:] = flat[1:] != flat[:-1]
        return _unique_out(input, d, None, flat, None, change, return_inverse, return_counts)
    ax = norm_dim(dim, d.ndim)
    rows, _ = _rows(d, ax)
    return _unique_out(input, d, ax, rows, None, _row_change(xp, rows), return_inverse,
                       return_counts)


def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-D non-negative integer tensor (weighted sums with
    ``weights``)."""
    d = input.array
    xp = B.namespace(d)
    if d.ndim != 1 or d.dtype.kind not in "iu" or (d.size and bool((d < 0).any())):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    if weights is None:
        return wrap(xp.bincount(d, minlength=minlength).astype(_int64, copy=False))
    w = weights.array
    if w.shape != d.shape:
        raise RuntimeError(f"bincount(): weights should be 1-d and have the same length as "
                           f"input, got shapes {list(w.shape)} and {list(d.shape)}")
    r = xp.bincount(d, weights=w, minlength=minlength)
    return wrap(r.astype(np.float32 if w.dtype == np.float32 else np.float64, copy=False))


def histc(input, bins=100, min=0, max=0):
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range when
    min == max); elements outside are ignored. Not differentiable."""
    _check_float(input, "histc")
    d = input.array
    xp = B.namespace(d)
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, got {bins}")
    lo, hi = float(min), float(max)
    if lo == hi and d.size:
        lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not lo < hi:
        raise RuntimeError(f"histc(): max must be larger than min, got min={lo}, max={hi}")
    v = d.reshape(-1)
    v = v[(v >= lo) & (v <= hi)]
    dt = d.dtype if d.dtype.itemsize >= 4 else np.dtype(np.float32)
    pos = ((v.astype(dt) - dt.type(lo)) * dt.type(bins) / dt.type(hi - lo)).astype(_int64)
    pos = xp.minimum(pos, bins - 1)
    return wrap(xp.bincount(pos, minlength=bins).astype(d.dtype))


# --------------------------------------------------------------------------------------------- diff

def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along ``dim`` (after concatenating ``prepend``/``append``)."""
    d = input.array
    if d.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff expects n to be non-negative, got {n}")
    ax = norm_dim(dim, d.ndim)
    parts = []
    for t, what in ((prepend, "prepend"), (None, None), (append, "append")):
        if what is None:
            parts.append(input)
            continue
        if t is None:
            continue
        if not isinstance(t, U.Tensor):
            from ._util import to_tensor

            t = to_tensor(t, input, name=what)
            if t.array.ndim == 0:
                shape = list(d.shape)
                shape[ax] = 1
                t = expand_to(t, tuple(shape))
        td = t.array
        if td.ndim != d.ndim or _bi.any(td.shape[i] != d.shape[i]
                                         for i in range(d.ndim) if i != ax):
            raise RuntimeError(
                f"diff expects the shape of {what} ({list(td.shape)}) to match that of input "
                f"({list(d.shape)}) except along the differencing dimension {ax}")
        parts.append(t)
    x = _cat(parts, ax) if len(parts) > 1 else input
    for _ in range(n):
        size = x.array.shape[ax]
        if size == 0:
            break
        if x.array.dtype.kind == "b":
            xd = x.array
            x = wrap(xd[_index(xd.ndim, ax, slice(1, None))] ^ xd[_index(xd.ndim, ax,
                                                                        slice(None, -1))])
        else:
            x = narrow(x, ax, 1, size - 1) - narrow(x, ax, 0, size - 1)
    return x


# ----------------------------------------------------------------------------------- Tensor methods

class ReduceOps:
    __slots__ = ()
    sum = sum
    nansum = nansum
    mean = mean
    nanmean = nanmean
    prod = prod
    max = max
    min = min
    amax = amax
    amin = amin
    argmax = argmax
    argmin = argmin
    var = var
    std = std
    norm = norm
    logsumexp = logsumexp
    cumsum = cumsum
    cumprod = cumprod
    cummax = cummax
    cummin = cummin
    logcumsumexp = logcumsumexp
    all = all
    any = any
    count_nonzero = count_nonzero
    sort = sort
    argsort = argsort
    msort = msort
    topk = topk
    kthvalue = kthvalue
    median = median
    nanmedian = nanmedian
    mode = mode
    unique = unique
    unique_consecutive = unique_consecutive
    bincount = bincount
    histc = histc
    diff = diff

    def softmax(self, dim, dtype=None):
        return _softmax(self, dim, dtype, False)

    def log_softmax(self, dim, dtype=None):
        return _softmax(self, dim, dtype, True)


__all__ = [
    "sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "argmax",
    "argmin", "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "softmax",
    "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "all", "any",
    "count_nonzero", "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian",
    "mode", "unique", "unique_consecutive", "bincount", "histc", "diff", "return_types",
]
