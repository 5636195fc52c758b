"""Indexing: ``__getitem__``/``__setitem__`` (basic and advanced), gather/scatter family,
index_select/add/copy/fill/put, masked ops, where, nonzero, take, take_along_dim, put.

Everything that "adds values into positions" goes through one primitive, ``_add_at``
(numpy: ``np.bincount``, a one-hot product or a sort, by size; cupy: ``cupyx.scatter_add``).
Two differentiable pairs are built on it, each one the other's backward, so every op here
has gradients of any order:

* ``_index_select`` (take whole slices along a dim)  <->  ``_index_add`` (add slices back);
* ``_gather`` (take elements along a dim)             <->  ``_scatter_add`` (add elements back).

Advanced ``x[key]`` is computed by numpy/cupy fancy indexing; its backward reshapes the
gradient to a "rows" layout (the advanced dims merged into one) and uses ``_index_add``.
Index semantics follow PyTorch: integers and slices are applied first (a view), then the
index tensors apply to the remaining dims, so ``x[0, :, idx]`` has shape ``(d1, len(idx))``.
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record, saved_output
from ._util import norm_dim, sum_to, to_tensor, unbroadcast, wrap
from .shape import _slice, _slice_scatter, expand, permute, reshape

_ALL = slice(None)
_int64 = np.dtype(np.int64)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))
_UNSIGNED = {np.dtype(np.int64): np.dtype(np.uint64), np.dtype(np.int32): np.dtype(np.uint32)}
_SCALARS = (int, float, bool)


# ============================================================================ helpers

def _is_tensor(x):
    return isinstance(x, IndexOps)


def _same_device(a, d, what):
    """``a`` (an array) on the device of ``d``: a CPU index may index a CUDA tensor."""
    if type(a) is type(d):
        return a
    if B.is_cuda_array(d) and isinstance(a, np.ndarray):
        return B.namespace(d).asarray(a)
    raise RuntimeError(f"{what} is on {B.device_of(a)} but the indexed tensor is on "
                       f"{B.device_of(d)}: expected both on the same device")


def _index_arr(index, d, op):
    """The integer array of an index argument (a Tensor, array or sequence)."""
    if _is_tensor(index):
        a = index.array
    elif isinstance(index, np.ndarray) or B.is_cuda_array(index):
        a = index
    elif isinstance(index, (list, tuple, int, np.integer)):
        a = np.asarray(index)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(_int64)
    else:
        raise TypeError(f"{op}(): index must be a Tensor, got {type(index).__name__}")
    if a.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int64 or int32 for index, but got "
                           f"{D.name(a.dtype)}")
    return _same_device(a, d, f"{op}(): index")


def _bounds(a, size, dim, negative, op=""):
    """Check ``a`` against a dim of ``size``; returns it with negative indices wrapped (a
    new array then) when ``negative`` allows them."""
    if a.size == 0:
        return a
    if not negative:  # one pass: negatives read as unsigned are huge
        if int(a.view(_UNSIGNED[a.dtype]).max()) < size:
            return a
    lo, hi = int(a.min()), int(a.max())
    low = -size if negative else 0
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        pre = f"{op}(): " if op else ""
        raise IndexError(f"{pre}index {bad} is out of bounds for dimension {dim} with size {size}")
    if lo < 0:
        return B.namespace(a).where(a < 0, a + size, a)
    return a


def _broadcast_shape(a, b):
    """Broadcast two shapes, with PyTorch's error message."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _nocopy_reshape(a, shape):
    """``a`` reshaped without copying (a view that writes through), or None."""
    try:
        v = a.view()
        v.shape = shape
        return v
    except Exception:
        return None


def _mask_arr(mask, d, op):
    m = mask.array if _is_tensor(mask) else (
        mask if isinstance(mask, np.ndarray) or B.is_cuda_array(mask) else np.asarray(mask))
    if m.dtype.kind != "b":
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{D.name(m.dtype)}")
    return _same_device(m, d, f"{op}: mask")


# ============================================================================ add-at primitive

_CUPY_ADD = frozenset(np.dtype(c) for c in "iILQefd")
_CUPY_MAXMIN = frozenset(np.dtype(c) for c in "iILQfd")


_PASSES = 16  # repeats up to this many per position are added pass by pass


def _add_at(out, axis, idx, vals):
    """In place: ``out[..., idx[j], ...] += vals[..., j, ...]`` along ``axis``, repeated
    indices summed. ``idx`` is 1-d, non-negative and in range; ``vals`` has ``out``'s shape
    with ``len(idx)`` along ``axis``. The one scatter-add every op here goes through.

    numpy: a dense 1-d float target takes one ``bincount``, a small float problem one
    one-hot matrix product; otherwise the indices are sorted and each one's repeats
    ranked: rank k of every index is a set of distinct positions, so it is added with one
    fancy ``+=``; ranks past ``_PASSES`` (positions hit very often) are summed per position
    at once."""
    m = idx.shape[0]
    if m == 0:
        return
    if type(out) is not np.ndarray:
        return _add_at_cuda(out, axis, idx, vals)
    if out.ndim == 1 and out.dtype.kind == "f" and 4 * m >= out.shape[0]:
        # dense target: one O(n + m) pass, no sort (accumulates in float64)
        out += np.bincount(idx, vals, out.shape[0]).astype(out.dtype, copy=False)
        return
    pre = (_ALL,) * axis
    n = out.shape[axis]
    if m > 1 and out.dtype.kind == "f" and n * m <= 4096 and vals.size <= 1 << 16 and \
            np.isfinite(vals).all():
        # small: a one-hot matrix product beats the sort's many tiny numpy calls (finite
        # values only: 0 * inf would spread NaN to other positions)
        onehot = np.zeros((n, m), out.dtype)
        onehot[idx, np.arange(m)] = 1
        o = np.moveaxis(out, axis, 0)
        o += (onehot @ np.moveaxis(vals, axis, 0).reshape(m, -1)).reshape(o.shape)
        return
    if m > 1:
        order = idx.argsort()
        s = idx[order]
        first = np.empty(m, bool)
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
        if not first.all():
            starts = np.flatnonzero(first)
            rank = np.arange(m) - starts[np.cumsum(first) - 1]
            top = int(rank.max())
            for k in range(min(top + 1, _PASSES)):
                sel = np.flatnonzero(rank == k)
                out[pre + (s[sel],)] += vals.take(order[sel], axis=axis)
            if top >= _PASSES:
                rest = np.flatnonzero(rank >= _PASSES)
                rs = s[rest]
                seg = np.flatnonzero(np.concatenate(([True], rs[1:] != rs[:-1])))
                rv = vals.take(order[rest], axis=axis)
                if 8 * seg.size <= rest.size:  # few long runs: numpy's reduceat is slow per
                    ends = np.append(seg[1:], rest.size)  # row, a sum per run is not
                    red = np.stack([rv[pre + (slice(a, b),)].sum(axis=axis)
                                    for a, b in zip(seg.tolist(), ends.tolist())], axis=axis)
                else:
                    red = np.add.reduceat(rv, seg, axis=axis)
                out[pre + (rs[seg],)] += red
            return
    out[pre + (idx,)] += vals


