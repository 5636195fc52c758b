"""Construction and search ops torch has at top level: ``cartesian_prod``, ``combinations``,
``block_diag``, ``tril_indices``/``triu_indices``, ``rot90``, ``diagflat``, ``vander``,
``searchsorted``/``bucketize``, ``aminmax``, ``is_nonzero`` and the function form of
``detach``.

The differentiable ones are compositions of existing ember ops (index_select, pad, cat, flip,
transpose, pow), so their gradients and double gradients come with those ops. Index and
search results are int64 (int32 with ``out_int32=True``), never differentiable.

    >>> ember.combinations(ember.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
"""
from __future__ import annotations

import itertools
from collections import namedtuple

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from . import _util as U
from ._util import norm_dim, to_tensor, wrap

aminmax_result = namedtuple("aminmax", ["min", "max"])


def _ops():
    from . import index, linalg, reduce, shape

    return shape, index, reduce, linalg


# --------------------------------------------------------------------------- products

def cartesian_prod(*tensors):
    """All tuples of one element from each 1-d tensor, as rows (N1 * N2 * ..., k); one
    tensor is returned as is."""
    shape, *_ = _ops()
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("cartesian_prod expects at least one tensor")
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if len(tensors) == 1:
        return tensors[0]
    grids = shape.meshgrid(*tensors, indexing="ij")
    return shape.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """Length-``r`` combinations of the elements of a 1-d tensor, as rows (like
    ``itertools.combinations``; ``with_replacement`` like ``combinations_with_replacement``)."""
    _, index, _, _ = _ops()
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return wrap(B.namespace(input.array).zeros(0, input.array.dtype))
    n = input.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    flat = index.index_select(input, 0, wrap(B.to_device(idx.reshape(-1), input.device)))
    return flat.reshape(idx.shape[0], r)


def block_diag(*tensors):
    """The tensors (0-d, 1-d as a row, or 2-d) placed along the diagonal of a zero matrix."""
    shape, *_ = _ops()
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        from ..factories import empty

        return empty(1, 0)
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = D.promote_types(dt, m.dtype)
    cols = sum(m.shape[1] for m in mats)
    rows, before = [], 0
    for m in mats:
        c = m.shape[1]
        rows.append(shape.pad(m._cast(dt), (before, cols - before - c)))
        before += c
    return shape.cat(rows, 0)


