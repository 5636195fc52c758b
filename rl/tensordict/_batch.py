"""TensorDict ops over the batch dims: indexing, index assignment, reshape/view/permute,
(un)squeeze, expand, flatten, unbind, split. Each value keeps its own trailing dims (feature
dims, or a sub-TensorDict's extra batch dims) untouched.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> td = TensorDict({"x": ember.arange(24.).reshape(6, 4)}, batch_size=[6])
    >>> td.reshape(2, 3).batch_size, td.reshape(2, 3)["x"].shape
    ((2, 3), (2, 3, 4))
    >>> td[ember.tensor([True, False, True, False, False, True])]["x"][:, 0].tolist()
    [0.0, 8.0, 20.0]
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember._tensor import Tensor
from ember.autograd.grad_mode import STATE

from ._nontensor import NonTensorData, NonTensorStack
from ._utils import (has_advanced, indexed_batch_size, norm_dim, normalize_index,
                     to_numpy_index)

_NONTENSOR = (NonTensorData, NonTensorStack)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer(shape, numel, batch_size):
    """``shape`` with one ``-1`` resolved, checked against the batch's element count."""
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("TensorDict: only one dimension can be inferred (-1)")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"TensorDict: batch_size {list(batch_size)} cannot be "
                               f"reshaped to {shape}")
        shape[neg[0]] = numel // known
    if math.prod(shape) != numel:
        raise RuntimeError(f"TensorDict: batch_size {list(batch_size)} cannot be reshaped "
                           f"to {shape}")
    return tuple(shape)


class BatchOps:
    """Mixin of TensorDict: the ops that act on the batch dims of every value."""

    __slots__ = ()

    def _map(self, fn, batch_size):
        """A TensorDict of ``fn(value)`` for every value, with the new ``batch_size``."""
        return self._new({k: fn(v) for k, v in self._tensordict.items()}, batch_size,
                         self._device)

    # ------------------------------------------------------------------ indexing
    def _index(self, index):
        bs = self._batch_size
        idx = normalize_index(index, len(bs), bs)
        data = self._tensordict
        out = {}
        new_bs = None
        nb = len(bs)
        if has_advanced(idx):  # a copy: gather the numpy arrays directly when no grad flows
            np_idx = None
            grad_on = STATE.enabled
            for k, v in data.items():
                if type(v) is Tensor and type(v.array) is np.ndarray and not (
                        grad_on and v.requires_grad):
                    if np_idx is None:
                        np_idx = to_numpy_index(idx[0]) if len(idx) == 1 else tuple(
                            to_numpy_index(i) for i in idx)
                    a = v.array
                    r = a[np_idx]
                    out[k] = Tensor._make(r)
                    if new_bs is None:
                        new_bs = r.shape[:r.ndim - (a.ndim - nb)]
                else:
                    r = out[k] = v[idx]
                    if new_bs is None and isinstance(r, Tensor):
                        new_bs = r.array.shape[:r.array.ndim - (v.array.ndim - nb)]
        else:
            for k, v in data.items():
                r = out[k] = v[idx]
                if new_bs is None and isinstance(r, Tensor):
                    new_bs = r.array.shape[:r.array.ndim - (v.array.ndim - nb)]
        if new_bs is None:
            new_bs = indexed_batch_size(bs, idx)
        return self._new(out, tuple(new_bs), self._device)

    def _set_at(self, index, value):
        """``td[index] = value``: a TensorDict (or dict) writes its values key by key into
        the indexed part of this one (missing keys are created, zero-filled); a tensor or a
        number is written into every tensor."""
        bs = self._batch_size
        idx = normalize_index(index, len(bs), bs)
        if isinstance(value, dict):
            value = type(self)(value, indexed_batch_size(bs, idx), self._device)
        data = self._tensordict
        if isinstance(value, BatchOps):
            for k, v in value._tensordict.items():
                cur = data.get(k)
                if cur is None:
                    cur = data[k] = _blank_like(v, bs, value.batch_dims, self)
                if isinstance(cur, _NONTENSOR):
                    data[k] = _assign_non_tensor(cur, idx, v)
                elif isinstance(cur, BatchOps):
                    cur._set_at(idx, v)
                else:
                    cur[idx] = v
            return
        for k, cur in data.items():
            if isinstance(cur, BatchOps):
                cur._set_at(idx, value)
            elif isinstance(cur, Tensor):
                cur[idx] = value

    # ------------------------------------------------------------------ shape ops
    def reshape(self, *shape):
        """The same values with batch dims reshaped to ``shape`` (views where possible)."""
        bs = self._batch_size
        new = _infer(_shape_args(shape), math.prod(bs), bs)
        nb = len(bs)
        return self._map(_leaf_op(lambda v, rest: v.reshape(new + rest),
                                  lambda a: a.reshape(new + a.shape[nb:]), nb), new)

    def view(self, *shape):
        """As ``reshape``, but every tensor must be viewable (as ``Tensor.view``)."""
        bs = self._batch_size
        new = _infer(_shape_args(shape), math.prod(bs), bs)
        nb = len(bs)
        return self._map(_leaf_op(lambda v, rest: v.view(new + rest),
                                  lambda a: a.reshape(new + a.shape[nb:]), nb), new)

    def flatten(self, start_dim=0, end_dim=-1):
        bs = self._batch_size
        s, e = norm_dim(start_dim, len(bs)), norm_dim(end_dim, len(bs))
        if e < s:
            raise RuntimeError("TensorDict.flatten: start_dim must not come after end_dim")
        return self.reshape(bs[:s] + (math.prod(bs[s:e + 1]),) + bs[e + 1:])

    def permute(self, *dims):
        """Reorder the batch dims (``dims`` is a permutation of ``range(batch_dims)``)."""
        nb = len(self._batch_size)
        dims = tuple(norm_dim(d, nb) for d in _shape_args(dims))
        if sorted(dims) != list(range(nb)):
            raise RuntimeError(f"TensorDict.permute: {list(dims)} is not a permutation of "
                               f"the {nb} batch dims")
        new = tuple(self._batch_size[d] for d in dims)

        def tensor(v, rest):
            return v.permute(dims + tuple(range(nb, nb + len(rest))))

        return self._map(_leaf_op(tensor, lambda a: a.transpose(
            dims + tuple(range(nb, a.ndim))), nb, td=lambda v: v.permute(
                dims + tuple(range(nb, v.batch_dims)))), new)

    def transpose(self, dim0, dim1):
        nb = len(self._batch_size)
        order = list(range(nb))
        d0, d1 = norm_dim(dim0, nb), norm_dim(dim1, nb)
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(order)

    def unsqueeze(self, dim):
        nb = len(self._batch_size)
        d = norm_dim(dim, nb + 1)
        new = self._batch_size[:d] + (1,) + self._batch_size[d:]
        return self._map(_leaf_op(lambda v, rest: v.unsqueeze(d),
                                  lambda a: np.expand_dims(a, d), nb,
                                  td=lambda v: v.unsqueeze(d)), new)

    def squeeze(self, dim=None):
        bs = self._batch_size
        if dim is None:
            new = tuple(s for s in bs if s != 1)
        else:
            d = norm_dim(dim, len(bs))
            new = bs if bs[d] != 1 else bs[:d] + bs[d + 1:]
        return self.reshape(new) if new != bs else self

    def expand(self, *shape):
        """Broadcast the batch dims to ``shape`` (``-1`` keeps a dim), without copies."""
        shape = _shape_args(shape)
        bs = self._batch_size
        nb = len(bs)
        if len(shape) < nb:
            raise RuntimeError(f"TensorDict.expand: {list(shape)} has fewer dims than "
                               f"batch_size {list(bs)}")
        lead = len(shape) - nb
        new = tuple(bs[i - lead] if s == -1 else s for i, s in enumerate(shape))
        np.broadcast_shapes(bs, new)  # raises on incompatible sizes
        return self._map(_leaf_op(lambda v, rest: v.expand(new + rest),
                                  lambda a: np.broadcast_to(a, new + a.shape[nb:]), nb,
                                  td=lambda v: v.expand(new + v.batch_size[nb:])), new)

    def unbind(self, dim=0):
        """The TensorDicts along batch dim ``dim``, as a tuple."""
        nb = len(self._batch_size)
        d = norm_dim(dim, nb)
        pre = (slice(None),) * d
        return tuple(self._index(pre + (i,)) for i in range(self._batch_size[d]))

    def split(self, split_size, dim=0):
        """Pieces along batch dim ``dim``: of ``split_size`` each (an int) or of the given
        sizes (a list)."""
        nb = len(self._batch_size)
        d = norm_dim(dim, nb)
        n = self._batch_size[d]
        if isinstance(split_size, int):
            bounds = [(i, min(i + split_size, n)) for i in range(0, n, split_size)]
        else:
            if sum(split_size) != n:
                raise RuntimeError(f"TensorDict.split: sizes {list(split_size)} do not add up "
                                   f"to {n}")
            starts = np.cumsum([0] + list(split_size))
            bounds = list(zip(starts[:-1].tolist(), starts[1:].tolist()))
        pre = (slice(None),) * d
        return tuple(self._index(pre + (slice(a, b),)) for a, b in bounds)