def _add_at_cuda(out, axis, idx, vals):
    import cupyx

    xp = B.namespace(out)
    key = (_ALL,) * axis + (idx,)
    dt = out.dtype
    if dt in _CUPY_ADD:
        cupyx.scatter_add(out, key, vals.astype(dt, copy=False))
        return
    if dt.kind == "c":  # no complex atomics: real and imaginary parts separately
        wide = np.dtype(np.float64 if dt.itemsize == 16 else np.float32)
        re, im = xp.zeros(out.shape, wide), xp.zeros(out.shape, wide)
        cupyx.scatter_add(re, key, vals.real.astype(wide))
        cupyx.scatter_add(im, key, vals.imag.astype(wide))
        out += re + 1j * im
        return
    tmp = xp.zeros(out.shape, _int64)  # bool, int8/16, uint8: count in int64
    cupyx.scatter_add(tmp, key, vals.astype(_int64))
    if dt.kind == "b":
        out |= tmp > 0
    else:
        out += tmp.astype(dt)


_REDUCE_UFUNC = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _reduce_at(flat, lin, vals, reduce):
    """In place on 1-d ``flat``: combine ``vals`` into ``flat[lin]`` with prod/amax/amin."""
    if lin.size == 0:
        return
    if type(flat) is not np.ndarray:
        return _reduce_at_cuda(flat, lin, vals, reduce)
    ufunc = _REDUCE_UFUNC[reduce]
    if lin.size > 1 and not (lin[1:] >= lin[:-1]).all():
        order = lin.argsort(kind="stable")
        lin, vals = lin[order], vals[order]
    starts = np.flatnonzero(np.concatenate(([True], lin[1:] != lin[:-1])))
    pos = lin[starts]
    flat[pos] = ufunc(flat[pos], ufunc.reduceat(vals, starts))


def _reduce_at_cuda(flat, lin, vals, reduce):
    import cupyx

    xp = B.namespace(flat)
    if reduce == "prod":  # cupy has no multiplicative scatter: reduce on the host
        host = flat.get()
        _reduce_at(host, lin.get(), vals.get(), reduce)
        flat[...] = xp.asarray(host)
        return
    fn = cupyx.scatter_max if reduce == "amax" else cupyx.scatter_min
    if flat.dtype in _CUPY_MAXMIN:
        fn(flat, lin, vals.astype(flat.dtype, copy=False))
        return
    wide = np.dtype(np.float32 if flat.dtype.kind == "f" else np.int64)
    tmp = flat.astype(wide)
    fn(tmp, lin, vals.astype(wide))
    flat[...] = tmp.astype(flat.dtype)


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind == "b":
        return reduce == "amin"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


# ============================================================================ index keys

_INT, _SLICE, _NEW, _ELL, _BOOL, _ARR, _MASK = range(7)


def _item(it, d):
    """Classify one entry of an index expression: (kind, value)."""
    if it is None:
        return _NEW, None
    t = type(it)
    if t is int:
        return _INT, it
    if t is slice:
        return _SLICE, it
    if it is Ellipsis:
        return _ELL, None
    if t is bool or t is np.bool_:
        return _BOOL, bool(it)
    if isinstance(it, np.integer):
        return _INT, int(it)
    if _is_tensor(it):
        a = it.array
    elif isinstance(it, np.ndarray) or B.is_cuda_array(it):
        a = it
    elif t is range:
        a = np.arange(it.start, it.stop, it.step, dtype=_int64)
    elif isinstance(it, (list, tuple)):
        try:
            a = np.asarray(it)
        except ValueError:
            a = np.asarray(it, dtype=object)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(_int64)
    else:
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long, int or bool "
            f"tensors are valid indices (got {t.__name__})")
    k = a.dtype.kind
    if k == "b":
        if a.ndim == 0:
            return _BOOL, bool(a)
        return _MASK, _same_device(a, d, "index")
    if a.dtype not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int or bool tensors "
                         f"(got {D.name(a.dtype) if k != 'O' else 'a non-numeric sequence'})")
    if a.ndim == 0:
        return _INT, int(a)
    return _ARR, _same_device(a, d, "index")


class _Key:
    """A parsed index expression for arrays of one shape: a basic part (ints, slices,
    None: a view) and an advanced part (index arrays or one bool mask on the view's dims)."""

    __slots__ = ("basic", "trivial", "adv", "adv_key", "mask", "shape", "vshape", "_rows",
                 "unchecked")

    def get(self, arr):
        v = arr if self.trivial else arr[self.basic]
        if self.adv is None:
            return v
        try:
            return v[self.adv_key]
        except IndexError:
            self.check()
            raise

    def check(self):
        """Bounds of the index arrays (on numpy deferred to here: numpy's own indexing
        catches them first, and this gives the message)."""
        if self.unchecked:
            for a, n, dim in self.unchecked:
                _bounds_only(a, n, dim)
            self.unchecked = None

    def rows(self):
        """The advanced part as rows: ``(r, P, S, dims)`` where the advanced dims ``dims``
        of the view, merged into one of size ``P``, are read at rows ``r`` (1-d), giving
        the broadcast index shape ``S``."""
        if self._rows is not None:
            return self._rows
        self.check()
        vs = self.vshape
        if self.mask:
            vd, m = self.adv[0]
            xp = B.namespace(m)
            r = xp.flatnonzero(m)
            res = (r, m.size, (r.size,), tuple(range(vd, vd + m.ndim)))
        else:
            r, P = None, 1
            for vd, a in self.adv:
                xp = B.namespace(a)
                a = a.astype(_int64)  # a copy: later changes to the index do not leak in
                n = vs[vd]
                if a.size and int(a.min()) < 0:
                    a = xp.where(a < 0, a + n, a)
                r = a if r is None else r * n + a
                P *= n
            S = r.shape if len(self.adv) == 1 else \
                np.broadcast_shapes(*(a.shape for _, a in self.adv))
            r = (xp.broadcast_to(r, S) if r.shape != S else r).reshape(-1)
            res = (r, P, S, tuple(vd for vd, _ in self.adv))
        self._rows = res
        return res

    def layout(self):
        """``(adjacent, first, rest)``: advanced dims next to each other stay in place
        (result dims ``vshape[:first] + S + vshape[last+1:]``); otherwise the index dims
        go first, then the ``rest`` of the view's dims in order."""
        _, _, _, dims = self.rows()
        adjacent = dims == tuple(range(dims[0], dims[0] + len(dims)))
        rest = tuple(i for i in range(len(self.vshape)) if i not in dims)
        return adjacent, dims, rest

    def result_shape(self):
        if self.adv is None:
            return self.vshape
        _, _, S, _ = self.rows()
        adjacent, dims, rest = self.layout()
        vs = self.vshape
        if adjacent:
            return vs[:dims[0]] + tuple(S) + vs[dims[-1] + 1:]
        return tuple(S) + tuple(vs[i] for i in rest)

    def write(self, arr, value, accumulate):
        """``arr[key] = value`` (or ``+=`` with repeated positions summed), in place."""
        v = arr[self.basic]
        try:
            if self.adv is None:
                if accumulate:
                    v += value
                else:
                    v[...] = value
            elif not accumulate:
                try:
                    v[self.adv_key] = value
                except IndexError:
                    self.check()
                    raise
            else:
                self._accumulate(v, value)
        except ValueError:
            vshape = list(np.shape(value))
            raise RuntimeError(f"shape mismatch: value tensor of shape {vshape} cannot be "
                               f"broadcast to indexing result of shape "
                               f"{list(self.result_shape())}") from None

    def _accumulate(self, view, value):
        xp = B.namespace(view)
        r, P, S, _ = self.rows()
        adjacent, dims, rest = self.layout()
        vs = self.vshape
        vals = xp.broadcast_to(xp.asarray(value, dtype=view.dtype), self.result_shape())
        if adjacent:
            a = dims[0]
            base = vs[:a] + (P,) + vs[dims[-1] + 1:]
            vals = vals.reshape(vs[:a] + (r.size,) + vs[dims[-1] + 1:])
            tv = _nocopy_reshape(view, base)
            if tv is not None:
                return _add_at(tv, a, r, vals)
            tmp = xp.zeros(base, view.dtype)
            _add_at(tmp, a, r, vals)
            view += tmp.reshape(vs)
            return
        perm = dims + rest
        tshape = tuple(vs[i] for i in perm)
        base = (P,) + tuple(vs[i] for i in rest)
        vals = vals.reshape((r.size,) + base[1:])
        tv = _nocopy_reshape(view.transpose(perm), base)
        if tv is not None:
            return _add_at(tv, 0, r, vals)
        tmp = xp.zeros(base, view.dtype)
        _add_at(tmp, 0, r, vals)
        view += tmp.reshape(tshape).transpose(np.argsort(perm))


