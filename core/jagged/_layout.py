"""The layout of a jagged batch: offsets plus everything derived from them, computed once.

A ``Layout`` belongs to one device (its arrays live there) and is shared by every jagged
tensor with the same sequence lengths: ``jt.apply(fn)``, ``jt.detach()`` and the results of
the segment ops reuse their input's layout, so the derived index arrays (segment id of each
row, position of each row in its sequence, the padded <-> packed index maps per padded
length) are built on first use and then reused. Treat its arrays as read-only.
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B

_int64 = np.dtype(np.int64)


def _host(array):
    """``array`` as a numpy array (a device -> host copy for cupy)."""
    return array if type(array) is np.ndarray else B.to_device(array, B.device("cpu"))


def _readonly(a):
    if type(a) is np.ndarray:
        a.flags.writeable = False
    return a


def _as_index_array(x, what, xp):
    """A 1-D int64 array (a private copy) from a Tensor, an array or a sequence of ints."""
    from .._tensor import Tensor

    a = x.array if isinstance(x, Tensor) else x
    if type(a) is not np.ndarray and not B.is_cuda_array(a):
        a = np.asarray(a)
        if a.size == 0 and a.dtype.kind == "f":  # ``[]`` reads as float64: an empty index
            a = a.astype(_int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"JaggedTensor: {what} must hold integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"JaggedTensor: {what} must be 1-D, got shape {tuple(a.shape)}")
    if xp is np:
        return _host(a).astype(_int64)  # astype copies: later changes to ``x`` can't leak in
    return xp.array(a, dtype=_int64)


def check_offsets(off, n):
    """Raise a ValueError naming the first problem with host offsets ``off`` for ``n`` rows."""
    if off.shape[0] < 1:
        raise ValueError("JaggedTensor: offsets must have batch_size + 1 >= 1 entries, got an "
                         "empty array")
    if off[0] != 0:
        raise ValueError(f"JaggedTensor: offsets must start at 0, got offsets[0] = {int(off[0])}")
    d = np.diff(off)
    if d.size and d.min() < 0:
        i = int(np.argmax(d < 0))
        raise ValueError(f"JaggedTensor: offsets must be non-decreasing, got offsets[{i}] = "
                         f"{int(off[i])} > offsets[{i + 1}] = {int(off[i + 1])}")
    if off[-1] != n:
        raise ValueError(f"JaggedTensor: offsets[-1] = {int(off[-1])} must equal the number of "
                         f"values ({n}, values.shape[0])")


def check_lengths(lengths, n):
    if lengths.size and lengths.min() < 0:
        i = int(np.argmax(lengths < 0))
        raise ValueError(f"JaggedTensor: lengths must be >= 0, got lengths[{i}] = "
                         f"{int(lengths[i])}")
    total = int(lengths.sum())
    if total != n:
        raise ValueError(f"JaggedTensor: lengths sum to {total} but there are {n} values "
                         "(values.shape[0])")


class PadMap:
    """Index maps between the packed rows and a padded (batch, length) grid, for one length.

    ``slots``: flat slot (``b * length + t``) of each packed row kept in the grid; ``rows``:
    those rows' indices, or None when every row fits (``length >= max_length``). The grid's
    other slots are padding. ``jagged_to_padded`` / ``padded_to_jagged`` (built on first
    call): each row's slot or -1 (cut off), each slot's row or -1 (padding)."""

    __slots__ = ("length", "slots", "rows", "_p2j", "_j2p")

    def __init__(self, layout, length):
        xp = layout.xp
        self.length = length
        seg, pos = layout.segment_ids(), layout.positions()
        slots = seg * length + pos
        rows = None
        if length < layout.max_length:
            rows = xp.flatnonzero(pos < length)
            slots = slots[rows]
        self.slots, self._p2j, self._j2p = _readonly(slots), None, None
        self.rows = None if rows is None else _readonly(rows)

    def jagged_to_padded(self, layout):
        if self.rows is None:
            return self.slots
        if self._j2p is None:
            j2p = layout.xp.full(layout.n, -1, _int64)
            j2p[self.rows] = self.slots
            self._j2p = _readonly(j2p)
        return self._j2p

    def padded_to_jagged(self, layout):
        if self._p2j is None:
            xp = layout.xp
            p2j = xp.full(layout.batch_size * self.length, -1, _int64)
            p2j[self.slots] = xp.arange(layout.n, dtype=_int64) if self.rows is None \
                else self.rows
            self._p2j = _readonly(p2j)
        return self._p2j


class Layout:
    """Offsets (int64, on the values' device) of ``batch_size`` sequences over ``n`` rows."""

    __slots__ = ("offsets", "n", "xp", "_host", "_lengths", "_seg", "_pos", "_max", "_maps",
                 "_mask")

    def __init__(self, offsets, n):
        self.offsets = _readonly(offsets)
        self.n = n
        self.xp = B.namespace(offsets)
        self._host = self._lengths = self._seg = self._pos = self._max = None
        self._maps = {}
        self._mask = {}

    @classmethod
    def build(cls, n, offsets=None, lengths=None, *, xp=np, validate=True):
        """From ``offsets`` or ``lengths`` (either or both; both must agree) for ``n`` rows
        (None: as many as the offsets or lengths say)."""
        if offsets is None and lengths is None:
            raise TypeError("JaggedTensor: give offsets or lengths")
        off = None if offsets is None else _as_index_array(offsets, "offsets", xp)
        lens = None if lengths is None else _as_index_array(lengths, "lengths", xp)
        if n is None:
            n = int(_host(off)[-1]) if off is not None and off.shape[0] else \
                int(_host(lens).sum()) if lens is not None else 0
        if validate:
            if lens is not None:
                check_lengths(_host(lens), n)
            if off is not None:
                check_offsets(_host(off), n)
        if off is None:
            off = xp.zeros(lens.shape[0] + 1, _int64)
            xp.cumsum(lens, out=off[1:])
        elif lens is not None:
            if lens.shape[0] != off.shape[0] - 1 or bool((xp.diff(off) != lens).any()):
                raise ValueError("JaggedTensor: lengths and offsets disagree (lengths must be "
                                 "offsets[1:] - offsets[:-1])")
        out = cls(off, n)
        if lens is not None:
            out._lengths = _readonly(lens)
        return out

    # ------------------------------------------------------------------ derived, cached
    @property
    def batch_size(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def host_offsets(self):
        if self._host is None:
            self._host = self.offsets if self.xp is np else _readonly(_host(self.offsets))
        return self._host

    @property
    def lengths(self):
        if self._lengths is None:
            self._lengths = _readonly(self.xp.diff(self.offsets))
        return self._lengths

    @property
    def max_length(self) -> int:
        if self._max is None:
            h = self.host_offsets
            self._max = int(np.diff(h).max()) if h.shape[0] > 1 else 0
        return self._max

    def segment_ids(self):
        """The sequence index of each row: (n,) int64."""
        if self._seg is None:
            xp, S = self.xp, self.batch_size
            if xp is np:
                seg = np.repeat(np.arange(S, dtype=_int64), self.lengths)
            else:  # cupy.repeat takes no array of counts
                seg = xp.searchsorted(self.offsets[1:], xp.arange(self.n, dtype=_int64),
                                      side="right").astype(_int64)
            self._seg = _readonly(seg)
        return self._seg

    def positions(self):
        """The position of each row within its sequence: (n,) int64."""
        if self._pos is None:
            xp = self.xp
            pos = xp.arange(self.n, dtype=_int64)
            pos -= self.offsets[:-1][self.segment_ids()] if self.n else 0
            self._pos = _readonly(pos)
        return self._pos

    def pad_map(self, length=None) -> PadMap:
        length = self.max_length if length is None else int(length)
        if length < 0:
            raise ValueError(f"JaggedTensor: max_length must be >= 0, got {length}")
        m = self._maps.get(length)
        if m is None:
            m = self._maps[length] = PadMap(self, length)
        return m

    def mask(self, length=None):
        """(batch, length) bool: True at the slots holding a value."""
        length = self.max_length if length is None else int(length)
        m = self._mask.get(length)
        if m is None:
            xp = self.xp
            m = xp.arange(length, dtype=_int64)[None, :] < self.lengths[:, None]
            m = self._mask[length] = _readonly(m)
        return m

    def slice(self, start, stop):
        """The layout of sequences ``start:stop`` (offsets rebased to 0) and the row range."""
        h = self.host_offsets
        r0, r1 = int(h[start]), int(h[stop])
        off = self.offsets[start:stop + 1] - r0
        return Layout(off, r1 - r0), r0, r1

    def to(self, dev):
        """This layout on device ``dev`` (itself when already there)."""
        if B.device_of(self.offsets) == dev:
            return self
        out = Layout(B.to_device(self.offsets, dev), self.n)
        out._max = self._max
        return out
