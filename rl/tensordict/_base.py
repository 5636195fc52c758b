"""``TensorDict``: a dict of tensors sharing leading batch dims, with nested keys.

This file holds the object itself (construction, the checks on set, get/set/del, keys and
views of them, iteration). The batch ops live in ``_batch.py``, the per-leaf ops in
``_apply.py``, persistence in ``_persist.py``, stack/cat in ``_funcs.py``, the repr in
``_repr.py``.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> td = TensorDict({"obs": ember.zeros(4, 3), "next": {"reward": ember.ones(4, 1)}},
    ...                 batch_size=[4])
    >>> td["next", "reward"].shape
    (4, 1)
    >>> td[1:3].batch_size
    (2,)
    >>> sorted(td.keys(include_nested=True, leaves_only=True), key=str)
    [('next', 'reward'), 'obs']
"""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor

from ._apply import ApplyOps
from ._batch import BatchOps
from ._nontensor import NonTensorData, NonTensorStack
from ._persist import PersistOps
from ._repr import td_repr
from ._utils import (_ABSENT, _MISSING, as_batch_size, as_device, batch_mismatch, is_key, key_str,
                     unravel_key)

__all__ = ["TensorDict", "is_tensor_collection"]

_NONTENSOR = (NonTensorData, NonTensorStack)
_SCALARS = (np.ndarray, np.generic, int, float, complex)


