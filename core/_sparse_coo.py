"""Sparse COO tensors: the adjacency matrices of GCN/GAT-style code.

A sparse tensor of ``shape = sizes + dense_sizes`` stores only its specified entries::

    indices  (sparse_dim, nnz)   int64, column k is the position of entry k
    values   (nnz, *dense_sizes) values[k] sits at indices[:, k]

Entries may repeat a position (they add up) and come in any order until ``coalesce()``
sorts them (row-major) and sums the repeats: one sort plus one segment sum
(``np.add.reduceat``; ``cupyx.scatter_add`` on the GPU), never ``np.add.at``.

Autograd goes through the values. The gradient with respect to a sparse tensor is the
dense gradient read at its specified positions, reported coalesced, as torch does:
``sparse.mm(a, x)`` sends ``dL/da`` (sparse, ``a``'s pattern) and ``dL/dx`` (dense);
values that built ``a`` get, per entry, the gradient at that entry's position. Every
backward here is written with differentiable ops when a graph is being built
(``create_graph=True``), and with plain arrays otherwise.

The pattern (indices) of a tensor is treated as immutable: sort plans derived from it are
cached on it, so a fixed adjacency matrix is sorted once however many layers use it.

    >>> import ember
    >>> a = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], [1.0, 2.0, 3.0], (2, 3))
    >>> a.coalesce().values()
    tensor([1., 5.])
    >>> ember.sparse.mm(a, ember.ones(3, 2))
    tensor([[1., 1.],
            [5., 5.]])
"""
from __future__ import annotations

import math

import numpy as np

from . import _backend as B
from . import dtypes as D
from ._convert import Convertible, parse_to_args
from .autograd.grad_mode import STATE
from .autograd.graph import Node, new_node, record

_int64 = np.dtype(np.int64)
_CUPY_ADD = frozenset(np.dtype(c) for c in "iILQefd")  # dtypes cupyx.scatter_add takes


