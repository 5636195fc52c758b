"""Shape ops: reshape/view, transpose/permute, squeeze/unsqueeze, expand/broadcast, flatten,
cat/stack, split/chunk/unbind, narrow/select, flip, roll, repeat/tile/repeat_interleave,
movedim, tril/triu, diagonal/diag_embed, pad, clone/contiguous, unfold.

Ops that PyTorch defines as views (reshape when possible, view, permute, transpose, expand,
squeeze/unsqueeze, narrow, select, split/chunk/unbind, diagonal, movedim, unfold) return
numpy/cupy views marked with ``_view_of``: they share memory and the version counter with
their base. Every backward is written with ember ops (or as a pair of mutually adjoint raw
ops, each the other's backward), so double backward works everywhere.
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import ExpandToBackward, device_error, expand_to, norm_dim, wrap

_SEQ = (tuple, list)


def _view_of(out, base):
    """Mark ``out`` as a view of ``base``: they share data and version counter."""
    c = out._version = base._vc()
    out._base = base if base._base is None else base._base
    out._view_ver = c[0]
    return out


def _varargs(args):
    """``f(2, 3)`` and ``f((2, 3))`` / ``f([2, 3])`` both give ``(2, 3)``."""
    if len(args) == 1 and isinstance(args[0], _SEQ):
        return tuple(args[0])
    return args


def _int(v, what="size"):
    """An int argument; a one-element integer tensor is accepted too."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if hasattr(v, "grad_fn") and v.array.size == 1 and v.array.dtype.kind in "iu":
        return int(v.item())
    raise TypeError(f"{what} must be an integer, got {type(v).__name__} ({v!r})")


def _strided(arr, shape, strides):
    """A view of ``arr``'s memory with the given shape and byte strides."""
    if type(arr) is np.ndarray and arr.flags.c_contiguous:
        try:  # far cheaper than as_strided; the buffer bounds are still checked
            r = np.ndarray(shape, arr.dtype, arr, 0, strides)
            r.flags.writeable = arr.flags.writeable
            return r
        except (TypeError, ValueError):  # pragma: no cover
            pass
    return B.namespace(arr).lib.stride_tricks.as_strided(arr, shape, strides)


# =========================================================================== reshape family

class ReshapeBackward(Node):
    __slots__ = ("shape",)

    def backward(self, g):
        return (g if g.array.shape == self.shape else reshape(g, self.shape),)


