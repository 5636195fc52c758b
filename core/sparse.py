"""Row-sparse gradients: the gradient of a table (embedding weights) that touches few rows.

An embedding lookup of ``B`` ids into a ``(num_rows, dim)`` table has a gradient that is
zero except on the looked-up rows. ``RowSparseGrad`` stores just those rows::

    indices  (nnz,)        int64 row ids, in any order, possibly repeated
    values   (nnz, dim)    values[i] belongs to row indices[i]
    shape    (num_rows, dim)

Repeated ids stay separate until ``coalesce()`` sums them (sorted unique ids, one segment
sum, never ``np.add.at``). Sparse grads of one leaf accumulate by concatenation, and a dense
gradient added to a sparse one gives a dense tensor. Optimizers with a sparse path (SGD,
Adagrad, SparseAdam) read ``coalesce()``; ``to_dense()`` serves everything else.

    >>> import ember, numpy as np
    >>> g = RowSparseGrad(np.array([3, 1, 3]), np.ones((3, 2), np.float32), (5, 2))
    >>> c = g.coalesce()
    >>> c.indices.tolist(), c.values[:, 0].tolist()
    ([1, 3], [1.0, 2.0])
"""
from __future__ import annotations

import numpy as np

from . import _backend as B

_int64 = np.dtype(np.int64)


class RowSparseGrad:
    """Rows ``indices`` of a ``shape``-shaped gradient, with values ``values`` (raw arrays)."""

    __slots__ = ("indices", "values", "shape", "_coalesced")
    is_sparse = True
    layout = "sparse_rows"

    def __init__(self, indices, values, shape, coalesced=False):
        shape = tuple(int(s) for s in shape)
        if indices.ndim != 1:
            raise ValueError(f"RowSparseGrad: indices must be 1-D, got shape {indices.shape}")
        if values.shape != (indices.shape[0],) + shape[1:]:
            raise ValueError(
                f"RowSparseGrad: values must have shape {(indices.shape[0],) + shape[1:]} "
                f"(nnz, *row_shape), got {values.shape}")
        if type(indices) is not type(values):
            raise ValueError("RowSparseGrad: indices and values must be on the same device")
        self.indices = indices if indices.dtype == _int64 else indices.astype(_int64)
        self.values = values
        self.shape = shape
        self._coalesced = bool(coalesced)

    # -- metadata ------------------------------------------------------------------------
    @property
    def dtype(self):
        return self.values.dtype

    @property
    def device(self):
        return B.device_of(self.values)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def requires_grad(self):
        return False

    @property
    def grad_fn(self):
        return None

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def nnz(self):
        return int(self.indices.shape[0])

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        """Row ids as a ``(1, nnz)`` int64 tensor (the COO layout PyTorch reports)."""
        from ._tensor import Tensor

        return Tensor._make(self.indices[None])

    def _values(self):
        from ._tensor import Tensor

        return Tensor._make(self.values)

    # -- conversion ----------------------------------------------------------------------
    def coalesce(self):
        """Sorted unique row ids with the values of repeated ids summed."""
        if self._coalesced:
            return self
        from .ops.index import _add_at

        xp = B.namespace(self.values)
        uniq, inv = xp.unique(self.indices, return_inverse=True)
        vals = xp.zeros((uniq.shape[0],) + self.shape[1:], self.values.dtype)
        _add_at(vals, 0, inv.reshape(-1), self.values)
        return RowSparseGrad(uniq, vals, self.shape, coalesced=True)

    def add_to_(self, dense, alpha=1.0):
        """In place: ``dense[indices] += alpha * values`` (repeats summed); returns ``dense``."""
        if tuple(dense.shape) != self.shape:
            raise ValueError(f"RowSparseGrad.add_to_: target has shape {tuple(dense.shape)}, "
                             f"expected {self.shape}")
        c = self.coalesce()
        vals = c.values if alpha == 1 else _scaled(c.values, alpha)
        dense[c.indices] += vals
        return dense

    def to_dense(self):
        """The full gradient as an ember Tensor."""
        from ._tensor import Tensor

        xp = B.namespace(self.values)
        return Tensor._make(self.add_to_(xp.zeros(self.shape, self.values.dtype)))

    def detach(self):
        return self

    # -- arithmetic (what gradient accumulation needs) ------------------------------------
    def __add__(self, other):
        if isinstance(other, RowSparseGrad):
            if other.shape != self.shape:
                raise ValueError(f"cannot add sparse gradients of shapes {self.shape} and "
                                 f"{other.shape}")
            xp = B.namespace(self.values)
            return RowSparseGrad(xp.concatenate([self.indices, other.indices]),
                                 xp.concatenate([self.values, other.values]), self.shape)
        from ._tensor import Tensor

        if isinstance(other, Tensor):
            if tuple(other.shape) != self.shape:
                raise ValueError(f"cannot add a sparse gradient of shape {self.shape} and a "
                                 f"dense one of shape {tuple(other.shape)}")
            if other.requires_grad:
                return other + self.to_dense()
            return Tensor._make(self.add_to_(other.array.copy()))
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, scalar):
        if not isinstance(scalar, (int, float)):
            return NotImplemented
        return RowSparseGrad(self.indices, _scaled(self.values, scalar),
                             self.shape, self._coalesced)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __repr__(self):
        return (f"RowSparseGrad(shape={self.shape}, nnz={self.nnz()}, dtype={self.dtype}, "
                f"coalesced={self._coalesced})")


def _scaled(values, scalar):
    """``values * scalar`` in ``values``' dtype (a Python scalar never widens it)."""
    r = values * scalar
    return r if r.dtype == values.dtype else r.astype(values.dtype)