class TensorDict(BatchOps, ApplyOps, PersistOps):
    """A dictionary of tensors (and nested TensorDicts, and non-tensor data) whose values
    share the leading ``batch_size`` dims.

    Args:
        source: a dict (values: tensors, numpy arrays, numbers, nested dicts or TensorDicts,
            any other object as ``NonTensorData``) or a TensorDict; ``None`` for empty. Keyword
            arguments add entries too (``TensorDict(obs=x, batch_size=[4])``).
        batch_size: the leading dims every value shares (``[]`` when omitted).
        device: when given, every value is moved there on set.

    Every set checks the value's leading dims against ``batch_size`` and raises a
    ``RuntimeError`` naming both shapes when they differ. Keys are strings; a tuple of strings
    is a nested key (``td["next", "obs"]``).
    """

    __slots__ = ("_tensordict", "_batch_size", "_device", "__weakref__")

    def __init__(self, source=None, batch_size=None, device=None, **kwargs):
        bs = as_batch_size(batch_size)
        self._tensordict = {}
        self._device = as_device(device)
        if isinstance(source, TensorDict):
            if batch_size is None:
                bs = source._batch_size
            source = source._tensordict
        elif source is not None and not hasattr(source, "items"):
            raise TypeError(f"TensorDict: source must be a dict or a TensorDict, got "
                            f"{type(source).__name__}")
        self._batch_size = bs
        if source:
            self._fill(source)
        if kwargs:
            self._fill(kwargs)

    def _fill(self, source):
        data, bs, dev = self._tensordict, self._batch_size, self._device
        nb = len(bs)
        for key, value in source.items():
            if type(value) is Tensor and type(key) is str:  # the hot path
                if value.array.shape[:nb] != bs:
                    raise batch_mismatch(bs, value.array.shape, key)
                if dev is not None and value.device != dev:
                    value = value.to(dev)
                data[key] = value
            else:
                self.set(key, value)

    @classmethod
    def _new(cls, data, batch_size, device):
        """A TensorDict over ``data`` as it is: no checks (the caller guarantees them)."""
        td = object.__new__(cls)
        td._tensordict = data
        td._batch_size = batch_size
        td._device = device
        return td

    @classmethod
    def from_dict(cls, d, batch_size=None, device=None):
        """A TensorDict from a (nested) dict; ``batch_size=None`` takes the longest leading
        shape that every value shares."""
        if batch_size is None:
            batch_size = _common_prefix(d)
        return cls(d, batch_size, device)

    # ------------------------------------------------------------------ properties
    @property
    def batch_size(self):
        return self._batch_size

    @batch_size.setter
    def batch_size(self, new):
        new = as_batch_size(new)
        old = self._batch_size
        nb = len(new)
        for key, v in self._tensordict.items():
            if isinstance(v, TensorDict):
                if v._batch_size == old or len(v._batch_size) < nb:
                    v.batch_size = new
                elif v._batch_size[:nb] != new:
                    raise batch_mismatch(new, v._batch_size, key)
            elif isinstance(v, NonTensorData) and v.batch_size in (old, ()):
                self._tensordict[key] = NonTensorData(v.data, new, v.device)
            elif tuple(v.shape[:nb]) != new:
                raise batch_mismatch(new, v.shape, key)
        self._batch_size = new

    shape = batch_size

    @property
    def batch_dims(self):
        return len(self._batch_size)

    ndim = batch_dims

    def dim(self):
        return len(self._batch_size)

    @property
    def device(self):
        return self._device

    def clear_device_(self):
        """Forget the device (values stay where they are); returns self."""
        self._device = None
        for v in self._tensordict.values():
            if isinstance(v, TensorDict):
                v.clear_device_()
        return self

    def is_empty(self):
        """True when the TensorDict holds no tensor (at any depth)."""
        return not any(True for _ in self.keys(True, True))

    # ------------------------------------------------------------------ set
    def _convert(self, key, value):
        """``value`` as a leaf of this TensorDict, checked against the batch size."""
        bs, dev = self._batch_size, self._device
        nb = len(bs)
        if isinstance(value, Tensor):
            if value.array.shape[:nb] != bs:
                raise batch_mismatch(bs, value.array.shape, key)
            if dev is not None and value.device != dev:
                value = value.to(dev)
            return value
        if isinstance(value, TensorDict):
            if value._batch_size[:nb] != bs:
                raise batch_mismatch(bs, value._batch_size, key)
            if dev is not None and value._device != dev:
                value = value.to(dev)
            return value
        if isinstance(value, _NONTENSOR):
            if value.batch_size[:nb] != bs:
                if isinstance(value, NonTensorData) and value.batch_size == ():
                    return NonTensorData(value.data, bs, dev)
                raise batch_mismatch(bs, value.batch_size, key)
            return value
        if isinstance(value, dict):
            return TensorDict(value, bs, dev)
        if isinstance(value, (str, bytes)) or value is None:
            return NonTensorData(value, bs, dev)
        if isinstance(value, _SCALARS) and not isinstance(value, np.str_):
            t = ember.as_tensor(value, device=dev)
            return self._convert(key, t)
        if isinstance(value, (list, tuple)):
            try:
                t = ember.tensor(value, device=dev)
            except (TypeError, ValueError):
                return NonTensorData(value, bs, dev)
            return self._convert(key, t)
        return NonTensorData(value, bs, dev)

    def set(self, key, item, inplace=False):
        """Store ``item`` at ``key`` (a nested key creates the sub-TensorDicts on the way).
        ``inplace=True`` copies into the tensor already there, when there is one. Returns
        self."""
        if type(key) is str:
            target, last = self, key
        else:
            path = unravel_key(key)
            target = self._sub(path[:-1], create=True)
            last = path[-1]
        value = target._convert(key, item)
        if inplace and isinstance(value, Tensor):
            cur = target._tensordict.get(last)
            if isinstance(cur, Tensor):
                cur.copy_(value)
                return self
        target._tensordict[last] = value
        return self

    def set_(self, key, item):
        """Copy ``item`` into the tensor at ``key`` (which must exist); returns self."""
        cur = self.get(key)
        if not isinstance(cur, Tensor):
            raise KeyError(f"TensorDict.set_: key {key_str(key)} does not hold a tensor")
        cur.copy_(item if isinstance(item, Tensor) else ember.as_tensor(item))
        return self

    def _sub(self, path, create=False):
        """The sub-TensorDict at ``path`` (a tuple), created on the way when ``create``."""
        td = self
        for i, k in enumerate(path):
            nxt = td._tensordict.get(k, _MISSING)
            if nxt is _MISSING:
                if not create:
                    raise KeyError(f"key {key_str(path[:i + 1])} not found in TensorDict")
                nxt = td._tensordict[k] = TensorDict._new({}, td._batch_size, td._device)
            elif not isinstance(nxt, TensorDict):
                raise KeyError(f"TensorDict: {key_str(path[:i + 1])} holds a "
                               f"{type(nxt).__name__}, not a TensorDict")
            td = nxt
        return td

    # ------------------------------------------------------------------ get
    def get(self, key, default=_MISSING):
        """The value at ``key``; ``default`` when it is missing (else ``KeyError``).
        Non-tensor values come back as their ``NonTensorData`` (``td[key]`` gives the data)."""
        if type(key) is str:
            v = self._tensordict.get(key, _MISSING)
        else:
            v = self
            for k in unravel_key(key):
                if not isinstance(v, TensorDict):
                    v = _MISSING
                    break
                v = v._tensordict.get(k, _MISSING)
                if v is _MISSING:
                    break
        if v is _MISSING:
            if default is not _MISSING:
                return default
            raise KeyError(f"key {key_str(key)} not found in TensorDict with keys "
                           f"{sorted(self._tensordict)}")
        return v

    def __getitem__(self, index):
        if type(index) is str or is_key(index):
            v = self.get(index)
            if isinstance(v, _NONTENSOR):
                return v.data
            return v
        return self._index(index)

    def __setitem__(self, index, value):
        if type(index) is str or is_key(index):
            self.set(index, value)
        else:
            self._set_at(index, value)

    def __delitem__(self, key):
        self.del_(key)

    def del_(self, key):
        """Remove ``key`` (``KeyError`` when missing); returns self."""
        path = unravel_key(key)
        parent = self._sub(path[:-1])
        if path[-1] not in parent._tensordict:
            raise KeyError(f"key {key_str(key)} not found in TensorDict")
        del parent._tensordict[path[-1]]
        return self

    def pop(self, key, default=_MISSING):
        """Remove ``key`` and return its value (``default`` when missing)."""
        try:
            v = self.get(key)
        except KeyError:
            if default is _MISSING:
                raise
            return default
        self.del_(key)
        return v

    def rename_key_(self, old_key, new_key):
        """Move the value at ``old_key`` to ``new_key``; returns self."""
        self.set(new_key, self.pop(old_key))
        return self

    # ------------------------------------------------------------------ keys
    def keys(self, include_nested=False, leaves_only=False, is_leaf=None):
        """A view of the keys: top-level strings, and with ``include_nested`` the nested
        keys as tuples (a sub-TensorDict's keys come before its own key). ``leaves_only``
        leaves out the keys of sub-TensorDicts."""
        return _KeysView(self, include_nested, leaves_only, is_leaf)

    def items(self, include_nested=False, leaves_only=False, is_leaf=None):
        for key in _iter_keys(self, (), include_nested, leaves_only, is_leaf):
            yield key, self.get(key)

    def values(self, include_nested=False, leaves_only=False, is_leaf=None):
        for key in _iter_keys(self, (), include_nested, leaves_only, is_leaf):
            yield self.get(key)

    def __contains__(self, key):
        if type(key) is str:
            return key in self._tensordict
        if not is_key(key):
            raise TypeError(f"TensorDict: `in` takes a key (a string or a tuple of strings), "
                            f"got {type(key).__name__}")
        return self.get(key, _ABSENT) is not _ABSENT

    def __len__(self):
        return self._batch_size[0] if self._batch_size else 0

    def __iter__(self):
        if not self._batch_size:
            raise TypeError("TensorDict: iteration over a TensorDict with no batch dims (use "
                            ".keys() for its keys)")
        return iter(self.unbind(0))

    def __bool__(self):
        raise ValueError("TensorDict: the truth value of a TensorDict is ambiguous; use "
                         ".all(), .any() or .is_empty()")

    def __repr__(self):
        return td_repr(self)

    __str__ = __repr__

    def __getstate__(self):
        return {"data": self._tensordict, "batch_size": self._batch_size,
                "device": None if self._device is None else str(self._device)}

    def __setstate__(self, state):
        self._tensordict = state["data"]
        self._batch_size = tuple(state["batch_size"])
        self._device = as_device(state["device"])

    @classmethod
    def __ember_function__(cls, func, types, args=(), kwargs=None):
        """Called by ``ember.stack``/``ember.cat`` (and friends) when given TensorDicts."""
        from ._funcs import dispatch

        return dispatch(func, args, kwargs or {})