class layout:
    """A tensor's memory layout: ``ember.strided`` (dense) or ``ember.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def __setattr__(self, k, v):
        raise AttributeError("ember.layout is immutable")

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _T():
    from ._tensor import Tensor

    return Tensor


def _wrap(arr):
    return _T()._make(arr)


# =========================================================================== grouping plans

class _Seg:
    """``n`` entries grouped by key into ``m`` segments (keys sorted ascending).

    order   sorting permutation of the entries, or None when already sorted
    starts  (m,) position of each segment's first entry in sorted order
    sid     (n,) segment of each entry in sorted order
    inv     (n,) segment of each entry in the original order
    first   (m,) original index of each segment's first entry
    """

    __slots__ = ("n", "m", "order", "starts", "sid", "inv", "first")


def _linear_keys(keys, sizes):
    """Row-major linear index of the columns of ``keys`` (r, n), or None on overflow."""
    if keys.shape[0] == 1:
        return keys[0]
    if math.prod(sizes) >= 2 ** 62:
        return None
    lin = keys[0]
    for d in range(1, keys.shape[0]):
        lin = lin * sizes[d] + keys[d]
    return lin


def _group(keys, sizes):
    """Group the columns of the int64 key matrix ``keys`` (r, n) by equal key, segments
    sorted row-major. Not a stable sort (4x faster in numpy): nothing here depends on the
    order of repeats within a segment."""
    xp = B.namespace(keys)
    seg = _Seg()
    n = seg.n = int(keys.shape[1])
    if n == 0:
        e = xp.zeros(0, _int64)
        seg.m, seg.order, seg.starts, seg.sid, seg.inv, seg.first = 0, None, e, e, e, e
        return seg
    flags = xp.empty(n, bool)
    flags[0] = True
    lin = _linear_keys(keys, sizes)
    if lin is not None:
        if n > 1 and not bool((lin[1:] >= lin[:-1]).all()):
            order = xp.argsort(lin)
            lin = lin[order]
        else:
            order = None
        xp.not_equal(lin[1:], lin[:-1], out=flags[1:])
    else:  # sizes too large for one int64 key: sort on the rows (first row primary)
        order = xp.lexsort(keys[::-1])
        ks = keys[:, order]
        xp.any(ks[:, 1:] != ks[:, :-1], axis=0, out=flags[1:])
    seg.order = order
    seg.starts = xp.flatnonzero(flags)
    seg.m = int(seg.starts.shape[0])
    seg.sid = xp.cumsum(flags) - 1
    if order is None:
        seg.inv, seg.first = seg.sid, seg.starts
    else:
        inv = xp.empty(n, _int64)
        inv[order] = seg.sid
        seg.inv, seg.first = inv, order[seg.starts]
    return seg


def _sorted_rows(a, seg):
    return a if seg.order is None else B.namespace(a).take(a, seg.order, axis=0)


def _segsum_raw(a, seg, presorted=False):
    """Per-segment sums of the rows of ``a`` (n, ...) -> (m, ...). ``presorted``: ``a`` is
    already in the segments' sorted order."""
    xp = B.namespace(a)
    if seg.m == seg.n:  # no repeats: a permutation
        return a.copy() if presorted or seg.order is None else xp.take(a, seg.order, axis=0)
    if xp is np:
        return np.add.reduceat(a if presorted else _sorted_rows(a, seg), seg.starts, axis=0)
    out_shape = (seg.m,) + a.shape[1:]
    ids = seg.sid if presorted else seg.inv
    if a.dtype in _CUPY_ADD:
        import cupyx

        out = xp.zeros(out_shape, a.dtype)
        cupyx.scatter_add(out, ids, a)
        return out
    # integer/bool values on the GPU (no atomics for them): differences of a cumulative sum
    s = a if presorted else _sorted_rows(a, seg)
    wide = s.astype(_int64) if a.dtype.kind in "biu" else s
    cs = xp.cumsum(wide, axis=0)
    ends = xp.concatenate([seg.starts[1:], xp.asarray([seg.n])]) - 1
    tot = cs[ends]
    tot[1:] -= cs[ends[:-1]]
    return (tot > 0) if a.dtype.kind == "b" else tot.astype(a.dtype)


def _segmax_raw(a, seg):
    """Per-segment maxima of the rows of float ``a`` (n, ...) -> (m, ...)."""
    xp = B.namespace(a)
    if xp is np:
        return np.maximum.reduceat(_sorted_rows(a, seg), seg.starts, axis=0)
    import cupyx

    wide = a if a.dtype in (D.float32, D.float64) else a.astype(D.float32)
    out = xp.full((seg.m,) + a.shape[1:], -xp.inf, wide.dtype)
    cupyx.scatter_max(out, seg.inv, wide)
    return out.astype(a.dtype, copy=False)


class SegmentSumBackward(Node):
    __slots__ = ("seg",)

    def backward(self, g):
        return (_seg_gather(g, self.seg),)


class CoalesceBackward(SegmentSumBackward):
    __slots__ = ()


class SegmentGatherBackward(Node):
    __slots__ = ("seg",)

    def backward(self, g):
        return (_seg_sum(g, self.seg),)


def _seg_sum(t, seg, node=SegmentSumBackward):
    """Differentiable per-segment sum of the rows of tensor ``t``."""
    out = _wrap(_segsum_raw(t.array, seg))
    if STATE.enabled and t.requires_grad:
        n = new_node(node)
        n.seg = seg
        record(n, out, t)
    return out


def _seg_gather(t, seg):
    """Differentiable ``t[seg.inv]``: each entry reads its segment's row."""
    a = t.array
    out = _wrap(B.namespace(a).take(a, seg.inv, axis=0))
    if STATE.enabled and t.requires_grad:
        n = new_node(SegmentGatherBackward)
        n.seg = seg
        record(n, out, t)
    return out


# =========================================================================== patterns

