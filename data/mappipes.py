"""Map-style pipes: ``SequenceWrapper`` and ``map``, ``batch``, ``shuffle``, ``concat``,
``zip``, ``to_iter``.

    >>> from ember.data import SequenceWrapper
    >>> dp = SequenceWrapper(range(5)).map(lambda x: x * 2)
    >>> dp[3], len(dp), dp.batch(2)[2]
    (6, 5, [8])
    >>> (SequenceWrapper([1, 2]) + SequenceWrapper([3]))[2]
    3
    >>> list(SequenceWrapper("abc").zip(SequenceWrapper([1, 2, 3])).to_iter())
    [('a', 1), ('b', 2), ('c', 3)]
"""
from __future__ import annotations

import bisect
import random

from .pipe import IterDataPipe, MapDataPipe, PipeIter, register
from .seeding import fresh_seed


def _index(i, n, name):
    if not isinstance(i, int) and not hasattr(i, "__index__"):
        raise TypeError(f"{name}: index must be an int, got {type(i).__name__}")
    i = int(i)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"{name}: index {i} out of range for length {n}")
    return i


class SequenceWrapper(MapDataPipe):
    """Wrap a sequence (anything with ``__getitem__`` and ``__len__``) as a ``MapDataPipe``."""

    def __init__(self, sequence):
        if not hasattr(sequence, "__getitem__") or not hasattr(sequence, "__len__"):
            raise TypeError(f"SequenceWrapper needs __getitem__ and __len__, got "
                            f"{type(sequence).__name__}")
        self.sequence = sequence

    def __getitem__(self, i):
        return self.sequence[i]

    def __len__(self):
        return len(self.sequence)

    def describe(self):
        return f"SequenceWrapper({type(self.sequence).__name__}, len={len(self.sequence)})"


@register("map", kind="map")
class MapMapper(MapDataPipe):
    """``fn(source[i])``."""

    def __init__(self, source, fn):
        if not callable(fn):
            raise TypeError(f"map: fn must be callable, got {type(fn).__name__}")
        self.source, self.fn = source, fn

    def __getitem__(self, i):
        return self.fn(self.source[i])

    def __len__(self):
        return len(self.source)

    def describe(self):
        return f"MapMapper(fn={getattr(self.fn, '__qualname__', type(self.fn).__name__)})"


@register("batch", kind="map")
class MapBatcher(MapDataPipe):
    """Item ``i`` is ``wrapper([source[j] for j in range(i*n, min((i+1)*n, len))])``."""

    def __init__(self, source, batch_size, drop_last=False, wrapper=list):
        if batch_size < 1:
            raise ValueError(f"batch: batch_size must be >= 1, got {batch_size}")
        self.source, self.batch_size, self.drop_last, self.wrapper = \
            source, batch_size, drop_last, wrapper

    def __getitem__(self, i):
        i = _index(i, len(self), "batch")
        n = self.batch_size
        out = [self.source[j] for j in range(i * n, min((i + 1) * n, len(self.source)))]
        return out if self.wrapper is list else self.wrapper(out)

    def __len__(self):
        n = len(self.source)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def describe(self):
        return f"MapBatcher(batch_size={self.batch_size})"


@register("concat", kind="map")
class MapConcater(MapDataPipe):
    """The items of each source, indexed one after another."""

    def __init__(self, *sources):
        for s in sources:
            if not isinstance(s, MapDataPipe):
                raise TypeError(f"concat: expected MapDataPipes, got {type(s).__name__}")
        self.sources = sources
        self._ends = []
        total = 0
        for s in sources:
            total += len(s)
            self._ends.append(total)

    def parents(self):
        return self.sources

    def __getitem__(self, i):
        i = _index(i, len(self), "concat")
        k = bisect.bisect_right(self._ends, i)
        start = self._ends[k - 1] if k else 0
        return self.sources[k][i - start]

    def __len__(self):
        return self._ends[-1] if self._ends else 0


@register("zip", kind="map")
class MapZipper(MapDataPipe):
    """``(a[i], b[i], ...)``; the length of the shortest source."""

    def __init__(self, *sources):
        for s in sources:
            if not isinstance(s, MapDataPipe):
                raise TypeError(f"zip: expected MapDataPipes, got {type(s).__name__}")
        self.sources = sources

    def parents(self):
        return self.sources

    def __getitem__(self, i):
        i = _index(i, len(self), "zip")
        return tuple(s[i] for s in self.sources)

    def __len__(self):
        return min(len(s) for s in self.sources)


@register("to_iter", kind="map")
class MapToIter(IterDataPipe):
    """The items of a map-style pipe in index order, as an iterable pipe (state: position)."""

    def __init__(self, source):
        self.source = source

    def __iter__(self):
        return _IndexIter(self, range(len(self.source)))

    def __len__(self):
        return len(self.source)


class _IndexIter(PipeIter):
    def __init__(self, pipe, order):
        self.pipe = pipe
        self.order = order
        self.i = 0

    def __next__(self):
        i = self.i
        if i >= len(self.order):
            raise StopIteration
        self.i = i + 1
        return self.pipe.source[self.order[i]]

    def state_dict(self):
        return {"i": self.i}

    def load_state_dict(self, state):
        self.i = state["i"]


@register("shuffle", kind="map")
class MapShuffler(IterDataPipe):
    """The items of a map-style pipe in a seeded random permutation, as an iterable pipe.
    ``seed`` None draws a fresh seed per iteration; state: the seed and the position."""

    def __init__(self, source, seed=None, enabled=True):
        self.source, self.seed, self.enabled = source, seed, enabled

    def set_seed(self, seed):
        self.seed = seed
        return self

    def set_enabled(self, enabled=True):
        self.enabled = bool(enabled)
        return self

    def __iter__(self):
        return _PermIter(self)

    def __len__(self):
        return len(self.source)

    def describe(self):
        return "MapShuffler(" + ("permutation" if self.enabled else "off") + ")"


class _PermIter(_IndexIter):
    def __init__(self, pipe, seed=None):
        self.seed = seed if seed is not None else (
            pipe.seed if pipe.seed is not None else fresh_seed())
        order = list(range(len(pipe.source)))
        if pipe.enabled:
            random.Random(self.seed).shuffle(order)
        super().__init__(pipe, order)

    def state_dict(self):
        return {"i": self.i, "seed": self.seed}

    def load_state_dict(self, state):
        if state["seed"] != self.seed:
            self.__init__(self.pipe, state["seed"])
        self.i = state["i"]