def _parse(d, key):
    """Parse ``key`` (anything ``tensor[key]`` accepts) for array ``d``."""
    shape = d.shape
    ndim = len(shape)
    items = [_item(it, d) for it in (key if type(key) is tuple else (key,))]
    used = 0
    n_adv = 0
    n_ell = 0
    for kind, v in items:
        if kind == _INT or kind == _SLICE:
            used += 1
        elif kind == _ARR:
            used += 1
            n_adv += 1
        elif kind == _MASK:
            used += v.ndim
            n_adv += 1
        elif kind == _ELL:
            n_ell += 1
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` to convert "
                             "a 0-dim tensor to a Python number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    xp = B.namespace(d)
    basic = []
    adv = []
    ind = vd = 0
    trivial = True
    for kind, v in items:
        if kind == _SLICE:
            if v.step is not None:
                step = v.step.__index__()
                if step <= 0:
                    raise ValueError("slice step cannot be zero" if step == 0
                                     else "step must be greater than zero")
            if v != _ALL:
                trivial = False
            basic.append(v)
            ind += 1
            vd += 1
        elif kind == _INT:
            n = shape[ind]
            if v < -n or v >= n:
                raise IndexError(f"index {v} is out of bounds for dimension {ind} with size {n}")
            basic.append(v)
            trivial = False
            ind += 1
        elif kind == _NEW:
            basic.append(None)
            trivial = False
            vd += 1
        elif kind == _ELL:
            k = ndim - used
            basic.extend((_ALL,) * k)
            ind += k
            vd += k
        elif kind == _BOOL:
            # a new dim of size 1, kept (True) or emptied (False); next to index tensors it
            # takes part in their broadcast, as in PyTorch and numpy
            basic.append(None)
            trivial = False
            if n_adv or not v:
                adv.append((vd, xp.zeros(1 if v else 0, _int64), None))
            vd += 1
        elif kind == _ARR:
            basic.append(_ALL)
            adv.append((vd, v, ind))
            ind += 1
            vd += 1
        else:  # _MASK
            k = v.ndim
            got = shape[ind:ind + k]
            if v.shape != got:
                j = next((j for j in range(k) if j >= len(got) or v.shape[j] != got[j]), 0)
                raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does not "
                                 f"match the shape of the indexed tensor {list(shape)} at index "
                                 f"{ind + j}")
            basic.extend((_ALL,) * k)
            adv.append((vd, v, -1 - ind))
            ind += k
            vd += k
    basic.append(Ellipsis)  # also makes ``d[0, 1]`` a 0-d view rather than a scalar
    k = _Key()
    k.basic = tuple(basic)
    k.trivial = trivial
    k.shape = shape
    k._rows = k.unchecked = None
    k.vshape = vshape = d[k.basic].shape if not trivial else shape
    if not adv:
        k.adv = k.adv_key = None
        k.mask = False
        return k
    k.mask = len(adv) == 1 and adv[0][2] is not None and adv[0][2] < 0
    if k.mask:
        k.adv = [(adv[0][0], adv[0][1])]
        akey = [_ALL] * len(vshape)
        akey[adv[0][0]] = adv[0][1]
        k.adv_key = tuple(akey[:adv[0][0] + 1])
        return k
    arrays = []
    unchecked = []
    for vd, a, ind in adv:
        if ind is not None and ind < 0:  # a mask among index tensors: its nonzero coords
            arrays.extend((vd + j, c) for j, c in enumerate(xp.nonzero(a)))
        else:
            if ind is not None:
                unchecked.append((a, vshape[vd], ind))
            arrays.append((vd, a))
    if xp is np:
        k.unchecked = unchecked
    else:  # cupy does not check bounds (it wraps around): check here
        for a, n, dim in unchecked:
            _bounds_only(a, n, dim)
    if len(arrays) > 1:
        try:
            np.broadcast_shapes(*(a.shape for _, a in arrays))
        except ValueError:
            shapes = ", ".join(str(list(a.shape)) for _, a in arrays)
            raise IndexError("shape mismatch: indexing tensors could not be broadcast "
                             f"together with shapes {shapes}") from None
    akey = [_ALL] * len(vshape)
    for vd, a in arrays:
        akey[vd] = a
    k.adv = arrays
    k.adv_key = tuple(akey[:max(vd for vd, _ in arrays) + 1])
    return k


def _bounds_only(a, n, dim):
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


# ============================================================================ getitem


def _pad(t, shape):
    """``t`` in the leading corner of zeros of ``shape`` (grad of a src larger than index)."""
    if t.array.shape == tuple(shape):
        return t
    return _slice_scatter(t, tuple(shape), tuple(slice(0, s) for s in t.array.shape) + (Ellipsis,))


class IndexBackward(Node):
    __slots__ = ("key",)

    def backward(self, g):
        return (_index_grad(g, self.key),)


def _take_key(t, k):
    """Differentiable ``t[key]`` for a parsed key."""
    if k.adv is None:
        return _slice(t, k.basic)
    out = wrap(k.get(t.array))
    if STATE.enabled and t.requires_grad:
        n = new_node(IndexBackward)
        n.key = k
        record(n, out, t)
    return out


def _reshape(t, shape):
    return t if t.array.shape == shape else reshape(t, shape)


def _index_grad(g, k):
    """Zeros shaped like the indexed tensor with ``g`` added at the key's positions: ``g``
    as rows (the index dims merged into one), added into the merged advanced dims."""
    r, P, S, _ = k.rows()
    adjacent, dims, rest = k.layout()
    vs = k.vshape
    if adjacent:
        a = dims[0]
        gc = _reshape(g, vs[:a] + (r.size,) + vs[dims[-1] + 1:])
        z = _index_add(None, a, r, gc, shape=vs[:a] + (P,) + vs[dims[-1] + 1:])
        z = _reshape(z, vs)
    else:
        gc = _reshape(g, (r.size,) + tuple(vs[i] for i in rest))
        z = _index_add(None, 0, r, gc, shape=(P,) + tuple(vs[i] for i in rest))
        perm = dims + rest
        z = _reshape(z, tuple(vs[i] for i in perm))
        z = permute(z, [int(i) for i in np.argsort(perm)])
    if not k.trivial:
        z = _slice_scatter(z, k.shape, k.basic)
    return z


def getitem(input, key):
    """``input[key]``: basic indexing returns a view, advanced indexing a copy."""
    t = type(key)
    if t is int or t is slice and (key.step is None or type(key.step) is int and key.step > 0):
        d = input.array  # fast path for the commonest keys
        basic = (key, Ellipsis)
        try:
            r = d[basic]
        except IndexError:
            _parse(d, key)  # raises with PyTorch's message
            raise
        return _slice(input, basic, r)
    return _take_key(input, _parse(input.array, key))


# ============================================================================ setitem / index_put

class IndexPutBackward(Node):
    __slots__ = ("key", "accumulate", "vshape", "vdtype")

    def backward(self, g):
        nx = self.next
        gi = gv = None
        if nx[0] is not None:
            gi = g if self.accumulate else _index_put(g, self.key, 0, False)
        if nx[1] is not None:
            gv = _value_grad(_take_key(g, self.key), self.vshape, self.vdtype)
        return gi, gv


def _strip(shape):
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return tuple(shape[i:])


def _value_grad(r, vshape, vdtype):
    """Gradient of a value broadcast into an index result ``r``, reduced to its shape."""
    st = _strip(vshape)
    if r.array.shape != st:
        r = sum_to(r, st)
    if st != tuple(vshape):
        r = reshape(r, vshape)
    if r.array.dtype != vdtype:
        r = r._cast(vdtype)
    return r


def _value_arr(value, d):
    """The array (or scalar) written by an index assignment into ``d``."""
    if _is_tensor(value):
        v = value.array
        if type(v) is not type(d):
            raise RuntimeError(f"index assignment: the value is on {B.device_of(v)} but the "
                               f"tensor is on {B.device_of(d)}")
    elif type(value) in _SCALARS or isinstance(value, (np.number, np.bool_)):
        return value
    else:
        v = to_tensor(value, wrap(d), name="value").array
    if v.dtype != d.dtype:
        v = v.astype(d.dtype)
    st = _strip(v.shape)
    return v.reshape(st) if st != v.shape else v


def _index_put(input, k, value, accumulate):
    """Out of place: ``input`` with ``value`` written (or added) at parsed key ``k``."""
    d = input.array
    out = d.copy()
    k.write(out, _value_arr(value, d), accumulate)
    res = wrap(out)
    vt = value if _is_tensor(value) else None
    if STATE.enabled and (input.requires_grad or (vt is not None and vt.requires_grad)):
        n = new_node(IndexPutBackward)
        n.key, n.accumulate = k, accumulate
        if vt is not None:
            n.vshape, n.vdtype = vt.array.shape, vt.array.dtype
        record(n, res, input, vt)
    return res


def _check_writeable(d):
    if not d.flags.writeable:
        raise RuntimeError("in-place operation on a read-only tensor (a broadcast view made by "
                           "expand): clone() it first")


def _grad_inplace(self, *others):
    return STATE.enabled and (self.requires_grad or any(
        _is_tensor(o) and o.requires_grad for o in others))


def setitem(self, key, value):
    """``self[key] = value`` (value a tensor or number, broadcast to the indexed shape)."""
    d = self.array
    k = _parse(d, key)
    if _grad_inplace(self, value):
        from .elementwise import apply_inplace

        apply_inplace(self, _index_put, k, value, False)
        return
    _check_writeable(d)
    k.write(d, _value_arr(value, d), False)
    self._bump()


def index_put(input, indices, values, accumulate=False):
    """``input`` with ``values`` put at ``input[indices]`` (indices: a tuple of index
    tensors); ``accumulate=True`` adds, summing repeated positions."""
    return _index_put(input, _parse(input.array, tuple(indices)), values, accumulate)


# ============================================================================ index_select / add

class IndexSelectBackward(Node):
    __slots__ = ("dim", "idx", "shape")

    def backward(self, g):
        return (_index_add(None, self.dim, self.idx, g, shape=self.shape),)


class IndexAddBackward(Node):
    __slots__ = ("dim", "idx", "alpha")

    def backward(self, g):
        nx = self.next
        gs = None
        if nx[1] is not None:
            gs = _index_select(g, self.dim, self.idx)
            if self.alpha != 1:
                gs = gs * self.alpha
        return (g if nx[0] is not None else None), gs


def _index_select(x, dim, idx):
    d = x.array
    out = wrap(B.namespace(d).take(d, idx, axis=dim))
    if STATE.enabled and x.requires_grad:
        n = new_node(IndexSelectBackward)
        n.dim, n.idx, n.shape = dim, idx, d.shape
        record(n, out, x)
    return out


def _index_add(input, dim, idx, src, alpha=1, shape=None):
    """``input`` (None: zeros of ``shape``) plus ``src`` slices added at ``idx`` along dim."""
    sd = src.array
    xp = B.namespace(sd)
    out = xp.zeros(shape, sd.dtype) if input is None else input.array.copy()
    _add_at(out, dim, idx, sd if alpha == 1 else sd * alpha)
    res = wrap(out)
    if STATE.enabled and (src.requires_grad or (input is not None and input.requires_grad)):
        n = new_node(IndexAddBackward)
        n.dim, n.idx, n.alpha = dim, idx, alpha
        record(n, res, input, src)
    return res


def _keep(a, *ts):
    """``a`` copied when a graph will hold it (a later in-place change to the caller's index
    tensor must not alter a recorded backward)."""
    if STATE.enabled and any(_is_tensor(t) and t.requires_grad for t in ts):
        return a.copy()
    return a


def _dim_index(input, dim, index, op, *others, negative=False):
    """Normalized dim and 1-d index array for the index_* ops."""
    d = input.array
    dim = norm_dim(dim, max(d.ndim, 1))
    a = _index_arr(index, d, op)
    if a.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    a = a.reshape(-1)
    a = _bounds(a, d.shape[dim] if d.ndim else 1, dim, negative, op)
    return dim, _keep(a, input, *others)


def _check_source(op, d, s, dim, m):
    if s.dtype != d.dtype:
        raise RuntimeError(f"{op}(): self ({D.name(d.dtype)}) and source ({D.name(s.dtype)}) "
                           "must have the same scalar type")
    want = d.shape[:dim] + (m,) + d.shape[dim + 1:] if d.ndim else (m,) if m != 1 else s.shape
    if s.shape != want and not (d.ndim == 0 and s.size == m):
        raise RuntimeError(f"{op}(): expected source of shape {list(want)} (self's shape with "
                           f"{m} at dim {dim}, one slice per index), got {list(s.shape)}")


def _as_1d(t):
    return reshape(t, (1,)) if _is_tensor(t) and t.array.ndim == 0 else t


def _back_to_0d(out, was0d):
    return reshape(out, ()) if was0d and out.array.size == 1 else out


def index_select(input, dim, index):
    """Slices of ``input`` along ``dim`` at ``index`` (1-d)."""
    dim, a = _dim_index(input, dim, index, "index_select")
    if input.array.ndim == 0:
        return _back_to_0d(_index_select(_as_1d(input), 0, a), True)
    return _index_select(input, dim, a)


def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` slices added at ``index`` along ``dim`` (repeated
    indices accumulate)."""
    src = source if _is_tensor(source) else to_tensor(source, input, name="source")
    dim, a = _dim_index(input, dim, index, "index_add", src)
    _check_source("index_add_", input.array, src.array, dim, a.size)
    if input.array.ndim == 0:
        return _back_to_0d(_index_add(_as_1d(input), 0, a, _as_1d(src), alpha), True)
    return _index_add(input, dim, a, src, alpha)


# ============================================================================ index_copy / fill

class IndexFillBackward(Node):
    __slots__ = ("dim", "idx", "vdtype")

    def backward(self, g):
        nx = self.next
        gi = _index_fill(g, self.dim, self.idx, 0) if nx[0] is not None or nx[1] is not None \
            else None
        gv = None
        if nx[1] is not None:  # the filled positions, each once even if indexed twice
            gv = (g - gi).sum()
            if gv.array.dtype != self.vdtype:
                gv = gv._cast(self.vdtype)
        return (gi if nx[0] is not None else None), gv


class IndexCopyBackward(Node):
    __slots__ = ("dim", "idx")

    def backward(self, g):
        nx = self.next
        gi = _index_fill(g, self.dim, self.idx, 0) if nx[0] is not None else None
        gs = _index_select(g, self.dim, self.idx) if nx[1] is not None else None
        return gi, gs


def _index_fill(input, dim, idx, value):
    d = input.array
    out = d.copy()
    vt = value if _is_tensor(value) else None
    out[(_ALL,) * dim + (idx,)] = vt.array.astype(d.dtype) if vt is not None else value
    res = wrap(out)
    if STATE.enabled and (input.requires_grad or (vt is not None and vt.requires_grad)):
        n = new_node(IndexFillBackward)
        n.dim, n.idx = dim, idx
        n.vdtype = vt.array.dtype if vt is not None else None
        record(n, res, input, vt)
    return res


def _index_copy(input, dim, idx, src):
    out = input.array.copy()
    out[(_ALL,) * dim + (idx,)] = src.array
    res = wrap(out)
    if STATE.enabled and (input.requires_grad or src.requires_grad):
        n = new_node(IndexCopyBackward)
        n.dim, n.idx = dim, idx
        record(n, res, input, src)
    return res


def index_fill(input, dim, index, value):
    """``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number or a
    0-d tensor)."""
    if _is_tensor(value) and value.array.ndim != 0:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.array.ndim} dimension(s).")
    dim, a = _dim_index(input, dim, index, "index_fill", value, negative=True)
    if input.array.ndim == 0:
        return _back_to_0d(_index_fill(_as_1d(input), 0, a, value), True)
    return _index_fill(input, dim, a, value)


def index_copy(input, dim, index, source):
    """``input`` with the slices at ``index`` along ``dim`` replaced by ``source``'s."""
    src = source if _is_tensor(source) else to_tensor(source, input, name="source")
    dim, a = _dim_index(input, dim, index, "index_copy", src)
    _check_source("index_copy_", input.array, src.array, dim, a.size)
    if input.array.ndim == 0:
        return _back_to_0d(_index_copy(_as_1d(input), 0, a, _as_1d(src)), True)
    return _index_copy(input, dim, a, src)


