"""Lookups into tables: ``one_hot``, ``embedding`` and ``embedding_bag``, with dense or
row-sparse (``ember.sparse.RowSparseGrad``) gradients for the table.

Bags are contiguous runs of the flat id list. A bag reduction groups the bags by length,
gathers their rows from the table once into a ``(bags, length, dim)`` layout per group and
reduces each group with one array call (the same code on numpy and cupy, no loop over bags);
gradients go back to the table through the core scatter-add ``_add_at`` (never
``np.add.at``) or, with ``sparse=True``, as the looked-up rows (a ``RowSparseGrad``).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> w = ember.randn(10, 4, requires_grad=True)
    >>> ids, offsets = ember.tensor([1, 2, 4, 5, 4]), ember.tensor([0, 2])
    >>> F.embedding_bag(ids, w, offsets, mode="sum", sparse=True).sum().backward()
    >>> w.grad.is_sparse, w.grad.to_dense().shape
    (True, (10, 4))
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, leaf_edge, new_node, record
from ...ops._util import wrap
from ...ops.index import _add_at
from ...sparse import RowSparseGrad

__all__ = ["one_hot", "embedding", "embedding_bag"]

_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))
_int64 = np.dtype(np.int64)


# ------------------------------------------------------------------------------ one_hot

def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each class index.
    ``num_classes=-1`` takes ``tensor.max() + 1``."""
    d = tensor.array
    if d.dtype != _int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = B.namespace(d)
    if num_classes == -1:
        if d.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(d.max()) + 1
    if d.size:
        if int(d.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(d.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return wrap((d[..., None] == xp.arange(max(num_classes, 0))).astype(_int64))


# ------------------------------------------------------------------------------ shared pieces

def _ids(t, name, op):
    d = t.array
    if d.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the "
                           f"following scalar types: Long, Int; but got {D.name(d.dtype)} "
                           f"instead (while checking arguments for {op})")
    return d


def _on(arr, like):
    """``arr`` on the backend of ``like`` (ids given on the CPU for a CUDA table)."""
    if type(arr) is type(like):
        return arr
    return B.namespace(like).asarray(arr) if B.is_cuda_array(like) else B.to_device(arr, "cpu")


def _norm_padding(padding_idx, num, exc=AssertionError, msg=None):
    if padding_idx is None:
        return None
    p = int(padding_idx)
    if not -num <= p < num:
        raise exc(msg or "Padding_idx must be within num_embeddings")
    return p + num if p < 0 else p


def _renorm_(weight, flat, max_norm, norm_type):
    """In place, without autograd: rows of ``weight`` looked up in ``flat`` whose
    ``norm_type``-norm exceeds ``max_norm`` are scaled to ``max_norm / (norm + 1e-7)``."""
    w = weight.array
    xp = B.namespace(w)
    uniq = xp.unique(flat)
    if uniq.size == 0:
        return
    rows = w[uniq]
    a = xp.abs(rows)
    p = float(norm_type)
    if p == 2:
        norms = xp.sqrt((rows * rows).sum(1))
    elif p == 1:
        norms = a.sum(1)
    elif p == float("inf"):
        norms = a.max(1)
    elif p == 0:
        norms = (rows != 0).sum(1).astype(w.dtype)
    else:
        norms = (a ** p).sum(1) ** (1.0 / p)
    sel = norms > max_norm
    if not bool(sel.any()):
        return
    # the scale is computed in double per row, then applied in the table's dtype (PyTorch)
    scale = (max_norm / (norms[sel].astype(np.float64) + 1e-7)).astype(w.dtype)
    w[uniq[sel]] = rows[sel] * scale[:, None]
    weight._bump()


def _freq_scale(ids, num, dtype):
    """1 / (count of each id in ``ids``), per position (``scale_grad_by_freq``)."""
    xp = B.namespace(ids)
    counts = xp.bincount(ids, minlength=num)
    return (1 / counts[ids]).astype(dtype)


def _repeat(xp, a, counts):
    """``a`` with row ``i`` repeated ``counts[i]`` times (cupy's repeat wants host counts)."""
    if xp is np:
        return np.repeat(a, counts, axis=0)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if ends.shape[0] else 0
    return a.take(xp.searchsorted(ends, xp.arange(total), side="right"), axis=0)


# ------------------------------------------------------------------------------ embedding

class EmbeddingBackward(Node):
    """Table gradient: the output rows added into a zero table at their ids (padding ids
    skipped, optionally scaled by 1/frequency), or those rows as a RowSparseGrad."""

    __slots__ = ("ids", "keep", "scale", "shape", "sparse")

    def backward(self, g):
        self.unpack()
        shape, ids, keep, scale = self.shape, self.ids, self.keep, self.scale
        if not STATE.enabled:
            rows = g.array.reshape(-1, shape[1])
            if keep is not None:
                rows = rows[keep]
            if scale is not None:
                rows = rows * scale[:, None]
            if self.sparse and leaf_edge(self.next[0]):
                return (RowSparseGrad(ids, rows if rows.flags.c_contiguous else
                                      rows.copy(), shape),)
            xp = B.namespace(rows)
            out = xp.zeros(shape, rows.dtype)
            _add_at(out, 0, ids, rows)
            return (wrap(out),)
        rows = g.reshape(-1, shape[1])
        if keep is not None:
            rows = rows.index_select(0, wrap(B.namespace(keep).flatnonzero(keep)))
        if scale is not None:
            rows = rows * wrap(scale[:, None])
        from ...factories import zeros

        return (zeros(shape, dtype=g.dtype, device=g.device).index_add(0, wrap(ids), rows),)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) at the ids in ``input`` (any shape, int64
    or int32): shape ``input.shape + (dim,)``.

    ``padding_idx``: that row gets no gradient. ``max_norm``: the looked-up rows whose
    ``norm_type``-norm exceeds it are rescaled IN PLACE in ``weight`` first (no autograd).
    ``scale_grad_by_freq``: each id's gradient is divided by its count in ``input``.
    ``sparse``: the table's gradient is a ``RowSparseGrad`` (when the table is a leaf and
    no graph of the backward is built; otherwise dense). Unlike PyTorch, ``sparse`` and
    ``scale_grad_by_freq`` may be combined."""
    idx = _ids(input, "indices", "embedding")
    w = weight.array
    if w.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = w.shape[0]
    pad = _norm_padding(padding_idx, num)
    flat = _on(idx.reshape(-1), w)
    if flat.dtype != _int64:
        flat = flat.astype(_int64)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type)
        w = weight.array
    out = wrap(w.take(flat, axis=0).reshape(idx.shape + (w.shape[1],)))
    if STATE.enabled and weight.requires_grad:
        n = new_node(EmbeddingBackward)
        n.shape, n.sparse, n.keep, n.scale = w.shape, bool(sparse), None, None
        ids = flat
        if pad is not None:
            keep = flat != pad
            if not bool(keep.all()):
                n.keep = keep
                ids = flat[keep]
        if scale_grad_by_freq:
            n.scale = _freq_scale(ids, num, w.dtype)
        n.ids = ids
        n.saved = ()
        record(n, out, weight)
    return out


# ------------------------------------------------------------------------------ embedding_bag

class EmbeddingBagBackward(Node):
    """Gradients of a bag reduction. sum/mean: kept position ``k`` (of bag ``b``) sends
    ``g[b] * scale[k]`` to table row ``ids[k]`` (scale: 1/bag size for mean, the
    per-sample weight for sum, 1/frequency if asked); the per-sample weights get
    ``<weight[ids[k]], g[b]>``. The kept ids are in bag order, so the rows ``g[b]`` are
    ``repeat(g, lens)``. max: ``g[b, d]`` goes to ``weight[argmax_id[b, d], d]``."""

    __slots__ = ("mode", "shape", "ids", "lens", "pos", "n_input", "inv_len", "freq",
                 "sparse", "nonempty", "max_ids")

    def backward(self, g):
        weight, psw = self.unpack()
        nx = self.next
        if self.mode == "max":
            return (self._max_grad(g), None)
        xp = B.namespace(self.ids)
        pos = self.pos if not isinstance(self.pos, int) else xp.arange(self.pos, dtype=_int64)
        gw = gp = None
        if not STATE.enabled:
            gd = g.array
            if self.inv_len is not None:
                gd = gd * self.inv_len[:, None]
            rows = _repeat(xp, gd, self.lens)               # (kept, dim)
            if nx[1] is not None:
                wr = weight.array.take(self.ids, axis=0)
                gp = xp.zeros(self.n_input, gd.dtype)
                gp[pos] = xp.einsum("nd,nd->n", wr, rows)
                gp = wrap(gp)
            if nx[0] is not None:
                scale = None if psw is None else psw.array[pos]
                if self.freq is not None:
                    scale = self.freq if scale is None else scale * self.freq
                if scale is not None:
                    rows *= scale[:, None]
                if self.sparse and leaf_edge(nx[0]):
                    gw = RowSparseGrad(self.ids, rows, self.shape)
                else:
                    out = xp.zeros(self.shape, rows.dtype)
                    _add_at(out, 0, self.ids, rows)
                    gw = wrap(out)
            return gw, gp
        from ...factories import zeros

        if self.inv_len is not None:
            g = g * wrap(self.inv_len[:, None])
        bag = _repeat(xp, xp.arange(self.lens.shape[0], dtype=_int64), self.lens)
        rows = g.index_select(0, wrap(bag))
        pos = wrap(pos)
        if nx[1] is not None:
            wr = weight.index_select(0, wrap(self.ids))
            gp = zeros(self.n_input, dtype=g.dtype, device=g.device).index_add(
                0, pos, (wr * rows).sum(-1))
        if nx[0] is not None:
            if psw is not None:
                rows = rows * psw.index_select(0, pos).unsqueeze(-1)
            if self.freq is not None:
                rows = rows * wrap(self.freq[:, None])
            gw = zeros(self.shape, dtype=g.dtype, device=g.device).index_add(
                0, wrap(self.ids), rows)
        return gw, gp

    def _max_grad(self, g):
        num, dim = self.shape
        ne, mids = self.nonempty, self.max_ids
        xp = B.namespace(mids)
        flat = (mids * dim + xp.arange(dim)).reshape(-1)
        if not STATE.enabled:
            vals = g.array.take(ne, axis=0).reshape(-1)
            out = xp.zeros(num * dim, g.array.dtype)
            _add_at(out, 0, flat, vals)
            return wrap(out.reshape(num, dim))
        from ...factories import zeros

        vals = g.index_select(0, wrap(ne)).reshape(-1)
        out = zeros(num * dim, dtype=g.dtype, device=g.device).index_add(0, wrap(flat), vals)
        return out.reshape(num, dim)


def _bags(xp, offsets, n, include_last_offset):
    """(starts, lengths) of the bags from ``offsets`` (validated like PyTorch)."""
    off = offsets.astype(_int64, copy=False)
    m = off.shape[0]
    if m:
        o0, ol = int(off[0]), int(off[-1])
        if o0 != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got {o0}")
        if ol > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but "
                               f"got offsets[-1] of {ol}")
        if m > 1 and bool((off[1:] < off[:-1]).any()):
            raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    if include_last_offset:
        nb = max(m - 1, 0)
        ends = off[1:]
    else:
        nb = m
        ends = xp.concatenate([off[1:], xp.asarray([n], dtype=_int64)]) if m else off
    starts = off[:nb]
    return starts, ends - starts


# bucket sizes for bags when their lengths vary a lot: a sqrt(2) ladder 1, 2, 3, 4, 6, 8, ...
_LADDER = np.unique(np.ceil(2.0 ** (np.arange(80) / 2)).astype(np.int64))


def _bag_reduce(xp, w, ids, pw, starts, lengths, mode):
    """Per-bag sum or max of the rows ``w[ids] * pw`` (bag ``b`` holds
    ``ids[starts[b]:starts[b] + lengths[b]]``; empty bags give 0).

    The bags are grouped by length (lengths rounded up a sqrt(2) ladder when there are many
    distinct ones, the extra slots padded with 0 or -inf), the rows are gathered once from
    the table straight into that layout, and each group is one ``(bags, length, dim)``
    reduction: a handful of array calls, not one per bag (``np.add.reduceat`` over rows is
    ~10x slower here). For max, also the id of the first maximum per (non-empty bag,
    column), in the order of the returned non-empty bags."""
    nb, dim = lengths.shape[0], w.shape[1]
    ne = xp.flatnonzero(lengths > 0)
    if xp is np and type(w) is np.ndarray and w.dtype in (np.float32, np.float64) and \
            _kernels_on():
        return _bag_reduce_kernel(w, ids, pw, starts, lengths, mode, ne)
    m = ne.shape[0]
    if m == 0:
        return xp.zeros((nb, dim), w.dtype), ne, (xp.zeros((0, dim), _int64)
                                                   if mode == "max" else None)
    L = lengths[ne]
    sizes = xp.unique(L)
    if m == nb and sizes.shape[0] == 1:                     # fixed-size bags (2-D input)
        size = int(sizes[0])
        src = None
        r = w.take(ids, axis=0)
        if pw is not None:
            r *= pw[:, None]
        blk = r.reshape(nb, size, dim)
        if mode != "max":
            return _sum_mid(xp, blk), ne, None
        am = blk.argmax(1)
        slot = (xp.arange(nb, dtype=_int64) * size)[:, None] + am
        return blk.max(1), ne, ids.take(slot)
    exact = sizes.shape[0] <= 16
    S = L
    if not exact:
        ladder = xp.asarray(_LADDER)
        S = ladder[xp.searchsorted(ladder, L)]
        sizes = xp.unique(S)
    order = xp.argsort(S, kind="stable") if xp is np else xp.argsort(S)
    S, bags = S[order], ne[order]
    first = xp.cumsum(S) - S                                # first slot of each sorted bag
    total = int(first[-1] + S[-1])
    if exact:
        src = xp.arange(total, dtype=_int64) + _repeat(xp, starts[bags] - first, S)
        pad = None
    else:
        owner = _repeat(xp, xp.arange(m, dtype=_int64), S)
        j = xp.arange(total, dtype=_int64) - first[owner]   # rank of the slot in its bag
        src = starts[bags][owner] + j                       # position in ids
        pad = j >= L[order][owner]
        src[pad] = 0
    r = w.take(ids.take(src), axis=0)                       # (total, dim)
    if pw is not None:
        r *= pw.take(src)[:, None]
    if pad is not None:
        r[pad] = 0 if mode != "max" else -np.inf
    out = xp.zeros((nb, dim), w.dtype)
    mids = xp.empty((nb, dim), _int64) if mode == "max" else None
    b0 = 0
    for size, b1 in zip(sizes.tolist(), xp.searchsorted(S, sizes, side="right").tolist()):
        cnt = b1 - b0
        s0 = int(first[b0])
        blk = r[s0:s0 + cnt * size].reshape(cnt, size, dim)
        bb = bags[b0:b1]
        if mode != "max":
            out[bb] = _sum_mid(xp, blk)
        else:
            out[bb] = blk.max(1)
            slot = s0 + (xp.arange(cnt, dtype=_int64) * size)[:, None] + blk.argmax(1)
            mids[bb] = ids.take(src.take(slot))
        b0 = b1
    return out, ne, (mids[ne] if mode == "max" else None)


def _kernels_on():
    from ... import kernels

    return kernels.available()


def _bag_reduce_kernel(w, ids, pw, starts, lengths, mode, ne):
    """``_bag_reduce`` on numpy through ``ember.kernels``' compiled ``gather_segment_sum`` /
    ``gather_segment_max`` (the bags are consecutive runs of ``ids``): each id's row is read
    from the table straight into its bag's result, no gathered copy. Without the kernels
    the grouped numpy code above runs (faster than the kernels' take + reduceat reference)."""
    from ... import kernels

    nb = lengths.shape[0]
    off = np.empty(nb + 1, _int64)
    off[0] = starts[0] if nb else 0
    np.cumsum(lengths, out=off[1:])
    off[1:] += off[0]
    if mode != "max":
        return kernels.get("gather_segment_sum", w)(w, ids, off, pw), ne, None
    out, arg = kernels.get("gather_segment_max", w)(w, ids, off, pw, 0.0)
    return out, ne, ids.take(arg[ne])


def _sum_mid(xp, blk):
    """``blk.sum(1)`` for (bags, length, dim); numpy's einsum is ~2x faster at it."""
    return xp.einsum("bld->bd", blk) if xp is np else blk.sum(1)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of rows of ``weight`` (num_embeddings, dim), without
    materialising the per-id rows' graph: shape (num_bags, dim).

    Bags: a 2-D ``input`` (B, N) is B bags of N ids (``offsets`` must be None); a 1-D
    ``input`` with 1-D ``offsets`` holds bag ``i`` at ``input[offsets[i]:offsets[i+1]]``
    (the last bag runs to the end, or, with ``include_last_offset``, ``offsets`` has one
    more entry closing the last bag). ``per_sample_weights`` (``input``'s shape, mode
    "sum" only) scale each id's row. Ids equal to ``padding_idx`` are left out of their bag
    (and of mean's count); empty bags give zeros. ``max_norm``, ``norm_type``,
    ``scale_grad_by_freq`` and ``sparse`` behave as in ``embedding`` (max mode supports
    neither of the last two).

    Where PyTorch 2.13's CPU kernel deviates from its own documentation, ember follows the
    documentation: ``scale_grad_by_freq`` divides each id's gradient by that id's count
    (pytorch#190063), and with ``include_last_offset`` ids after the last offset belong to
    no bag (PyTorch's mean/max read them)."""
    if weight.dtype in (np.int64, np.int32) and D.is_floating(input.dtype):
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    psw = per_sample_weights
    if psw is not None and tuple(input.shape) != tuple(psw.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(psw.shape)}) is not "
                         f"None, then it must have the same shape as the input "
                         f"({tuple(input.shape)})")
    w = weight.array
    if w.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    xp = B.namespace(w)
    idx = _ids(input, "indices", "embedding_bag")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
        nb_fixed, per = idx.shape
        off = xp.arange(0, idx.size, max(per, 1), dtype=_int64)[:nb_fixed]
        include_last_offset = False
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = _on(_ids(offsets, "offsets", "embedding_bag"), w)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{idx.ndim}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    flat = _on(idx.reshape(-1), w).astype(_int64, copy=False)
    num = w.shape[0]
    if psw is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                f"on GitHub.")
        if psw.dtype != w.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type "
                               f"as tensor for argument #1 'per_sample_weights'; but type "
                               f"{D.name(w.dtype)} does not equal {D.name(psw.dtype)} (while "
                               f"checking arguments for embedding_bag)")
    pad = _norm_padding(padding_idx, num, RuntimeError,
                        f"padding_idx must be within the number of embeddings, -{num} through "
                        f"{num - 1}, but got {padding_idx}")
    if flat.size:
        bad = (flat < 0) | (flat >= num)
        if bool(bad.any()):
            i = int(xp.flatnonzero(bad)[0])
            raise RuntimeError(f"Index {i} of input takes value {int(flat[i])} which is not in "
                               f"the valid range [0, {num})")
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type)
    starts, lengths = _bags(xp, off, flat.shape[0], include_last_offset)
    nb = starts.shape[0]
    used = int(starts[-1] + lengths[-1]) if nb else 0      # ids past the last bag: in no bag
    pos = None                                             # positions kept (None: 0..used-1)
    ids = flat[:used] if used != flat.shape[0] else flat
    if pad is not None:
        keep = ids != pad
        if not bool(keep.all()):
            pos = xp.flatnonzero(keep)
            ids = ids[pos]
            kept = xp.concatenate([xp.zeros(1, _int64), xp.cumsum(keep)])
            starts, lengths = kept[starts], kept[starts + lengths] - kept[starts]
    pw = None
    if psw is not None:
        pw = _on(psw.array.reshape(-1), w)
        pw = pw[pos] if pos is not None else pw[:used]
    out, ne, max_ids = _bag_reduce(xp, w, ids, pw, starts, lengths, mode)
    inv_len = None
    if mode == "mean":
        inv_len = (1 / xp.maximum(lengths, 1)).astype(w.dtype)
        out *= inv_len[:, None]
    res = wrap(out)
    need_w = weight.requires_grad
    need_p = psw is not None and psw.requires_grad
    if STATE.enabled and (need_w or need_p):
        n = new_node(EmbeddingBagBackward)
        n.mode, n.shape, n.sparse, n.n_input = mode, w.shape, bool(sparse), flat.shape[0]
        n.inv_len = inv_len
        n.freq = _freq_scale(ids, num, w.dtype) if scale_grad_by_freq else None
        n.ids, n.lens = ids, lengths
        n.pos = pos if pos is not None else used
        n.nonempty = ne
        n.max_ids = max_ids
        pflat = None if psw is None else psw.reshape(-1)
        n.save(weight if need_p else None, pflat)
        record(n, res, weight, pflat)
    return res
