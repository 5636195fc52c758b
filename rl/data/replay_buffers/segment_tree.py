"""Sum and min segment trees over a fixed number of leaves, vectorised with numpy.

The tree is one float64 array of ``2 * size`` nodes (``size``: the capacity rounded up to a
power of two); node ``i`` has children ``2i`` and ``2i + 1``, the root is node 1 and leaf ``j``
is node ``size + j``. Unused leaves hold the identity (0 for sums, +inf for mins).

Every operation is a handful of array operations per tree *level* (``log2(size)`` levels), each
over all the nodes touched on that level at once; nothing loops over nodes in Python:

* ``update(index, value)``: writes the leaves, then recomputes the distinct parents of the
  written nodes level by level (or rebuilds every level with one reduction per level when
  many leaves changed);
* ``scan_lower_bound(values)``: descends all queries together, one level per step: for each
  query the first leaf whose inclusive prefix sum exceeds the value;
* ``query(start, end)``: the sum/min over a leaf range.

    >>> import numpy as np
    >>> t = SumSegmentTree(5)
    >>> t[np.arange(5)] = np.array([1., 0., 2., 3., 4.])
    >>> t.query(0, 5), t.scan_lower_bound(np.array([0.5, 1.0, 2.9, 9.99])).tolist()
    (10.0, [0, 2, 2, 4])
"""
from __future__ import annotations

import numpy as np

__all__ = ["SumSegmentTree", "MinSegmentTree", "update_trees"]


