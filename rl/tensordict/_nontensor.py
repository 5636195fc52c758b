"""Non-tensor values in a TensorDict: ``NonTensorData`` (one object for the whole batch) and
``NonTensorStack`` (one object per batch element, e.g. after stacking different strings).

Both follow the batch ops of their TensorDict (indexing, reshape, permute, stack, cat, ...):
``NonTensorData`` only tracks the batch shape; ``NonTensorStack`` keeps a numpy object array
of that shape. Both survive ``TensorDict.save``/``memmap_`` when the data is JSON-like.

    >>> from ember.rl import TensorDict, NonTensorData
    >>> td = TensorDict({"task": "reach"}, batch_size=[4])
    >>> td["task"], td.get("task").batch_size
    ('reach', (4,))
    >>> td[1:3]["task"]
    'reach'
"""
from __future__ import annotations

import numpy as np

from ._utils import as_batch_size, as_device, to_numpy_index

__all__ = ["NonTensorData", "NonTensorStack", "is_non_tensor", "same_data"]


def same_data(a, b) -> bool:
    """``a == b`` for arbitrary objects, False when the comparison is not one truth value."""
    if a is b:
        return True
    try:
        r = a == b
        return bool(r) if isinstance(r, (bool, np.bool_)) else False
    except Exception:
        return False


def _np_index(index):
    if type(index) is tuple:
        return tuple(to_numpy_index(i) for i in index)
    return to_numpy_index(index)


def _shape_of(fn, batch_size):
    """The batch shape after ``fn`` (a batch op written for arrays), from a zero-stride dummy."""
    return fn(np.broadcast_to(np.zeros((), np.bool_), batch_size)).shape


class NonTensorData:
    """A Python object stored in a TensorDict for every element of its batch."""

    __slots__ = ("data", "batch_size", "device")

    def __init__(self, data, batch_size=None, device=None):
        if isinstance(data, (NonTensorData, NonTensorStack)):
            raise TypeError("NonTensorData: data is already a non-tensor value")
        self.data = data
        self.batch_size = as_batch_size(batch_size)
        self.device = as_device(device)

    @property
    def shape(self):
        return self.batch_size

    @property
    def batch_dims(self):
        return len(self.batch_size)

    def _batch_op(self, fn):
        """The same data under the batch shape that ``fn`` gives."""
        return NonTensorData(self.data, _shape_of(fn, self.batch_size), self.device)

    def _as_objects(self):
        out = np.empty(self.batch_size, dtype=object)
        out.fill(self.data)
        return out

    def __getitem__(self, index):
        index = _np_index(index)
        return self._batch_op(lambda a: a[index])

    def tolist(self):
        return self._as_objects().tolist()

    def clone(self, recurse=True):
        return NonTensorData(self.data, self.batch_size, self.device)

    def to(self, device):
        return NonTensorData(self.data, self.batch_size, device)

    def __eq__(self, other):
        if isinstance(other, NonTensorData):
            return same_data(self.data, other.data) and self.batch_size == other.batch_size
        return NotImplemented

    __hash__ = object.__hash__

    def __repr__(self):
        return (f"NonTensorData(data={self.data}, batch_size={self.batch_size}, "
                f"device={self.device})")


class NonTensorStack:
    """One Python object per batch element, held in a numpy object array of the batch shape."""

    __slots__ = ("objects", "device")

    def __init__(self, objects, device=None):
        arr = np.asarray(objects, dtype=object) if not isinstance(objects, np.ndarray) \
            else objects
        if arr.dtype != object:
            arr = arr.astype(object)
        self.objects = arr
        self.device = as_device(device)

    @classmethod
    def from_list(cls, items, batch_size, device=None):
        """Rebuild from a flat list in C order (nested list items stay objects)."""
        bs = as_batch_size(batch_size)
        arr = np.empty(bs, dtype=object)
        flat = arr.reshape(-1)
        if len(items) != flat.size:
            raise ValueError(f"NonTensorStack: {len(items)} items for batch_size {list(bs)}")
        for i, item in enumerate(items):
            flat[i] = item
        return cls(arr, device)

    @property
    def batch_size(self):
        return self.objects.shape

    shape = batch_size

    @property
    def data(self):
        return self.tolist()

    @property
    def batch_dims(self):
        return self.objects.ndim

    def tolist(self):
        return self.objects.tolist()

    def _batch_op(self, fn):
        out = fn(self.objects)
        if not isinstance(out, np.ndarray):  # one element
            return NonTensorData(out, (), self.device)
        if out.ndim == 0:
            return NonTensorData(out[()], (), self.device)
        return NonTensorStack(out, self.device)

    def _as_objects(self):
        return self.objects

    def __getitem__(self, index):
        index = _np_index(index)
        return self._batch_op(lambda a: a[index])

    def clone(self, recurse=True):
        return NonTensorStack(self.objects.copy(), self.device)

    def to(self, device):
        return NonTensorStack(self.objects, device)

    def __eq__(self, other):
        if isinstance(other, NonTensorStack):
            return self.batch_size == other.batch_size and all(
                same_data(a, b) for a, b in zip(self.objects.flat, other.objects.flat))
        return NotImplemented

    __hash__ = object.__hash__

    def __repr__(self):
        return f"NonTensorStack({self.tolist()!r}, batch_size={self.batch_size})"


def is_non_tensor(obj) -> bool:
    return isinstance(obj, (NonTensorData, NonTensorStack))


def stack_non_tensor(values, dim, cat=False):
    """Stack (or cat) non-tensor leaves: one ``NonTensorData`` when every item holds the same
    data, else a ``NonTensorStack``."""
    first = values[0]
    if all(isinstance(v, NonTensorData) for v in values) and all(
            same_data(first.data, v.data) for v in values[1:]):
        if cat:
            bs = list(first.batch_size)
            bs[dim] = sum(v.batch_size[dim] for v in values)
        else:
            bs = list(first.batch_size)
            bs.insert(dim, len(values))
        return NonTensorData(first.data, bs, first.device)
    arrays = [v._as_objects() for v in values]
    out = np.concatenate(arrays, axis=dim) if cat else np.stack(arrays, axis=dim)
    return NonTensorStack(out, first.device)
