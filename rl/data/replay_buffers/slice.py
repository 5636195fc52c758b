"""``SliceSampler``: samples contiguous sub-trajectories (as torchrl's ``SliceSampler``).

The trajectories are found in the storage from ``traj_key`` (a trajectory id per row;
default ``"episode"``) or, when that key is missing, from ``end_key`` (default ``("next",
"done")``: a trajectory ends at a True row). Rows are in storage order; when the storage is
full, the trajectory crossing the end of the storage continues at its start. A batch of
``batch_size`` rows is ``num_slices`` slices of ``batch_size // num_slices`` rows (or slices of
``slice_len`` rows): each slice picks a trajectory uniformly, then a uniform start inside it.
With ``strict_length`` (default) trajectories shorter than a slice are never picked; otherwise
their slices are shorter (the batch is then smaller). The info marks each slice's last row as
truncated (``truncated_key``, default ``("next", "truncated")``), the rows where a trajectory
really ends as terminated, and done = either; ``TensorDictReplayBuffer`` writes them into the
sample.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> from ember.rl.data import LazyTensorStorage
    >>> s = LazyTensorStorage(10)
    >>> s.set(ember.arange(10), TensorDict({"episode": ember.tensor([0] * 4 + [1] * 6)}, [10]))
    >>> _ = ember.manual_seed(0)
    >>> idx, info = SliceSampler(num_slices=2).sample(s, 6)
    >>> idx.reshape(2, 3).tolist()
    [[5, 6, 7], [4, 5, 6]]
"""
from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict

from ._utils import EMPTY_STORAGE_ERROR
from .samplers import Sampler

__all__ = ["SliceSampler"]


def _end_from_traj(traj, at_capacity):
    end = np.empty(traj.shape[0], np.bool_)
    end[:-1] = traj[:-1] != traj[1:]
    end[-1] = (traj[-1] != traj[0]) if at_capacity else True
    return end


def start_stop_length(end, at_capacity):
    """``(start, stop, length)`` of the trajectories delimited by the boolean ``end`` signal
    (stop: last row, inclusive). Without any end in a full storage, the last row ends one."""
    end = end.copy()
    n = end.shape[0]
    if not at_capacity:
        end[-1] = True
    elif not end.any():
        end[-1] = True
    stop = np.flatnonzero(end)
    start = np.roll((stop + 1) % n, 1)
    length = stop - start + 1
    length[length <= 0] += n
    return start, stop, length


