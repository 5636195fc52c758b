"""Replay buffers: a storage, a sampler and a writer put together (as torchrl's
``ReplayBuffer``, ``PrioritizedReplayBuffer``, ``TensorDictReplayBuffer`` and
``TensorDictPrioritizedReplayBuffer``).

``dumps(path)`` checkpoints a whole buffer without pickle, atomically (written to a sibling
directory, then renamed into place)::

    path/buffer_metadata.json    {"type", "batch_size", "storage", "sampler", "writer"}
    path/storage/                the storage's dumps (TensorDict memmap layout + JSON)
    path/sampler/                the sampler's state (JSON; sum/min tree leaves as .npy)
    path/writer/                 the writer's cursor (JSON)

``loads(path)`` restores it into a buffer built with the same kinds of components (also in a
fresh process).

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> from ember.rl.data import LazyTensorStorage
    >>> rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
    >>> idx = rb.extend(TensorDict({"obs": ember.randn(10, 3)}, [10]))
    >>> len(rb), rb.sample()["obs"].shape, sorted(rb.sample().keys())
    (10, (4, 3), ['index', 'obs'])
"""
from __future__ import annotations

import os
import shutil

import numpy as np

import ember
from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict

from ._utils import as_index, atomic_json, read_json
from .prioritized import PrioritizedSampler
from .samplers import RandomSampler, Sampler
from .storages import ListStorage, Storage, TensorStorage
from .writers import RoundRobinWriter, TensorDictRoundRobinWriter, Writer

__all__ = ["ReplayBuffer", "PrioritizedReplayBuffer", "TensorDictReplayBuffer",
           "TensorDictPrioritizedReplayBuffer"]


def _default_collate(items):
    """Stack a list of items from a ``ListStorage`` (TensorDicts, tensors, arrays)."""
    if not isinstance(items, list):
        return items
    if items and all(isinstance(x, TensorDict) for x in items):
        from ember.rl.tensordict import stack
        return stack(items, 0)
    if items and all(isinstance(x, Tensor) for x in items):
        return ember.stack(items, 0)
    if items and all(isinstance(x, (np.ndarray, np.generic, int, float)) for x in items):
        return ember.tensor(np.stack([np.asarray(x) for x in items]))
    return items


def _identity(x):
    return x


