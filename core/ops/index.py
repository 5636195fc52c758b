"""Indexing: __getitem__/__setitem__ (basic and advanced), gather/scatter family,
index_select/add/put, masked ops, where, nonzero, take_along_dim."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import to_tensor, unbroadcast, wrap


class WhereBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype")

    def backward(self, g):
        (cond,) = self.unpack()
        zero = g * 0
        nx = self.next
        ga = unbroadcast(where(cond, g, zero), self.ashape, self.adtype) if nx[0] else None
        gb = unbroadcast(where(cond, zero, g), self.bshape, self.bdtype) if nx[1] else None
        return ga, gb


def where(condition, input=None, other=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    from .elementwise import _operands

    ref = input if hasattr(input, "data") and hasattr(input, "grad_fn") else other
    if not hasattr(ref, "grad_fn"):
        ref = to_tensor(input, condition)
    x = to_tensor(input, ref, name="input")
    y = to_tensor(other, ref, name="other")
    xd, yd, _ = _operands("where", x, y)
    c = condition.data
    if c.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {c.dtype}")
    out = wrap(B.namespace(xd).where(c, xd, yd))
    if STATE.enabled and (x.requires_grad or y.requires_grad):
        n = new_node(WhereBackward)
        n.ashape, n.adtype, n.bshape, n.bdtype = x.data.shape, x.data.dtype, y.data.shape, y.data.dtype
        n.saved = ((condition, 0 if condition._version is None else condition._version[0]),)
        record(n, out, x, y)
    return out


def masked_fill(input, mask, value):
    return where(mask, value if hasattr(value, "grad_fn") else to_tensor(value, input), input) \
        if hasattr(value, "grad_fn") else where(mask, to_tensor(value, input), input)


def nonzero(input, *, as_tuple=False):
    d = input.data
    idx = B.namespace(d).nonzero(d)
    if as_tuple:
        return tuple(wrap(i.astype(np.int64)) for i in idx)
    return wrap(B.namespace(d).stack(idx, axis=1).astype(np.int64) if idx else
                B.namespace(d).zeros((0, 0), np.int64))


class IndexOps:
    __slots__ = ()
    masked_fill = masked_fill
    nonzero = nonzero

    def where(self, condition, other):
        return where(condition, self, other)


__all__ = ["where", "masked_fill", "nonzero"]
