"""Embedding-bag kernels: gather rows by index and reduce them per segment, in one pass.

``gather_segment_sum(src, index, offsets, scale=None)``: segment ``s`` is the positions
``k`` in ``offsets[s]:offsets[s + 1]``; its result is ``sum_k src[index[k]] * scale[k]``
(S, D). The same kernel serves both directions of an embedding bag:

* forward: ``src`` the table, ``index`` the ids, ``offsets`` the bags, ``scale`` the
  per-sample weights -> the pooled rows, without materialising the (n, D) gathered rows;
* backward: ``src`` the output gradient, ``index`` the bag of each id in sorted-id order,
  ``offsets`` the runs of equal ids -> the coalesced row-sparse table gradient.

``gather_segment_max`` returns the per-segment maximum of the scaled rows and the position
``k`` of the first maximum per column (-1 and ``empty`` for an empty segment; a NaN wins,
as in ``segment_max``). ``gather_rowdot(a, ia, b, ib)`` is ``sum(a[ia] * b[ib], 1)``: the
per-sample weights' gradient.

``sparse_row_update(opt, W, state, rows, G, hyper)`` applies a fused sparse optimizer
(sgd, adagrad, rowwise_adagrad, adam: ``ember.rec``'s rules) to rows ``rows`` (distinct) of
the table ``W`` and its state arrays in place, reading each touched row once -- no gathered
copies written back.

The numpy references gather with ``take`` and reduce with ``np.add.reduceat``; the kernels
split segments (or rows) over ember's threads. Index arrays are checked before a kernel
runs (an out-of-range index raises ``IndexError`` naming it, never reads out of bounds).

    >>> import numpy as np
    >>> W = np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> gather_segment_sum(W, np.array([3, 0, 1]), np.array([0, 1, 3])).tolist()
    [[6.0, 7.0], [2.0, 4.0]]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit, prefetch
from ._registry import register
from ._util import FLOATS, split

__all__ = ["gather_segment_sum", "gather_segment_max", "gather_rowdot", "sparse_row_update"]

_i64 = np.dtype(np.int64)


def _check(src, index, offsets, scale, what):
    if src.ndim != 2:
        raise ValueError(f"{what}: src must be 2-D (rows, dim), got shape {src.shape}")
    index = np.asarray(index)
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise ValueError(f"{what}: index must be a 1-D integer array, got {index.dtype} "
                         f"{index.shape}")
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 1 or offsets.dtype.kind not in "iu":
        raise ValueError(f"{what}: offsets must be a 1-D integer array of S + 1 entries, "
                         f"got {offsets.dtype} {offsets.shape}")
    n = index.shape[0]
    if offsets[0] < 0 or offsets[-1] > n or bool(np.any(offsets[1:] < offsets[:-1])):
        raise ValueError(f"{what}: offsets must be non-decreasing within [0, {n}]")
    if n and (int(index.min()) < 0 or int(index.max()) >= src.shape[0]):
        raise IndexError(f"{what}: index out of range for src with {src.shape[0]} rows "
                         f"(min {int(index.min())}, max {int(index.max())})")
    if scale is not None and (scale.ndim != 1 or scale.shape[0] != n):
        raise ValueError(f"{what}: scale must be 1-D with one entry per index ({n}), got "
                         f"shape {scale.shape}")
    return index.astype(_i64, copy=False), offsets.astype(_i64, copy=False)


# ----------------------------------------------------------------------------- reference

def gather_segment_sum_reference(src, index, offsets, scale=None):
    """Per segment, the sum of the rows ``src[index[k]] * scale[k]``: (S, D); 0 if empty."""
    index, offsets = _check(src, index, offsets, scale, "gather_segment_sum")
    S, D = offsets.size - 1, src.shape[1]
    end = int(offsets[-1])  # reduceat's last segment runs to the end of what it is given
    rows = src.take(index[:end], axis=0)
    if scale is not None:
        rows *= scale[:end].astype(src.dtype, copy=False)[:, None]
    out = np.zeros((S, D), src.dtype)
    full = np.diff(offsets) > 0
    if full.any():
        out[full] = np.add.reduceat(rows, offsets[:-1][full], axis=0)
    return out


def gather_segment_max_reference(src, index, offsets, scale=None, empty=0.0):
    """``(max, argmax)`` per segment of the rows ``src[index[k]] * scale[k]``: (S, D) each;
    ``argmax`` is the position ``k`` of the first maximum (first NaN), -1 when empty (whose
    max is ``empty``)."""
    from .segment import segment_max_reference

    index, offsets = _check(src, index, offsets, scale, "gather_segment_max")
    rows = src.take(index, axis=0)
    if scale is not None:
        rows *= scale.astype(src.dtype, copy=False)[:, None]
    out, arg = segment_max_reference(rows, offsets)
    out[arg < 0] = empty
    return out, arg


def gather_rowdot_reference(a, ia, b, ib):
    """``sum(a[ia] * b[ib], axis=1)``: (n,)."""
    return np.einsum("nd,nd->n", a.take(ia, axis=0), b.take(ib, axis=0)).astype(a.dtype,
                                                                               copy=False)


def _sparse_update_reference(opt, W, state, rows, G, hyper):
    """The fused optimizers' update of rows ``rows`` with ``G``, as ufunc passes."""
    lr, eps, wd, b1, b2, t = (hyper[k] for k in ("lr", "eps", "weight_decay", "beta1",
                                                  "beta2", "t"))
    w = W[rows]
    g = G.astype(W.dtype, copy=False)
    if opt == "adam":
        m, v = state["momentum1"][rows], state["momentum2"][rows]
        m += (1 - b1) * (g - m)
        v += (1 - b2) * (g * g - v)
        w *= 1 - lr * wd
        w += (-lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)) * m / (np.sqrt(v) + eps)
        state["momentum1"][rows], state["momentum2"][rows] = m, v
    else:
        if wd:
            g = g + wd * w
        if opt == "sgd":
            w -= lr * g
        elif opt == "adagrad":
            m = state["momentum1"][rows] + g * g
            state["momentum1"][rows] = m
            w -= lr * g / (np.sqrt(m) + eps)
        elif opt == "rowwise_adagrad":
            m = state["momentum1"][rows] + (g * g).mean(1)
            state["momentum1"][rows] = m
            w -= (lr / (np.sqrt(m) + eps))[:, None] * g
        else:
            raise ValueError(f"sparse_row_update: unknown optimizer {opt!r}")
    W[rows] = w


