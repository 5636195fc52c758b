"""Replay-buffer storages: where the items live (as torchrl's ``storages``).

* ``ListStorage(max_size)``: a Python list of arbitrary items.
* ``LazyTensorStorage(max_size)``: one preallocated TensorDict (or tensor) of ``max_size`` rows,
  created on the first write from the structure of the data (each key gets
  ``(max_size, *feature_shape)``). Items are rows; a read gathers rows.
* ``LazyMemmapStorage(max_size, scratch_dir=...)``: the same, with every tensor a numpy memory
  map of a file under ``scratch_dir`` (a temporary directory when not given), so the buffer can
  outgrow RAM and other processes can map it.

``dumps(path)`` writes a storage without pickle: the TensorDict layout of ``memmap_`` (raw
arrays + a JSON manifest) and ``storage_metadata.json``; ``loads(path)`` reads it back.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> s = LazyTensorStorage(4)
    >>> s.set(ember.tensor([0, 1]), TensorDict({"obs": ember.ones(2, 3)}, [2]))
    >>> len(s), s.get(ember.tensor([1]))["obs"].shape
    (2, (1, 3))
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref

import numpy as np

import ember
from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict

from ._utils import as_index, atomic_json, read_json

__all__ = ["Storage", "ListStorage", "TensorStorage", "LazyTensorStorage", "LazyMemmapStorage"]

_TENSOR_KEY = "_tensor"  # a storage of plain tensors keeps them under this key


class Storage:
    """Base of the storages: ``set(cursor, data)``, ``get(index)``, ``__len__``, ``max_size``,
    ``state_dict``/``load_state_dict`` and ``dumps``/``loads``."""

    ndim = 1

    def __init__(self, max_size):
        self.max_size = int(max_size)
        if self.max_size <= 0:
            raise ValueError(f"{type(self).__name__}: max_size must be > 0, got {max_size}")

    def __getitem__(self, index):
        return self.get(index)

    def __setitem__(self, index, data):
        self.set(index, data)

    @property
    def _is_full(self):
        return len(self) == self.max_size

    @property
    def shape(self):
        return (len(self),)

    def _empty(self):
        raise NotImplementedError(f"{type(self).__name__} must define _empty()")

    def attach(self, buffer):
        pass


class ListStorage(Storage):
    """A list of any Python objects (``max_size`` default: unbounded, 2**63-1)."""

    def __init__(self, max_size=None):
        super().__init__(max_size if max_size is not None else 2 ** 63 - 1)
        self._storage = []

    def set(self, cursor, data):
        if isinstance(cursor, (int, np.integer)):
            cursor = int(cursor)
            if cursor < len(self._storage):
                self._storage[cursor] = data
            elif cursor == len(self._storage):
                self._storage.append(data)
            else:
                raise IndexError(f"ListStorage.set: cursor {cursor} leaves a gap after the "
                                 f"{len(self._storage)} stored items")
            return
        idx = as_index(cursor)
        items = _items(data)
        if len(items) != len(idx):
            raise ValueError(f"ListStorage.set: {len(idx)} indices for {len(items)} items")
        for i, item in zip(idx.tolist(), items):
            self.set(i, item)

    def get(self, index):
        if isinstance(index, (int, np.integer)):
            return self._storage[int(index)]
        if isinstance(index, slice):
            return self._storage[index]
        return [self._storage[i] for i in as_index(index).tolist()]

    def __len__(self):
        return len(self._storage)

    def _empty(self):
        self._storage = []

    def state_dict(self):
        return {"_storage": list(self._storage)}

    def load_state_dict(self, state_dict):
        self._storage = list(state_dict["_storage"])

    def dumps(self, path):
        """Items must be TensorDicts, tensors, numpy arrays or JSON values (no pickle)."""
        os.makedirs(path, exist_ok=True)
        kinds = []
        for i, item in enumerate(self._storage):
            kinds.append(_dump_item(item, os.path.join(path, f"item{i}")))
        atomic_json(os.path.join(path, "storage_metadata.json"),
                    {"type": "ListStorage", "max_size": self.max_size, "items": kinds})

    def loads(self, path):
        meta = read_json(os.path.join(path, "storage_metadata.json"), "ListStorage.loads")
        self._storage = [_load_item(k, os.path.join(path, f"item{i}"))
                         for i, k in enumerate(meta["items"])]

    def __repr__(self):
        return f"ListStorage(items={len(self)}, max_size={self.max_size})"


class TensorStorage(Storage):
    """``max_size`` rows of a TensorDict (or of a tensor), allocated on the first write."""

    def __init__(self, storage=None, max_size=None, *, device="cpu", ndim=1):
        if ndim != 1:
            raise ValueError(f"{type(self).__name__}: only ndim=1 is supported, got ndim={ndim}")
        if storage is not None:
            td, self._is_tensor = _wrap(storage)
            max_size = td.batch_size[0] if max_size is None else max_size
        super().__init__(max_size)
        self.device = ember.device(device) if device not in (None, "auto") else ember.device("cpu")
        self._storage = None
        self._is_tensor = False
        self._len = 0
        if storage is not None:
            self._storage, self._is_tensor = _wrap(storage)
            self._len = self.max_size

    @property
    def initialized(self):
        return self._storage is not None

    def __len__(self):
        return self._len

    def _init(self, row, is_tensor):
        """Allocate ``max_size`` rows shaped like ``row`` (one item, a TensorDict)."""
        self._is_tensor = is_tensor
        self._storage = _zeros_like(row, (self.max_size,))

    def set(self, cursor, data):
        td, is_tensor = _wrap(data)
        if isinstance(cursor, (int, np.integer)):
            idx = np.asarray([int(cursor)])
            td = td.unsqueeze(0)
        else:
            idx = as_index(cursor)
            if td.batch_size[:1] != (len(idx),):
                raise ValueError(f"{type(self).__name__}.set: {len(idx)} indices for data of "
                                 f"batch size {list(td.batch_size)}")
        if len(idx) == 0:
            return
        if (idx < 0).any() or (idx >= self.max_size).any():
            raise IndexError(f"{type(self).__name__}.set: indices must lie in [0, "
                             f"{self.max_size}), got {idx.min()}..{idx.max()}")
        if self._storage is None:
            self._init(td[0], is_tensor)
        elif is_tensor != self._is_tensor:
            raise TypeError(f"{type(self).__name__}.set: the storage holds "
                            f"{'tensors' if self._is_tensor else 'TensorDicts'}, got a "
                            f"{'tensor' if is_tensor else 'TensorDict'}")
        _write_rows(self._storage, td, idx, type(self).__name__)
        self._len = max(self._len, int(idx.max()) + 1)

    def get(self, index):
        if self._storage is None:
            raise RuntimeError(f"{type(self).__name__}: the storage is empty (nothing was "
                               "written yet)")
        if isinstance(index, (int, np.integer)):
            out = self._storage[int(index)]
        elif isinstance(index, slice):
            out = self._storage[:self._len][index]
        else:
            out = self._storage[as_index(index)]
        if self._is_tensor:
            return out.get(_TENSOR_KEY)
        return out

    def _empty(self):
        self._len = 0

    def state_dict(self):
        return {"_storage": None if self._storage is None else self._storage,
                "_len": self._len, "_is_tensor": self._is_tensor}

    def load_state_dict(self, state_dict):
        st = state_dict["_storage"]
        if st is None:
            self._storage = None
        else:
            if tuple(st.batch_size[:1]) != (self.max_size,):
                raise ValueError(f"{type(self).__name__}.load_state_dict: the saved storage has "
                                 f"{st.batch_size[0]} rows, this one max_size={self.max_size}")
            self._adopt(st.clone())
        self._len = int(state_dict["_len"])
        self._is_tensor = bool(state_dict["_is_tensor"])

    def _adopt(self, td):
        self._storage = td

    def dumps(self, path):
        os.makedirs(path, exist_ok=True)
        if self._storage is not None:
            self._storage.save(os.path.join(path, "storage"))
        atomic_json(os.path.join(path, "storage_metadata.json"),
                    {"type": type(self).__name__, "max_size": self.max_size, "len": self._len,
                     "is_tensor": self._is_tensor, "initialized": self._storage is not None})

    def loads(self, path):
        meta = read_json(os.path.join(path, "storage_metadata.json"),
                         f"{type(self).__name__}.loads")
        if int(meta["max_size"]) != self.max_size:
            raise ValueError(f"{type(self).__name__}.loads: {path} holds a storage of max_size "
                             f"{meta['max_size']}, this one has max_size={self.max_size}")
        if meta["initialized"]:
            self._adopt(TensorDict.load(os.path.join(path, "storage")))
        else:
            self._storage = None
        self._len = int(meta["len"])
        self._is_tensor = bool(meta["is_tensor"])

    def __repr__(self):
        fields = "uninitialized" if self._storage is None else \
            ", ".join(f"{k}: {tuple(v.shape[1:])}" for k, v in self._storage.items(True, True))
        return f"{type(self).__name__}(len={self._len}, max_size={self.max_size}, {fields})"


class LazyTensorStorage(TensorStorage):
    """``LazyTensorStorage(max_size, *, device="cpu", ndim=1)``: rows in memory, allocated on
    the first write."""

    def __init__(self, max_size, *, device="cpu", ndim=1):
        super().__init__(None, max_size, device=device, ndim=ndim)


class LazyMemmapStorage(TensorStorage):
    """``LazyMemmapStorage(max_size, *, scratch_dir=None, device="cpu", ndim=1,
    existsok=False)``: rows in numpy memory maps under ``scratch_dir``."""

    def __init__(self, max_size, *, scratch_dir=None, device="cpu", ndim=1, existsok=False):
        super().__init__(None, max_size, device=device, ndim=ndim)
        self.existsok = existsok
        self.scratch_dir = os.fspath(scratch_dir) if scratch_dir is not None else None

    def _dir(self):
        if self.scratch_dir is None:  # a temporary directory, removed with the storage
            self.scratch_dir = tempfile.mkdtemp(prefix="ember_rb_")
            weakref.finalize(self, shutil.rmtree, self.scratch_dir, True)
        return self.scratch_dir

    def _init(self, row, is_tensor):
        path = self._dir()
        if not self.existsok and os.path.exists(os.path.join(path, "meta.json")):
            raise FileExistsError(f"LazyMemmapStorage: {path} already holds a storage (pass "
                                  "existsok=True to overwrite it)")
        self._is_tensor = is_tensor
        self._storage = _zeros_like(row, (self.max_size,)).memmap_(path)

    def _adopt(self, td):
        path = self._dir()
        self._storage = td.memmap_(path)


# ---------------------------------------------------------------------------- helpers
def _wrap(data):
    """``(TensorDict, is_tensor)``: tensors (and arrays) are held under one key."""
    if isinstance(data, TensorDict):
        return data, False
    if isinstance(data, np.ndarray):
        data = ember.from_numpy(data)
    if isinstance(data, Tensor):
        bs = tuple(data.shape[:1]) if data.ndim else ()
        return TensorDict._new({_TENSOR_KEY: data.detach()}, bs, None), True
    if isinstance(data, dict):
        td = TensorDict.from_dict(data)
        return td, False
    raise TypeError(f"tensor storage: data must be a TensorDict, a tensor, a numpy array or a "
                    f"dict of tensors, got {type(data).__name__} (use ListStorage for other "
                    "objects)")


def _zeros_like(row, lead):
    """A TensorDict of zeros of batch ``lead`` with ``row``'s keys, dtypes and feature shapes
    (non-tensor data is not held by tensor storages)."""
    out = {}
    for k, v in row._tensordict.items():
        if isinstance(v, TensorDict):
            out[k] = _zeros_like(v, lead + v.batch_size)
        elif isinstance(v, Tensor):
            a = v.numpy(force=True)
            out[k] = Tensor._make(np.zeros(lead + a.shape, a.dtype))
        else:
            raise TypeError(f"tensor storage: key {k!r} holds {type(v).__name__}; tensor "
                            "storages hold tensors only (use ListStorage)")
    return TensorDict._new(out, lead + row.batch_size, None)


def _write_rows(dst, src, idx, who, prefix=()):
    """``dst[idx] = src`` leaf by leaf on the arrays (one numpy assignment per key), after
    checking that ``src`` has exactly the stored keys and item shapes."""
    dd, sd = dst._tensordict, src._tensordict
    if dd.keys() != sd.keys():
        extra = sorted(map(str, [prefix + (k,) if prefix else k for k in sd.keys() - dd.keys()]))
        missing = sorted(map(str, [prefix + (k,) if prefix else k for k in dd.keys() - sd.keys()]))
        if extra:
            raise KeyError(f"{who}.set: keys {extra} are not in the storage (its keys were fixed "
                           "by the first write)")
        raise KeyError(f"{who}.set: the data lacks the stored keys {missing}")
    for k, v in sd.items():
        cur = dd[k]
        key = prefix + (k,)
        if isinstance(v, TensorDict) and isinstance(cur, TensorDict):
            _write_rows(cur, v, idx, who, key)
        elif isinstance(v, Tensor) and isinstance(cur, Tensor):
            a, c = v.array, cur.array
            if a.shape[1:] != c.shape[1:]:
                raise ValueError(f"{who}.set: key {key if len(key) > 1 else k!r} has item shape "
                                 f"{tuple(a.shape[1:])}, the storage holds {tuple(c.shape[1:])}")
            c[idx] = a
        else:
            raise TypeError(f"{who}.set: key {key if len(key) > 1 else k!r} holds a "
                            f"{type(v).__name__} where the storage holds a {type(cur).__name__}")


def _items(data):
    if isinstance(data, TensorDict):
        return list(data.unbind(0))
    if isinstance(data, Tensor):
        return list(data.unbind(0))
    return list(data)


def _dump_item(item, prefix):
    if isinstance(item, TensorDict):
        item.save(prefix)
        return "tensordict"
    if isinstance(item, Tensor):
        np.save(prefix + ".npy", item.numpy(force=True), allow_pickle=False)
        return "tensor"
    if isinstance(item, np.ndarray):
        np.save(prefix + ".npy", item, allow_pickle=False)
        return "ndarray"
    try:
        with open(prefix + ".json", "w", encoding="utf-8") as f:
            json.dump(item, f)
    except TypeError:
        raise TypeError(f"ListStorage.dumps: an item of type {type(item).__name__} cannot be "
                        "saved without pickle (TensorDicts, tensors, arrays and JSON values "
                        "can)") from None
    return "json"


def _load_item(kind, prefix):
    if kind == "tensordict":
        return TensorDict.load(prefix)
    if kind == "tensor":
        return ember.from_numpy(np.load(prefix + ".npy", allow_pickle=False))
    if kind == "ndarray":
        return np.load(prefix + ".npy", allow_pickle=False)
    with open(prefix + ".json", encoding="utf-8") as f:
        return json.load(f)