class ReplayBuffer:
    """``ReplayBuffer(*, storage=None, sampler=None, writer=None, collate_fn=None,
    pin_memory=False, prefetch=None, transform=None, batch_size=None, dim_extend=None,
    generator=None)``.

    Defaults: ``ListStorage(1000)``, ``RandomSampler()``, ``RoundRobinWriter()``; ``collate_fn``
    stacks the items of a list storage (tensor storages return their rows as they are).
    ``transform`` (a callable, or use ``append_transform``) is applied to every sample.
    ``generator`` (an ``ember.Generator``) drives the sampler's draws. ``prefetch`` and
    ``pin_memory`` are accepted for compatibility: sampling runs in the calling thread.
    """

    _default_writer = RoundRobinWriter

    def __init__(self, *, storage=None, sampler=None, writer=None, collate_fn=None,
                 pin_memory=False, prefetch=None, transform=None, batch_size=None,
                 dim_extend=None, generator=None, shared=False, checkpointer=None):
        if dim_extend not in (None, 0):
            raise ValueError(f"ReplayBuffer: only dim_extend=0 is supported, got {dim_extend}")
        if shared:
            raise ValueError("ReplayBuffer: shared=True (a buffer shared across processes) is "
                             "not supported; use LazyMemmapStorage and one writer process")
        storage = storage if storage is not None else ListStorage(max_size=1_000)
        sampler = sampler if sampler is not None else RandomSampler()
        writer = writer if writer is not None else self._default_writer()
        for name, obj, base in (("storage", storage, Storage), ("sampler", sampler, Sampler),
                                ("writer", writer, Writer)):
            if not isinstance(obj, base):
                raise TypeError(f"{type(self).__name__}: {name} must be a {base.__name__}, got "
                                f"{type(obj).__name__}")
        self._storage = storage
        self._sampler = sampler
        self._writer = writer
        self._writer.register_storage(storage)
        if collate_fn is None:
            collate_fn = _identity if isinstance(storage, TensorStorage) else _default_collate
        self._collate_fn = collate_fn
        self._transforms = []
        if transform is not None:
            self._transforms.append(transform)
        self._batch_size = None if batch_size is None else int(batch_size)
        self._generator = generator
        self._sampler._generator = generator

    # ------------------------------------------------------------------ components
    @property
    def storage(self):
        return self._storage

    @property
    def sampler(self):
        return self._sampler

    @property
    def writer(self):
        return self._writer

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def write_count(self):
        return self._writer._write_count

    def set_rng(self, generator):
        self._generator = generator
        self._sampler._generator = generator

    def append_transform(self, transform):
        self._transforms.append(transform)
        return self

    def insert_transform(self, index, transform):
        self._transforms.insert(index, transform)
        return self

    def __len__(self):
        return len(self._storage)

    def __repr__(self):
        return (f"{type(self).__name__}(\n  storage={self._storage!r},\n  sampler="
                f"{self._sampler!r},\n  writer={self._writer!r},\n  batch_size="
                f"{self._batch_size})")

    # ------------------------------------------------------------------ writing
    def add(self, data):
        """Write one item; returns its storage index."""
        index = self._writer.add(data)
        self._sampler.add(index)
        return index

    def extend(self, data):
        """Write the items along the first dim of ``data``; returns their indices (a tensor)."""
        index = self._writer.extend(data)
        self._sampler.extend(index)
        return index

    def update_priority(self, index, priority):
        """Set the priorities of rows ``index`` (prioritized samplers; a no-op otherwise)."""
        self._sampler.update_priority(index, priority)

    def empty(self):
        """Forget every item (and the sampler's and writer's state)."""
        self._storage._empty()
        self._sampler._empty()
        self._writer._empty()

    # ------------------------------------------------------------------ reading
    def __getitem__(self, index):
        return self._apply_transforms(self._collate_fn(self._storage.get(index)))

    def _apply_transforms(self, data):
        for t in self._transforms:
            data = t(data)
        return data

    def _sample(self, batch_size):
        index, info = self._sampler.sample(self._storage, batch_size)
        info = dict(info)
        info["index"] = index
        data = self._collate_fn(self._storage.get(index))
        return self._apply_transforms(data), info

    def _batch(self, batch_size):
        if batch_size is None:
            batch_size = self._batch_size
        if batch_size is None:
            raise RuntimeError(f"{type(self).__name__}.sample: no batch_size given here nor in "
                               "the constructor")
        batch_size = int(batch_size)
        if batch_size <= 0:
            raise ValueError(f"{type(self).__name__}.sample: batch_size must be > 0, got "
                             f"{batch_size}")
        return batch_size

    def sample(self, batch_size=None, return_info=False):
        """A batch of ``batch_size`` items (default: the constructor's); with
        ``return_info``, ``(data, info)`` where info holds ``"index"`` (and ``"_weight"`` for
        prioritized sampling) as tensors."""
        data, info = self._sample(self._batch(batch_size))
        if return_info:
            return data, {k: _tensor(v) for k, v in info.items()}
        return data

    def __iter__(self):
        """Sample batches until the sampler runs out (forever for samplers with replacement)."""
        if self._batch_size is None:
            raise RuntimeError(f"{type(self).__name__}: iterating needs batch_size set in the "
                               "constructor")
        while True:
            yield self.sample()
            if self._sampler.ran_out:
                break

    # ------------------------------------------------------------------ state
    def state_dict(self):
        return {"_storage": self._storage.state_dict(), "_sampler": self._sampler.state_dict(),
                "_writer": self._writer.state_dict(), "_batch_size": self._batch_size}

    def load_state_dict(self, state_dict):
        self._storage.load_state_dict(state_dict["_storage"])
        self._sampler.load_state_dict(state_dict["_sampler"])
        self._writer.load_state_dict(state_dict["_writer"])
        self._batch_size = state_dict.get("_batch_size", self._batch_size)

    def dumps(self, path):
        """Save the buffer under the directory ``path`` (see the module doc); atomic: ``path``
        holds either the previous checkpoint or the new one."""
        path = os.path.abspath(os.fspath(path))
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            self._storage.dumps(os.path.join(tmp, "storage"))
            self._sampler.dumps(os.path.join(tmp, "sampler"))
            self._writer.dumps(os.path.join(tmp, "writer"))
            atomic_json(os.path.join(tmp, "buffer_metadata.json"),
                        {"format": "ember.ReplayBuffer", "version": 1, "type": type(self).__name__,
                         "batch_size": self._batch_size,
                         "storage": type(self._storage).__name__,
                         "sampler": type(self._sampler).__name__,
                         "writer": type(self._writer).__name__})
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        old = f"{path}.old{os.getpid()}"
        if os.path.exists(path):
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
        return self

    def loads(self, path):
        """Restore the state saved by ``dumps(path)`` into this buffer (its storage, sampler
        and writer must be of the kinds that were saved)."""
        path = os.path.abspath(os.fspath(path))
        meta = read_json(os.path.join(path, "buffer_metadata.json"), f"{type(self).__name__}.loads")
        for part, obj in (("storage", self._storage), ("sampler", self._sampler),
                          ("writer", self._writer)):
            if meta.get(part) != type(obj).__name__:
                raise TypeError(f"{type(self).__name__}.loads: {path} holds a {meta.get(part)} "
                                f"{part}, this buffer has a {type(obj).__name__}")
        self._storage.loads(os.path.join(path, "storage"))
        self._sampler.loads(os.path.join(path, "sampler"))
        self._writer.loads(os.path.join(path, "writer"))
        self._batch_size = meta.get("batch_size", self._batch_size)
        return self


def _tensor(v):
    if isinstance(v, np.ndarray):
        return Tensor._make(v)
    return v


