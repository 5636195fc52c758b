"""Shared pieces of the op families: wrapping, operand conversion, broadcasting grads, dims."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record

_ndarray = np.ndarray
_SCALARS = (int, float, bool, complex)


_TENSOR = []


def T():
    """The Tensor class (imported late: ops are defined before it)."""
    if not _TENSOR:
        from .._tensor import Tensor

        _TENSOR.append(Tensor)
    return _TENSOR[0]


_make = None  # Tensor._make, bound by core/_tensor.py once the class exists
Tensor = None  # the Tensor base class (subclasses such as nn.Parameter pass isinstance)


def wrap(data):
    """Array -> Tensor without copy (the constructor every op uses)."""
    return _make(data)


def needs_grad(*ts):
    """True when grad mode is on and any tensor among ``ts`` requires grad."""
    if not STATE.enabled:
        return False
    for t in ts:
        if t is not None and t.requires_grad:
            return True
    return False


def device_error(op, a, b):
    return RuntimeError(
        f"{op}: expected all tensors to be on the same device, but found at least two devices, "
        f"{B.device_of(a)} and {B.device_of(b)}")


def to_tensor(x, like=None, name="input"):
    """Tensors pass through; arrays, scalars and sequences become tensors (on ``like``'s
    device). A Python float becomes the default float dtype, never float64."""
    Tensor = T()
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS):
        dt = D.scalar_result_type(like.array.dtype, x) if like is not None else None
        if dt is None:
            dt = D.get_default_dtype() if isinstance(x, float) else (
                D.bool if isinstance(x, bool) else D.complex64 if isinstance(x, complex)
                else D.int64)
        xp = B.namespace(like.array) if like is not None else np
        if type(x) is int and dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= x <= info.max:  # wraps around, as in PyTorch
                return Tensor._make(xp.asarray(np.array(x).astype(dt)))
        return Tensor._make(xp.asarray(x, dtype=dt))
    if isinstance(x, (np.ndarray, np.generic)) or B.is_cuda_array(x):
        arr = x
        if like is not None and B.is_cuda_array(like.array) and not B.is_cuda_array(x):
            arr = B.to_device(np.asarray(x), like.device)
        return Tensor._make(arr if not isinstance(arr, np.generic) else np.asarray(arr))
    if isinstance(x, (list, tuple)):
        from ..factories import tensor

        return tensor(x, device=None if like is None else like.device)
    raise TypeError(f"{name} must be a Tensor, a number or an array, got {type(x).__name__}")


def norm_dim(dim, ndim):
    """Wrap a negative dim; error names the valid range."""
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if type(dim) is not int:
        dim = int(dim)
    if dim < lo or dim > hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else (dim if ndim else 0)


def norm_dims(dim, ndim):
    """``None`` -> all dims; int or sequence -> sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        return (norm_dim(dim, ndim),) if ndim else ()
    dims = tuple(norm_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {tuple(dim)} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if ndim else ()


# --------------------------------------------------------------------------- broadcast grads

class SumToBackward(Node):
    __slots__ = ("shape",)

    def backward(self, g):
        return (expand_to(g, self.shape),)


class ExpandToBackward(Node):
    __slots__ = ("shape",)

    def backward(self, g):
        return (sum_to(g, self.shape),)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape`` (the reverse of broadcasting), differentiably."""
    xs = x.array.shape
    if xs == shape:
        return x
    lead = len(xs) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and xs[i + lead] != 1)
    d = x.array.sum(axis=axes, keepdims=True) if axes else x.array
    if lead:
        d = d.reshape(shape)
    out = wrap(d)
    if STATE.enabled and x.requires_grad:
        n = new_node(SumToBackward)
        n.shape = xs
        record(n, out, x)
    return out


def expand_to(x, shape):
    """Broadcast ``x`` to ``shape`` (a read-only view), differentiably."""
    if x.array.shape == tuple(shape):
        return x
    xp = B.namespace(x.array)
    out = wrap(xp.broadcast_to(x.array, shape))
    if STATE.enabled and x.requires_grad:
        n = new_node(ExpandToBackward)
        n.shape = x.array.shape
        record(n, out, x)
    return out


def unbroadcast(g, shape, dtype):
    """Gradient ``g`` of a broadcast result, reduced to an input's shape and dtype."""
    if g.array.shape != shape:
        g = sum_to(g, shape)
    if g.array.dtype is not dtype:
        g = g._cast(dtype)
    return g
