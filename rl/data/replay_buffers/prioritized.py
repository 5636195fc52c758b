"""``PrioritizedSampler``: prioritized experience replay (Schaul et al. 2015), as torchrl's.

A row with priority ``p`` is stored as ``(p + eps) ** alpha`` in a sum tree and a min tree
(``segment_tree.py``); rows are drawn with probability proportional to that value, and each
draw carries the importance weight ``(p_i / p_min) ** -beta`` (the usual
``(N * P(i)) ** -beta`` normalised by its maximum). New rows get the default priority
``(max_priority + eps) ** alpha``, where ``max_priority`` is the largest priority ever given
(1.0 at the start).

    >>> import ember
    >>> from ember.rl.data import LazyTensorStorage
    >>> s = LazyTensorStorage(4); s.set(ember.arange(4), ember.zeros(4))
    >>> sampler = PrioritizedSampler(4, alpha=1.0, beta=1.0)
    >>> sampler.extend(ember.arange(4))
    >>> sampler.update_priority(ember.tensor([0, 1, 2, 3]), ember.tensor([1., 1., 2., 4.]))
    >>> _ = ember.manual_seed(0)
    >>> idx, info = sampler.sample(s, 8000)
    >>> [round(float((idx == i).mean()), 1) for i in range(4)]
    [0.1, 0.1, 0.2, 0.5]
    >>> sorted(set(info["_weight"].tolist()))
    [0.25, 0.5, 1.0]
"""
from __future__ import annotations

import os

import numpy as np

from ember._tensor import Tensor

from ._utils import EMPTY_STORAGE_ERROR, as_index, load_array, save_array
from .samplers import Sampler
from .segment_tree import MinSegmentTree, SumSegmentTree, update_trees

__all__ = ["PrioritizedSampler"]


def _as_priority(priority):
    if isinstance(priority, Tensor):
        priority = priority.detach().numpy(force=True)
    return np.asarray(priority, np.float64)