class _Pattern:
    """The indices of a sparse tensor with the plans derived from them (cached)."""

    __slots__ = ("idx", "sizes", "coalesced", "_co", "_bip", "_groups", "_t")

    def __init__(self, idx, sizes, coalesced):
        self.idx = idx
        self.sizes = sizes
        self.coalesced = coalesced
        self._co = self._bip = self._groups = self._t = None

    @property
    def nnz(self):
        return int(self.idx.shape[1])

    def coalesce_plan(self):
        """``(coalesced_pattern, seg)``; ``seg`` is None when this one is coalesced."""
        if self.coalesced:
            return self, None
        if self._co is None:
            seg = _group(self.idx, self.sizes)
            xp = B.namespace(self.idx)
            self._co = (_Pattern(xp.take(self.idx, seg.first, axis=1), self.sizes, True), seg)
        return self._co

    def bip(self):
        """The 2-D pattern as a bipartite map rows <- cols (what SpMM reads)."""
        if self._bip is None:
            t = self._t
            if t is not None and t._bip is not None:  # share the transpose's plans
                self._bip = t._bip.T
            else:
                self._bip = _Bip(self.idx[0], self.idx[1], self.sizes[0], self.sizes[1])
        return self._bip

    def t(self):
        """The transposed 2-D pattern (cached both ways, so ``a.t() @ x`` reuses ``a``'s
        sort plans)."""
        if self._t is None:
            t = _Pattern(self.idx[::-1].copy(), self.sizes[::-1], self.nnz <= 1)
            t._t = self
            self._t = t
        return self._t

    def group_except(self, dim):
        """Entries grouped by their indices on every sparse dim but ``dim`` (softmax)."""
        if self._groups is None:
            self._groups = {}
        g = self._groups.get(dim)
        if g is None:
            keep = [d for d in range(len(self.sizes)) if d != dim]
            if keep:
                g = _group(self.idx[keep], tuple(self.sizes[d] for d in keep))
            else:  # one sparse dim: a single group
                xp = B.namespace(self.idx)
                g = _group(xp.zeros((1, self.nnz), _int64), (1,))
            self._groups[dim] = g
        return g


class _Bip:
    """Entry k adds ``v[k] * x[in_ids[k]]`` to ``out[out_ids[k]]`` (an SpMM pattern)."""

    __slots__ = ("out_ids", "in_ids", "n_out", "n_in", "_seg", "_buckets", "_t")

    def __init__(self, out_ids, in_ids, n_out, n_in):
        self.out_ids, self.in_ids, self.n_out, self.n_in = out_ids, in_ids, n_out, n_in
        self._seg = self._buckets = self._t = None

    def seg(self):
        if self._seg is None:
            self._seg = _group(self.out_ids[None], (self.n_out,))
        return self._seg

    def buckets(self):
        """The output rows grouped by their number of entries ``d``: per group, the rows
        (R,), their entries (R, d) and those entries' input rows (R, d). SpMM is then one
        gather and one batched product per distinct degree (numpy's ``reduceat`` along
        the rows of a 2-D array is several times slower)."""
        if self._buckets is None:
            seg = self.seg()
            starts = seg.starts
            deg = np.diff(np.append(starts, seg.n))
            rows = self.out_ids[seg.first]
            by_deg = np.argsort(deg, kind="stable")
            ds = deg[by_deg]
            cuts = np.flatnonzero(np.concatenate(([True], ds[1:] != ds[:-1])))
            out = []
            for a, b in zip(cuts.tolist(), np.append(cuts[1:], ds.shape[0]).tolist()):
                segs = by_deg[a:b]
                pos = starts[segs][:, None] + np.arange(ds[a])
                ent = pos if seg.order is None else seg.order[pos]
                out.append((rows[segs], ent, self.in_ids[ent]))
            self._buckets = out
        return self._buckets

    @property
    def T(self):
        if self._t is None:
            self._t = _Bip(self.in_ids, self.out_ids, self.n_in, self.n_out)
            self._t._t = self
        return self._t


