"""Linear algebra: matmul/@, mm, bmm, einsum, tensordot, outer, and ember.linalg basics."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import device_error, sum_to, wrap


def _shape_str(s):
    return "x".join(str(i) for i in s)


class MatmulBackward(Node):
    __slots__ = ("ashape", "bshape")

    def backward(self, g):
        a, b = self.unpack()
        nx = self.next
        ga = gb = None
        an, bn = len(self.ashape), len(self.bshape)
        if an == 1 and bn == 1:  # dot
            return (g * b if nx[0] else None, g * a if nx[1] else None)
        # promote vectors to matrices, then reduce broadcast batch dims
        a2 = a.reshape(1, -1) if an == 1 else a
        b2 = b.reshape(-1, 1) if bn == 1 else b
        g2 = g
        if an == 1:
            g2 = g2.unsqueeze(-2)
        if bn == 1:
            g2 = g2.unsqueeze(-1)
        if nx[0] is not None:
            ga = matmul(g2, b2.mT)
            ga = sum_to(ga, a2.shape) if ga.shape != a2.shape else ga
            if an == 1:
                ga = ga.reshape(self.ashape)
        if nx[1] is not None:
            gb = matmul(a2.mT, g2)
            gb = sum_to(gb, b2.shape) if gb.shape != b2.shape else gb
            if bn == 1:
                gb = gb.reshape(self.bshape)
        return ga, gb


def matmul(input, other):
    a, b = input.data, other.data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and "
            f"{b.ndim}D")
    if type(a) is not type(b):
        raise device_error("matmul", a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {D.name(a.dtype)} != "
            f"{D.name(b.dtype)}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        sa = a.shape if a.ndim > 1 else (1,) + a.shape
        sb = b.shape if b.ndim > 1 else b.shape + (1,)
        if a.ndim <= 2 and b.ndim <= 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({_shape_str(sa)} and {_shape_str(sb)})")
        raise RuntimeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           f"multiplied (inner dimensions {ka} and {kb} differ)")
    out = wrap(a @ b)
    if STATE.enabled and (input.requires_grad or other.requires_grad):
        n = new_node(MatmulBackward)
        n.ashape, n.bshape = a.shape, b.shape
        n.save(input, other)
        record(n, out, input, other)
    return out


class LinalgOps:
    __slots__ = ()
    matmul = matmul

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        from ._util import to_tensor

        return matmul(to_tensor(other, self), self)

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def T(self):
        nd = self.data.ndim
        return self.permute(tuple(range(nd - 1, -1, -1))) if nd > 1 else self


__all__ = ["matmul"]