class PrioritizedSampler(Sampler):
    """``PrioritizedSampler(max_capacity, alpha, beta, eps=1e-8, dtype=float32,
    reduction="max")``; ``dtype`` is that of the returned weights (the trees are float64)."""

    def __init__(self, max_capacity, alpha, beta, eps=1e-8, dtype=np.float32, reduction="max"):
        if alpha < 0:
            raise ValueError(f"PrioritizedSampler: alpha must be >= 0, got alpha={alpha}")
        if beta < 0:
            raise ValueError(f"PrioritizedSampler: beta must be >= 0, got beta={beta}")
        if reduction not in ("max", "min", "mean", "median"):
            raise ValueError(f"PrioritizedSampler: reduction must be max, min, mean or median, "
                             f"got {reduction!r}")
        self._max_capacity = int(max_capacity)
        self._alpha = float(alpha)
        self._beta = float(beta)
        self._eps = float(eps)
        self.reduction = reduction
        from ember import dtypes as D
        self.dtype = np.dtype(D.to_dtype(dtype) if not isinstance(dtype, (type, np.dtype))
                              else dtype)
        self._init()

    def _init(self):
        self._sum_tree = SumSegmentTree(self._max_capacity)
        self._min_tree = MinSegmentTree(self._max_capacity)
        self._max_priority = 1.0

    def _empty(self):
        self._init()

    @property
    def max_size(self):
        return self._max_capacity

    @property
    def default_priority(self):
        return (self._max_priority + self._eps) ** self._alpha

    def sample(self, storage, batch_size):
        n = len(storage)
        if n == 0:
            raise RuntimeError(EMPTY_STORAGE_ERROR)
        if n > self._max_capacity:
            raise RuntimeError(f"PrioritizedSampler: the storage holds {n} items, more than "
                               f"max_capacity={self._max_capacity}")
        p_sum = self._sum_tree.query(0, n)
        p_min = self._min_tree.query(0, n)
        if p_sum <= 0:
            raise RuntimeError(f"PrioritizedSampler: the priorities sum to {p_sum} (must be > 0)")
        if p_min <= 0:
            raise RuntimeError(f"PrioritizedSampler: the smallest priority is {p_min} (must be "
                               "> 0; eps keeps priorities positive)")
        mass = self._rng().uniform(0.0, p_sum, int(batch_size))
        index = np.minimum(self._sum_tree.scan_lower_bound(mass), n - 1)
        weight = np.power(self._sum_tree[index] / p_min, -self._beta).astype(self.dtype)
        return index, {"_weight": weight}

    def _set(self, index, value):
        update_trees((self._sum_tree, self._min_tree), index, value)

    def _add_or_extend(self, index):
        idx = as_index(index)
        idx = idx[idx >= 0]
        if idx.size:
            self._set(idx, self.default_priority)

    def add(self, index):
        if index is not None:
            self._add_or_extend(index)

    def extend(self, index):
        if index is not None:
            self._add_or_extend(index)

    def update_priority(self, index, priority):
        """Give rows ``index`` the priorities ``priority`` (a number, or one per index)."""
        p = _as_priority(priority)
        scalar_index = np.ndim(index.numpy(force=True) if isinstance(index, Tensor)
                               else index) == 0
        idx = as_index(index)
        if p.size > 1 and (scalar_index or p.shape != idx.shape):
            if scalar_index or p.size != idx.size:
                raise RuntimeError(f"update_priority: priority should be a number or hold one "
                                   f"value per index; got priority of shape {list(p.shape)} "
                                   f"for index of shape {[] if scalar_index else [idx.size]}")
            p = p.reshape(idx.shape)
        elif p.size <= 1:
            if p.size == 0:
                if idx.size:
                    raise RuntimeError(f"update_priority: empty priority for {idx.size} "
                                       "indices")
                return
            p = np.full(idx.shape, float(p.reshape(())))
        valid = idx >= 0
        if not valid.all():
            idx, p = idx[valid], p[valid]
        if idx.size == 0:
            return
        if not np.isfinite(p).all() or (p < 0).any():
            raise ValueError("update_priority: priorities must be finite and >= 0, got "
                             f"{p[~np.isfinite(p) | (p < 0)][:5].tolist()}")
        if idx.max() >= self._max_capacity:
            raise IndexError(f"update_priority: index {int(idx.max())} is out of range for "
                             f"max_capacity={self._max_capacity}")
        self._max_priority = max(self._max_priority, float(p.max()))
        self._set(idx, np.power(p + self._eps, self._alpha))

    def mark_update(self, index):
        self.update_priority(index, self.default_priority)

    # ------------------------------------------------------------------ state
    def state_dict(self):
        return {"_alpha": self._alpha, "_beta": self._beta, "_eps": self._eps,
                "_max_priority": self._max_priority, "_sum_tree": self._sum_tree.leaves(),
                "_min_tree": self._min_tree.leaves()}

    def load_state_dict(self, state_dict):
        self._alpha = float(state_dict["_alpha"])
        self._beta = float(state_dict["_beta"])
        self._eps = float(state_dict["_eps"])
        self._max_priority = float(state_dict["_max_priority"])
        self._sum_tree.set_leaves(state_dict["_sum_tree"])
        self._min_tree.set_leaves(state_dict["_min_tree"])

    def _json_state(self):
        return {"_alpha": self._alpha, "_beta": self._beta, "_eps": self._eps,
                "_max_priority": self._max_priority, "_max_capacity": self._max_capacity}

    def dumps(self, path):
        os.makedirs(path, exist_ok=True)
        save_array(os.path.join(path, "sumtree.npy"), self._sum_tree.leaves())
        save_array(os.path.join(path, "mintree.npy"), self._min_tree.leaves())
        super().dumps(path)

    def loads(self, path):
        super().loads(path)
        self._sum_tree.set_leaves(load_array(os.path.join(path, "sumtree.npy"),
                                             "PrioritizedSampler.loads"))
        self._min_tree.set_leaves(load_array(os.path.join(path, "mintree.npy"),
                                             "PrioritizedSampler.loads"))

    def _load_json_state(self, meta):
        if int(meta["_max_capacity"]) != self._max_capacity:
            raise RuntimeError(f"PrioritizedSampler.loads: the saved sampler has max_capacity "
                               f"{meta['_max_capacity']}, this one {self._max_capacity}")
        self._alpha, self._beta = float(meta["_alpha"]), float(meta["_beta"])
        self._eps, self._max_priority = float(meta["_eps"]), float(meta["_max_priority"])

    def __repr__(self):
        return (f"PrioritizedSampler(alpha={self._alpha}, beta={self._beta}, eps={self._eps}, "
                f"reduction={self.reduction})")
