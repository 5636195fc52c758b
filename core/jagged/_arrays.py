"""Segment reductions on raw arrays: the compiled kernel where one is registered, else the
reference below (numpy or cupy, one pass per ufunc, never ``ufunc.at``).

``values`` is (n, *F), cut into sequences by a ``Layout`` whose offsets start at 0 and end
at n. Each function here is the single place its op's compiled kernel plugs in: it looks
up ``ember.kernels`` by name (``segment_sum`` and ``segment_max`` are registered there;
``segment_softmax`` is picked up once registered) with ``(values, offsets)`` arguments, and
a CUDA kernel registered under the same name is used for cupy arrays. ``segment_mean`` is
the sum times 1/length (one small extra pass over the (batch, *F) result).

References:

* sum: ``np.add.reduceat`` over the starts of the non-empty sequences (reduceat cannot
  express an empty one: between two consecutive non-empty starts lie only empty sequences,
  so each reduced run is exactly one sequence); on cupy, ``cupyx.scatter_add`` by segment id.
* max: ``np.maximum.reduceat`` likewise (cupy: ``cupyx.scatter_max``); the argmax is the
  first row equal to its sequence's maximum (NaN counts as equal to NaN), found without a
  scatter: the hits of the transposed (F, n) mask come out of ``nonzero`` sorted by
  (column, sequence), so the first hit of each (column, sequence) key is where the key
  changes.
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B

_int64 = np.dtype(np.int64)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _kernel(name, values):
    """The compiled implementation of ``name`` for ``values``, or None (use the reference).
    CPU: numba kernels take float32/float64 numpy arrays, when enabled
    (``EMBER_KERNELS=numpy`` turns them off)."""
    from .. import kernels

    try:
        k = kernels.lookup(name)
    except KeyError:  # not registered (yet): the reference
        return None
    if type(values) is np.ndarray:
        if values.dtype in _FLOATS and k.cpu is not None and kernels.available():
            return k.cpu
        return None
    return k.cuda


def _flat(values):
    """(n, *F) -> (n, F) (a view when ``values`` is contiguous)."""
    return values.reshape(values.shape[0], _prod(values.shape[1:]))


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


# ------------------------------------------------------------------------------------ sum

def segment_sum(values, layout):
    """Per-sequence sums: (batch, *F); an empty sequence sums to 0."""
    k = _kernel("segment_sum", values)
    if k is not None:
        return k(values, layout.offsets)
    return segment_sum_reference(values, layout)


def segment_sum_reference(values, layout):
    xp, S = layout.xp, layout.batch_size
    out = xp.zeros((S,) + values.shape[1:], values.dtype)
    if values.shape[0] == 0 or S == 0:
        return out
    if xp is np:
        full = layout.lengths > 0
        if full.all():
            return np.add.reduceat(values, layout.offsets[:-1], axis=0)
        out[full] = np.add.reduceat(values, layout.offsets[:-1][full], axis=0)
    else:
        import cupyx

        cupyx.scatter_add(out, layout.segment_ids(), values)
    return out


def segment_expand(g, layout):
    """Each sequence's row of ``g`` (batch, *F) repeated over its rows: (n, *F). The adjoint
    of ``segment_sum``."""
    if layout.xp is np:
        return np.repeat(g, layout.lengths, axis=0)
    return g.take(layout.segment_ids(), axis=0)


# ------------------------------------------------------------------------------------ max

def segment_max(values, layout, empty_value):
    """``(max, argmax)`` per sequence, (batch, *F) each. ``argmax`` is the row (index into
    ``values``) of the first maximum; an empty sequence gives ``empty_value`` and -1."""
    k = _kernel("segment_max", values)
    if k is not None:
        out, arg = k(values, layout.offsets)  # empty: -inf and -1
    else:
        out, arg = segment_max_reference(values, layout)
    empty = _flat(arg)[:, 0] < 0 if arg.size else None
    if empty is not None and bool(empty.any()):
        out[empty] = empty_value
    return out, arg


def segment_max_reference(values, layout, argmax=True):
    """``(max, argmax)``, empty sequences giving the dtype's lowest value and -1;
    ``argmax=False`` skips the argmax (returns None for it)."""
    xp, S, n = layout.xp, layout.batch_size, values.shape[0]
    v = _flat(values)
    F = v.shape[1]
    out = xp.full((S, F), _lowest(values.dtype), values.dtype)
    if n and S:
        full = layout.lengths > 0
        if xp is np:
            out[full] = np.maximum.reduceat(v, layout.offsets[:-1][full], axis=0)
        else:
            import cupyx

            seg = layout.segment_ids()
            cupyx.scatter_max(out, seg, v)
            if values.dtype.kind == "f":  # atomics need not propagate NaN: put it back
                nan = xp.zeros((S, F), xp.int32)
                cupyx.scatter_add(nan, seg, xp.isnan(v).astype(xp.int32))
                out[nan > 0] = xp.nan
    shape = (S,) + values.shape[1:]
    if not argmax:
        return out.reshape(shape), None
    arg = xp.full((S, F), -1, _int64)
    if n and S:
        seg = layout.segment_ids()
        m = out.take(seg, axis=0)
        hit = v == m
        if values.dtype.kind == "f":
            hit |= xp.isnan(v) & xp.isnan(m)
        col, row = xp.nonzero(xp.ascontiguousarray(hit.T))  # sorted by (col, row)
        s = seg[row]
        first = xp.ones(row.shape[0], bool)
        first[1:] = (s[1:] != s[:-1]) | (col[1:] != col[:-1])
        arg[s[first], col[first]] = row[first]
    return out.reshape(shape), arg.reshape(shape)


# ------------------------------------------------------------------------------------ softmax

def segment_softmax(values, layout):
    """Softmax over each sequence's rows, per column: ``exp(x - max) / sum`` (a compiled
    kernel registered as ``segment_softmax`` would make this one pass instead of seven)."""
    k = _kernel("segment_softmax", values)
    if k is not None:
        return k(values, layout.offsets)
    xp = layout.xp
    if _kernel("segment_max", values) is not None:
        m = segment_max(values, layout, 0.0)[0]
    else:
        m = segment_max_reference(values, layout, argmax=False)[0]
    e = values - segment_expand(m, layout)
    xp.exp(e, out=e)
    e /= segment_expand(segment_sum(e, layout), layout)
    return e


class ArgIndex:
    """Where ``argmax`` (batch, *F; -1 for empty) points in a flat (n * F) array:
    ``flat[k]`` for the selected entries ``sel`` (None: all of them). The flat positions
    are distinct (one row per sequence and column), so scattering to them is an
    assignment, never an accumulation."""

    __slots__ = ("flat", "sel", "n", "shape")

    def __init__(self, arg, n):
        xp = B.namespace(arg)
        a = _flat(arg)
        F = a.shape[1]
        flat = (a * F + xp.arange(F, dtype=_int64)).reshape(-1)
        ok = (a >= 0).reshape(-1)
        self.sel = None if bool(ok.all()) else xp.flatnonzero(ok)
        self.flat = flat if self.sel is None else flat[self.sel]
        self.n, self.shape = n, arg.shape

    def scatter(self, g):
        """(batch, *F) -> (n, *F): ``g`` at the argmax rows, zeros elsewhere."""
        xp = B.namespace(g)
        out = xp.zeros((self.n,) + g.shape[1:], g.dtype)
        src = g.reshape(-1)
        out.reshape(-1)[self.flat] = src if self.sel is None else src[self.sel]
        return out

    def gather(self, x):
        """(n, *F) -> (batch, *F): ``x`` at the argmax rows, 0 for empty sequences."""
        xp = B.namespace(x)
        vals = xp.ascontiguousarray(x).reshape(-1)[self.flat]
        if self.sel is None:
            return vals.reshape(self.shape)
        out = xp.zeros(_prod(self.shape), x.dtype)
        out[self.sel] = vals
        return out.reshape(self.shape)