# ============================================================================ gather / scatter

def _lin(xp, idx, dim, shape):
    """Flat (C-order) positions in an array of ``shape`` of ``idx`` read along ``dim``
    (each element's own position in the other dims)."""
    nd = len(shape)
    strides = [1] * nd
    for i in range(nd - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    lin = idx.astype(_int64) * strides[dim]
    for i in range(nd):
        if i != dim and idx.shape[i] > 1:
            b = [1] * nd
            b[i] = idx.shape[i]
            lin += (xp.arange(idx.shape[i], dtype=_int64) * strides[i]).reshape(b)
    return lin


def _along(arr, idx, dim):
    """``arr`` read at ``idx`` along ``dim`` and at each element's own position in the other
    dims (``idx`` may be smaller than ``arr`` there): the gather of raw arrays."""
    xp = B.namespace(arr)
    nd = idx.ndim
    key = []
    for i in range(nd):
        if i == dim:
            key.append(idx)
        else:
            n = idx.shape[i]
            key.append(xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1)))
    return arr[tuple(key)]


def _corner(arr, shape, skip=None):
    """``arr`` cut to ``shape`` (its leading corner), except along dim ``skip``."""
    if arr.shape == tuple(shape) or (skip is not None and all(
            s == t for i, (s, t) in enumerate(zip(arr.shape, shape)) if i != skip)):
        return arr
    return arr[tuple(_ALL if i == skip else slice(0, s) for i, s in enumerate(shape))]