def sparse_row_update_reference(opt, W, state, rows, G, hyper):
    """Update rows ``rows`` (distinct) of ``W`` and of ``state`` in place (see module doc);
    ``hyper``: lr, eps, weight_decay, beta1, beta2 and the update count t."""
    _check_update(opt, W, state, rows, G)
    _sparse_update_reference(opt, W, state, rows, G, hyper)


def _check_update(opt, W, state, rows, G):
    need = {"sgd": (), "adagrad": ("momentum1",), "rowwise_adagrad": ("momentum1",),
            "adam": ("momentum1", "momentum2")}
    if opt not in need:
        raise ValueError(f"sparse_row_update: unknown optimizer {opt!r}; expected one of "
                         f"{sorted(need)}")
    missing = [k for k in need[opt] if k not in state]
    if missing:
        raise KeyError(f"sparse_row_update: {opt} needs state {missing}")
    if G.shape != (rows.shape[0], W.shape[1]):
        raise ValueError(f"sparse_row_update: gradient rows must have shape "
                         f"{(rows.shape[0], W.shape[1])}, got {G.shape}")
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= W.shape[0]):
        raise IndexError(f"sparse_row_update: rows out of range for a table of "
                         f"{W.shape[0]} rows")


# ----------------------------------------------------------------------------- compiled

_AHEAD = 16  # rows prefetched ahead in the gathers (random rows: latency-bound)


