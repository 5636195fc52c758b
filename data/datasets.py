"""torch.utils.data's dataset classes: ``TensorDataset``, ``Subset``, ``ConcatDataset``,
``ChainDataset``, ``StackDataset`` and ``random_split``.

Map-style ones are ``MapDataPipe``s (``Dataset`` is ``MapDataPipe``), so they index, take
``len``, chain pipe methods and feed a ``DataLoader`` (samplers, ``shuffle``, workers).
``dataset + other`` is a ``ConcatDataset`` for map-style datasets and a ``ChainDataset`` for
iterable ones, as in torch.

    >>> import ember
    >>> from ember.data import ConcatDataset, TensorDataset, random_split
    >>> ds = TensorDataset(ember.arange(10), ember.arange(10) * 2)
    >>> x, y = ds[3]
    >>> int(x), int(y)
    (3, 6)
    >>> both = ds + TensorDataset(ember.arange(5), ember.zeros(5))
    >>> len(both), both.cumulative_sizes, int(both[12][0])
    (15, [10, 15], 2)
    >>> train, val = random_split(ds, [0.8, 0.2], generator=ember.Generator().manual_seed(0))
    >>> len(train), len(val), sorted(train.indices + val.indices) == list(range(10))
    (8, 2, True)
"""
from __future__ import annotations

import bisect
import itertools
import math
import numbers
import operator
import warnings

from .combine import Concater
from .pipe import DataPipe, IterDataPipe, MapDataPipe


def _len0(x):
    shape = getattr(x, "shape", None)
    if shape is not None:
        if len(shape) == 0:
            raise ValueError("TensorDataset: tensors must have a first dimension, got a 0-d "
                             "tensor")
        return shape[0]
    return len(x)


class TensorDataset(MapDataPipe):
    """Samples are ``tuple(t[i] for t in tensors)``; every tensor has the same first size.

    ``tensors``: ember Tensors (or numpy arrays); item ``i`` views row ``i`` of each."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [_len0(t) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes} differ")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return _len0(self.tensors[0])

    def describe(self):
        return f"TensorDataset({len(self.tensors)} tensors, len={len(self)})"


class Subset(MapDataPipe):
    """The items of ``dataset`` at ``indices``, in that order: ``Subset(ds, idx)[i] ==
    ds[idx[i]]``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def parents(self):
        return (self.dataset,) if isinstance(self.dataset, DataPipe) else ()

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        picked = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(picked)
        return [self.dataset[i] for i in picked]

    def __len__(self):
        return len(self.indices)

    def describe(self):
        return f"Subset(len={len(self)})"


class ConcatDataset(MapDataPipe):
    """The map-style ``datasets`` one after another. ``cumulative_sizes[k]`` is the total
    length of datasets 0..k; index ``i`` goes to the first dataset whose cumulative size
    exceeds it."""

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for k, d in enumerate(self.datasets):
            if isinstance(d, IterDataPipe):
                raise TypeError(f"ConcatDataset does not support IterableDataset (datasets[{k}]"
                                f" is a {type(d).__name__}); use ChainDataset")
            if not hasattr(d, "__getitem__") or not hasattr(d, "__len__"):
                raise TypeError(f"ConcatDataset: datasets[{k}] ({type(d).__name__}) needs "
                                "__getitem__ and __len__")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def parents(self):
        return tuple(d for d in self.datasets if isinstance(d, DataPipe))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        idx = operator.index(idx)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"ConcatDataset: absolute value of index {idx} should not "
                                 f"exceed dataset length {n}")
            idx += n
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} out of range for length {n}")
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx - (self.cumulative_sizes[k - 1] if k else 0)]

    def describe(self):
        return f"ConcatDataset({len(self.datasets)} datasets, len={len(self)})"


class ChainDataset(Concater):
    """The iterable ``datasets`` one after another (resumable like ``concat``)."""

    def __init__(self, datasets):
        datasets = list(datasets)
        for k, d in enumerate(datasets):
            if not isinstance(d, IterDataPipe):
                raise TypeError(f"ChainDataset only supports IterableDataset; datasets[{k}] "
                                f"is a {type(d).__name__}")
        super().__init__(*datasets)
        self.datasets = datasets


class StackDataset(MapDataPipe):
    """Item ``i`` is ``(a[i], b[i], ...)`` for ``StackDataset(a, b, ...)``, or ``{"x": a[i],
    ...}`` for ``StackDataset(x=a, ...)``; all datasets have one length."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give datasets either positionally (tuple samples) "
                             "or by keyword (dict samples), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset needs at least one dataset")
        self.datasets = args if args else kwargs
        items = args if args else kwargs.values()
        lengths = [len(d) for d in items]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"Size mismatch between datasets: lengths {lengths}")
        self._length = lengths[0]

    def parents(self):
        items = self.datasets.values() if isinstance(self.datasets, dict) else self.datasets
        return tuple(d for d in items if isinstance(d, DataPipe))

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


def _split_lengths(n, lengths):
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:  # fractions (torch's rule)
        counts = []
        for k, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {k} is not between 0 and 1 "
                                 f"({frac})")
            counts.append(int(math.floor(n * frac)))
        for k in range(n - sum(counts)):  # the remainder, one each, round-robin
            counts[k % len(counts)] += 1
        for k, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"random_split: split {k} has length 0 (an empty dataset)",
                              stacklevel=3)
        return counts
    if any(not isinstance(c, numbers.Integral) or c < 0 for c in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions "
                         f"summing to 1, got {list(lengths)}")
    if total != n:
        raise ValueError(f"random_split: sum of input lengths ({total}) does not equal the "
                         f"length of the input dataset ({n})")
    return [int(c) for c in lengths]


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given ``lengths`` (ints that
    sum to ``len(dataset)``, or fractions that sum to 1: each gets ``floor(n * f)`` items and
    the remainder is dealt one by one from the first split on). The permutation comes from
    ``generator`` (an ``ember.Generator``) or ember's default generator, so
    ``ember.manual_seed`` makes it repeatable."""
    import ember

    counts = _split_lengths(len(dataset), list(lengths))
    perm = ember.randperm(sum(counts), generator=generator).tolist()
    return [Subset(dataset, perm[end - c:end])
            for end, c in zip(itertools.accumulate(counts), counts)]