# ----------------------------------------------------------------- dense <-> values at pattern

class SparseToDenseBackward(Node):
    __slots__ = ("pat", "shape")

    def backward(self, g):
        return (_gather(self.pat, g),)


class ToSparseBackward(Node):
    __slots__ = ("pat", "shape")

    def backward(self, g):
        return (_scatter(self.pat, g, self.shape),)


def _scatter_raw(pat, v, shape):
    xp = B.namespace(v)
    out = xp.zeros(shape, v.dtype)
    if pat.nnz:
        cpat, seg = pat.coalesce_plan()
        out[tuple(cpat.idx)] = v if seg is None else _segsum_raw(v, seg)
    return out


def _scatter(pat, v, shape):
    """Differentiable dense tensor of ``shape`` holding values ``v`` at ``pat`` (repeats
    summed): ``to_dense``."""
    out = _wrap(_scatter_raw(pat, v.array, shape))
    if STATE.enabled and v.requires_grad:
        n = new_node(SparseToDenseBackward)
        n.pat, n.shape = pat, shape
        record(n, out, v)
    return out


def _gather(pat, dense):
    """Differentiable values of ``dense`` at the entries of ``pat``: (nnz, *dense_sizes)."""
    out = _wrap(dense.array[tuple(pat.idx)])
    if STATE.enabled and dense.requires_grad:
        n = new_node(ToSparseBackward)
        n.pat, n.shape = pat, dense.array.shape
        record(n, out, dense)
    return out


class SparseCooTensorBackward(Node):
    """The edge from a sparse tensor to the values tensor it was built from (identity)."""

    __slots__ = ()

    def backward(self, g):
        return (g,)


def _alias(values):
    out = _wrap(values.array)
    out._version = values._vc()
    n = new_node(SparseCooTensorBackward)
    record(n, out, values)
    return out


# =========================================================================== the tensor