@jit
def _fetch(flat, index, k, n, D):
    """Prefetch the row ``index[k + _AHEAD]`` (each of its 64-byte lines)."""
    if k + _AHEAD < n:
        r = index[k + _AHEAD] * D
        for j in range(0, D, 64 // flat.itemsize):
            prefetch(flat, r + j)


@jit
def _gss(src, index, off, out, lo, hi):
    D = src.shape[1]
    n = index.shape[0]
    flat = src.reshape(-1)
    zero = src.dtype.type(0)
    for s in range(lo, hi):
        o = out[s]
        for d in range(D):
            o[d] = zero
        for k in range(off[s], off[s + 1]):
            _fetch(flat, index, k, n, D)
            row = src[index[k]]
            for d in range(D):
                o[d] += row[d]


@jit
def _gss_scaled(src, index, off, scale, out, lo, hi):
    D = src.shape[1]
    n = index.shape[0]
    flat = src.reshape(-1)
    zero = src.dtype.type(0)
    for s in range(lo, hi):
        o = out[s]
        for d in range(D):
            o[d] = zero
        for k in range(off[s], off[s + 1]):
            _fetch(flat, index, k, n, D)
            row = src[index[k]]
            c = scale[k]
            for d in range(D):
                o[d] += row[d] * c


@jit
def _gsm(src, index, off, scale, use_scale, empty, out, arg, lo, hi):
    D = src.shape[1]
    n = index.shape[0]
    flat = src.reshape(-1)
    one = src.dtype.type(1)
    for s in range(lo, hi):
        o, ar = out[s], arg[s]
        a, b = off[s], off[s + 1]
        if a == b:
            for d in range(D):
                o[d] = empty
                ar[d] = -1
            continue
        row = src[index[a]]
        c = scale[a] if use_scale else one
        for d in range(D):
            o[d] = row[d] * c
            ar[d] = a
        for k in range(a + 1, b):
            _fetch(flat, index, k, n, D)
            row = src[index[k]]
            c = scale[k] if use_scale else one
            for d in range(D):
                x = row[d] * c
                cur = o[d]
                if x > cur or (x != x and cur == cur):
                    o[d] = x
                    ar[d] = k


@jit
def _rowdot(a, ia, b, ib, out, lo, hi):
    D = a.shape[1]
    zero = a.dtype.type(0)
    for k in range(lo, hi):
        ra, rb = a[ia[k]], b[ib[k]]
        acc = zero
        for d in range(D):
            acc += ra[d] * rb[d]
        out[k] = acc


@jit
def _upd_sgd(W, rows, G, lr, wd, lo, hi):
    D = W.shape[1]
    n, flat = rows.shape[0], W.reshape(-1)
    for j in range(lo, hi):
        _fetch(flat, rows, j, n, D)
        w, g = W[rows[j]], G[j]
        for d in range(D):
            w[d] -= lr * (g[d] + wd * w[d])


@jit
def _upd_adagrad(W, M, rows, G, lr, eps, wd, lo, hi):
    D = W.shape[1]
    n, flat, mflat = rows.shape[0], W.reshape(-1), M.reshape(-1)
    for j in range(lo, hi):
        _fetch(flat, rows, j, n, D)
        _fetch(mflat, rows, j, n, D)
        r = rows[j]
        w, m, g = W[r], M[r], G[j]
        for d in range(D):
            gd = g[d] + wd * w[d]
            md = m[d] + gd * gd
            m[d] = md
            w[d] -= lr * gd / (np.sqrt(md) + eps)


@jit
def _upd_rowwise(W, M, rows, G, lr, eps, wd, lo, hi):
    D = W.shape[1]
    zero = W.dtype.type(0)
    inv_d = W.dtype.type(1) / W.dtype.type(D)
    n, flat = rows.shape[0], W.reshape(-1)
    for j in range(lo, hi):
        _fetch(flat, rows, j, n, D)
        r = rows[j]
        w, g = W[r], G[j]
        ss = zero
        for d in range(D):
            gd = g[d] + wd * w[d]
            ss += gd * gd
        m = M[r] + ss * inv_d
        M[r] = m
        s = lr / (np.sqrt(m) + eps)
        for d in range(D):
            w[d] -= s * (g[d] + wd * w[d])


@jit
def _upd_adam(W, M, V, rows, G, decay, w1, w2, eps, k, lo, hi):
    D = W.shape[1]
    n, flat, mflat, vflat = rows.shape[0], W.reshape(-1), M.reshape(-1), V.reshape(-1)
    for j in range(lo, hi):
        _fetch(flat, rows, j, n, D)
        _fetch(mflat, rows, j, n, D)
        _fetch(vflat, rows, j, n, D)
        r = rows[j]
        w, m, v, g = W[r], M[r], V[r], G[j]
        for d in range(D):
            gd = g[d]
            md = m[d] + w1 * (gd - m[d])
            vd = v[d] + w2 * (gd * gd - v[d])
            m[d] = md
            v[d] = vd
            w[d] = w[d] * decay + k * md / (np.sqrt(vd) + eps)


def _compiled(*arrays):
    dt = arrays[0].dtype
    return dt in FLOATS and all(type(a) is np.ndarray and a.dtype == dt for a in arrays)


def _c(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def gather_segment_sum(src, index, offsets, scale=None):
    """``gather_segment_sum_reference``, compiled: each segment's rows summed in place of
    its output row, no gathered copy."""
    if not _compiled(src) or (scale is not None and type(scale) is not np.ndarray):
        return gather_segment_sum_reference(src, index, offsets, scale)
    index, offsets = _check(src, index, offsets, scale, "gather_segment_sum")
    S, D = offsets.size - 1, src.shape[1]
    src = _c(src)
    out = np.empty((S, D), src.dtype)
    work = index.shape[0] * D + S * D
    if scale is None:
        split(lambda lo, hi: _gss(src, index, offsets, out, lo, hi), S, work)
    else:
        sc = _c(scale.astype(src.dtype, copy=False))
        split(lambda lo, hi: _gss_scaled(src, index, offsets, sc, out, lo, hi), S, work)
    return out


def gather_segment_max(src, index, offsets, scale=None, empty=0.0):
    """``gather_segment_max_reference``, compiled."""
    if not _compiled(src) or (scale is not None and type(scale) is not np.ndarray):
        return gather_segment_max_reference(src, index, offsets, scale, empty)
    index, offsets = _check(src, index, offsets, scale, "gather_segment_max")
    S, D = offsets.size - 1, src.shape[1]
    src = _c(src)
    dt = src.dtype.type
    use = scale is not None
    sc = _c(scale.astype(src.dtype, copy=False)) if use else np.ones(1, src.dtype)
    out = np.empty((S, D), src.dtype)
    arg = np.empty((S, D), np.int64)
    split(lambda lo, hi: _gsm(src, index, offsets, sc, use, dt(empty), out, arg, lo, hi), S,
          index.shape[0] * D + S * D)
    return out, arg


def gather_rowdot(a, ia, b, ib):
    """``gather_rowdot_reference``, compiled."""
    if not _compiled(a, b):
        return gather_rowdot_reference(a, ia, b, ib)
    ia, ib = np.asarray(ia).astype(_i64, copy=False), np.asarray(ib).astype(_i64, copy=False)
    if ia.shape != ib.shape or ia.ndim != 1:
        raise ValueError(f"gather_rowdot: ia and ib must be 1-D of one length, got {ia.shape} "
                         f"and {ib.shape}")
    for name, arr, ix in (("ia", a, ia), ("ib", b, ib)):
        if ix.size and (int(ix.min()) < 0 or int(ix.max()) >= arr.shape[0]):
            raise IndexError(f"gather_rowdot: {name} out of range for {arr.shape[0]} rows")
    a, b = _c(a), _c(b)
    n = ia.shape[0]
    out = np.empty(n, a.dtype)
    split(lambda lo, hi: _rowdot(a, ia, b, ib, out, lo, hi), n, n * a.shape[1] * 2)
    return out


def sparse_row_update(opt, W, state, rows, G, hyper):
    """``sparse_row_update_reference``, compiled: each touched row of the table and of its
    state read and written once, rows split over ember's threads (they are distinct)."""
    _check_update(opt, W, state, rows, G)
    st = [state[k] for k in ("momentum1", "momentum2") if k in state]
    if not (_compiled(W, G, *st) and W.flags.c_contiguous
            and all(s.flags.c_contiguous for s in st)):
        return _sparse_update_reference(opt, W, state, rows, G, hyper)
    rows = np.asarray(rows).astype(_i64, copy=False)
    G = _c(G)
    dt = W.dtype.type
    lr, eps, wd = dt(hyper["lr"]), dt(hyper["eps"]), dt(hyper["weight_decay"])
    n = rows.shape[0]
    work = n * W.shape[1] * (2 + len(st))
    if opt == "sgd":
        fn, args = _upd_sgd, (W, rows, G, lr, wd)
    elif opt == "adagrad":
        fn, args = _upd_adagrad, (W, st[0], rows, G, lr, eps, wd)
    elif opt == "rowwise_adagrad":
        fn, args = _upd_rowwise, (W, st[0], rows, G, lr, eps, wd)
    else:
        b1, b2, t = hyper["beta1"], hyper["beta2"], hyper["t"]
        k = -hyper["lr"] * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
        fn, args = _upd_adam, (W, st[0], st[1], rows, G, dt(1 - hyper["lr"] * hyper[
            "weight_decay"]), dt(1 - b1), dt(1 - b2), eps, dt(k))
    split(lambda lo, hi: fn(*args, lo, hi), n, work)


register("gather_segment_sum", reference=gather_segment_sum_reference, cpu=gather_segment_sum)
register("gather_segment_max", reference=gather_segment_max_reference, cpu=gather_segment_max)
register("gather_rowdot", reference=gather_rowdot_reference, cpu=gather_rowdot)
register("sparse_row_update", reference=sparse_row_update_reference, cpu=sparse_row_update)
