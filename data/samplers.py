"""Samplers: the order in which a DataLoader reads a map-style dataset.

Random samplers draw one seed per pass (from ``generator``, an ``ember.Generator``, or
ember's default generator) and derive the whole pass from it; ``state_dict()`` returns that
seed, and ``load_state_dict`` makes the next pass repeat it, which is how a DataLoader
resumes mid-epoch (it then skips the batches already delivered, without loading them).

    >>> import ember
    >>> from ember.data import BatchSampler, RandomSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    >>> g = ember.Generator().manual_seed(0)
    >>> sorted(RandomSampler(range(5), generator=g)) == [0, 1, 2, 3, 4]
    True
"""
from __future__ import annotations

import os

import numpy as np


class Sampler:
    """Base class: ``__iter__`` yields dataset indices; ``__len__`` their number."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__, yielding "
                                  "dataset indices")

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class _Seeded(Sampler):
    """A sampler whose pass is a function of one seed (drawn per pass unless fixed)."""

    def __init__(self, generator=None):
        self.generator = generator
        self._next_seed = None  # a seed fixed by set_seed/load_state_dict
        self._seed = None       # the seed of the current pass

    def set_seed(self, seed):
        """Use ``seed`` for the next pass (the DataLoader sets one per epoch)."""
        self._next_seed = int(seed)

    def _rng(self):
        if self._next_seed is not None:
            seed, self._next_seed = self._next_seed, None
        else:
            from .seeding import fresh_seed

            seed = (int(self.generator.numpy_generator().integers(2 ** 63))
                    if self.generator is not None else fresh_seed())
        self._seed = seed
        return np.random.Generator(np.random.PCG64(seed))

    def state_dict(self):
        return {"seed": self._seed}

    def load_state_dict(self, state):
        if state.get("seed") is not None:
            self._next_seed = state["seed"]


class RandomSampler(_Seeded):
    """A random permutation (or ``num_samples`` draws with ``replacement``)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(generator)
        self.data_source, self.replacement = data_source, replacement
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = self._rng()
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        reps = -(-self.num_samples // n) if n else 0
        idx = np.concatenate([rng.permutation(n) for _ in range(reps)]) if reps else []
        return iter(np.asarray(idx, np.int64)[:self.num_samples].tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(_Seeded):
    """The given ``indices`` in a random order."""

    def __init__(self, indices, generator=None):
        super().__init__(generator)
        self.indices = list(indices)

    def __iter__(self):
        perm = self._rng().permutation(len(self.indices))
        return iter([self.indices[i] for i in perm])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(_Seeded):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        super().__init__(generator)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, np.float64)
        if w.ndim != 1 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("weights must be a 1-d sequence of finite, non-negative numbers "
                             "with a positive sum")
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
        if not replacement and num_samples > int((w > 0).sum()):
            raise ValueError("num_samples exceeds the number of non-zero weights "
                             "(needed without replacement)")
        self.weights, self.num_samples, self.replacement = w, num_samples, replacement

    def __iter__(self):
        p = self.weights / self.weights.sum()
        idx = self._rng().choice(len(p), self.num_samples, replace=self.replacement, p=p)
        return iter(idx.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``."""

    def __init__(self, sampler, batch_size, drop_last=False):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def state_dict(self):
        return self.sampler.state_dict() if hasattr(self.sampler, "state_dict") else {}

    def load_state_dict(self, state):
        if hasattr(self.sampler, "load_state_dict"):
            self.sampler.load_state_dict(state)


def _dist_default(name, env):
    try:
        import ember.distributed as dist  # present once the distributed issue lands

        if dist.is_initialized():
            return dist.get_world_size() if name == "world" else dist.get_rank()
    except Exception:
        pass
    return int(os.environ.get(env, 1 if name == "world" else 0))


class DistributedSampler(Sampler):
    """This rank's share of the dataset: a permutation seeded by ``seed + epoch`` (call
    ``set_epoch`` each epoch), padded by repetition to a multiple of ``num_replicas``
    (or truncated with ``drop_last``), then every ``num_replicas``-th index from ``rank``."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        self.num_replicas = _dist_default("world", "WORLD_SIZE") if num_replicas is None \
            else num_replicas
        self.rank = _dist_default("rank", "RANK") if rank is None else rank
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"rank {self.rank} out of range for num_replicas "
                             f"{self.num_replicas}")
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = n // self.num_replicas
        else:
            self.num_samples = -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            rng = np.random.Generator(np.random.PCG64(self.seed + self.epoch))
            idx = rng.permutation(n).tolist()
        else:
            idx = list(range(n))
        if self.drop_last:
            idx = idx[:self.total_size]
        elif self.total_size > len(idx):
            pad = self.total_size - len(idx)
            idx += (idx * (-(-pad // len(idx))))[:pad]
        return iter(idx[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def state_dict(self):
        return {"epoch": self.epoch}

    def load_state_dict(self, state):
        self.epoch = state.get("epoch", self.epoch)