class GatherBackward(Node):
    __slots__ = ("dim", "idx", "shape")

    def backward(self, g):
        return (_scatter_add(None, self.dim, self.idx, g, shape=self.shape),)


class ScatterAddBackward(Node):
    __slots__ = ("dim", "idx", "sshape")

    def backward(self, g):
        nx = self.next
        gs = _pad(_gather(g, self.dim, self.idx), self.sshape) if nx[1] is not None else None
        return (g if nx[0] is not None else None), gs


class ScatterBackward(Node):
    __slots__ = ("dim", "idx", "sshape")

    def backward(self, g):
        nx = self.next
        gi = _scatter(g, self.dim, self.idx, None, 0) if nx[0] is not None else None
        gs = _pad(_gather(g, self.dim, self.idx), self.sshape) if nx[1] is not None else None
        return gi, gs


def _gather(x, dim, idx):
    d = x.array
    out = wrap(_along(d, idx, dim))
    if STATE.enabled and x.requires_grad:
        n = new_node(GatherBackward)
        n.dim, n.idx, n.shape = dim, idx, d.shape
        record(n, out, x)
    return out


def _flat_work(out):
    """A C-contiguous 1-d view to scatter into, and whether it must be copied back."""
    if out.flags.c_contiguous:
        return out.reshape(-1), None
    work = B.namespace(out).ascontiguousarray(out)
    return work.reshape(-1), work


def _scatter_arr(out, dim, idx, vals, reduce, include_self=True):
    """In place on ``out``: write or combine ``vals`` (an array of ``idx``'s shape, or a
    number) at ``idx`` along ``dim``. Returns the per-position counts for ``mean``."""
    xp = B.namespace(out)
    flat, work = _flat_work(out)
    lin = _lin(xp, idx, dim, out.shape).reshape(-1)
    if not isinstance(vals, _SCALARS):
        vals = vals.reshape(-1)
    cnt = None
    if reduce is None:
        flat[lin] = vals
    else:
        if isinstance(vals, _SCALARS):
            vals = xp.full(lin.shape, vals, out.dtype)
        if not include_self:
            flat[lin] = _identity(reduce, out.dtype)
        if reduce == "sum" or reduce == "mean":
            _add_at(flat, 0, lin, vals)
        else:
            _reduce_at(flat, lin, vals, reduce)
        if reduce == "mean":
            cnt = xp.bincount(lin, minlength=flat.size) + (1 if include_self else 0)
            safe = xp.maximum(cnt, 1)
            if out.dtype.kind in "fc":
                flat /= safe
            else:
                flat //= safe
            cnt = cnt.reshape(out.shape)
    if work is not None:
        out[...] = work
    return cnt


