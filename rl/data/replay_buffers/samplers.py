"""Replay-buffer samplers: ``Sampler``, ``RandomSampler`` and ``SamplerWithoutReplacement``
(as torchrl's); the prioritized and slice samplers have their own files.

A sampler's ``sample(storage, batch_size)`` returns ``(index, info)``: int64 numpy indices
into the storage, and a dict of extra per-sample values (``"_weight"`` for prioritized
sampling). Random draws come from ``self._generator`` (an ``ember.Generator`` set by the
replay buffer's ``generator=``), else from ember's default generator, so ``ember.manual_seed``
makes a run reproducible.

    >>> import ember
    >>> from ember.rl.data import LazyTensorStorage
    >>> s = LazyTensorStorage(10); s.set(ember.arange(10), ember.arange(10.))
    >>> sampler = SamplerWithoutReplacement(shuffle=False)
    >>> [sampler.sample(s, 4)[0].tolist() for _ in range(3)]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""
from __future__ import annotations

import os

import numpy as np

from ._utils import EMPTY_STORAGE_ERROR, atomic_json, np_generator, read_json

__all__ = ["Sampler", "RandomSampler", "SamplerWithoutReplacement"]


class Sampler:
    """Base of the samplers. ``add``/``extend`` are told which rows were written,
    ``update_priority`` is a no-op unless the sampler uses priorities."""

    _generator = None

    def sample(self, storage, batch_size):
        raise NotImplementedError(f"{type(self).__name__} must define sample(storage, batch_size)")

    def add(self, index):
        pass

    def extend(self, index):
        pass

    def update_priority(self, index, priority):
        pass

    def mark_update(self, index):
        pass

    @property
    def default_priority(self):
        return 1.0

    @property
    def ran_out(self):
        return False

    def _rng(self):
        return np_generator(self._generator)

    def _empty(self):
        pass

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass

    def dumps(self, path):
        os.makedirs(path, exist_ok=True)
        atomic_json(os.path.join(path, "sampler_metadata.json"),
                    {"type": type(self).__name__, **self._json_state()})

    def loads(self, path):
        meta = read_json(os.path.join(path, "sampler_metadata.json"),
                         f"{type(self).__name__}.loads")
        if meta.get("type") != type(self).__name__:
            raise ValueError(f"{type(self).__name__}.loads: {path} holds the state of a "
                             f"{meta.get('type')}")
        self._load_json_state(meta)

    def _json_state(self):
        return {}

    def _load_json_state(self, meta):
        pass

    def __repr__(self):
        return f"{type(self).__name__}()"


class RandomSampler(Sampler):
    """Uniform sampling with replacement over the stored rows."""

    def sample(self, storage, batch_size):
        n = len(storage)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        return self._rng().integers(0, n, int(batch_size), dtype=np.int64), {}


class SamplerWithoutReplacement(Sampler):
    """Walks a permutation of the stored rows (``shuffle=False``: in storage order), so no row
    repeats until every row was drawn. When the permutation runs out a new one starts; with
    ``drop_last`` a final short batch is not returned (``ran_out`` turns True one batch
    earlier) and a batch larger than the storage is an error. A change of the storage's size
    restarts the permutation."""

    def __init__(self, drop_last=False, shuffle=True):
        self.drop_last = bool(drop_last)
        self.shuffle = bool(shuffle)
        self._sample_list = None
        self.len_storage = 0
        self._ran_out = False

    @property
    def ran_out(self):
        return self._ran_out

    @ran_out.setter
    def ran_out(self, value):
        self._ran_out = bool(value)

    def _new_list(self, n):
        self._sample_list = (self._rng().permutation(n).astype(np.int64) if self.shuffle
                             else np.arange(n, dtype=np.int64))

    def sample(self, storage, batch_size):
        n = len(storage)
        batch_size = int(batch_size)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        if self.drop_last and batch_size > n:
            raise ValueError(f"SamplerWithoutReplacement: batch_size {batch_size} is larger "
                             f"than the {n} stored items, so drop_last=True can never return a "
                             "batch; use drop_last=False or another sampler")
        if self._sample_list is None or self.len_storage != n:
            self._new_list(n)
        self.len_storage = n
        if self.drop_last and len(self._sample_list) < batch_size:
            self._new_list(n)
        index = self._sample_list[:batch_size]
        self._sample_list = self._sample_list[batch_size:]
        if len(self._sample_list) == 0 or (self.drop_last and
                                           len(self._sample_list) < batch_size):
            self._ran_out = True
            self._new_list(n)
        else:
            self._ran_out = False
        return index, {}

    def _empty(self):
        self._sample_list = None
        self.len_storage = 0
        self._ran_out = False

    def state_dict(self):
        return {"len_storage": self.len_storage,
                "_sample_list": None if self._sample_list is None else self._sample_list.copy(),
                "drop_last": self.drop_last, "_ran_out": self._ran_out}

    def load_state_dict(self, state_dict):
        self.len_storage = int(state_dict["len_storage"])
        sl = state_dict["_sample_list"]
        self._sample_list = None if sl is None else np.asarray(sl, np.int64)
        self.drop_last = bool(state_dict["drop_last"])
        self._ran_out = bool(state_dict["_ran_out"])

    def _json_state(self):
        st = self.state_dict()
        st["_sample_list"] = None if st["_sample_list"] is None else st["_sample_list"].tolist()
        st["shuffle"] = self.shuffle
        return st

    def _load_json_state(self, meta):
        self.load_state_dict(meta)
        self.shuffle = bool(meta.get("shuffle", self.shuffle))

    def __repr__(self):
        left = 0 if self._sample_list is None else len(self._sample_list)
        return (f"SamplerWithoutReplacement(drop_last={self.drop_last}, shuffle={self.shuffle}, "
                f"left={left})")