class SliceSampler(Sampler):
    """``SliceSampler(*, num_slices=None, slice_len=None, end_key=None, traj_key=None,
    cache_values=False, truncated_key=("next", "truncated"), strict_length=True)``."""

    def __init__(self, *, num_slices=None, slice_len=None, end_key=None, traj_key=None,
                 ends=None, trajectories=None, cache_values=False,
                 truncated_key=("next", "truncated"), strict_length=True, compile=False,
                 span=False):
        if (num_slices is None) == (slice_len is None):
            raise TypeError(f"SliceSampler: give exactly one of num_slices and slice_len, got "
                            f"num_slices={num_slices} and slice_len={slice_len}")
        if span:
            raise ValueError("SliceSampler: span is not supported (slices stay inside their "
                             "trajectory)")
        self.num_slices = None if num_slices is None else int(num_slices)
        self.slice_len = None if slice_len is None else int(slice_len)
        if (self.num_slices or self.slice_len) <= 0:
            raise ValueError("SliceSampler: num_slices / slice_len must be > 0")
        self.end_key = ("next", "done") if end_key is None else end_key
        self.traj_key = "episode" if traj_key is None else traj_key
        self.truncated_key = truncated_key
        self.strict_length = bool(strict_length)
        self.cache_values = bool(cache_values)
        self._cache = None
        if ends is not None or trajectories is not None:
            if not cache_values:
                raise ValueError("SliceSampler: ends= / trajectories= need cache_values=True")
            if ends is not None and trajectories is not None:
                raise ValueError("SliceSampler: ends and trajectories are exclusive")
            if trajectories is not None:
                t = _np(trajectories).reshape(-1)
                self._cache = start_stop_length(_end_from_traj(t, True), True)
            else:
                self._cache = start_stop_length(_np(ends).reshape(-1).astype(bool), True)

    def extend(self, index):
        if self.cache_values and self._cache is not None:
            self._cache = None

    add = extend

    def _trajectories(self, storage):
        if self._cache is not None:
            return self._cache
        n = len(storage)
        rows = storage.get(slice(0, n))
        if not isinstance(rows, TensorDict):
            raise TypeError("SliceSampler: the storage must hold TensorDicts (LazyTensorStorage "
                            "or LazyMemmapStorage)")
        at_capacity = n == storage.max_size
        traj = rows.get(self.traj_key, None)
        if traj is not None:
            out = start_stop_length(_end_from_traj(_np(traj).reshape(n, -1)[:, 0], at_capacity),
                                    at_capacity)
        else:
            end = rows.get(self.end_key, None)
            if end is None:
                raise KeyError(f"SliceSampler: the stored data has neither the trajectory key "
                               f"{self.traj_key!r} nor the end key {self.end_key!r}")
            out = start_stop_length(_np(end).reshape(n, -1).any(-1), at_capacity)
        if self.cache_values:
            self._cache = out
        return out

    def _seq_num(self, batch_size):
        if self.num_slices is not None:
            if batch_size % self.num_slices:
                raise RuntimeError(f"SliceSampler: batch_size {batch_size} is not divisible by "
                                   f"num_slices={self.num_slices}")
            return batch_size // self.num_slices, self.num_slices
        if batch_size % self.slice_len:
            raise RuntimeError(f"SliceSampler: batch_size {batch_size} is not divisible by "
                               f"slice_len={self.slice_len}")
        return self.slice_len, batch_size // self.slice_len

    def sample(self, storage, batch_size):
        n = len(storage)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        start, stop, length = self._trajectories(storage)
        seq, num = self._seq_num(int(batch_size))
        rng = self._rng()
        if self.strict_length:
            ok = length >= seq
            if not ok.any():
                raise RuntimeError(f"SliceSampler: no trajectory is long enough for slices of "
                                   f"{seq} (lengths {int(length.min())}..{int(length.max())}); "
                                   "use strict_length=False or shorter slices")
            start, length = start[ok], length[ok]
        traj = rng.integers(0, len(length), num)
        seqs = np.minimum(length[traj], seq)
        rel = np.floor(rng.random(num) * (length[traj] - seqs + 1)).astype(np.int64)
        first = start[traj] + rel
        # rows of every slice, concatenated: first[s] + 0 .. seqs[s]-1 (mod storage size)
        offsets = np.arange(seqs.sum()) - np.repeat(np.cumsum(seqs) - seqs, seqs)
        index = (np.repeat(first, seqs) + offsets) % n
        info = {}
        if self.truncated_key is not None:
            tk = self.truncated_key if isinstance(self.truncated_key, tuple) else \
                (self.truncated_key,)
            truncated = np.zeros((index.shape[0], 1), np.bool_)
            truncated[np.cumsum(seqs) - 1] = True
            terminated = np.isin(index, stop).reshape(-1, 1)
            info[tk] = truncated
            info[tk[:-1] + ("terminated",)] = terminated
            info[tk[:-1] + ("done",)] = truncated | terminated
        return index, info

    def _empty(self):
        self._cache = None

    def _json_state(self):
        return {}

    def __repr__(self):
        return (f"SliceSampler(num_slices={self.num_slices}, slice_len={self.slice_len}, "
                f"end_key={self.end_key}, traj_key={self.traj_key}, "
                f"truncated_key={self.truncated_key}, strict_length={self.strict_length})")


def _np(x):
    return x.numpy(force=True) if isinstance(x, Tensor) else np.asarray(x)