def _scatter(input, dim, idx, src, value):
    d = input.array
    out = d.copy()
    _scatter_arr(out, dim, idx, _corner(src.array, idx.shape) if src is not None else value, None)
    res = wrap(out)
    if STATE.enabled and (input.requires_grad or (src is not None and src.requires_grad)):
        n = new_node(ScatterBackward)
        n.dim, n.idx, n.sshape = dim, idx, (src.array.shape if src is not None else None)
        record(n, res, input, src)
    return res


def _scatter_add(input, dim, idx, src, shape=None):
    sd = src.array
    xp = B.namespace(sd)
    out = xp.zeros(shape, sd.dtype) if input is None else input.array.copy()
    _scatter_arr(out, dim, idx, _corner(sd, idx.shape), "sum")
    res = wrap(out)
    if STATE.enabled and (src.requires_grad or (input is not None and input.requires_grad)):
        n = new_node(ScatterAddBackward)
        n.dim, n.idx, n.sshape = dim, idx, sd.shape
        record(n, res, input, src)
    return res


def _check_scatter(op, input, dim, index, src=None):
    """Validated (dim, index array) for gather/scatter-like ops."""
    d = input.array
    nd = d.ndim
    dim = norm_dim(dim, max(nd, 1))
    a = _index_arr(index, d, op)
    if a.ndim != nd and not (a.ndim <= 1 and nd <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"input tensor ({a.ndim} vs {nd})")
    if nd == 0:
        a = a.reshape(-1)
    shape = d.shape if nd else (1,)
    for i in range(a.ndim):
        if i != dim and a.shape[i] > shape[i]:
            raise RuntimeError(f"{op}(): Size does not match at dimension {i}: expected index "
                               f"{list(a.shape)} to be no larger than self {list(d.shape)} "
                               f"apart from dimension {dim}")
    if src is not None:
        s = src.array
        if s.dtype != d.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype "
                               f"({D.name(d.dtype)} vs {D.name(s.dtype)})")
        ss = s.shape if s.ndim else (1,)
        if len(ss) != a.ndim or any(a.shape[i] > ss[i] for i in range(a.ndim)):
            raise RuntimeError(f"{op}(): Expected index {list(a.shape)} to be no larger than "
                               f"src {list(s.shape)}")
    a = _bounds(a, shape[dim], dim, False, op)
    return dim, _keep(a, input, src)


def _flat_args(input, *ts):
    """0-d tensors as 1-d (gather/scatter on scalars)."""
    return [_as_1d(t) if t is not None else None for t in (input,) + ts]


def gather(input, dim, index, *, sparse_grad=False):
    """Elements of ``input`` along ``dim`` at ``index`` (same number of dims as input)."""
    dim, a = _check_scatter("gather", input, dim, index)
    if input.array.ndim == 0:
        return _back_to_0d(_gather(_as_1d(input), 0, a), np.ndim(a) == 0 or
                           (_is_tensor(index) and index.array.ndim == 0))
    return _gather(input, dim, a)


def _src_or_value(input, src, value, op):
    if src is None and value is None:
        raise TypeError(f"{op}(): expected a src tensor or a value")
    if src is not None and not _is_tensor(src):
        if isinstance(src, (_SCALARS, np.number)):
            return None, src
        src = to_tensor(src, input, name="src")
    if src is None and _is_tensor(value):
        value = value.item()
    return src, value


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """``input`` with ``src`` (or the number ``value``) written at ``index`` along ``dim``;
    ``reduce='add'`` or ``'multiply'`` combines instead of overwriting."""
    src, value = _src_or_value(input, src, value, "scatter")
    dim, a = _check_scatter("scatter", input, dim, index, src)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if src is None:
            src = wrap(B.namespace(input.array).full(a.shape, value, input.array.dtype))
        if reduce == "add":
            return _scatter_add(input, dim, a, src) if input.array.ndim else \
                _back_to_0d(_scatter_add(*_flat_args(input), 0, a, _as_1d(src)), True)
        return scatter_reduce(input, dim, index, src, "prod")
    if input.array.ndim == 0:
        x, s = _flat_args(input, src)
        return _back_to_0d(_scatter(x, 0, a, s, value), True)
    return _scatter(input, dim, a, src, value)


def scatter_add(input, dim, index, src):
    """``input`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
    src = src if _is_tensor(src) else to_tensor(src, input, name="src")
    dim, a = _check_scatter("scatter_add", input, dim, index, src)
    if input.array.ndim == 0:
        x, s = _flat_args(input, src)
        return _back_to_0d(_scatter_add(x, 0, a, s), True)
    return _scatter_add(input, dim, a, src)


_REDUCES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin",
            "max": "amax", "min": "amin"}


class ScatterReduceBackward(Node):
    __slots__ = ("dim", "idx", "reduce", "include_self", "cnt")

    def backward(self, g):
        x, s, out = self.unpack()
        nx = self.next
        dim, idx = self.dim, self.idx
        xp = B.namespace(g.array)
        sshape = s.array.shape
        hit = None
        if not self.include_self:
            hit = xp.zeros(x.array.shape, bool)
            _scatter_arr(hit, dim, idx, True, None)
        red = self.reduce
        if red == "sum":
            gi = g if hit is None else masked_fill(g, wrap(hit), 0)
            gs = _gather(g, dim, idx)
        elif red == "mean":
            gm = g / wrap(xp.maximum(self.cnt, 1).astype(g.array.dtype))
            gi = gm if hit is None else masked_fill(gm, wrap(hit), 0)
            gs = _gather(gm, dim, idx)
        elif red == "prod":
            gi, gs = _prod_grads(g, x, s, out, dim, idx, hit, self.include_self)
        else:
            gi, gs = _extreme_grads(g, x.array, s.array, out.array, dim, idx, hit)
        return (gi if nx[0] is not None else None,
                _pad(gs, sshape) if nx[1] is not None else None)


def _extreme_grads(g, xd, sd, od, dim, idx, hit):
    """amax/amin: the gradient is shared evenly by the elements equal to the result."""
    xp = B.namespace(g.array)
    dt = g.array.dtype
    on_self = xd == od
    if hit is not None:
        on_self &= ~hit
    on_src = _corner(sd, idx.shape) == _along(od, idx, dim)
    cnt = on_self.astype(dt)
    _scatter_arr(cnt, dim, idx, on_src.astype(dt), "sum")
    cnt = xp.maximum(cnt, 1)
    gi = g * wrap(on_self / cnt)
    gs = _gather(g, dim, idx) * wrap(on_src / _along(cnt, idx, dim))
    return gi, gs


def _prod_grads(g, x, s, out, dim, idx, hit, include_self):
    """prod: d out / d e is the product of the other members of e's group. For a non-zero
    e that is ``out / e`` (``out`` differentiable, so second derivatives through the other
    members are right); for the only zero of a group it is the product of the rest, computed
    with zeros masked to one; with two or more zeros it is 0."""
    s = _slice(s, tuple(slice(0, n) for n in idx.shape)) if s.array.shape != idx.shape else s
    xz = x.array == 0
    sz = s.array == 0
    zc = (xz if hit is None else xz & ~hit).astype(_int64)
    _scatter_arr(zc, dim, idx, sz.astype(_int64), "sum")
    xm = masked_fill(x, wrap(xz), 1)
    sm = masked_fill(s, wrap(sz), 1)
    nzp = _scatter_reduce(xm, dim, idx, sm, "prod", include_self)

    def others(vm, vz, p, o, z):
        return where(wrap(vz), where(wrap(z == 1), p, 0.0), o / vm)

    gi = g * others(xm, xz, nzp, out, zc)
    if hit is not None:
        gi = masked_fill(gi, wrap(hit), 0)
    zg = _along(zc, idx, dim)
    gs = _gather(g, dim, idx) * others(sm, sz, _gather(nzp, dim, idx), _gather(out, dim, idx), zg)
    return gi, gs


def _scatter_reduce(input, dim, idx, src, reduce, include_self=True):
    d = input.array
    out = d.copy()
    cnt = _scatter_arr(out, dim, idx, _corner(src.array, idx.shape), reduce, include_self)
    res = wrap(out)
    if STATE.enabled and (input.requires_grad or src.requires_grad):
        n = new_node(ScatterReduceBackward)
        n.dim, n.idx, n.reduce, n.include_self, n.cnt = dim, idx, reduce, include_self, cnt
        n.save(input, src)
        n.saved = n.saved + ((saved_output(res),) if reduce in ("prod", "amax", "amin")
                             else (None,))
        record(n, res, input, src)
    return res


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src`` combined at ``index`` along ``dim`` by ``reduce`` (``'sum'``,
    ``'prod'``, ``'mean'``, ``'amax'``, ``'amin'``); ``include_self=False`` leaves the
    input's own values out of the positions that receive any."""
    r = _REDUCES.get(reduce)
    if r is None:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce!r}")
    src = src if _is_tensor(src) else to_tensor(src, input, name="src")
    dim, a = _check_scatter("scatter_reduce", input, dim, index, src)
    if input.array.ndim == 0:
        x, s = _flat_args(input, src)
        return _back_to_0d(_scatter_reduce(x, 0, a, s, r, include_self), True)
    return _scatter_reduce(input, dim, a, src, r, include_self)