class PrioritizedReplayBuffer(ReplayBuffer):
    """A ``ReplayBuffer`` with a ``PrioritizedSampler(storage.max_size, alpha, beta, eps,
    dtype)``; ``sample(return_info=True)`` gives the importance weights under ``"_weight"``."""

    def __init__(self, *, alpha, beta, eps=1e-8, dtype=np.float32, storage=None, collate_fn=None,
                 pin_memory=False, prefetch=None, transform=None, batch_size=None,
                 dim_extend=None, generator=None):
        storage = storage if storage is not None else ListStorage(max_size=1_000)
        sampler = PrioritizedSampler(storage.max_size, alpha, beta, eps, dtype)
        super().__init__(storage=storage, sampler=sampler, collate_fn=collate_fn,
                         pin_memory=pin_memory, prefetch=prefetch, transform=transform,
                         batch_size=batch_size, dim_extend=dim_extend, generator=generator)


class TensorDictReplayBuffer(ReplayBuffer):
    """A replay buffer of TensorDicts. ``extend``/``add`` write each row's storage index under
    ``"index"`` (in the stored rows and in the given TensorDict); ``sample`` returns a
    TensorDict holding the sampler's info too (``"index"``, ``"_weight"``, or the
    trajectory-end keys of ``SliceSampler``); with a prioritized sampler, rows carrying
    ``priority_key`` get that priority when written, and ``update_tensordict_priority(td)``
    reads ``td["index"]`` and ``td[priority_key]`` (trailing dims reduced by the sampler's
    ``reduction``). The default storage is ``ListStorage(1000)``, as torchrl's; pass a
    ``LazyTensorStorage`` for speed."""

    _default_writer = TensorDictRoundRobinWriter

    def __init__(self, *, priority_key="td_error", **kwargs):
        super().__init__(**kwargs)
        self.priority_key = priority_key

    def _check_td(self, data, who):
        if not isinstance(data, TensorDict):
            raise TypeError(f"{type(self).__name__}.{who}: expected a TensorDict, got "
                            f"{type(data).__name__}")

    def add(self, data):
        self._check_td(data, "add")
        index = super().add(data)
        data.set("index", Tensor._make(np.asarray(index, np.int64)))
        self._priority_from(data)
        return index

    def extend(self, data):
        self._check_td(data, "extend")
        index = super().extend(data)
        n = data.batch_size[0]
        full = index.numpy()
        if full.shape[0] != n:  # more rows than max_size: the first ones were dropped
            full = np.concatenate([np.full(n - full.shape[0], -1, np.int64), full])
        data.set("index", Tensor._make(full))
        self._priority_from(data)
        return index

    def _priority_from(self, data):
        if isinstance(self._sampler, PrioritizedSampler) and self.priority_key in data.keys(True):
            self.update_tensordict_priority(data)

    def update_tensordict_priority(self, data):
        """Update the priorities of the rows ``data["index"]`` from ``data[priority_key]``
        (the default priority where the key is missing)."""
        if not isinstance(self._sampler, PrioritizedSampler):
            return
        index = data.get("index", None)
        if index is None:
            raise KeyError(f"update_tensordict_priority: the TensorDict has no 'index' entry "
                           f"(its keys: {sorted(map(str, data.keys()))}); use a TensorDict "
                           "sampled from or extended into this buffer")
        pr = data.get(self.priority_key, None)
        if pr is None:
            self._sampler.mark_update(index)
            return
        p = pr.detach().numpy(force=True).astype(np.float64)
        n = data.batch_size[0] if data.batch_size else 1
        if p.ndim > 1 or (p.ndim == 1 and p.shape[0] != as_index(index).size):
            p = p.reshape(n, -1)
            red = self._sampler.reduction
            p = {"max": np.max, "min": np.min, "mean": np.mean, "median": np.median}[red](p, -1)
        self._sampler.update_priority(index, p)

    def sample(self, batch_size=None, return_info=False, include_info=None):
        data, info = self._sample(self._batch(batch_size))
        if isinstance(data, TensorDict):
            n = data.batch_size[0] if data.batch_size else None
            for k, v in info.items():
                arr = np.asarray(v)
                if n is not None and arr.shape[:1] == (n,):
                    data.set(k, Tensor._make(arr))
        if return_info:
            return data, {k: _tensor(v) for k, v in info.items()}
        return data


class TensorDictPrioritizedReplayBuffer(TensorDictReplayBuffer):
    """``TensorDictPrioritizedReplayBuffer(*, alpha, beta, priority_key="td_error", eps=1e-8,
    storage=None, ..., reduction="max", batch_size=None)``."""

    def __init__(self, *, alpha, beta, priority_key="td_error", eps=1e-8, dtype=np.float32,
                 storage=None, collate_fn=None, pin_memory=False, prefetch=None, transform=None,
                 reduction="max", batch_size=None, dim_extend=None, generator=None):
        storage = storage if storage is not None else ListStorage(max_size=1_000)
        sampler = PrioritizedSampler(storage.max_size, alpha, beta, eps, dtype,
                                     reduction=reduction)
        super().__init__(priority_key=priority_key, storage=storage, sampler=sampler,
                         collate_fn=collate_fn, pin_memory=pin_memory, prefetch=prefetch,
                         transform=transform, batch_size=batch_size, dim_extend=dim_extend,
                         generator=generator)