def _iter_keys(td, prefix, nested, leaves, is_leaf):
    for k, v in td._tensordict.items():
        full = prefix + (k,) if prefix else k
        sub = isinstance(v, TensorDict) and not (is_leaf is not None and is_leaf(type(v)))
        if sub and nested:
            yield from _iter_keys(v, full if prefix else (k,), nested, leaves, is_leaf)
        if not (sub and leaves):
            yield full


class _KeysView:
    """What ``TensorDict.keys()`` returns: iterable, sized, supports ``in``."""

    __slots__ = ("_td", "_nested", "_leaves", "_is_leaf")

    def __init__(self, td, nested, leaves, is_leaf):
        self._td, self._nested, self._leaves, self._is_leaf = td, nested, leaves, is_leaf

    def __iter__(self):
        return _iter_keys(self._td, (), self._nested, self._leaves, self._is_leaf)

    def __len__(self):
        if not self._nested and not self._leaves:
            return len(self._td._tensordict)
        return sum(1 for _ in self)

    def __contains__(self, key):
        path = unravel_key(key)
        if len(path) > 1 and not self._nested:
            return False
        v = self._td.get(path, _ABSENT)
        if v is _ABSENT:
            return False
        return not (self._leaves and isinstance(v, TensorDict))

    def __repr__(self):
        return f"_TensorDictKeysView({list(self)!r})"


def is_tensor_collection(obj) -> bool:
    return isinstance(obj, TensorDict)


def _common_prefix(d):
    shapes = []

    def walk(x):
        for v in x.values():
            if isinstance(v, dict):
                walk(v)
            elif isinstance(v, TensorDict):
                shapes.append(v.batch_size)
            elif isinstance(v, (Tensor, np.ndarray)):
                shapes.append(tuple(v.shape))

    walk(d)
    if not shapes:
        return ()
    out = []
    for dims in zip(*shapes):
        if len(set(dims)) != 1:
            break
        out.append(dims[0])
    return tuple(out)