class _SegmentTree:
    identity = 0.0

    def __init__(self, capacity):
        capacity = int(capacity)
        if capacity <= 0:
            raise ValueError(f"{type(self).__name__}: capacity must be > 0, got {capacity}")
        self.capacity = capacity
        size = 1
        while size < capacity:
            size *= 2
        self.size = size
        self.depth = size.bit_length() - 1
        self._tree = np.full(2 * size, self.identity, np.float64)
        self._hi = 0  # leaves at and after this index hold the identity

    # subclasses: the reduction of two child arrays
    @staticmethod
    def _op(a, b):
        raise NotImplementedError("a segment tree subclass must define _op(a, b)")

    def __len__(self):
        return self.capacity

    def _index(self, index):
        idx = np.asarray(index)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"{type(self).__name__}: indices must be integers, got {idx.dtype}")
        idx = idx.astype(np.int64, copy=False).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.capacity):
            raise IndexError(f"{type(self).__name__}: index out of range [0, {self.capacity}): "
                             f"{idx.min()}..{idx.max()}")
        return idx

    def __getitem__(self, index):
        scalar = np.ndim(index) == 0
        out = self._tree[self.size + self._index(index)]
        return float(out[0]) if scalar else out

    def __setitem__(self, index, value):
        self.update(index, value)

    def update(self, index, value):
        """Set leaves ``index`` to ``value`` (a scalar or one value per index; with repeated
        indices the last value wins) and refresh their ancestors."""
        idx, val = self._prepare(index, value)
        if idx.size:
            self._write(idx, val, None if idx.size * 4 >= self.size else parent_levels(
                idx, self.size))

    def _prepare(self, index, value):
        """``(sorted unique indices, their values)``, the last value of a repeated index."""
        idx = self._index(index)
        val = np.broadcast_to(np.asarray(value, np.float64).reshape(-1) if np.ndim(value) else
                              np.float64(value), idx.shape)
        if idx.size > 1:
            rev_unique, rev_pos = np.unique(idx[::-1], return_index=True)
            idx, val = rev_unique, val[idx.size - 1 - rev_pos]
        return idx, val

    def _write(self, idx, val, levels):
        """Write the leaves, then each level's distinct parents (``levels``, from
        ``parent_levels``), or rebuild every level when ``levels`` is None."""
        tree = self._tree
        tree[self.size + idx] = val
        self._hi = max(self._hi, int(idx[-1]) + 1)
        if levels is None:
            self._rebuild()
            return
        op = self._op
        for nodes, left, right in levels:
            tree[nodes] = op(tree[left], tree[right])

    def _rebuild(self):
        """Recompute every internal node from the leaves: one reduction per level."""
        tree = self._tree
        lo = self.size
        while lo > 1:
            children = tree[lo:2 * lo].reshape(-1, 2)
            tree[lo // 2:lo] = self._op(children[:, 0], children[:, 1])
            lo //= 2

    def set_leaves(self, values):
        """Replace all leaves (``capacity`` values) and rebuild."""
        values = np.asarray(values, np.float64).reshape(-1)
        if values.size != self.capacity:
            raise ValueError(f"{type(self).__name__}.set_leaves: expected {self.capacity} "
                             f"values, got {values.size}")
        self._tree[self.size:self.size + self.capacity] = values
        self._tree[self.size + self.capacity:] = self.identity
        self._hi = self.capacity
        self._rebuild()

    def leaves(self):
        """A copy of the ``capacity`` leaf values."""
        return self._tree[self.size:self.size + self.capacity].copy()

    def query(self, start=0, end=None):
        """The reduction over leaves ``[start, end)`` (``log2`` steps over two scalars)."""
        end = self.capacity if end is None else int(end)
        start = int(start)
        if not 0 <= start <= end <= self.capacity:
            raise IndexError(f"{type(self).__name__}.query: bad range [{start}, {end}) for "
                             f"capacity {self.capacity}")
        if start == 0 and end >= self._hi:  # the rest of the leaves are the identity
            return float(self._tree[1])
        tree = self._tree
        res = self.identity
        lo, hi = start + self.size, end + self.size
        while lo < hi:
            if lo & 1:
                res = float(self._op(res, tree[lo]))
                lo += 1
            if hi & 1:
                hi -= 1
                res = float(self._op(res, tree[hi]))
            lo >>= 1
            hi >>= 1
        return res

    def _empty(self):
        self._tree.fill(self.identity)
        self._hi = 0


def _dedupe_sorted(a):
    keep = np.empty(a.shape, np.bool_)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def parent_levels(idx, size):
    """For sorted unique leaf indices: per level, bottom-up, ``(nodes, left, right)`` of the
    distinct ancestors to recompute (a sorted array stays sorted when halved, so removing
    repeats is one comparison with the neighbour). Shared by trees of one size."""
    levels = []
    nodes = _dedupe_sorted((idx + size) >> 1)
    while nodes.size and nodes[-1] >= 1:
        left = nodes << 1
        levels.append((nodes, left, left + 1))
        if nodes[0] == 1:
            break
        nodes = _dedupe_sorted(nodes >> 1)
    return levels


def update_trees(trees, index, value):
    """``update`` every tree in ``trees`` (all of one capacity) with the ancestors computed
    once."""
    idx, val = trees[0]._prepare(index, value)
    if idx.size:
        levels = None if idx.size * 4 >= trees[0].size else parent_levels(idx, trees[0].size)
        for t in trees:
            t._write(idx, val, levels)


class SumSegmentTree(_SegmentTree):
    """Sums over leaf ranges, and ``scan_lower_bound`` for sampling proportionally to them."""

    identity = 0.0

    @staticmethod
    def _op(a, b):
        return a + b

    def scan_lower_bound(self, values):
        """For every ``v`` in ``values``: the first leaf ``i`` whose prefix sum
        ``sum(leaves[:i + 1])`` is greater than ``v`` (the last leaf for ``v >= total``)."""
        v = np.array(values, np.float64, copy=True).reshape(-1)
        nodes = np.ones(v.shape, np.int64)
        tree = self._tree
        lv = np.empty_like(v)
        right = np.empty(v.shape, np.bool_)
        for _ in range(self.depth):
            nodes <<= 1
            np.take(tree, nodes, out=lv)
            np.greater_equal(v, lv, out=right)
            lv *= right
            v -= lv
            nodes += right
        return np.minimum(nodes - self.size, self.capacity - 1)


class MinSegmentTree(_SegmentTree):
    """Minima over leaf ranges."""

    identity = np.inf

    @staticmethod
    def _op(a, b):
        return np.minimum(a, b)