def _tri_indices(row, col, offset, dtype, device, lower):
    from ..factories import _xp

    if row < 0 or col < 0:
        raise RuntimeError(f"row and col must be non-negative, got row={row}, col={col}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    xp, _ = _xp(device)
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    return wrap(xp.asarray(np.stack([r, c]).astype(dt).reshape(2, -1)))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """(2, N) row/column indices of the lower triangle (on and below diagonal ``offset``) of a
    row x col matrix, in row-major order."""
    return _tri_indices(row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """(2, N) indices of the upper triangle (on and above diagonal ``offset``)."""
    return _tri_indices(row, col, offset, dtype, device, False)


# --------------------------------------------------------------------------- shape ops

def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane ``dims``, from the first dim towards
    the second."""
    shape, *_ = _ops()
    dims = tuple(dims)
    nd = input.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = norm_dim(dims[0], nd), norm_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return shape.flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return shape.flip(input, (d0, d1))
    if k == 3:
        return shape.flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


def diagflat(input, offset=0):
    """A 2-d matrix with the flattened input on diagonal ``offset``."""
    shape, *_ = _ops()
    return shape.diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns x^(N-1), ..., x^0 (x^0 first when ``increasing``)."""
    from ..factories import arange

    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype.kind in "fc" or x.dtype == D.bfloat16 else D.int64
    xx = x._cast(dt)
    if n == 0:
        return wrap(B.namespace(x.array).zeros((x.shape[0], 0), dt))
    pw = arange(n, device=x.device)
    if not increasing:
        pw = pw.flip(0)
    if dt.kind == "i":
        return xx.unsqueeze(1).pow(pw)
    # x ** k as a running product (first column exactly ones), like torch's cumprod
    from ..factories import ones_like

    cols = [ones_like(xx)]
    for _ in range(1, n):
        cols.append(cols[-1] * xx)
    from .shape import stack

    out = stack(cols, 1)
    return out if increasing else out.flip(1)


# --------------------------------------------------------------------------- searching

def _search_rows(seq, vals, right):
    """Binary search of each row of ``vals`` (..., M) in the sorted rows of ``seq`` (..., N)
    (same leading dims), vectorised over rows: ceil(log2(N + 1)) rounds of gather."""
    xp = B.namespace(seq)
    n = seq.shape[-1]
    lo = xp.zeros(vals.shape, np.int64)
    hi = xp.full(vals.shape, n, np.int64)
    for _ in range(max(1, int(n).bit_length())):
        active = lo < hi
        mid = (lo + hi) // 2
        v = xp.take_along_axis(seq, xp.minimum(mid, max(n - 1, 0)), axis=-1) if n else vals
        # torch's comparisons: a nan value goes after everything, a nan boundary counts as
        # smaller than every value
        go_right = ~(v > vals) if right else ~(v >= vals)
        lo = xp.where(active & go_right, mid + 1, lo)
        hi = xp.where(active & ~go_right, mid, hi)
    return lo


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices at which to insert ``input`` into the sorted innermost dim of
    ``sorted_sequence`` to keep it sorted (the first such index, or the last with
    ``right=True`` / ``side="right"``); ``sorter`` sorts an unsorted sequence."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence
    scalar = not isinstance(input, U.Tensor)
    vals = to_tensor(input, seq)
    s, v = seq.array, vals.array
    xp = B.namespace(s)
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError("searchsorted(): boundary and sorter must have the same size")
        s = xp.take_along_axis(s, sorter.array.astype(np.int64), axis=-1)
    if s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]):
        raise RuntimeError(
            f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(s.shape)} and input value tensor {list(v.shape)}")
    dt = D.result_type(s, v) if v.dtype != s.dtype else s.dtype
    s, v = s.astype(dt, copy=False), v.astype(dt, copy=False)
    if s.ndim == 1 and not (s.dtype.kind == "f" and bool(xp.isnan(s).any())):
        r = xp.searchsorted(s, v, side="right" if right else "left")
    elif s.ndim == 1:  # nan boundaries: torch's comparisons (not numpy's nan-last order)
        r = _search_rows(s.reshape(1, -1), v.reshape(1, -1), right).reshape(v.shape)
    else:
        r = _search_rows(s, v, right)
    out = wrap(xp.asarray(r).astype(np.int32 if out_int32 else np.int64))
    return out.reshape(()) if scalar else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element given sorted 1-d ``boundaries``: i with
    boundaries[i-1] < x <= boundaries[i] (``right=False``) or boundaries[i-1] <= x <
    boundaries[i] (``right=True``)."""
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# --------------------------------------------------------------------------- misc

def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (all elements when None), both differentiable."""
    _, _, reduce, _ = _ops()
    if input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        lo, hi = reduce.amin(input), reduce.amax(input)
        if keepdim:
            lo = lo.reshape((1,) * input.dim())
            hi = hi.reshape((1,) * input.dim())
        return aminmax_result(lo, hi)
    return aminmax_result(reduce.amin(input, dim, keepdim), reduce.amax(input, dim, keepdim))


def is_nonzero(input):
    """True when the one-element tensor is not zero (an error for other sizes)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.array.reshape(-1)[0])


def detach(input):
    """``input.detach()``: the same data, cut from the graph."""
    return input.detach()


class ExtraOps:
    """Tensor methods of this family (mixed into Tensor)."""

    __slots__ = ()

    def rot90(self, k=1, dims=(0, 1)):
        return rot90(self, k, dims)

    def diagflat(self, offset=0):
        return diagflat(self, offset)

    def aminmax(self, *, dim=None, keepdim=False):
        return aminmax(self, dim=dim, keepdim=keepdim)

    def is_nonzero(self):
        return is_nonzero(self)


__all__ = ["cartesian_prod", "combinations", "block_diag", "tril_indices", "triu_indices",
           "rot90", "diagflat", "vander", "searchsorted", "bucketize", "aminmax", "is_nonzero",
           "detach"]
