"""Shape ops: reshape/view, transpose/permute, squeeze/unsqueeze, expand, flatten, cat/stack,
split/chunk/unbind, flip, roll, repeat/tile, narrow, movedim, tril/triu, diagonal, pad."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import expand_to, norm_dim, sum_to, wrap


def _view_of(out, base):
    """Mark ``out`` as a view of ``base``: they share data and version counter."""
    out._version = base._vc()
    out._base = base if base._base is None else base._base
    return out


class ReshapeBackward(Node):
    __slots__ = ("shape",)

    def backward(self, g):
        return (reshape(g, self.shape),)


def _infer_shape(shape, size):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or size % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        shape = shape[:neg[0]] + (size // known,) + shape[neg[0] + 1:]
    elif known != size:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape


def reshape(input, *shape):
    d = input.data
    shape = _infer_shape(shape, d.size)
    if shape == d.shape:
        r = d
    else:
        r = d.reshape(shape)
    out = wrap(r)
    if B.namespace(d).shares_memory(r, d) if r.size else False:
        _view_of(out, input)
    if STATE.enabled and input.requires_grad:
        n = new_node(ReshapeBackward)
        n.shape = d.shape
        record(n, out, input)
    return out


def view(input, *shape):
    d = input.data
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return input._cast(np.dtype(shape[0]))  # view(dtype) reinterpretation is not supported
    shape = _infer_shape(shape, d.size)
    try:
        r = d.view()
        r.shape = shape  # raises when a copy would be needed
    except AttributeError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.") from None
    out = _view_of(wrap(r), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(ReshapeBackward)
        n.shape = d.shape
        record(n, out, input)
    return out


class PermuteBackward(Node):
    __slots__ = ("inv",)

    def backward(self, g):
        return (permute(g, self.inv),)


def permute(input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input.data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
            f"to len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
    dims = tuple(norm_dim(x, nd) for x in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {dims}")
    out = _view_of(wrap(input.data.transpose(dims)), input)
    if STATE.enabled and input.requires_grad:
        n = new_node(PermuteBackward)
        n.inv = tuple(int(i) for i in np.argsort(dims))
        record(n, out, input)
    return out


def transpose(input, dim0, dim1):
    nd = input.data.ndim
    if nd == 0:
        return input.view(())
    d0, d1 = norm_dim(dim0, nd), norm_dim(dim1, nd)
    perm = list(range(nd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(input, perm)


def expand(input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = input.data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s == -1:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            target.append(int(s))
        else:
            cur = shape[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur}) "
                    f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                    f"sizes: {list(shape)}")
            target.append(int(s))
    out = expand_to(input, tuple(target))
    if out is not input:
        _view_of(out, input)
    return out


class ShapeOps:
    __slots__ = ()
    reshape = reshape
    permute = permute
    transpose = transpose
    expand = expand

    def view(self, *shape):
        return view(self, *shape)

    def expand_as(self, other):
        return expand(self, other.shape)

    def reshape_as(self, other):
        return reshape(self, other.shape)

    def view_as(self, other):
        return view(self, other.shape)


__all__ = ["reshape", "permute", "transpose", "expand"]


def unsqueeze(input, dim):
    nd = input.data.ndim
    dim = norm_dim(dim, nd + 1)
    return reshape(input, input.data.shape[:dim] + (1,) + input.data.shape[dim:])


ShapeOps.unsqueeze = unsqueeze
__all__.append("unsqueeze")
