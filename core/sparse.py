"""``ember.sparse``: row-sparse gradients, and torch.sparse's ops on COO tensors.

The COO ops (``mm``/``spmm``, ``addmm``, ``sum``, ``softmax``, ``log_softmax``) are at the
end of this file; the ``SparseCooTensor`` type they take is in core/_sparse_coo.py.

Row-sparse gradients: the gradient of a table (embedding weights) that touches few rows.

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
from . import dtypes as D
from ._sparse_coo import (_CUPY_ADD, SparseCooTensor, _describe, _norm_dim, _Pattern, _seg_gather,
                          _seg_sum, _segmax_raw, _segsum_raw, _T, _wrap)
from ._sparse_coo import sparse_coo_tensor, to_sparse  # noqa: F401  (ember.sparse's names too)
from .autograd.grad_mode import STATE
from .autograd.graph import Node, new_node, record, saved_output

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


# ============================================================================ COO ops
# torch.sparse's functions on the COO tensors of core/_sparse_coo.py: mm (SpMM), addmm, sum,
# softmax, log_softmax. Each backward is written with differentiable ops when a graph is
# being built (create_graph=True) and with plain arrays otherwise.

def _spmm_raw(bip, v, x):
    """``S @ x`` for the pattern ``bip`` with values ``v`` (nnz,) and dense ``x`` (n_in, n)."""
    xp = B.namespace(x)
    out = xp.zeros((bip.n_out, x.shape[1]), x.dtype)
    if bip.out_ids.shape[0] == 0:
        return out
    if xp is np:
        for rows, ent, cols in bip.buckets():
            out[rows] = np.einsum("rd,rdf->rf", v[ent], x[cols])
        return out
    prod = xp.take(x, bip.in_ids, axis=0)
    prod *= v[:, None]
    if x.dtype in _CUPY_ADD:
        import cupyx

        cupyx.scatter_add(out, bip.out_ids, prod)
        return out
    seg = bip.seg()
    out[bip.out_ids[seg.first]] = _segsum_raw(prod, seg)
    return out


def _sddmm_raw(bip, g, x):
    """Per entry k: ``g[out_ids[k]] . x[in_ids[k]]`` (the gradient of SpMM's values)."""
    xp = B.namespace(x)
    if xp is np:
        gv = np.empty(bip.out_ids.shape[0], np.result_type(g, x))
        for rows, ent, cols in bip.buckets():
            gv[ent] = np.einsum("rf,rdf->rd", g[rows], x[cols])
        return gv
    return xp.einsum("ij,ij->i", xp.take(g, bip.out_ids, axis=0),
                     xp.take(x, bip.in_ids, axis=0))


class SparseMmBackward(Node):
    __slots__ = ("bip",)

    def backward(self, g):
        v, x = self.unpack()
        bip, nx = self.bip, self.next
        gv = gx = None
        if STATE.enabled:  # create_graph: differentiable ops
            if nx[0] is not None:
                go = g.index_select(0, _wrap(bip.out_ids))
                gv = (go * x.index_select(0, _wrap(bip.in_ids))).sum(1)
            if nx[1] is not None:
                gx = _spmm(bip.T, v, g)
            return gv, gx
        if nx[0] is not None:
            gv = _wrap(_sddmm_raw(bip, g.array, x.array))
        if nx[1] is not None:
            gx = _wrap(_spmm_raw(bip.T, v.array, g.array))
        return gv, gx


def _spmm(bip, v, x):
    """Differentiable SpMM on tensors: values ``v`` (nnz,), dense ``x`` (n_in, n)."""
    out = _wrap(_spmm_raw(bip, v.array, x.array))
    if STATE.enabled and (v.requires_grad or x.requires_grad):
        n = new_node(SparseMmBackward)
        n.bip = bip
        n.save(v, x)
        record(n, out, v, x)
    return out


def _as_sparse(x, op, name="input"):
    if not isinstance(x, SparseCooTensor):
        raise TypeError(f"{op}: expected {name} to be a sparse COO tensor, got {_describe(x)}")
    return x


def mm(mat1, mat2):
    """``mat1 @ mat2`` where one of them is a 2-D sparse COO tensor and the other dense
    (1-D or 2-D). Gradients: dense for the dense operand; for the sparse operand, sparse
    on its own pattern (``torch.sparse.mm``'s)."""
    Tensor = _T()
    if isinstance(mat1, SparseCooTensor) and isinstance(mat2, SparseCooTensor):
        raise RuntimeError("sparse.mm: sparse @ sparse is not supported; make one operand "
                           "dense with .to_dense()")
    if isinstance(mat2, SparseCooTensor):  # dense @ sparse = (sparse.T @ dense.T).T
        if not isinstance(mat1, Tensor):
            raise TypeError(f"sparse.mm: expected a dense Tensor as mat1, got {_describe(mat1)}")
        if mat1.array.ndim == 1:
            return mm(mat2.t(), mat1)
        if mat1.array.ndim != 2:
            raise RuntimeError(f"sparse.mm: expected mat1 to be a 1-D or 2-D dense tensor, got "
                               f"shape {list(mat1.shape)}")
        return mm(mat2.t(), mat1.t()).t()
    s = _as_sparse(mat1, "sparse.mm", "mat1")
    if not isinstance(mat2, Tensor):
        raise TypeError(f"sparse.mm: expected mat2 to be a dense Tensor, got {_describe(mat2)}")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"sparse.mm: expected mat1 to be a 2-D sparse matrix (2 sparse dims, "
                           f"no dense dims), got shape {list(s.shape)} with sparse_dim "
                           f"{s.sparse_dim()}")
    x = mat2.array
    vec = x.ndim == 1
    if x.ndim not in (1, 2):
        raise RuntimeError(f"sparse.mm: expected mat2 to be a 1-D or 2-D dense tensor, got "
                           f"shape {list(x.shape)}")
    if x.shape[0] != s.shape[1]:
        raise RuntimeError(f"sparse.mm: mat1 and mat2 shapes cannot be multiplied "
                           f"({s.shape[0]}x{s.shape[1]} and "
                           f"{'x'.join(str(n) for n in x.shape)})")
    if x.dtype != s.dtype:
        raise RuntimeError(f"sparse.mm: expected mat1 and mat2 to have the same dtype, but got "
                           f"{D.name(s.dtype)} and {D.name(x.dtype)}")
    if type(x) is not type(s._pat.idx):
        raise RuntimeError(f"sparse.mm: expected all tensors to be on the same device, but got "
                           f"mat1 on {s.device} and mat2 on {mat2.device}")
    d = mat2.reshape(-1, 1) if vec else mat2
    out = _spmm(s._pat.bip(), s._vals, d)
    return out.reshape(-1) if vec else out


