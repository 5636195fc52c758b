"""``RandomRecDataset``: synthetic recommender batches for benchmarks and smoke runs
(torchrec's interface), with given pooling factors.

Each batch: ``dense_features`` (B, num_dense) standard normal float32, ``labels`` (B,) 0/1
int64, ``sparse_features`` a KJT of ``keys``; feature k has ``ids_per_features[k]`` ids per
batch entry (or a number uniform in [``min_ids_per_features[k]``, ``ids_per_features[k]``]),
ids uniform in [0, ``hash_sizes[k]``). ``num_generated_batches`` distinct batches are made
once and cycled (negative: a new batch each time); ``num_batches`` ends the epoch (None:
endless). Seeded by ``manual_seed``: the same seed gives the same batches.

    >>> ds = RandomRecDataset(keys=["f1", "f2"], batch_size=4, hash_sizes=[10, 20],
    ...                       ids_per_features=[2, 3], num_dense=5, manual_seed=0,
    ...                       num_batches=3)
    >>> b = next(iter(ds))
    >>> b.dense_features.shape, b.labels.shape, b.sparse_features.length_per_key()
    ((4, 5), (4,), [8, 12])
    >>> len(list(ds))
    3
"""
from __future__ import annotations

import numpy as np

from ember.data.pipe import IterDataPipe, PipeIter

from .utils import Batch

__all__ = ["RandomRecDataset"]


def _per_key(name, one, many, keys, default):
    if many is None:
        one = default if one is None else one
        many = [one] * len(keys)
    many = [int(x) for x in many]
    if len(many) != len(keys):
        raise ValueError(f"RandomRecDataset: {name} has {len(many)} entries for {len(keys)} "
                         f"keys")
    return many


class RandomRecDataset(IterDataPipe):
    """See the module docstring. Arguments as torchrec's ``RandomRecDataset``, plus
    ``min_ids_per_features`` (variable pooling factors)."""

    def __init__(self, keys, batch_size, hash_size=100, hash_sizes=None, ids_per_feature=2,
                 ids_per_features=None, num_dense=50, manual_seed=None, num_batches=None,
                 num_generated_batches=10, min_ids_per_features=None):
        self.keys = list(keys)
        if not self.keys:
            raise ValueError("RandomRecDataset: keys is empty")
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"RandomRecDataset: batch_size must be >= 1, got {batch_size}")
        self.hash_sizes = _per_key("hash_sizes", hash_size, hash_sizes, self.keys, 100)
        self.ids_per_features = _per_key("ids_per_features", ids_per_feature,
                                         ids_per_features, self.keys, 2)
        self.min_ids_per_features = list(self.ids_per_features) if min_ids_per_features \
            is None else _per_key("min_ids_per_features", None, min_ids_per_features,
                                  self.keys, 0)
        for k, lo, hi, h in zip(self.keys, self.min_ids_per_features, self.ids_per_features,
                                self.hash_sizes):
            if not 0 <= lo <= hi or h < 1:
                raise ValueError(f"RandomRecDataset: feature {k!r} needs 0 <= "
                                 f"min_ids ({lo}) <= ids ({hi}) and hash_size ({h}) >= 1")
        self.num_dense = int(num_dense)
        self.manual_seed = manual_seed
        self.num_batches = None if num_batches is None else int(num_batches)
        self.num_generated_batches = int(num_generated_batches)
        self._cache = None

    def __len__(self):
        if self.num_batches is None:
            raise TypeError("RandomRecDataset without num_batches is endless")
        return self.num_batches

    def generate_batch(self, rng):
        """One batch drawn from ``rng`` (a numpy Generator)."""
        import ember
        from ..sparse import KeyedJaggedTensor

        B = self.batch_size
        vals, lens = [], []
        for h, lo, hi in zip(self.hash_sizes, self.min_ids_per_features,
                             self.ids_per_features):
            ln = np.full(B, hi, np.int64) if lo == hi else rng.integers(lo, hi + 1, B)
            lens.append(ln)
            vals.append(rng.integers(0, h, int(ln.sum())))
        kjt = KeyedJaggedTensor.from_lengths_sync(
            self.keys, ember.from_numpy(np.concatenate(vals).astype(np.int64)),
            ember.from_numpy(np.concatenate(lens)))
        dense = rng.standard_normal((B, self.num_dense), dtype=np.float32)
        labels = rng.integers(0, 2, B)
        return Batch(ember.from_numpy(dense), kjt, ember.from_numpy(labels))

    def _batches(self):
        if self._cache is None:
            rng = np.random.default_rng(self.manual_seed)
            self._cache = [self.generate_batch(rng)
                           for _ in range(max(self.num_generated_batches, 0))]
        return self._cache

    def __iter__(self):
        return _RandomIter(self)

    def describe(self):
        return (f"RandomRecDataset({len(self.keys)} keys, batch_size={self.batch_size}, "
                f"num_batches={self.num_batches})")


class _RandomIter(PipeIter):
    """State: the number of batches given (and, when generating on the fly, the RNG's)."""

    def __init__(self, pipe):
        self.pipe, self.i = pipe, 0
        self.rng = np.random.default_rng(pipe.manual_seed) \
            if pipe.num_generated_batches < 0 else None

    def __next__(self):
        p = self.pipe
        if p.num_batches is not None and self.i >= p.num_batches:
            raise StopIteration
        if self.rng is not None:
            b = p.generate_batch(self.rng)
        else:
            cache = p._batches()
            if not cache:
                raise StopIteration
            b = cache[self.i % len(cache)]
        self.i += 1
        return b

    def state_dict(self):
        s = {"i": self.i}
        if self.rng is not None:
            s["rng"] = self.rng.bit_generator.state
        return s

    def load_state_dict(self, state):
        self.i = int(state["i"])
        if self.rng is not None and "rng" in state:
            self.rng.bit_generator.state = state["rng"]
