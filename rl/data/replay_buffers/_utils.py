"""Helpers shared by the replay-buffer files: indices as int64 numpy arrays, the random
generator, and atomic JSON / numpy files for ``dumps``/``loads`` (no pickle anywhere)."""
from __future__ import annotations

import json
import os

import numpy as np

from ember._tensor import Tensor

EMPTY_STORAGE_ERROR = "Cannot sample from an empty storage (the replay buffer holds no data)."


def as_index(index, what="index"):
    """``index`` (int, list, numpy array, tensor) as a 1-D int64 numpy array."""
    if isinstance(index, Tensor):
        index = index.numpy(force=True)
    arr = np.asarray(index)
    if arr.dtype == np.bool_:
        return np.flatnonzero(arr)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False).reshape(-1)


def np_generator(generator=None):
    """The numpy Generator behind ``generator`` (an ``ember.Generator``), or ember's default
    one, so ``ember.manual_seed`` makes sampling reproducible."""
    from ember.random import _gen

    from ember import _backend as B

    return _gen(generator, B.CPU)


def atomic_json(path, obj):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def read_json(path, who):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{who}: {path} is missing (was the buffer saved with dumps() "
                                "to this directory?)")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_array(path, arr):
    tmp = f"{path}.tmp{os.getpid()}.npy"
    np.save(tmp, np.ascontiguousarray(arr), allow_pickle=False)
    os.replace(tmp, path)


def load_array(path, who):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{who}: {path} is missing")
    return np.load(path, allow_pickle=False)