spmm = mm


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with sparse ``mat1`` (dense ``mat``)."""
    prod = mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return (mat if beta == 1 else mat * beta) + prod


def sum(input, dim=None, dtype=None):
    """Sum of a sparse tensor over ``dim`` (an int or a sequence; None: everything).

    Summing every sparse dim gives a dense tensor (a 0-d one for ``dim=None``); otherwise
    the result is sparse over the remaining sparse dims, coalesced."""
    s = _as_sparse(input, "sparse.sum")
    if dtype is not None:
        s = s.to(D.to_dtype(dtype))
    if dim is None:
        return s._vals.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd, sd = s.ndim, s.sparse_dim()
    dims = sorted({_norm_dim(d, nd) for d in dims})
    dense_axes = [d - sd + 1 for d in dims if d >= sd]
    vals = s._vals.sum(tuple(dense_axes)) if dense_axes else s._vals
    keep = [d for d in range(sd) if d not in dims]
    shape = tuple(n for d, n in enumerate(s.shape) if d not in dims)
    if not keep:  # every sparse dim reduced: dense
        return vals.sum(0)
    if len(keep) == sd:  # only dense dims reduced: same pattern
        pat = s._pat
    else:
        pat = _Pattern(s._pat.idx[keep], tuple(s._pat.sizes[d] for d in keep), False)
    return SparseCooTensor._make(pat, vals, shape).coalesce()


class SparseSoftmaxBackward(Node):
    __slots__ = ("seg", "log")

    def backward(self, g):
        (y,) = self.unpack()
        seg = self.seg
        if STATE.enabled:  # create_graph: differentiable ops
            if self.log:
                return (g - y.exp() * _seg_gather(_seg_sum(g, seg), seg),)
            return (y * (g - _seg_gather(_seg_sum(g * y, seg), seg)),)
        ga, ya = g.array, y.array
        xp = B.namespace(ga)
        if self.log:
            return (_wrap(ga - xp.exp(ya) * xp.take(_segsum_raw(ga, seg), seg.inv, axis=0)),)
        gy = ga * ya
        return (_wrap(ya * (ga - xp.take(_segsum_raw(gy, seg), seg.inv, axis=0))),)


def _softmax(input, dim, dtype, log):
    op = "sparse.log_softmax" if log else "sparse.softmax"
    s = _as_sparse(input, op)
    if dtype is not None:
        s = s.to(D.to_dtype(dtype))
    if not D.is_floating(s.dtype):
        raise RuntimeError(f"{op}: expected a floating point sparse tensor, got "
                           f"{D.name(s.dtype)}")
    dim = _norm_dim(dim, s.ndim)
    c = s.coalesce()
    sd = s.sparse_dim()
    v = c._vals
    if dim >= sd:  # a dense dim: softmax of each entry's values
        out = v.log_softmax(dim - sd + 1) if log else v.softmax(dim - sd + 1)
        return SparseCooTensor._make(c._pat, out, c.shape)
    seg = c._pat.group_except(dim)
    a = v.array
    xp = B.namespace(a)
    if seg.n == 0:
        r = a.copy()
    else:
        z = a - xp.take(_segmax_raw(a, seg), seg.inv, axis=0)
        e = xp.exp(z)
        tot = xp.take(_segsum_raw(e, seg), seg.inv, axis=0)
        r = z - xp.log(tot) if log else e / tot
    out = _wrap(r)
    if STATE.enabled and v.requires_grad:
        n = new_node(SparseSoftmaxBackward)
        n.seg, n.log = seg, log
        n.saved = (saved_output(out),)
        record(n, out, v)
    return SparseCooTensor._make(c._pat, out, c.shape)


def softmax(input, dim, *, dtype=None):
    """Softmax over ``dim`` among the specified entries only (unspecified ones count as
    -inf, i.e. they take no share): GAT's attention over each node's neighbours. Returns a
    coalesced sparse tensor with ``input``'s pattern."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):
    """``log(sparse.softmax(input, dim))`` on the specified entries, computed stably."""
    return _softmax(input, dim, dtype, True)
