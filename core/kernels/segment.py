"""Reductions over jagged segments: ``values`` (N, *D) cut by ``offsets`` (S + 1,).

Segment ``s`` is ``values[offsets[s]:offsets[s + 1]]``; ``offsets`` is non-decreasing
from >= 0 to <= N (int32/int64). As ``torch.segment_reduce(..., offsets=...)``: an empty
segment sums to 0, has mean NaN and max -inf; a NaN in a segment makes its max NaN.
``segment_max`` also returns the index (into ``values``' first axis) of each maximum, -1
for an empty segment (the first maximum, or the first NaN), for the gradient.

The numpy reference is ``np.add.reduceat`` / ``np.maximum.reduceat`` with the fixes
reduceat needs (it returns ``values[offsets[s]]`` for an empty segment and cannot index
an offset equal to N); the compiled kernels make one pass, segments split over threads.

    >>> import numpy as np
    >>> v = np.array([1.0, 2.0, 3.0, 4.0], np.float32); off = np.array([0, 1, 1, 4])
    >>> segment_sum(v, off).tolist(), segment_mean(v, off).tolist()
    ([1.0, 0.0, 9.0], [1.0, nan, 3.0])
    >>> segment_max(v, off)[1].tolist()
    [0, -1, 3]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import compiled_dtype, contiguous, split

__all__ = ["segment_sum", "segment_mean", "segment_max"]


def _check(values, offsets):
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 1 or offsets.dtype.kind not in "iu":
        raise ValueError(f"segment reductions: offsets must be a 1-D integer array of S + 1 "
                         f"entries, got {offsets.dtype} {offsets.shape}")
    if values.ndim < 1:
        raise ValueError("segment reductions: values must have at least one axis")
    n = values.shape[0]
    if offsets.size > 1 and (offsets[0] < 0 or offsets[-1] > n
                             or bool(np.any(offsets[1:] < offsets[:-1]))):
        raise ValueError(f"segment reductions: offsets must be non-decreasing within [0, {n}]")
    return offsets.astype(np.int64, copy=False)


# ----------------------------------------------------------------------------- reference

def _reduceat(ufunc, values, offsets):
    """``ufunc.reduceat`` per segment; empty segments (and offsets at N) left undefined."""
    n, S = values.shape[0], offsets.size - 1
    out = np.empty((S,) + values.shape[1:], values.dtype)
    starts = offsets[:-1]
    full = starts < n
    if n and full.any():
        out[full] = ufunc.reduceat(values, starts[full], axis=0)
    return out, offsets[1:] - starts


def segment_sum_reference(values, offsets):
    """Sum per segment: (S, *D)."""
    offsets = _check(values, offsets)
    out, counts = _reduceat(np.add, values, offsets)
    out[counts == 0] = 0
    return out


def segment_mean_reference(values, offsets):
    """Mean per segment (NaN for an empty one): (S, *D)."""
    s = segment_sum_reference(values, offsets)
    counts = np.diff(_check(values, offsets)).reshape((-1,) + (1,) * (values.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (s / counts.astype(values.dtype)).astype(values.dtype, copy=False)


def segment_max_reference(values, offsets):
    """``(max, argmax)`` per segment: (S, *D) each, -inf and -1 for an empty segment."""
    offsets = _check(values, offsets)
    out, counts = _reduceat(np.maximum, values, offsets)
    empty = counts == 0
    out[empty] = -np.inf
    S, n = offsets.size - 1, values.shape[0]
    seg = np.repeat(np.arange(S), counts)  # segment of each row in [offsets[0], offsets[-1])
    rows = np.arange(offsets[0], offsets[-1]) if S else np.arange(0)
    v = values[offsets[0]:offsets[-1]] if S else values[:0]
    m = out[seg]
    hit = (v == m) | (np.isnan(v) & np.isnan(m))
    idx = np.where(hit, rows.reshape((-1,) + (1,) * (values.ndim - 1)), n)
    arg = np.full(out.shape, n, np.int64)
    np.minimum.at(arg, seg, idx) if seg.size else None
    arg[arg == n] = -1
    return out, arg


# ----------------------------------------------------------------------------- compiled

@jit
def _seg_sum(v, off, out, lo, hi):
    """(N, D) values -> (S, D) sums, segments ``lo..hi``."""
    D = v.shape[1]
    for s in range(lo, hi):
        o = out[s]
        for d in range(D):
            o[d] = 0
        for i in range(off[s], off[s + 1]):
            row = v[i]
            for d in range(D):
                o[d] += row[d]


@jit
def _seg_sum1(v, off, out, lo, hi):
    """(N,) values -> (S,) sums, segments ``lo..hi``."""
    zero = v.dtype.type(0)
    for s in range(lo, hi):
        a, b = off[s], off[s + 1]
        acc = zero
        if b - a >= 64:  # long: a slice from 0 vectorises (its creation costs ~10 ns)
            seg = v[a:b]
            for i in range(b - a):
                acc += seg[i]
        else:  # short: four independent sums, not one chain of dependent adds
            a1 = a2 = a3 = zero
            i = a
            while i + 4 <= b:
                acc += v[i]
                a1 += v[i + 1]
                a2 += v[i + 2]
                a3 += v[i + 3]
                i += 4
            while i < b:
                acc += v[i]
                i += 1
            acc = (acc + a1) + (a2 + a3)
        out[s] = acc


@jit
def _seg_max(v, off, out, arg, lo, hi):
    """(N, D) values -> (S, D) max and argmax, segments ``lo..hi``."""
    D = v.shape[1]
    for s in range(lo, hi):
        o, ar = out[s], arg[s]
        for d in range(D):
            o[d] = -np.inf
            ar[d] = -1
        for i in range(off[s], off[s + 1]):
            row = v[i]
            for d in range(D):
                x = row[d]
                cur = o[d]
                if x > cur or (x != x and cur == cur) or ar[d] < 0:
                    o[d] = x
                    ar[d] = i


def _as2d(values):
    d = 1
    for s in values.shape[1:]:
        d *= s
    return contiguous(values).reshape(values.shape[0], d)


def segment_sum(values, offsets):
    """Sum per segment, compiled: (S, *D)."""
    if not compiled_dtype(values):
        return segment_sum_reference(values, offsets)
    offsets = _check(values, offsets)
    S = offsets.size - 1
    if values.ndim == 1:
        v = contiguous(values)
        out = np.empty(S, values.dtype)
        split(lambda lo, hi: _seg_sum1(v, offsets, out, lo, hi), S, values.size)
        return out
    v = _as2d(values)
    out = np.empty((S, v.shape[1]), values.dtype)
    split(lambda lo, hi: _seg_sum(v, offsets, out, lo, hi), S, values.size)
    return out.reshape((S,) + values.shape[1:])


def segment_mean(values, offsets):
    """Mean per segment (NaN for an empty one), compiled: (S, *D)."""
    if not compiled_dtype(values):
        return segment_mean_reference(values, offsets)
    s = segment_sum(values, offsets)
    counts = np.diff(_check(values, offsets)).astype(values.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        s /= counts.reshape((-1,) + (1,) * (values.ndim - 1))
    return s


def segment_max(values, offsets):
    """``(max, argmax)`` per segment, compiled: (S, *D) each."""
    if not compiled_dtype(values):
        return segment_max_reference(values, offsets)
    offsets = _check(values, offsets)
    S = offsets.size - 1
    v = _as2d(values)
    out = np.empty((S, v.shape[1]), values.dtype)
    arg = np.empty((S, v.shape[1]), np.int64)
    split(lambda lo, hi: _seg_max(v, offsets, out, arg, lo, hi), S, values.size)
    shape = (S,) + values.shape[1:]
    return out.reshape(shape), arg.reshape(shape)


register("segment_sum", reference=segment_sum_reference, cpu=segment_sum)
register("segment_mean", reference=segment_mean_reference, cpu=segment_mean)
register("segment_max", reference=segment_max_reference, cpu=segment_max)