# ============================================================================ take / put

def take(input, index):
    """``input`` read as 1-d at ``index`` (negative indices count from the end); the result
    has ``index``'s shape."""
    d = input.array
    a = _index_arr(index, d, "take")
    a = _keep(_bounds(a.reshape(-1), d.size, 0, True, "take"), input)
    shape = np.shape(index.array if _is_tensor(index) else np.asarray(index))
    return reshape(_index_select(reshape(input, (-1,)), 0, a), shape)


def put(input, index, source, accumulate=False):
    """``input`` read as 1-d with ``source`` written (or added) at ``index``."""
    d = input.array
    a = _index_arr(index, d, "put")
    src = source if _is_tensor(source) else to_tensor(source, input, name="source")
    if src.array.size != a.size:
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {src.array.size}, index.numel() = "
                         f"{a.size}")
    a = _bounds(a.reshape(-1), d.size, 0, True, "put")
    flat = reshape(input, (-1,))
    k = _parse(flat.array, (a,))
    return reshape(_index_put(flat, k, reshape(src, (-1,)), accumulate), d.shape)


def take_along_dim(input, indices, dim=None):
    """Values of ``input`` at ``indices`` along ``dim`` (the two broadcast in the other
    dims); ``dim=None`` reads both flattened."""
    d = input.array
    a = _index_arr(indices, d, "take_along_dim")
    if dim is None:
        a = _keep(_bounds(a.reshape(-1), d.size, 0, True, "take_along_dim"), input)
        return _gather(reshape(input, (-1,)), 0, a)
    if a.ndim != d.ndim:
        raise RuntimeError("take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {d.ndim} dimensions for input, and {a.ndim} "
                           "dimensions for indices")
    dim = norm_dim(dim, max(d.ndim, 1))
    if d.ndim == 0:
        return gather(input, 0, indices)
    xs, ishape = list(d.shape), list(a.shape)
    for i in range(d.ndim):
        if i != dim:
            xs[i] = ishape[i] = _broadcast_shape((d.shape[i],), (a.shape[i],))[0]
    x = expand(input, tuple(xs)) if tuple(xs) != d.shape else input
    a = B.namespace(a).broadcast_to(a, tuple(ishape))
    a = _keep(_bounds(a, d.shape[dim], dim, True, "take_along_dim"), input)
    return _gather(x, dim, a)


# ============================================================================ masked ops, where

class MaskedFillBackward(Node):
    __slots__ = ("mask", "shape", "vdtype")

    def backward(self, g):
        nx = self.next
        m = wrap(self.mask)
        gi = gv = None
        if nx[0] is not None:
            gi = masked_fill(g, m, 0)
            if gi.array.shape != self.shape:
                gi = sum_to(gi, self.shape)
        if nx[1] is not None:
            gv = where(m, g, 0.0).sum()
            if gv.array.dtype != self.vdtype:
                gv = gv._cast(self.vdtype)
        return gi, gv


def masked_fill(input, mask, value):
    """``input`` with ``value`` (a number or a 0-d tensor) where ``mask`` is True."""
    d = input.array
    m = _mask_arr(mask, d, "masked_fill_")
    xp = B.namespace(d)
    vt = None
    if _is_tensor(value):
        if value.array.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.array.ndim} dimension(s).")
        vt = value
        v = value.array.astype(d.dtype)
        if type(v) is not type(d):
            v = xp.asarray(B.to_device(v, "cpu") if B.is_cuda_array(v) else v)
    else:
        try:
            v = xp.asarray(value, dtype=d.dtype)
        except OverflowError:
            raise RuntimeError(f"value cannot be converted to type {D.name(d.dtype)} without "
                               "overflow") from None
    if m.shape != d.shape:
        _broadcast_shape(d.shape, m.shape)  # a clear error when they don't broadcast
    out = wrap(xp.where(m, v, d))
    if STATE.enabled and (input.requires_grad or (vt is not None and vt.requires_grad)):
        n = new_node(MaskedFillBackward)
        n.mask, n.shape = m, d.shape
        n.vdtype = vt.array.dtype if vt is not None else None
        record(n, out, input, vt)
    return out


def masked_select(input, mask):
    """1-d tensor of the elements of ``input`` where ``mask`` (broadcast) is True."""
    d = input.array
    m = _mask_arr(mask, d, "masked_select")
    shape = _broadcast_shape(d.shape, m.shape)
    x = expand(input, shape) if shape != d.shape else input
    m = B.namespace(m).broadcast_to(m, shape) if m.shape != shape else m
    return _take_key(x, _parse(x.array, (m,) if m.ndim else m))


