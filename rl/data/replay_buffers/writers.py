"""Replay-buffer writers: which storage rows new data goes to (as torchrl's ``writers``).

``RoundRobinWriter`` writes at a cursor that wraps around ``max_size``: once the storage is
full the oldest rows are overwritten first. ``TensorDictRoundRobinWriter`` does the same and
also stores each row's index under ``"index"`` (what ``TensorDictReplayBuffer`` uses).

    >>> import ember
    >>> from ember.rl.data import LazyTensorStorage
    >>> w = RoundRobinWriter(); w.register_storage(LazyTensorStorage(3))
    >>> w.extend(ember.zeros(5, 2)).tolist(), w._cursor
    ([2, 0, 1], 2)
"""
from __future__ import annotations

import os

import numpy as np

from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict

from ._utils import atomic_json, read_json

__all__ = ["Writer", "RoundRobinWriter", "TensorDictRoundRobinWriter"]


def _len(data):
    if isinstance(data, TensorDict):
        if not data.batch_size:
            raise ValueError("extend: the TensorDict needs a batch dim to extend along (use add "
                             "for a single item)")
        return data.batch_size[0]
    if isinstance(data, (Tensor, np.ndarray)):
        if data.ndim == 0:
            raise ValueError("extend: a 0-d tensor has no items to extend with (use add)")
        return data.shape[0]
    return len(data)


class Writer:
    """Base of the writers: ``add(data) -> index``, ``extend(data) -> indices``."""

    def __init__(self):
        self._storage = None
        self._cursor = 0
        self._write_count = 0

    def register_storage(self, storage):
        self._storage = storage

    def _need_storage(self):
        if self._storage is None:
            raise RuntimeError(f"{type(self).__name__}: no storage registered")
        return self._storage

    def state_dict(self):
        return {"_cursor": self._cursor, "_write_count": self._write_count}

    def load_state_dict(self, state_dict):
        self._cursor = int(state_dict["_cursor"])
        self._write_count = int(state_dict.get("_write_count", 0))

    def dumps(self, path):
        os.makedirs(path, exist_ok=True)
        atomic_json(os.path.join(path, "writer_metadata.json"),
                    {"type": type(self).__name__, **self.state_dict()})

    def loads(self, path):
        self.load_state_dict(read_json(os.path.join(path, "writer_metadata.json"),
                                       f"{type(self).__name__}.loads"))

    def _empty(self):
        self._cursor = 0
        self._write_count = 0

    def __repr__(self):
        return f"{type(self).__name__}(cursor={self._cursor}, full_storage={self._full()})"

    def _full(self):
        return self._storage is not None and len(self._storage) == self._storage.max_size


class RoundRobinWriter(Writer):
    """Write at the cursor, wrapping around the storage's ``max_size``."""

    def add(self, data):
        storage = self._need_storage()
        index = self._cursor
        storage.set(index, self._prepare(data, index))
        self._cursor = (index + 1) % storage.max_size
        self._write_count += 1
        return index

    def extend(self, data):
        storage = self._need_storage()
        n = _len(data)
        cap = storage.max_size
        index = (self._cursor + np.arange(n, dtype=np.int64)) % cap
        if n > cap:  # only the last max_size items survive
            data = data[n - cap:]
            index = index[n - cap:]
        self._cursor = (self._cursor + n) % cap
        self._write_count += n
        if n:
            storage.set(index, self._prepare(data, index))
        return Tensor._make(index)

    def _prepare(self, data, index):
        return data


class TensorDictRoundRobinWriter(RoundRobinWriter):
    """A ``RoundRobinWriter`` that writes each row's storage index under ``"index"``."""

    def _prepare(self, data, index):
        if isinstance(data, TensorDict):
            data = data.clone(recurse=False)
            data.set("index", Tensor._make(np.asarray(index, np.int64).reshape(
                data.batch_size[:1])))
        return data