def _infer_shape(shape, size):
    if len(shape) == 1 and type(shape[0]) is not int and isinstance(shape[0], _SEQ):
        shape = tuple(shape[0])
    neg = -1
    known = 1
    for i, s in enumerate(shape):
        if type(s) is not int:
            return _infer_shape(tuple(_int(x) for x in shape), size)
        if s == -1:
            if neg >= 0:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if neg >= 0:
        if known == 0:
            raise RuntimeError(
                f"cannot reshape tensor of {size} elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous")
        if size % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        shape = shape[:neg] + (size // known,) + shape[neg + 1:]
    elif known != size:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape


def _try_view(d, shape):
    """``d`` reshaped without copying, or None when a copy would be needed."""
    if type(d) is np.ndarray:
        try:
            return d.reshape(shape, copy=False)
        except ValueError:
            return None
    v = d.view()
    try:
        v.shape = shape  # cupy: AttributeError when the strides do not allow it
    except AttributeError:
        return None
    return v


def _reshape_node(out, input):
    if STATE.enabled and input.requires_grad:
        n = new_node(ReshapeBackward)
        n.shape = input.array.shape
        record(n, out, input)
    return out


def _alias_reshape(input, shape):
    """A reshape known to need no copy (squeeze, unsqueeze, unflatten)."""
    return _reshape_node(_view_of(wrap(input.array.reshape(shape)), input), input)


def reshape(input, *shape):
    """``input`` with a new shape (one dim may be -1): a view when the strides allow one,
    else a copy."""
    d = input.array
    shape = _infer_shape(shape, d.size)
    r = d.reshape(shape) if d.flags.c_contiguous else _try_view(d, shape)
    out = wrap(d.reshape(shape)) if r is None else _view_of(wrap(r), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(ReshapeBackward)
        n.shape = d.shape
        record(n, out, input)
    return out


def _view_dtype(input, dt):
    d = input.array
    if dt == d.dtype:
        return _alias(input)
    try:
        r = d.view(dt)
    except ValueError as e:
        raise RuntimeError(
            f"view(dtype): cannot view a tensor of shape {list(d.shape)} and dtype "
            f"{D.name(d.dtype)} as {D.name(dt)}: the last dimension must be contiguous and "
            f"its size in bytes divisible by {dt.itemsize} ({e})") from None
    return _view_of(wrap(r), input)


def view(input, *shape):
    """Like ``reshape`` but always a view; fails when the strides need a copy.
    ``view(dtype)`` reinterprets the bytes."""
    d = input.array
    if len(shape) == 1 and not isinstance(shape[0], _SEQ) and not hasattr(shape[0], "__index__"):
        return _view_dtype(input, D.to_dtype(shape[0]))
    shape = _infer_shape(shape, d.size)
    r = d.reshape(shape) if d.flags.c_contiguous else _try_view(d, shape)
    if r is None:
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (at least one "
            f"dimension spans across two contiguous subspaces): cannot view shape "
            f"{list(d.shape)} as {list(shape)}. Use .reshape(...) instead.")
    return _reshape_node(_view_of(wrap(r), input), input)


def squeeze(input, dim=None):
    """Drop size-1 dims (all, one, or a tuple of dims; a named dim not of size 1 stays)."""
    shape = input.array.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        nd = len(shape)
        dims = (dim,) if not isinstance(dim, _SEQ) else tuple(dim)
        dims = {norm_dim(x, nd) for x in dims} if nd else set()
        new = tuple(s for i, s in enumerate(shape) if not (s == 1 and i in dims))
    return _alias_reshape(input, new)


def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim`` (range ``[-ndim-1, ndim]``)."""
    shape = input.array.shape
    dim = norm_dim(dim, len(shape) + 1)
    return _alias_reshape(input, shape[:dim] + (1,) + shape[dim:])


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    shape = input.array.shape
    nd = len(shape)
    if nd == 0:
        return reshape(input, (1,))
    if start_dim == 0 and end_dim == -1:
        return reshape(input, (input.array.size,))
    s, e = norm_dim(start_dim, nd), norm_dim(end_dim, nd)
    if s > e:
        raise RuntimeError(
            f"flatten() has invalid args: start_dim ({start_dim}) cannot come after end_dim "
            f"({end_dim})")
    if s == e:
        return input
    n = 1
    for x in shape[s:e + 1]:
        n *= x
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one may be -1); always a view."""
    shape = input.array.shape
    dim = norm_dim(dim, len(shape))
    sizes = tuple(_int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = shape[dim] if shape else 1
    try:
        new = _infer_shape(sizes, n)
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
            f"{dim} ({n}) in the input tensor") from None
    return _alias_reshape(input, shape[:dim] + new + shape[dim + 1:])


def ravel(input):
    """A contiguous 1-D tensor (a view when ``input`` is contiguous)."""
    return reshape(contiguous(input), (-1,))


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def _atleast(k, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], _SEQ):
        return tuple(_atleast_one(k, t) for t in tensors[0])
    if len(tensors) == 1:
        return _atleast_one(k, tensors[0])
    return tuple(_atleast_one(k, t) for t in tensors)


def _atleast_one(k, t):
    shape = t.array.shape
    nd = len(shape)
    if nd >= k:
        return t
    if k == 1 or nd == 0:
        return reshape(t, (1,) * k)
    if k == 2:  # nd == 1
        return unsqueeze(t, 0)
    return reshape(t, (1,) + shape + (1,) if nd == 1 else shape + (1,))


# =========================================================================== permute family

class AliasBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (g,)


def _alias(input):
    """A new tensor object viewing all of ``input`` (what PyTorch's no-op views return)."""
    out = _view_of(wrap(input.array.view()), input)
    if STATE.enabled and input.requires_grad:
        record(new_node(AliasBackward), out, input)
    return out


class TransposeBackward(Node):
    __slots__ = ("d0", "d1")

    def backward(self, g):
        return (transpose(g, self.d0, self.d1),)


def transpose(input, dim0, dim1):
    """Swap two dims (a view)."""
    d = input.array
    nd = d.ndim
    d0, d1 = norm_dim(dim0, nd), norm_dim(dim1, nd)
    if d0 == d1 or nd == 0:
        return _alias(input)
    out = _view_of(wrap(d.swapaxes(d0, d1)), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(TransposeBackward)
        n.d0, n.d1 = d0, d1
        record(n, out, input)
    return out


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    return transpose(input, dim0, dim1)


def t(input):
    """Transpose of a matrix; 0-d and 1-d tensors come back as they are (as views)."""
    nd = input.array.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return transpose(input, 0, 1) if nd == 2 else _alias(input)


class PermuteBackward(Node):
    __slots__ = ("inv",)

    def backward(self, g):
        return (permute(g, self.inv),)


def permute(input, *dims):
    """Reorder the dims (a view): ``x.permute(2, 0, 1)`` or ``permute(x, (2, 0, 1))``."""
    dims = _varargs(dims)
    d = input.array
    nd = d.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(): number of dims don't match: the input has {nd} dims but "
            f"{len(dims)} were given ({list(dims)})")
    dims = tuple(norm_dim(x, nd) for x in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    out = _view_of(wrap(d.transpose(dims)), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(PermuteBackward)
        inv = [0] * nd
        for i, x in enumerate(dims):
            inv[x] = i
        n.inv = tuple(inv)
        record(n, out, input)
    return out


def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (ints or sequences); a view."""
    nd = input.array.ndim
    src = (source,) if not isinstance(source, _SEQ) else tuple(source)
    dst = (destination,) if not isinstance(destination, _SEQ) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)")
    src = tuple(norm_dim(x, nd) for x in src)
    dst = tuple(norm_dim(x, nd) for x in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:
        return _alias(input)
    order = [i for i in range(nd) if i not in src]
    for s, d_ in sorted(zip(dst, src)):
        order.insert(s, d_)
    return permute(input, order)


moveaxis = movedim


# =========================================================================== expand / broadcast

def expand(input, *sizes):
    """Broadcast size-1 dims to ``sizes`` (-1 keeps a size) without copying: a read-only view."""
    if len(sizes) == 1 and type(sizes[0]) is not int:
        sizes = _varargs(sizes)
    d = input.array
    shape = d.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})")
    st = d.strides
    target, strides = [], []
    for i, s in enumerate(sizes):
        if type(s) is not int:
            s = _int(s)
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"expand: -1 (or a negative size) is not allowed in a leading, "
                    f"non-existing dimension {i}: sizes {list(sizes)}")
            strides.append(0)
        else:
            cur = shape[i - lead]
            if s == -1 or s == cur:
                s = cur
                strides.append(st[i - lead])
            elif cur == 1 and s >= 0:
                strides.append(0)
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur}) "
                    f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                    f"sizes: {list(shape)}")
        target.append(s)
    target = tuple(target)
    if target == shape:
        return _alias(input)
    if type(d) is not np.ndarray or not d.flags.c_contiguous:
        return _view_of(expand_to(input, target), input)
    # np.broadcast_to costs ~3 us; an ndarray over the same buffer with zero strides is the
    # same read-only view for a fraction of that
    r = np.ndarray(target, d.dtype, d, 0, tuple(strides))
    r.flags.writeable = False
    out = _view_of(wrap(r), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(ExpandToBackward)
        n.shape = shape
        record(n, out, input)
    return out


def broadcast_to(input, size):
    return expand(input, tuple(size))


def broadcast_shapes(*shapes):
    """The shape that all ``shapes`` broadcast to (error names the clashing sizes)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for k, s in enumerate(shapes):
        for i, x in enumerate(s):
            j = nd - len(s) + i
            if x != 1 and out[j] != 1 and out[j] != x:
                raise RuntimeError(
                    f"The size of tensor a ({out[j]}) must match the size of tensor b ({x}) at "
                    f"non-singleton dimension {j}: shapes {[list(q) for q in shapes]} cannot "
                    f"be broadcast together")
            if out[j] == 1:
                out[j] = x
    return tuple(out)


def broadcast_tensors(*tensors):
    """Expand all tensors to their common broadcast shape (views)."""
    tensors = _varargs(tensors)
    shape = broadcast_shapes(*(t.array.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors, as views (differentiable). ``indexing="ij"``
    (torch's default, which it warns about when omitted) or ``"xy"`` (the first two grid
    dimensions swapped, as numpy's default)."""
    tensors = _varargs(tensors)
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: expects 0-D or 1-D tensors, but tensor {i} has "
                               f"shape {list(t.shape)}")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    out = [expand(reshape(t, tuple(-1 if j == i else 1 for j in range(n))), shape)
           for i, t in enumerate(ts)]
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# =========================================================================== cat / stack

def _promoted(name, tensors):
    """The common dtype of ``tensors`` (PyTorch promotion); checks devices agree."""
    dt = tensors[0].array.dtype
    kind = type(tensors[0].array)
    for t in tensors[1:]:
        if type(t.array) is not kind:
            raise device_error(name, tensors[0].array, t.array)
        if t.array.dtype is not dt:
            dt = D.promote_types(dt, t.array.dtype)
    return dt


class CatBackward(Node):
    __slots__ = ("dim", "sizes", "dtypes")

    def backward(self, g):
        out = []
        off = 0
        for e, s, dt in zip(self.next, self.sizes, self.dtypes):
            if s is None:  # a skipped empty (0,) tensor
                out.append(None if e is None else wrap(B.namespace(g.array).zeros((0,), dt)))
                continue
            if e is not None:
                gi = narrow(g, self.dim, off, s)
                out.append(gi if gi.array.dtype == dt else gi._cast(dt))
            else:
                out.append(None)
            off += s
        return tuple(out)


def cat(tensors, dim=0):
    """Join tensors along an existing dim. 1-D empty tensors are skipped (as in PyTorch);
    dtypes are promoted."""
    ts = tensors if type(tensors) is list else list(tensors)
    if not ts:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    h = getattr(type(ts[0]), "__ember_function__", None)  # e.g. TensorDicts (ember.rl)
    if h is not None:
        return h(cat, (type(ts[0]),), (ts,), {"dim": dim})
    arrays = [t.array for t in ts]
    a0 = arrays[0]
    nd, dt, kind = a0.ndim, a0.dtype, type(a0)
    for a in arrays:
        if a.ndim != nd or a.dtype is not dt or type(a) is not kind:
            return _cat_general(ts, dim)
    if not nd:
        return _cat_general(ts, dim)
    dim = norm_dim(dim, nd)
    try:  # the common case: numpy checks the sizes; the slow path explains a failure
        r = B.namespace(a0).concatenate(arrays, axis=dim) if len(arrays) > 1 else a0.copy()
    except ValueError:
        return _cat_general(ts, dim)
    out = wrap(r)
    if STATE.enabled:
        for t in ts:
            if t.requires_grad:
                n = new_node(CatBackward)
                n.dim = dim
                n.sizes = [a.shape[dim] for a in arrays]
                n.dtypes = [dt] * len(ts)
                record(n, out, *ts)
                break
    return out


def _cat_general(ts, dim):
    """cat with dtype promotion, skipped (0,) tensors and the checks that name the
    offending tensor."""
    keep = [t for t in ts if not (t.array.ndim == 1 and t.array.shape[0] == 0)]
    use = keep or ts[:1]
    ref = use[0].array.shape
    nd = len(ref)
    for i, t in enumerate(ts):
        if t.array.ndim == 0:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dim = norm_dim(dim, nd)
    for i, t in enumerate(ts):
        s = t.array.shape
        if len(s) == 1 and s[0] == 0 and keep:
            continue
        if len(s) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(s)} "
                f"(tensor number {i} in the list has shape {list(s)})")
        for k in range(nd):
            if k != dim and s[k] != ref[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{ref[k]} but got size {s[k]} for tensor number {i} in the list.")
    dt = _promoted("cat", ts)
    arrays = [t.array for t in use]
    xp = B.namespace(arrays[0])
    if len(arrays) == 1:
        r = arrays[0].astype(dt, copy=True)
    else:
        r = xp.concatenate(arrays, axis=dim, dtype=dt, casting="unsafe")
    out = wrap(r)
    if STATE.enabled and any(t.requires_grad for t in ts):
        n = new_node(CatBackward)
        n.dim = dim
        n.sizes = [None if (t.array.ndim == 1 and t.array.shape[0] == 0 and keep) else
                   t.array.shape[dim] for t in ts]
        n.dtypes = [t.array.dtype for t in ts]
        record(n, out, *ts)
    return out


concat = cat


def concatenate(tensors, axis=0):
    return cat(tensors, axis)


class StackBackward(Node):
    __slots__ = ("dim", "dtypes")

    def backward(self, g):
        out = []
        for i, (e, dt) in enumerate(zip(self.next, self.dtypes)):
            if e is None:
                out.append(None)
            else:
                gi = select(g, self.dim, i)
                out.append(gi if gi.array.dtype == dt else gi._cast(dt))
        return tuple(out)


def stack(tensors, dim=0):
    """Join equally shaped tensors along a new dim ``dim`` (range ``[-ndim-1, ndim]``)."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    h = getattr(type(ts[0]), "__ember_function__", None)  # e.g. TensorDicts (ember.rl)
    if h is not None:
        return h(stack, (type(ts[0]),), (ts,), {"dim": dim})
    ref = ts[0].array.shape
    for i, t in enumerate(ts[1:], 1):
        if t.array.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                f"and {list(t.array.shape)} at entry {i}")
    dim = norm_dim(dim, len(ref) + 1)
    dt = _promoted("stack", ts)
    new = ref[:dim] + (1,) + ref[dim:]
    arrays = [(t.array if t.array.dtype is dt else t.array.astype(dt)).reshape(new) for t in ts]
    out = wrap(B.namespace(arrays[0]).concatenate(arrays, axis=dim))
    if STATE.enabled and any(t.requires_grad for t in ts):
        n = new_node(StackBackward)
        n.dim = dim
        n.dtypes = [t.array.dtype for t in ts]
        record(n, out, *ts)
    return out


def hstack(tensors):
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts[0].array.ndim == 1 else 1)


def vstack(tensors):
    return cat(atleast_2d(list(tensors)), 0)


row_stack = vstack


def dstack(tensors):
    return cat(atleast_3d(list(tensors)), 2)


def column_stack(tensors):
    cols = []
    for t in tensors:
        nd = t.array.ndim
        cols.append(reshape(t, (t.array.size, 1)) if nd <= 1 else t)
    return cat(cols, 1)


# =========================================================================== split family

class SplitBackward(Node):
    """One node for all pieces of split/chunk/tensor_split/unbind; missing gradients arrive
    as zeros (``output_meta``), the pieces' gradients are joined back with cat/stack."""
    __slots__ = ("n_outputs", "output_meta", "dim", "bounds", "shape", "squeezed")

    def backward(self, grads):
        if self.n_outputs == 1:  # the engine hands a single output's gradient over as is
            grads = (grads,)
        dim = self.dim
        if self.squeezed:
            return (stack(grads, dim),)
        pos = 0
        for a, b in self.bounds:
            if a != pos:
                break
            pos = b
        else:
            if pos == self.shape[dim]:  # the pieces tile the dim
                return (cat(grads, dim) if len(grads) > 1 else grads[0],)
        total = None
        for (a, b), gi in zip(self.bounds, grads):
            pads = [0, 0] * (len(self.shape) - dim - 1) + [a, self.shape[dim] - b]
            p = _constant_pad(gi, _pairs(pads, gi.array.ndim), 0)
            total = p if total is None else total + p
        return (total,)


def _pieces(input, dim, bounds, squeezed=False):
    """Views ``input[..., a:b, ...]`` along ``dim`` (``input[..., a, ...]`` when squeezed)."""
    d = input.array
    pre = (slice(None),) * dim
    outs = []
    for a, b in bounds:
        idx = pre + ((a,) if squeezed else (slice(a, b),))
        outs.append(_view_of(wrap(d[idx]), input))
    if STATE.enabled and input.requires_grad and outs:
        n = new_node(SplitBackward)
        n.n_outputs = len(outs)
        n.dim, n.bounds, n.shape, n.squeezed = dim, bounds, d.shape, squeezed
        record(n, outs[0], input)
        for i, o in enumerate(outs[1:], 1):
            o.grad_fn = n
            o.requires_grad = True
            o._out_nr = i
        xp = B.namespace(d)
        n.output_meta = tuple((o.array.shape, o.array.dtype, xp) for o in outs)
    return tuple(outs)


def _by_sizes(sizes):
    bounds, pos = [], 0
    for s in sizes:
        bounds.append((pos, pos + s))
        pos += s
    return bounds


def _split_dim(input, dim):
    nd = input.array.ndim
    if nd == 0:
        raise RuntimeError("split/chunk/unbind expect a tensor with at least one dimension, "
                           "got a 0-d tensor")
    return norm_dim(dim, nd)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of size ``split_size`` (the last may be smaller) or of the given sizes (views)."""
    dim = _split_dim(tensor, dim)
    n = tensor.array.shape[dim]
    s = split_size_or_sections
    if isinstance(s, _SEQ):
        return split_with_sizes(tensor, s, dim)
    s = _int(s, "split_size")
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    if n == 0:
        return _pieces(tensor, dim, [(0, 0)])
    return _pieces(tensor, dim, [(i, min(i + s, n)) for i in range(0, n, s)])


def split_with_sizes(input, split_sizes, dim=0):
    dim = _split_dim(input, dim)
    n = input.array.shape[dim]
    sizes = [_int(s, "split_sizes") for s in split_sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
            f"at dimension {dim}), but got split_sizes={sizes}")
    return _pieces(input, dim, _by_sizes(sizes))


def chunk(input, chunks, dim=0):
    """At most ``chunks`` pieces of size ``ceil(n / chunks)`` (views)."""
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = _split_dim(input, dim)
    n = input.array.shape[dim]
    if n == 0:
        return _pieces(input, dim, [(0, 0)] * chunks)
    return split(input, -(-n // chunks), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """``n`` near-equal pieces (the first ``size % n`` one larger), or pieces between the
    given indices (Python slicing rules); views."""
    dim = _split_dim(input, dim)
    n = input.array.shape[dim]
    ios = indices_or_sections
    if hasattr(ios, "grad_fn"):
        if ios.array.dtype.kind not in "iu" or ios.array.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor of integers, but got a tensor with "
                f"{ios.array.ndim} dims of dtype {D.name(ios.array.dtype)}")
        ios = ios.item() if ios.array.ndim == 0 else ios.tolist()
    if isinstance(ios, _SEQ):
        bounds, prev = [], 0
        for i in list(ios) + [None]:
            a, b, _ = slice(prev, None if i is None else _int(i, "index")).indices(n)
            bounds.append((a, max(a, b)))
            prev = i
        return _pieces(input, dim, bounds)
    k = _int(ios, "sections")
    if k <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {k}")
    q, r = divmod(n, k)
    return _pieces(input, dim, _by_sizes([q + 1] * r + [q] * (k - r)))


def _dir_split(name, input, ios, dim, min_nd):
    nd = input.array.ndim
    if nd < min_nd:
        raise RuntimeError(
            f"{name} requires a tensor with at least {min_nd} dimension, but got a tensor "
            f"with {nd} dimensions!")
    if not isinstance(ios, _SEQ):
        k = _int(ios, "sections")
        n = input.array.shape[dim]
        if k == 0 or n % k:
            raise RuntimeError(
                f"{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {k}!")
    return tensor_split(input, ios, dim)


def hsplit(input, indices_or_sections):
    return _dir_split("hsplit", input, indices_or_sections,
                      1 if input.array.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    return _dir_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _dir_split("dsplit", input, indices_or_sections, 2, 3)


def unbind(input, dim=0):
    """The slices along ``dim``, as a tuple of views."""
    dim = _split_dim(input, dim)
    return _pieces(input, dim, [(i, i + 1) for i in range(input.array.shape[dim])], True)


# =========================================================================== narrow / select

class SliceBackward(Node):
    """out = input[index] (a basic index: ints and slices)."""
    __slots__ = ("index", "shape")

    def backward(self, g):
        return (_slice_scatter(g, self.shape, self.index),)


class SliceScatterBackward(Node):
    """out = zeros(shape) with out[index] = input."""
    __slots__ = ("index",)

    def backward(self, g):
        return (_slice(g, self.index),)


def _slice(input, index, r=None):
    """Differentiable basic index ``input[index]``, a view (``r``: ``input.array[index]`` when
    the caller has it already). Its adjoint is ``_slice_scatter``."""
    d = input.array
    out = _view_of(wrap(d[index] if r is None else r), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(SliceBackward)
        n.index, n.shape = index, d.shape
        record(n, out, input)
    return out


def _slice_scatter(src, shape, index):
    """Differentiable: zeros of ``shape`` with ``src`` written at the basic index ``index``."""
    d = src.array
    r = B.namespace(d).zeros(shape, d.dtype)
    r[index] = d
    out = wrap(r)
    if STATE.enabled and src.requires_grad:
        n = new_node(SliceScatterBackward)
        n.index = index
        record(n, out, src)
    return out


def narrow(input, dim, start, length):
    """``length`` elements of dim ``dim`` from ``start`` (negative start counts from the
    end); a view."""
    shape = input.array.shape
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = norm_dim(dim, len(shape))
    start, length = _int(start, "start"), _int(length, "length")
    n = shape[dim]
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length}")
    if not -n <= start <= n:
        raise IndexError(
            f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(input, (slice(None),) * dim + (slice(start, start + length),))


def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed); a view."""
    shape = input.array.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = norm_dim(dim, len(shape))
    index = _int(index, "index")
    n = shape[dim]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(shape)} at "
            f"dimension {dim}")
    return _slice(input, (slice(None),) * dim + (index + n if index < 0 else index,))


# =========================================================================== flip / roll

class FlipBackward(Node):
    __slots__ = ("dims",)

    def backward(self, g):
        return (flip(g, self.dims),)


def flip(input, dims):
    """Reverse the order along ``dims`` (a copy, as in PyTorch)."""
    d = input.array
    nd = d.ndim
    dims = (dims,) if not isinstance(dims, _SEQ) else tuple(dims)
    nd_dims = tuple(norm_dim(x, nd) for x in dims) if nd else ()
    if len(set(nd_dims)) != len(nd_dims):
        raise RuntimeError(f"dims {list(dims)} has a dim that appears multiple times")
    rev = slice(None, None, -1)
    out = wrap(d[tuple(rev if i in nd_dims else slice(None) for i in range(nd))].copy())
    if STATE.enabled and input.requires_grad:
        n = new_node(FlipBackward)
        n.dims = nd_dims
        record(n, out, input)
    return out


def fliplr(input):
    if input.array.ndim < 2:
        raise RuntimeError(f"fliplr: input must be >= 2-d, got {input.array.ndim}-d")
    return flip(input, (1,))


def flipud(input):
    if input.array.ndim < 1:
        raise RuntimeError("flipud: input must be >= 1-d, got 0-d")
    return flip(input, (0,))


class RollBackward(Node):
    __slots__ = ("shifts", "dims")

    def backward(self, g):
        return (roll(g, tuple(-s for s in self.shifts), self.dims),)


def _roll_arr(d, shifts, dims):
    """Cyclic shifts as two block copies per dim (np.roll is several times slower)."""
    xp = B.namespace(d)
    src = d
    for s, ax in zip(shifts, dims):
        n = src.shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        r = xp.empty(src.shape, src.dtype)
        pre = (slice(None),) * ax
        r[pre + (slice(s, None),)] = src[pre + (slice(0, n - s),)]
        r[pre + (slice(0, s),)] = src[pre + (slice(n - s, None),)]
        src = r
    return d.copy() if src is d else src


def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (flattened when ``dims`` is None)."""
    d = input.array
    shifts = tuple(_int(s, "shifts") for s in shifts) if isinstance(shifts, _SEQ) \
        else (_int(shifts, "shifts"),)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        r = _roll_arr(d.reshape(-1), shifts, (0,)).reshape(d.shape)
    else:
        dims = (dims,) if not isinstance(dims, _SEQ) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        dims = tuple(norm_dim(x, d.ndim) for x in dims)
        r = _roll_arr(d, shifts, dims) if d.ndim else d.copy()
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(RollBackward)
        n.shifts, n.dims = shifts, dims
        record(n, out, input)
    return out


# =========================================================================== repeat family

class RepeatBackward(Node):
    __slots__ = ("inter", "axes", "shape")

    def backward(self, g):
        return (g.reshape(self.inter).sum(self.axes).reshape(self.shape),)


def repeat(input, *sizes):
    """Tile the whole tensor ``sizes[i]`` times along each dim (a copy)."""
    sizes = tuple(_int(s) for s in _varargs(sizes))
    d = input.array
    nd = d.ndim
    if len(sizes) < nd:
        raise RuntimeError(
            f"Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor: got {len(sizes)} repeat dims for a tensor of shape {list(d.shape)}")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats "
                           f"{list(sizes)}")
    src = (1,) * (len(sizes) - nd) + d.shape
    inter, spread = [], []
    for r, s in zip(sizes, src):
        inter += [r, s]
        spread += [1, s]
    xp = B.namespace(d)
    outshape = tuple(r * s for r, s in zip(sizes, src))
    r = xp.broadcast_to(d.reshape(spread), inter).reshape(outshape)
    out = wrap(r if not xp.may_share_memory(r, d) else r.copy())
    if STATE.enabled and input.requires_grad:
        n = new_node(RepeatBackward)
        n.inter, n.axes, n.shape = tuple(inter), tuple(range(0, 2 * len(sizes), 2)), d.shape
        record(n, out, input)
    return out


def tile(input, dims):
    dims = tuple(_int(s) for s in (dims if isinstance(dims, _SEQ) else (dims,)))
    nd = input.array.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


class RepeatInterleaveBackward(Node):
    __slots__ = ("reps", "dim", "shape")

    def backward(self, g):
        if isinstance(self.reps, int):
            s = self.shape
            dim = self.dim
            inter = s[:dim] + (s[dim], self.reps) + s[dim + 1:]
            return (g.reshape(inter).sum(dim + 1),)
        return (_segment_sum(g, self.reps, self.dim),)


class SegmentSumBackward(Node):
    __slots__ = ("reps", "dim")

    def backward(self, g):
        return (_repeat_arr(g, self.reps, self.dim),)


def _segment_sum(x, reps, dim):
    """Sum consecutive runs of ``reps[i]`` slices along ``dim`` (the adjoint of
    repeat_interleave with tensor repeats). No ``add.at``: ``add.reduceat`` on numpy,
    ``cupyx.scatter_add`` on cupy."""
    d = x.array
    xp = B.namespace(d)
    n = reps.shape[0]
    shape = d.shape[:dim] + (n,) + d.shape[dim + 1:]
    if xp is np:
        nz = reps > 0
        starts = np.cumsum(reps) - reps
        if nz.all():
            r = np.add.reduceat(d, starts, axis=dim) if n else np.zeros(shape, d.dtype)
        else:
            r = np.zeros(shape, d.dtype)
            if nz.any():
                idx = (slice(None),) * dim + (nz,)
                r[idx] = np.add.reduceat(d, starts[nz], axis=dim)
    else:  # pragma: no cover - cupy path, tested with -m cuda
        import cupyx

        seg = xp.repeat(xp.arange(n), reps.tolist())  # cupy.repeat takes a list, not an array
        acc = xp.zeros((n,) + d.shape[:dim] + d.shape[dim + 1:], d.dtype)
        cupyx.scatter_add(acc, seg, xp.moveaxis(d, dim, 0))
        r = xp.ascontiguousarray(xp.moveaxis(acc, 0, dim))
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        node = new_node(SegmentSumBackward)
        node.reps, node.dim = reps, dim
        record(node, out, x)
    return out


def _repeat_arr(x, reps, dim):
    """repeat_interleave along ``dim`` with repeats ``reps`` (an int or an int array)."""
    d = x.array
    xp = B.namespace(d)
    if not isinstance(reps, int) and xp is not np:
        reps_arg = reps.tolist()  # cupy.repeat takes an int, list or tuple of repeats
    else:
        reps_arg = reps
    out = wrap(xp.repeat(d, reps_arg, axis=dim))
    if STATE.enabled and x.requires_grad:
        n = new_node(RepeatInterleaveBackward)
        n.reps, n.dim, n.shape = reps, dim, d.shape
        record(n, out, x)
    return out


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times; ``repeats`` is an int
    or a 1-D integer tensor with one count per slice. ``repeat_interleave(counts)`` gives
    ``arange(len(counts))`` repeated by ``counts``."""
    if repeats is None:
        counts = input
        if counts.array.ndim != 1 or counts.array.dtype.kind not in "iu":
            raise RuntimeError("repeat_interleave(repeats): repeats must be a 1-D integer tensor")
        xp = B.namespace(counts.array)
        return repeat_interleave(wrap(xp.arange(counts.array.shape[0])), counts, 0)
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    else:
        dim = norm_dim(dim, input.array.ndim)
    n = input.array.shape[dim] if input.array.ndim else 1
    if hasattr(repeats, "grad_fn"):
        r = repeats.array
        if r.dtype.kind not in "iu":
            raise RuntimeError(
                f"repeat_interleave: repeats must be an integer tensor, got {D.name(r.dtype)}")
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
        if r.size == 1:
            repeats = int(r.reshape(()).item())
        else:
            reps = r if type(r) is np.ndarray else r.get()
            reps = reps.astype(np.int64, copy=False)
    elif isinstance(repeats, _SEQ):
        reps = np.asarray(repeats, dtype=np.int64)
        if reps.size == 1:
            repeats = int(reps[0])
    if isinstance(repeats, (int, np.integer)):
        repeats = int(repeats)
        if repeats < 0:
            raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {repeats}")
        if input.array.ndim == 0:
            input = reshape(input, (1,))
        return _repeat_arr(input, repeats, dim)
    if reps.shape[0] != n:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {reps.shape[0]} and input.size({dim}) = {n}")
    if (reps < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    return _repeat_arr(input, reps, dim)


# =========================================================================== tril / triu

class TriBackward(Node):
    __slots__ = ("k", "upper")

    def backward(self, g):
        return ((triu if self.upper else tril)(g, self.k),)


def _tri(name, input, diagonal, upper):
    d = input.array
    if d.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got "
                           f"{d.ndim}")
    k = _int(diagonal, "diagonal")
    xp = B.namespace(d)
    out = wrap(xp.triu(d, k) if upper else xp.tril(d, k))
    if STATE.enabled and input.requires_grad:
        n = new_node(TriBackward)
        n.k, n.upper = k, upper
        record(n, out, input)
    return out


def tril(input, diagonal=0):
    """Lower triangle of the last two dims (elements above ``diagonal`` zeroed)."""
    return _tri("tril", input, diagonal, False)


def triu(input, diagonal=0):
    """Upper triangle of the last two dims (elements below ``diagonal`` zeroed)."""
    return _tri("triu", input, diagonal, True)


# =========================================================================== diagonals

def _diag_view(d, offset, dim1, dim2):
    """The writable diagonal view of array ``d``: other dims first, the diagonal last."""
    v = d.diagonal(offset, dim1, dim2)
    if type(v) is np.ndarray and not v.flags.writeable and d.flags.writeable:
        v.flags.writeable = True  # numpy hands diagonals out read-only; PyTorch's are writable
    return v


class DiagonalBackward(Node):
    __slots__ = ("shape", "offset", "dim1", "dim2")

    def backward(self, g):
        return (_diag_scatter(g, self.shape, self.offset, self.dim1, self.dim2),)


class DiagScatterBackward(Node):
    __slots__ = ("offset", "dim1", "dim2")

    def backward(self, g):
        return (diagonal(g, self.offset, self.dim1, self.dim2),)


def _diag_scatter(src, shape, offset, dim1, dim2):
    """Zeros of ``shape`` with ``src`` written on the diagonal (the adjoint of diagonal)."""
    d = src.array
    r = B.namespace(d).zeros(shape, d.dtype)
    _diag_view(r, offset, dim1, dim2)[...] = d
    out = wrap(r)
    if STATE.enabled and src.requires_grad:
        n = new_node(DiagScatterBackward)
        n.offset, n.dim1, n.dim2 = offset, dim1, dim2
        record(n, out, src)
    return out


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` of the (dim1, dim2) planes, as the last dim; a view."""
    d = input.array
    nd = d.ndim
    a, b = norm_dim(dim1, nd), norm_dim(dim2, nd)
    if a == b or nd < 2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset")
    out = _view_of(wrap(_diag_view(d, offset, a, b)), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(DiagonalBackward)
        n.shape, n.offset, n.dim1, n.dim2 = d.shape, offset, a, b
        record(n, out, input)
    return out


_diagonal = diagonal  # ``diag`` has an argument named ``diagonal``


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Put the last dim of ``input`` on diagonal ``offset`` of new (dim1, dim2) planes."""
    d = input.array
    nd = d.ndim + 1
    if d.ndim == 0:
        raise RuntimeError("diag_embed: input must have at least 1 dimension, got 0-d")
    a, b = norm_dim(dim1, nd), norm_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset")
    m = d.shape[-1] + abs(offset)
    rest = iter(d.shape[:-1])
    shape = tuple(m if i in (a, b) else next(rest) for i in range(nd))
    return _diag_scatter(input, shape, offset, a, b)


def diag(input, diagonal=0):
    """1-D input: a square matrix with ``input`` on diagonal ``diagonal``; 2-D input: that
    diagonal, as a new 1-D tensor."""
    nd = input.array.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return clone(_diagonal(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


# =========================================================================== pad

def _pairs(pad, nd):
    """PyTorch's pad tuple (last dim first) -> one (before, after) pair per dim."""
    pairs = [(0, 0)] * nd
    for i in range(len(pad) // 2):
        pairs[nd - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return pairs


class ConstantPadBackward(Node):
    __slots__ = ("pairs",)

    def backward(self, g):
        return (_constant_pad(g, [(-a, -b) for a, b in self.pairs], 0),)


def _constant_pad(x, pairs, value):
    """Pad (negative amounts crop) with ``value``; the adjoint is the negated pad."""
    d = x.array
    out_shape, src, dst = [], [], []
    for i, ((lo, hi), s) in enumerate(zip(pairs, d.shape)):
        n = s + lo + hi
        if n < 0:
            raise RuntimeError(
                f"The input size {s}, plus negative padding {lo} and {hi} resulted in a "
                f"negative output size, which is invalid. Check dimension {i} of your input.")
        out_shape.append(n)
        a = max(0, -lo)
        b = s - max(0, -hi)
        k = max(0, b - a)
        src.append(slice(a, a + k))
        dst.append(slice(max(0, lo), max(0, lo) + k))
    xp = B.namespace(d)
    if all(p == (0, 0) for p in pairs):
        r = d.copy()
    else:
        r = xp.full(out_shape, value, d.dtype)
        r[tuple(dst)] = d[tuple(src)]
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        n = new_node(ConstantPadBackward)
        n.pairs = pairs
        record(n, out, x)
    return out


def _edges(pairs, shape, mode):
    """Per padded dim: (axis, [(edge slice, source slice, how)]) where ``how`` is "copy",
    "flip" or "rep"; edges are filled from sources inside the centre of the output."""
    out = []
    for ax, ((lo, hi), n) in enumerate(zip(pairs, shape)):
        if not lo and not hi:
            continue
        items = []
        if mode == "reflect":
            if lo:
                items.append((slice(0, lo), slice(lo + 1, 2 * lo + 1), "flip"))
            if hi:
                items.append((slice(lo + n, lo + n + hi), slice(lo + n - 1 - hi, lo + n - 1),
                              "flip"))
        elif mode == "replicate":
            if lo:
                items.append((slice(0, lo), slice(lo, lo + 1), "rep"))
            if hi:
                items.append((slice(lo + n, lo + n + hi), slice(lo + n - 1, lo + n), "rep"))
        else:  # circular
            if lo:
                items.append((slice(0, lo), slice(n, n + lo), "copy"))
            if hi:
                items.append((slice(lo + n, lo + n + hi), slice(lo, lo + hi), "copy"))
        out.append((ax, items))
    return out


def _at(ax, s):
    return (slice(None),) * ax + (s,)


# Edges this narrow along the innermost dim are copied one column at a time: numpy is slow
# at copying many rows of a few elements, fast at one strided column.
_NARROW = 8


def _columns(edge, src, how):
    """(edge index, source index) pairs of one edge, column by column."""
    w = edge.stop - edge.start
    if how == "flip":
        return [(edge.start + i, src.stop - 1 - i) for i in range(w)]
    if how == "copy":
        return [(edge.start + i, src.start + i) for i in range(w)]
    return [(edge.start + i, src.start) for i in range(w)]


class NCPadBackward(Node):
    __slots__ = ("pairs", "mode", "shape")

    def backward(self, g):
        return (_nc_pad_adjoint(g, self.pairs, self.mode, self.shape),)


class NCPadAdjointBackward(Node):
    __slots__ = ("pairs", "mode")

    def backward(self, g):
        return (_nc_pad(g, self.pairs, self.mode),)


def _nc_pad(x, pairs, mode):
    """reflect / replicate / circular padding by non-negative amounts: one allocation, the
    centre copied in, then each dim's edges filled from the output itself."""
    d = x.array
    xp = B.namespace(d)
    shape = tuple(s + lo + hi for s, (lo, hi) in zip(d.shape, pairs))
    r = xp.empty(shape, d.dtype)
    r[tuple(slice(lo, lo + s) for s, (lo, _) in zip(d.shape, pairs))] = d
    last = d.ndim - 1
    for ax, items in _edges(pairs, d.shape, mode):
        for edge, src, how in items:
            if ax == last and edge.stop - edge.start <= _NARROW:
                for e, c in _columns(edge, src, how):
                    r[..., e] = r[..., c]
                continue
            v = r[_at(ax, src)]
            r[_at(ax, edge)] = xp.flip(v, ax) if how == "flip" else v
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        n = new_node(NCPadBackward)
        n.pairs, n.mode, n.shape = pairs, mode, d.shape
        record(n, out, x)
    return out


def _nc_pad_adjoint(g, pairs, mode, shape):
    """The adjoint of ``_nc_pad``: edge gradients added back onto their sources, last padded
    dim first, each dim cropped to its centre once done."""
    d = g.array
    xp = B.namespace(d)
    acc = d.copy()
    last = d.ndim - 1
    for ax, items in reversed(_edges(pairs, shape, mode)):
        for edge, src, how in items:
            if ax == last and edge.stop - edge.start <= _NARROW:
                for e, c in _columns(edge, src, how):
                    acc[..., c] += acc[..., e]
                continue
            e = acc[_at(ax, edge)]
            if how == "flip":
                e = xp.flip(e, ax)
            elif how == "rep":
                e = e.sum(axis=ax, keepdims=True)
            acc[_at(ax, src)] += e
        lo = pairs[ax][0]
        acc = acc[_at(ax, slice(lo, lo + shape[ax]))]
    out = wrap(xp.ascontiguousarray(acc))
    if STATE.enabled and g.requires_grad:
        n = new_node(NCPadAdjointBackward)
        n.pairs, n.mode = pairs, mode
        record(n, out, g)
    return out


_NC_HELP = ("Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(input, pad, mode="constant", value=None):
    """Pad ``input``. ``pad`` lists (before, after) amounts starting from the LAST dim:
    ``(left, right)`` pads dim -1, ``(left, right, top, bottom)`` dims -1 and -2, ...
    Negative amounts crop. Modes: "constant" (with ``value``, default 0), "reflect"
    (mirror without repeating the edge), "replicate" (repeat the edge), "circular" (wrap).

    >>> pad(ember.arange(3.), (1, 2))
    tensor([0., 0., 1., 2., 0., 0.])
    """
    d = input.array
    nd = d.ndim
    p = tuple(_int(v, "pad") for v in pad)
    if len(p) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got {len(p)}")
    if len(p) // 2 > nd:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension "
            f"but got padding length {len(p)} and input of dimension {nd}")
    pairs = _pairs(p, nd)
    if mode == "constant":
        return _constant_pad(input, pairs, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"Unrecognised padding mode {mode!r}: expected 'constant', 'reflect', "
            f"'replicate' or 'circular'")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(p) // 2
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(p)} is not supported for {nd}D input tensor.\n{_NC_HELP}")
    x = input
    if any(lo < 0 or hi < 0 for lo, hi in pairs):  # negative amounts crop first
        crop = tuple(slice(max(0, -lo), s - max(0, -hi)) for (lo, hi), s in zip(pairs, d.shape))
        for (lo, hi), s in zip(pairs, d.shape):
            if s - max(0, -lo) - max(0, -hi) < 0:
                raise RuntimeError(
                    f"negative padding ({lo}, {hi}) crops more than the input size {s}")
        x = _slice(input, crop)
        pairs = [(max(0, lo), max(0, hi)) for lo, hi in pairs]
    shape = x.array.shape
    for i, ((lo, hi), s) in enumerate(zip(pairs, shape)):
        if mode == "reflect" and (lo >= s or hi >= s) and (lo or hi):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({lo}, {hi}) at dimension {i} of input "
                f"{list(d.shape)}")
        if mode == "circular" and (lo > s or hi > s):
            raise RuntimeError(
                f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) "
                f"at dimension {i} of input {list(d.shape)}")
        if mode == "replicate" and s == 0 and (lo or hi):
            raise RuntimeError(
                f"replicate padding of an empty dimension {i} of input {list(d.shape)}")
    return _nc_pad(x, pairs, mode)


# =========================================================================== copies

class CloneBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (g,)


def _copy_node(out, input):
    if STATE.enabled and input.requires_grad:
        record(new_node(CloneBackward), out, input)
    return out


def clone(input, *, memory_format=None):
    """A copy with its own memory (same strides order where the input is dense, or the order
    ``memory_format`` names)."""
    if memory_format is not None:
        from .._memory_format import laid_out

        return _copy_node(wrap(laid_out(input.array, memory_format, copy=True)), input)
    return _copy_node(wrap(input.array.copy(order="K")), input)


def contiguous(input, memory_format=None):
    """``input`` itself when C-contiguous (or laid out as ``memory_format``, e.g.
    ``ember.channels_last``), else a copy in that order."""
    d = input.array
    if memory_format is not None:
        from .._memory_format import is_laid_out, laid_out

        if is_laid_out(d, memory_format):
            return input
        return _copy_node(wrap(laid_out(d, memory_format)), input)
    if d.flags.c_contiguous:
        return input
    return _copy_node(wrap(B.namespace(d).ascontiguousarray(d)), input)


# =========================================================================== unfold

class UnfoldBackward(Node):
    __slots__ = ("shape", "dim", "size", "step")

    def backward(self, g):
        return (_unfold_adjoint(g, self.shape, self.dim, self.size, self.step),)


class UnfoldAdjointBackward(Node):
    __slots__ = ("dim", "size", "step")

    def backward(self, g):
        return (unfold(g, self.dim, self.size, self.step),)


def _unfold_adjoint(g, shape, dim, size, step):
    """Sum each window's gradient back onto the positions it was taken from."""
    d = g.array
    xp = B.namespace(d)
    r = xp.zeros(shape, d.dtype)
    count = d.shape[dim]
    pre = (slice(None),) * dim
    if size <= count:
        for k in range(size):
            r[pre + (slice(k, k + (count - 1) * step + 1, step),)] += d[..., k]
    else:
        for i in range(count):
            r[pre + (slice(i * step, i * step + size),)] += xp.moveaxis(d[pre + (i,)], -1, dim)
    out = wrap(r)
    if STATE.enabled and g.requires_grad:
        n = new_node(UnfoldAdjointBackward)
        n.dim, n.size, n.step = dim, size, step
        record(n, out, g)
    return out


def unfold(input, dimension, size, step):
    """All windows of ``size`` elements along ``dimension`` taken every ``step`` elements,
    as a new last dim (``Tensor.unfold``; a view)."""
    d = input.array
    if d.ndim == 0:
        return reshape(unfold(reshape(input, (1,)), 0, size, step), (_int(size),))
    dim = norm_dim(dimension, d.ndim)
    size, step = _int(size, "size"), _int(step, "step")
    n = d.shape[dim]
    if size > n:
        raise RuntimeError(
            f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    st = d.strides
    shape = d.shape[:dim] + (count,) + d.shape[dim + 1:] + (size,)
    strides = st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],)
    out = _view_of(wrap(_strided(d, shape, strides)), input)
    if STATE.enabled and input.requires_grad:
        nd_ = new_node(UnfoldBackward)
        nd_.shape, nd_.dim, nd_.size, nd_.step = d.shape, dim, size, step
        record(nd_, out, input)
    return out


# =========================================================================== Tensor methods

def _inplace(fn):
    def method(self, *args, **kwargs):
        from .elementwise import apply_inplace

        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method


class ShapeOps:
    __slots__ = ()
    reshape = reshape
    view = view
    permute = permute
    transpose = transpose
    swapaxes = swapaxes
    swapdims = swapdims
    t = t
    squeeze = squeeze
    unsqueeze = unsqueeze
    expand = expand
    broadcast_to = broadcast_to
    flatten = flatten
    unflatten = unflatten
    ravel = ravel
    split = split
    split_with_sizes = split_with_sizes
    chunk = chunk
    tensor_split = tensor_split
    hsplit = hsplit
    vsplit = vsplit
    dsplit = dsplit
    unbind = unbind
    narrow = narrow
    select = select
    fliplr = fliplr
    flipud = flipud
    roll = roll
    repeat = repeat
    repeat_interleave = repeat_interleave
    movedim = movedim
    moveaxis = movedim
    tril = tril
    triu = triu
    tril_ = _inplace(tril)
    triu_ = _inplace(triu)
    diagonal = diagonal
    diag = diag
    diag_embed = diag_embed
    clone = clone
    contiguous = contiguous
    unfold = unfold

    def flip(self, *dims):
        return flip(self, _varargs(dims))

    def tile(self, *dims):
        return tile(self, _varargs(dims))

    def expand_as(self, other):
        return expand(self, other.shape)

    def reshape_as(self, other):
        return reshape(self, other.shape)

    def view_as(self, other):
        return view(self, other.shape)


__all__ = [
    "reshape", "squeeze", "unsqueeze", "flatten", "unflatten", "ravel",
    "atleast_1d", "atleast_2d", "atleast_3d", "transpose", "swapaxes", "swapdims", "t",
    "permute", "movedim", "moveaxis", "expand", "broadcast_to", "broadcast_shapes",
    "broadcast_tensors", "meshgrid", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "split", "split_with_sizes", "chunk",
    "tensor_split", "hsplit", "vsplit", "dsplit", "unbind", "narrow", "select", "flip",
    "fliplr", "flipud", "roll", "repeat_interleave", "tile", "tril", "triu", "diagonal",
    "diag", "diag_embed", "pad", "clone",
]