def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` is True filled, in order, by the first
    elements of ``source``."""
    d = input.array
    m = _mask_arr(mask, d, "masked_scatter_")
    shape = _broadcast_shape(d.shape, m.shape)
    x = expand(input, shape) if shape != d.shape else input
    m = B.namespace(m).broadcast_to(m, shape) if m.shape != shape else m
    src = source if _is_tensor(source) else to_tensor(source, input, name="source")
    if src.array.dtype != d.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {D.name(d.dtype)} and {D.name(src.array.dtype)}")
    cnt = int(m.sum())
    if src.array.size < cnt:
        raise RuntimeError(f"masked_scatter_: the mask has {cnt} True elements but source "
                           f"has only {src.array.size}: source must have at least as many")
    vals = _slice(reshape(src, (-1,)), (slice(0, cnt),))
    return _index_put(x, _parse(x.array, (m,) if m.ndim else m), vals, False)


class WhereBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype")

    def backward(self, g):
        (cond,) = self.unpack()
        nx = self.next
        ga = unbroadcast(where(cond, g, 0.0), self.ashape, self.adtype) if nx[0] else None
        gb = unbroadcast(where(cond, 0.0, g), self.bshape, self.bdtype) if nx[1] else None
        return ga, gb


def where(condition, input=None, other=None):
    """``input`` where ``condition`` is True, else ``other`` (broadcast; either may be a
    number). With only a condition: ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    from .elementwise import _operands

    cond = condition if _is_tensor(condition) else to_tensor(condition)
    c = cond.array
    if c.dtype.kind != "b":
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {D.name(c.dtype)}")
    if _is_tensor(input):
        xt = input
        xd, yd, yt = _operands("where", input, other)
    elif _is_tensor(other):
        yt = other
        yd, xd, xt = _operands("where", other, input)
    else:
        xd, yd, yt = _operands("where", to_tensor(input, cond, name="input"), other)
        xt = None
    for arr in (xd, yd):
        if (isinstance(arr, np.ndarray) or B.is_cuda_array(arr)) and type(arr) is not type(c):
            from ._util import device_error

            raise device_error("where", c, arr)
    try:
        out = wrap(B.namespace(c).where(c, xd, yd))
    except ValueError:
        _broadcast_shape(_broadcast_shape(c.shape, np.shape(xd)), np.shape(yd))
        raise
    if STATE.enabled and ((xt is not None and xt.requires_grad) or
                          (yt is not None and yt.requires_grad)):
        n = new_node(WhereBackward)
        if xt is not None:
            n.ashape, n.adtype = xt.array.shape, xt.array.dtype
        if yt is not None:
            n.bshape, n.bdtype = yt.array.shape, yt.array.dtype
        n.save(cond)
        record(n, out, xt, yt)
    return out


def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an ``(n, ndim)`` int64 tensor, or with
    ``as_tuple=True`` one 1-d tensor per dim."""
    d = input.array if _is_tensor(input) else np.asarray(input)
    xp = B.namespace(d)
    if d.ndim == 0:
        hits = xp.nonzero(d.reshape(1))[0].astype(_int64)
        if as_tuple:
            return (wrap(hits),)
        return wrap(xp.zeros((hits.size, 0), _int64))
    if as_tuple:
        return tuple(wrap(i.astype(_int64, copy=False)) for i in xp.nonzero(d))
    return wrap(xp.argwhere(d).astype(_int64, copy=False))


def argwhere(input):
    """``nonzero(input)``: an ``(n, ndim)`` int64 tensor of the non-zero positions."""
    return nonzero(input)


# ============================================================================ mixin

def _inplace(self, fn, *args, **kwargs):
    from .elementwise import apply_inplace

    return apply_inplace(self, fn, *args, **kwargs)


class IndexOps:
    """Methods of the indexing family (mixed into Tensor)."""

    __slots__ = ()
    __getitem__ = getitem
    __setitem__ = setitem
    gather = gather
    scatter = scatter
    scatter_add = scatter_add
    scatter_reduce = scatter_reduce
    index_select = index_select
    index_add = index_add
    index_copy = index_copy
    index_fill = index_fill
    index_put = index_put
    masked_fill = masked_fill
    masked_select = masked_select
    masked_scatter = masked_scatter
    nonzero = nonzero
    argwhere = argwhere
    take = take
    take_along_dim = take_along_dim
    put = put

    def where(self, condition, other):
        return where(condition, self, other)

    # in-place variants: through apply_inplace with autograd, else straight into the memory
    def masked_fill_(self, mask, value):
        if _grad_inplace(self, value):
            return _inplace(self, masked_fill, mask, value)
        d = self.array
        m = _mask_arr(mask, d, "masked_fill_")
        _check_writeable(d)
        v = value.item() if _is_tensor(value) else value
        try:
            B.namespace(d).copyto(d, v, casting="unsafe", where=m)
        except ValueError:
            raise RuntimeError(f"masked_fill_: the mask of shape {list(m.shape)} can't be "
                               f"broadcast to the tensor of shape {list(d.shape)}") from None
        self._bump()
        return self

    def index_put_(self, indices, values, accumulate=False):
        d = self.array
        k = _parse(d, tuple(indices))
        if _grad_inplace(self, values):
            return _inplace(self, _index_put, k, values, accumulate)
        _check_writeable(d)
        k.write(d, _value_arr(values, d), accumulate)
        self._bump()
        return self

    def index_add_(self, dim, index, source, *, alpha=1):
        if _grad_inplace(self, source) or self.array.ndim == 0:
            return _inplace(self, index_add, dim, index, source, alpha=alpha)
        d = self.array
        dim, a = _dim_index(self, dim, index, "index_add_")
        src = source if _is_tensor(source) else to_tensor(source, self, name="source")
        _check_source("index_add_", d, src.array, dim, a.size)
        _check_writeable(d)
        _add_at(d, dim, a, src.array if alpha == 1 else src.array * alpha)
        self._bump()
        return self

    def index_copy_(self, dim, index, source):
        if _grad_inplace(self, source) or self.array.ndim == 0:
            return _inplace(self, index_copy, dim, index, source)
        d = self.array
        dim, a = _dim_index(self, dim, index, "index_copy_")
        src = source if _is_tensor(source) else to_tensor(source, self, name="source")
        _check_source("index_copy_", d, src.array, dim, a.size)
        _check_writeable(d)
        d[(_ALL,) * dim + (a,)] = src.array
        self._bump()
        return self

    def index_fill_(self, dim, index, value):
        if _grad_inplace(self, value) or self.array.ndim == 0:
            return _inplace(self, index_fill, dim, index, value)
        d = self.array
        if _is_tensor(value):
            if value.array.ndim != 0:
                raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but "
                                   f"got tensor with {value.array.ndim} dimension(s).")
            value = value.item()
        dim, a = _dim_index(self, dim, index, "index_fill_", negative=True)
        _check_writeable(d)
        d[(_ALL,) * dim + (a,)] = value
        self._bump()
        return self

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        return _inplace(self, scatter, dim, index, src, value, reduce=reduce)

    def scatter_add_(self, dim, index, src):
        return _inplace(self, scatter_add, dim, index, src)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return _inplace(self, scatter_reduce, dim, index, src, reduce, include_self=include_self)

    def masked_scatter_(self, mask, source):
        return _inplace(self, masked_scatter, mask, source)

    def put_(self, index, source, accumulate=False):
        return _inplace(self, put, index, source, accumulate)


__all__ = ["where", "masked_fill", "masked_select", "masked_scatter", "nonzero", "argwhere",
           "gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "take", "take_along_dim", "put"]
