"""Reductions: sum, mean, prod, max/min, var/std, norm, logsumexp, cumulative ops, sort/topk,
all/any, unique."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import expand_to, norm_dims, wrap


def _restore_dims(g, shape, dims, keepdim):
    """Reshape a reduced gradient so it broadcasts back against the input ``shape``."""
    if keepdim or not dims:
        return g
    kshape = tuple(1 if i in dims else s for i, s in enumerate(shape))
    return g.reshape(kshape)


class SumBackward(Node):
    __slots__ = ("shape", "dims", "keepdim", "dtype")

    def backward(self, g):
        g = _restore_dims(g, self.shape, self.dims, self.keepdim)
        g = expand_to(g, self.shape)
        if g.data.dtype is not self.dtype:
            g = g._cast(self.dtype)
        return (g,)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    d = input.data
    dims = norm_dims(dim, d.ndim)
    dt = D.to_dtype(dtype)
    if dt is None and d.dtype.kind in "bui":
        dt = D.int64
    r = d.sum(axis=dims, keepdims=keepdim, dtype=dt)
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(SumBackward)
        n.shape, n.dims, n.keepdim, n.dtype = d.shape, dims, keepdim, d.dtype
        record(n, out, input)
    return out


def mean(input, dim=None, keepdim=False, *, dtype=None):
    d = input.data
    dt = D.to_dtype(dtype)
    if dt is None and not (d.dtype.kind in "fc" or d.dtype == D.bfloat16):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {D.name(d.dtype)}")
    dims = norm_dims(dim, d.ndim)
    count = 1
    for i in dims:
        count *= d.shape[i]
    s = sum(input if dt is None else input._cast(dt), dim, keepdim)
    return s / count if count else s * float("nan")


class ReduceOps:
    __slots__ = ()
    sum = sum
    mean = mean


__all__ = ["sum", "mean"]