def _leaf_op(tensor_fn, array_fn, nb, td=None):
    """One function over any value: ``tensor_fn(tensor, feature_shape)`` for tensors,
    ``td(sub)`` (or ``tensor_fn`` on the sub's batch) for sub-TensorDicts, ``array_fn`` on the
    batch array of a non-tensor value."""

    def fn(v):
        if isinstance(v, Tensor):
            return tensor_fn(v, v.array.shape[nb:])
        if isinstance(v, BatchOps):
            if td is not None:
                return td(v)
            return tensor_fn(v, v._batch_size[nb:])
        return v._batch_op(array_fn)

    return fn


def _blank_like(v, batch_size, value_batch_dims, td):
    """A zero value to receive ``v`` (written at an index) under ``batch_size``."""
    if isinstance(v, Tensor):
        return ember.zeros(batch_size + v.array.shape[value_batch_dims:], dtype=v.dtype,
                           device=v.device if td._device is None else td._device)
    if isinstance(v, BatchOps):
        return type(td)._new({}, batch_size + v._batch_size[value_batch_dims:], td._device)
    return NonTensorData(None, batch_size + v.batch_size[value_batch_dims:], td._device)


def _assign_non_tensor(cur, index, v):
    """``cur[index] = v`` for non-tensor values (becomes a NonTensorStack unless equal)."""
    if not isinstance(v, _NONTENSOR):
        raise TypeError(f"TensorDict: cannot write a {type(v).__name__} into non-tensor data")
    if isinstance(cur, NonTensorData) and isinstance(v, NonTensorData) and (
            cur.data is v.data or _eq(cur.data, v.data)):
        return cur
    objs = cur._as_objects().copy()
    objs[tuple(to_numpy_index(i) for i in index)] = v._as_objects()
    return NonTensorStack(objs, cur.device)


def _eq(a, b):
    from ._nontensor import same_data

    return same_data(a, b)