class SparseCooTensor(Convertible):
    """A sparse tensor in COO layout (see the module docstring). Build one with
    ``ember.sparse_coo_tensor`` or ``dense.to_sparse()``.

    It is not an ``ember.Tensor``: dense ops do not take it. What it offers is torch's COO
    surface used by graph networks: ``indices()/values()``, ``coalesce()``, ``to_dense()``,
    ``t()``, scalar ``*``/``/``, ``+``, ``@``, ``ember.sparse.mm/sum/softmax``.
    """

    __slots__ = ("_pat", "_vals", "_shape", "__weakref__")
    is_sparse = True
    layout = sparse_coo

    @staticmethod
    def _make(pat, vals, shape):
        s = object.__new__(SparseCooTensor)
        s._pat, s._vals, s._shape = pat, vals, tuple(shape)
        return s

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        if dim is None:
            return self._shape
        return self._shape[_norm_dim(dim, len(self._shape))]

    @property
    def dtype(self):
        return self._vals.array.dtype

    @property
    def device(self):
        return B.device_of(self._vals.array)

    @property
    def is_cuda(self):
        return B.is_cuda_array(self._vals.array)

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def sparse_dim(self):
        return len(self._pat.sizes)

    def dense_dim(self):
        return len(self._shape) - len(self._pat.sizes)

    def numel(self):
        return math.prod(self._shape)

    def __len__(self):
        return self._shape[0]

    def _nnz(self):
        return self._pat.nnz

    nnz = _nnz

    def is_coalesced(self):
        return self._pat.coalesced

    def is_floating_point(self):
        return D.is_floating(self.dtype)

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self):
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def is_leaf(self):
        return self._vals.grad_fn is None

    @property
    def grad(self):
        """The accumulated gradient of a leaf: sparse, coalesced, this tensor's positions."""
        g = self._vals.grad
        if g is None:
            return None
        cpat, seg = self._pat.coalesce_plan()
        if seg is not None:  # every repeat of a position got that position's gradient
            a = g.array
            g = _wrap(B.namespace(a).take(a, seg.first, axis=0))
        return SparseCooTensor._make(cpat, g, self._shape)

    @grad.setter
    def grad(self, value):
        if value is None:
            self._vals.grad = None
            return
        if not isinstance(value, SparseCooTensor) or value.shape != self._shape:
            raise TypeError(f"grad of a sparse tensor of shape {list(self._shape)} must be None "
                            f"or a sparse tensor of the same shape, got {_describe(value)}")
        self._vals.grad = _wrap(value.to_dense().array[tuple(self._pat.idx)])

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf:
            if requires_grad:
                return self
            raise RuntimeError("you can only change requires_grad flags of leaf variables; use "
                               ".detach() to get a sparse tensor that does not require grad")
        self._vals.requires_grad_(requires_grad)
        return self

    def detach(self):
        return SparseCooTensor._make(self._pat, self._vals.detach(), self._shape)

    # ------------------------------------------------------------------ parts
    def _indices(self):
        """The indices (sparse_dim, nnz) as stored, coalesced or not (shares memory)."""
        return _wrap(self._pat.idx)

    def _values(self):
        """The values (nnz, *dense_sizes) as stored, coalesced or not (differentiable)."""
        return self._vals

    def indices(self):
        if not self._pat.coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _wrap(self._pat.idx)

    def values(self):
        if not self._pat.coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    def coalesce(self):
        """Entries sorted row-major with repeated positions summed (``self`` if coalesced)."""
        cpat, seg = self._pat.coalesce_plan()
        if seg is None:
            return self
        return SparseCooTensor._make(cpat, _seg_sum(self._vals, seg, CoalesceBackward),
                                     self._shape)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor (repeats summed); differentiable back to the values."""
        s = self if dtype is None else self.to(dtype)
        return _scatter(s._pat, s._vals, s._shape)

    def to_sparse(self, sparse_dim=None, *, layout=None):
        if (sparse_dim is not None and sparse_dim != self.sparse_dim()) or \
                layout not in (None, sparse_coo):
            raise RuntimeError(f"to_sparse: converting a sparse COO tensor to "
                               f"{'sparse_dim=' + str(sparse_dim) if layout is None else layout} "
                               "is not supported (only the COO layout with its own sparse_dim)")
        return self

    # ------------------------------------------------------------------ conversion
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
        device, dtype = parse_to_args(args, device, dtype)
        vals = self._vals.to(device=device, dtype=dtype, copy=copy)
        pat = self._pat
        if vals.device != B.device_of(pat.idx):
            pat = _Pattern(B.to_device(pat.idx, vals.device), pat.sizes, pat.coalesced)
        if vals is self._vals and pat is self._pat:
            return self
        return SparseCooTensor._make(pat, vals, self._shape)

    def clone(self):
        pat = _Pattern(self._pat.idx.copy(), self._pat.sizes, self._pat.coalesced)
        return SparseCooTensor._make(pat, self._vals.clone(), self._shape)

    # ------------------------------------------------------------------ shape
    def transpose(self, dim0, dim1):
        nd, sd = len(self._shape), len(self._pat.sizes)
        d0, d1 = _norm_dim(dim0, nd), _norm_dim(dim1, nd)
        if d0 == d1:
            return self
        shape = list(self._shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        if d0 < sd and d1 < sd:
            if sd == 2:
                return SparseCooTensor._make(self._pat.t(), self._vals, shape)
            perm = list(range(sd))
            perm[d0], perm[d1] = d1, d0
            sizes = tuple(self._pat.sizes[p] for p in perm)
            pat = _Pattern(self._pat.idx[perm], sizes, self._pat.nnz <= 1)
            return SparseCooTensor._make(pat, self._vals, shape)
        if d0 >= sd and d1 >= sd:
            vals = self._vals.transpose(d0 - sd + 1, d1 - sd + 1)
            return SparseCooTensor._make(self._pat, vals, shape)
        raise RuntimeError(f"transpose: cannot swap sparse dim {min(d0, d1)} with dense dim "
                           f"{max(d0, d1)} of a sparse tensor with {sd} sparse dims")

    def t(self):
        if len(self._shape) > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{len(self._shape)}D")
        return self if len(self._shape) < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.t()

    # ------------------------------------------------------------------ arithmetic
    def _scaled(self, op, other):
        Tensor = _T()
        if isinstance(other, (int, float, np.number)) and not isinstance(other, bool) or \
                isinstance(other, Tensor) and other.array.ndim == 0:
            vals = self._vals * other if op == "mul" else self._vals / other
            return SparseCooTensor._make(self._pat, vals, self._shape)
        return NotImplemented

    def __mul__(self, other):
        return self._scaled("mul", other)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other):
        return self._scaled("div", other)

    div = __truediv__

    def __neg__(self):
        return SparseCooTensor._make(self._pat, -self._vals, self._shape)

    def __add__(self, other):
        if isinstance(other, SparseCooTensor):
            return _add_sparse(self, other)
        if isinstance(other, _T()):
            raise RuntimeError("add(sparse, dense) is not supported (the result would be dense): "
                               "use dense + sparse")
        return NotImplemented

    add = __add__

    def __radd__(self, other):
        """``dense + sparse``: a dense tensor (differentiable in both)."""
        if isinstance(other, _T()):
            if tuple(other.shape) != self._shape:
                raise RuntimeError(f"add: a dense tensor of shape {list(other.shape)} and a "
                                   f"sparse one of shape {list(self._shape)} must have the same "
                                   "shape")
            return other + self.to_dense()
        return NotImplemented

    def __sub__(self, other):
        return self + (-other)

    # the ops themselves live in ember.sparse (core/sparse.py)
    def __matmul__(self, other):
        from .sparse import mm

        return mm(self, other)

    def __rmatmul__(self, other):
        from .sparse import mm

        return mm(other, self)

    matmul = mm = __matmul__

    def sum(self, dim=None, keepdim=False, dtype=None):
        from . import sparse

        if keepdim:
            raise RuntimeError("sum: keepdim=True is not supported for sparse tensors")
        return sparse.sum(self, dim, dtype=dtype)

    def softmax(self, dim, dtype=None):
        from .sparse import softmax

        return softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None):
        from .sparse import log_softmax

        return log_softmax(self, dim, dtype=dtype)

    # ------------------------------------------------------------------ repr
    def __repr__(self):
        from ._format import format_array

        def part(arr, indent):
            if type(arr) is not np.ndarray:
                arr = B.to_device(arr, "cpu")
            if arr.size == 0:
                return f"tensor([], size={tuple(arr.shape)})"
            return "tensor(" + format_array(arr, indent + len("tensor(")) + ")"

        pad = " " * len("tensor(")
        out = ["tensor(indices=" + part(self._pat.idx, len("tensor(indices=")),
               pad + "values=" + part(self._vals.array, len(pad + "values="))]
        tail = []
        dev = self.device
        if dev.type != "cpu":
            tail.append(f"device='{dev}'")
        tail += [f"size={self._shape}", f"nnz={self._pat.nnz}"]
        if self.dtype not in (D.get_default_dtype(), D.int64, D.bool):
            tail.append(f"dtype=ember.{D.name(self.dtype)}")
        tail.append("layout=ember.sparse_coo")
        if self.grad_fn is not None:
            tail.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            tail.append("requires_grad=True")
        # like torch: the first suffix on a new line, the others appended while the line
        # stays within linewidth
        from ._format import _print

        text = ",\n".join(out)
        line = 0
        for i, sfx in enumerate(tail):
            if i == 0 or line + len(sfx) + 2 > _print["linewidth"]:
                text += ",\n" + pad + sfx
                line = len(pad) + len(sfx)
            else:
                text += ", " + sfx
                line += len(sfx) + 2
        return text + ")"

    __hash__ = object.__hash__


def _describe(x):
    if isinstance(x, SparseCooTensor):
        return f"a sparse tensor of shape {list(x.shape)}"
    if hasattr(x, "shape"):
        return f"a {type(x).__name__} of shape {list(x.shape)}"
    return f"a {type(x).__name__}"


def _norm_dim(dim, ndim):
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if type(dim) is not int:
        dim = int(dim)
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def _add_sparse(a, b):
    if a.shape != b.shape or a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"add: sparse tensors of shapes {list(a.shape)} and {list(b.shape)} "
                           f"(sparse_dim {a.sparse_dim()} and {b.sparse_dim()}) cannot be added")
    if a.device != b.device:
        raise RuntimeError(f"add: expected both sparse tensors on the same device, got "
                           f"{a.device} and {b.device}")
    from .ops.shape import cat

    dt = D.promote_types(a.dtype, b.dtype)
    va = a._vals if a.dtype == dt else a._vals.to(dt)
    vb = b._vals if b.dtype == dt else b._vals.to(dt)
    xp = B.namespace(a._pat.idx)
    pat = _Pattern(xp.concatenate([a._pat.idx, b._pat.idx], axis=1), a._pat.sizes, False)
    out = SparseCooTensor._make(pat, cat([va, vb], 0), a.shape)
    return out.coalesce() if a.is_coalesced() and b.is_coalesced() else out


# =========================================================================== construction

def _index_array(indices, device):
    Tensor = _T()
    if isinstance(indices, SparseCooTensor):
        raise TypeError("sparse_coo_tensor: indices must be a dense integer tensor, got a "
                        "sparse tensor")
    arr = indices.array if isinstance(indices, Tensor) else indices
    if not (isinstance(arr, np.ndarray) or B.is_cuda_array(arr)):
        arr = np.asarray(arr)
        if arr.size == 0 and arr.dtype.kind == "f":  # [] / [[], []]
            arr = arr.astype(_int64)
    if device is not None:
        arr = B.to_device(arr, B.device(device))
    if arr.dtype.kind not in "iu":
        raise TypeError(f"sparse_coo_tensor: indices must be an integer tensor, got dtype "
                        f"{D.name(arr.dtype)}")
    if arr.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz (2-D), but "
                           f"got shape {list(arr.shape)}")
    return arr if arr.dtype == _int64 else arr.astype(_int64)


def _values_tensor(values, dtype, device):
    Tensor = _T()
    dt = D.to_dtype(dtype)
    if isinstance(values, Tensor):
        v = values.to(device=device, dtype=dt)
    else:
        from .factories import tensor

        v = tensor(values, dtype=dt, device=device)
    if v.array.ndim == 0:
        raise RuntimeError("sparse_coo_tensor: values must have a leading nnz dimension, got a "
                           "0-d tensor")
    return v


def _check_bounds(idx, sizes):
    if idx.shape[1] == 0:
        return
    lo = idx.min(axis=1)
    hi = idx.max(axis=1)
    lo, hi = (B.to_device(a, "cpu").tolist() for a in (lo, hi))
    for d, (a, b, n) in enumerate(zip(lo, hi, sizes)):
        if a < 0:
            raise RuntimeError(f"sparse_coo_tensor: found negative index {a} for dim {d}")
        if b >= n:
            raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim "
                               f"{d}, size is {n} but found index {b}")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]``.

    Args:
        indices: integer (sparse_dim, nnz) tensor/array/list.
        values: (nnz, *dense_sizes) tensor/array/list. When it requires grad, the sparse
            tensor is not a leaf and gradients flow back into it.
        size: the full shape ``sparse_sizes + dense_sizes``; inferred from the largest index
            (plus one) per sparse dim when omitted.
        check_invariants: check that indices are within ``size`` (default: on; pass False to
            skip the O(nnz) pass) and, with ``is_coalesced=True``, that they are sorted and
            unique.
        is_coalesced: promise that the indices are sorted row-major without repeats.
    """
    idx = _index_array(indices, device)
    v = _values_tensor(values, dtype, device)
    if B.device_of(idx) != v.device:
        raise RuntimeError(f"sparse_coo_tensor: indices are on {B.device_of(idx)} but values on "
                           f"{v.device}; pass device= or move one of them")
    sd, nnz = idx.shape
    if v.array.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have the same nnz, but "
                           f"got nnz from indices: {nnz}, nnz from values: {v.array.shape[0]}")
    dense_sizes = tuple(v.array.shape[1:])
    if size is None:
        hi = idx.max(axis=1) + 1 if nnz else np.zeros(sd, _int64)
        sizes = tuple(int(s) for s in B.to_device(hi, "cpu").tolist()) if nnz else (0,) * sd
        shape = sizes + dense_sizes
        check = check_invariants is True
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sd + len(dense_sizes):
            raise RuntimeError(f"sparse_coo_tensor: size {list(shape)} has {len(shape)} dims, "
                               f"but indices give {sd} sparse dims and values "
                               f"{len(dense_sizes)} dense dims (expected {sd + len(dense_sizes)})")
        if shape[sd:] != dense_sizes:
            raise RuntimeError(f"sparse_coo_tensor: values has incorrect size, expected "
                               f"{[nnz, *shape[sd:]]}, got {list(v.array.shape)}")
        if any(s < 0 for s in shape):
            raise RuntimeError(f"sparse_coo_tensor: size must be non-negative, got {list(shape)}")
        sizes = shape[:sd]
        check = check_invariants is not False
    if check:
        _check_bounds(idx, sizes)
    coalesced = bool(is_coalesced) or nnz == 0
    pat = _Pattern(idx, sizes, coalesced)
    if is_coalesced and check_invariants:
        seg = _group(idx, sizes)
        if seg.order is not None or seg.m != nnz:
            raise RuntimeError("sparse_coo_tensor: is_coalesced=True but the indices are not "
                               "sorted row-major without repeats")
    if requires_grad:
        if not (D.is_floating(v.dtype) or v.dtype.kind == "c"):
            raise RuntimeError(f"only tensors of floating point or complex dtype can require "
                               f"gradients, got {D.name(v.dtype)}")
        vals = v.detach().requires_grad_(True)
    elif v.requires_grad and STATE.enabled:
        vals = _alias(v)
    else:
        vals = v.detach()
    return SparseCooTensor._make(pat, vals, shape)


def to_sparse(t, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The COO form of dense ``t``: its non-zero entries (or, with ``sparse_dim < t.ndim``,
    its non-zero slices over the first ``sparse_dim`` dims), coalesced. Differentiable:
    the gradient of ``t`` is the sparse gradient made dense."""
    if isinstance(t, SparseCooTensor):
        return t.to_sparse(sparse_dim, layout=layout)
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise RuntimeError(f"to_sparse: only the COO layout is supported, got layout={layout}"
                           + ("" if blocksize is None else f", blocksize={blocksize}"))
    a = t.array
    nd = a.ndim
    if dense_dim is not None:
        if sparse_dim is not None and sparse_dim != nd - dense_dim:
            raise RuntimeError(f"to_sparse: sparse_dim={sparse_dim} and dense_dim={dense_dim} "
                               f"do not add up to the tensor's {nd} dims")
        sparse_dim = nd - dense_dim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= nd:
        raise RuntimeError(f"to_sparse: sparse_dim must be in 1..{nd} for a {nd}-D tensor, "
                           f"got {sd}")
    xp = B.namespace(a)
    nz = a != 0
    if sd < nd:
        nz = nz.any(axis=tuple(range(sd, nd)))
    idx = xp.stack(xp.nonzero(nz)).astype(_int64, copy=False)  # row-major: coalesced
    pat = _Pattern(idx, tuple(a.shape[:sd]), True)
    return SparseCooTensor._make(pat, _gather(pat, t), a.shape)


# =========================================================================== ops

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "to_sparse", "layout", "strided", "sparse_coo"]
