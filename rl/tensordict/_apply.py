"""TensorDict ops over its values: apply/named_apply, to/clone/detach/zero_, comparisons and
all/any, update, select/exclude, flatten_keys/unflatten_keys.

Non-tensor values pass through ``apply`` unchanged (a function written for tensors is not
called on a string).

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> td = TensorDict({"a": ember.ones(2), "b": {"c": ember.zeros(2)}}, batch_size=[2])
    >>> td.apply(lambda x: x + 1)["b", "c"].tolist()
    [1.0, 1.0]
    >>> list(td.flatten_keys().keys())
    ['a', 'b.c']
    >>> (td == td.clone()).all()
    True
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember._tensor import Tensor

from ._nontensor import NonTensorData, NonTensorStack, same_data
from ._utils import _ABSENT, _MISSING, as_batch_size, as_device, key_str, norm_dim, unravel_key

_NONTENSOR = (NonTensorData, NonTensorStack)
_KEEP = object()


class ApplyOps:
    """Mixin of TensorDict: the ops that act on every value."""

    __slots__ = ()

    # ------------------------------------------------------------------ apply
    def apply(self, fn, *others, batch_size=None, device=_KEEP, call_on_nested=False,
              default=_MISSING):
        """A new TensorDict of ``fn(value, *other_values)`` for every tensor (``others``:
        TensorDicts with the same keys; a missing key takes ``default`` when given). Keys for
        which ``fn`` returns None are left out. ``call_on_nested=True`` hands sub-TensorDicts
        to ``fn`` whole. ``batch_size``/``device``: of the result (default: this one's)."""
        return self._apply(lambda key, v, *o: fn(v, *o), others, (), False, batch_size,
                           device, call_on_nested, default)

    def named_apply(self, fn, *others, nested_keys=False, batch_size=None, device=_KEEP,
                    call_on_nested=False, default=_MISSING):
        """As ``apply`` with ``fn(key, value, *other_values)``: ``key`` is the local string, or
        with ``nested_keys=True`` the full key (a tuple below the top level)."""
        return self._apply(fn, others, (), nested_keys, batch_size, device, call_on_nested,
                           default)

    def _apply(self, fn, others, prefix, nested_keys, batch_size, device, call_on_nested,
               default):
        bs = self._batch_size if batch_size is None else as_batch_size(batch_size)
        dev = self._device if device is _KEEP else as_device(device)
        out = type(self)._new({}, bs, dev)
        for k, v in self._tensordict.items():
            ovals = []
            for o in others:
                ov = o._tensordict.get(k, _MISSING)
                if ov is _MISSING:
                    if default is _MISSING:
                        raise KeyError(f"TensorDict.apply: key {key_str(prefix + (k,))} is "
                                       "missing from one of the other TensorDicts (pass "
                                       "default=...)")
                    ov = default
                ovals.append(ov)
            full = (prefix + (k,)) if prefix else k
            name = full if nested_keys else k
            if isinstance(v, ApplyOps) and not call_on_nested:
                sub_bs = None if batch_size is None else bs + v._batch_size[len(
                    self._batch_size):]
                r = v._apply(fn, [o if isinstance(o, ApplyOps) else _Const(o, v)
                                  for o in ovals], prefix + (k,), nested_keys, sub_bs,
                             device, call_on_nested, default)
                if not r._tensordict and v._tensordict:
                    continue
            elif isinstance(v, _NONTENSOR):
                r = v if dev is None else v.to(dev)
            else:
                r = fn(name, v, *ovals)
                if r is None:
                    continue
            out.set(k, r)
        return out

    def apply_(self, fn, *others):
        """``fn`` on every tensor, written back in place (``copy_``); returns self."""
        res = self.apply(fn, *others)
        for key, v in res.items(True, True):
            if isinstance(v, Tensor):
                self.get(key).copy_(v)
        return self

    # ------------------------------------------------------------------ conversions
    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)`` or both (as ``Tensor.to``); every tensor is cast,
        integer ones included. A device becomes the result's device."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        for a in args:
            if isinstance(a, np.dtype):
                dtype = a
            elif isinstance(a, (str, ember.device, int)):
                device = a
            else:
                raise TypeError(f"TensorDict.to: expected a device or a dtype, got {a!r}")
        if kwargs:
            raise TypeError(f"TensorDict.to: unexpected arguments {sorted(kwargs)}")
        dev = self._device if device is None else ember.device(device)

        def move(v):
            if device is not None and dtype is not None:
                return v.to(device=dev, dtype=dtype)
            return v.to(dev) if device is not None else v.to(dtype)

        return self.apply(move, device=dev)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else ember.device(device))

    def clone(self, recurse=True):
        """A copy: with ``recurse`` every tensor is copied, else only the dict structure."""
        if recurse:
            return self._copy_with(lambda v: v.clone())
        return self._copy_with(lambda v: v)

    def _copy_with(self, fn):
        out = {}
        for k, v in self._tensordict.items():
            if isinstance(v, ApplyOps):
                out[k] = v._copy_with(fn)
            elif isinstance(v, _NONTENSOR):
                out[k] = v.clone()
            else:
                out[k] = fn(v)
        return type(self)._new(out, self._batch_size, self._device)

    def detach(self):
        """A TensorDict of detached tensors (sharing memory)."""
        return self._copy_with(lambda v: v.detach())

    def detach_(self):
        for v in self.values(True, True):
            if isinstance(v, Tensor):
                v.detach_()
        return self

    def zero_(self):
        """Zero every tensor in place; returns self."""
        for v in self.values(True, True):
            if isinstance(v, Tensor):
                v.zero_()
        return self

    def requires_grad_(self, requires_grad=True):
        for v in self.values(True, True):
            if isinstance(v, Tensor):
                v.requires_grad_(requires_grad)
        return self

    def numel(self):
        """The number of batch elements (``prod(batch_size)``)."""
        return math.prod(self._batch_size)

    def to_dict(self):
        """A nested plain dict of the values (non-tensor values as their data)."""
        out = {}
        for k, v in self._tensordict.items():
            if isinstance(v, ApplyOps):
                out[k] = v.to_dict()
            elif isinstance(v, _NONTENSOR):
                out[k] = v.data
            else:
                out[k] = v
        return out

    def empty(self, recurse=False):
        """A TensorDict with the same batch size and device and no values (with
        ``recurse``, the sub-TensorDicts are kept, empty)."""
        out = {}
        if recurse:
            for k, v in self._tensordict.items():
                if isinstance(v, ApplyOps):
                    out[k] = v.empty(True)
        return type(self)._new(out, self._batch_size, self._device)

    # ------------------------------------------------------------------ comparisons
    def _compare(self, other, op):
        if isinstance(other, ApplyOps):
            mine = set(self._tensordict)
            theirs = set(other._tensordict)
            if mine != theirs:
                raise KeyError(f"TensorDict comparison: keys differ: "
                               f"{sorted(mine ^ theirs)} are in only one of the two")
        out = {}
        for k, v in self._tensordict.items():
            o = other._tensordict[k] if isinstance(other, ApplyOps) else other
            if isinstance(v, ApplyOps):
                out[k] = v._compare(o, op)
            elif isinstance(v, _NONTENSOR):
                eq = (v == o) if isinstance(o, _NONTENSOR) else same_data(v.data, o)
                eq = bool(eq) if op == "eq" else not bool(eq)
                out[k] = ember.full(tuple(v.batch_size), eq, dtype=ember.bool,
                                    device=self._device)
            else:
                if isinstance(o, _NONTENSOR):
                    raise TypeError(f"TensorDict comparison: key {k!r} is a tensor here and "
                                    "non-tensor data in the other")
                out[k] = (v == o) if op == "eq" else (v != o)
        return type(self)._new(out, self._batch_size, self._device)

    def __eq__(self, other):
        """A TensorDict of bool tensors (``(td == other).all()`` for one answer)."""
        return self._compare(other, "eq")

    def __ne__(self, other):
        return self._compare(other, "ne")

    __hash__ = object.__hash__

    def _reduce(self, dim, name):
        if dim is None:
            for v in self.values(True, True):
                if isinstance(v, Tensor):
                    r = bool(getattr(v, name)().item())
                    if r != (name == "all"):
                        return r
            return name == "all"
        nb = len(self._batch_size)
        d = norm_dim(dim, nb)
        new = self._batch_size[:d] + self._batch_size[d + 1:]
        out = {}
        for k, v in self._tensordict.items():
            if isinstance(v, ApplyOps):
                out[k] = v._reduce(d, name)
            elif isinstance(v, _NONTENSOR):
                pre = (slice(None),) * d
                out[k] = v._batch_op(lambda a: a[pre + (0,)])
            else:
                out[k] = getattr(v, name)(d)
        return type(self)._new(out, new, self._device)

    def all(self, dim=None):
        """``dim=None``: True when every element of every tensor is true. A batch ``dim``:
        a TensorDict reduced along it."""
        return self._reduce(dim, "all")

    def any(self, dim=None):
        return self._reduce(dim, "any")

    # ------------------------------------------------------------------ keys
    def update(self, input_dict_or_td, clone=False, inplace=False, keys_to_update=None):
        """Set every value of ``input_dict_or_td`` (sub-dicts merge into existing
        sub-TensorDicts); ``keys_to_update`` restricts the keys. Returns self."""
        only = None if keys_to_update is None else {unravel_key(k) for k in keys_to_update}
        self._update(input_dict_or_td, (), clone, inplace, only)
        return self

    def _update(self, src, prefix, clone, inplace, only):
        items = src._tensordict.items() if isinstance(src, ApplyOps) else src.items()
        for k, v in items:
            path = prefix + unravel_key(k)
            cur = self.get(path, None)
            if isinstance(v, (dict, ApplyOps)) and isinstance(cur, ApplyOps):
                self._update(v, path, clone, inplace, only)
                continue
            if only is not None and not any(path[:len(o)] == o for o in only):
                continue
            if clone and isinstance(v, (Tensor, ApplyOps)):
                v = v.clone()
            self.set(path, v, inplace=inplace)

    def select(self, *keys, inplace=False, strict=True):
        """A TensorDict with only ``keys`` (nested keys keep their path). ``strict=False``
        skips missing keys. ``inplace`` drops the others from this one."""
        out = type(self)._new({}, self._batch_size, self._device)
        for key in keys:
            path = unravel_key(key)
            v = self.get(path, _ABSENT)
            if v is _ABSENT:
                if strict:
                    raise KeyError(f"TensorDict.select: key {key_str(key)} not found")
                continue
            parent = out
            src = self
            for p in path[:-1]:
                src = src._tensordict[p]
                nxt = parent._tensordict.get(p)
                if nxt is None:
                    nxt = parent._tensordict[p] = type(self)._new({}, src._batch_size,
                                                                  src._device)
                parent = nxt
            parent._tensordict[path[-1]] = v
        if inplace:
            self._tensordict = out._tensordict
            return self
        return out

    def exclude(self, *keys, inplace=False):
        """A TensorDict without ``keys`` (missing keys are ignored)."""
        out = self if inplace else self.clone(recurse=False)
        for key in keys:
            path = unravel_key(key)
            parent = out.get(path[:-1], None) if len(path) > 1 else out
            if isinstance(parent, ApplyOps):
                parent._tensordict.pop(path[-1], None)
        return out

    def flatten_keys(self, separator=".", inplace=False):
        """Nested values moved to the top level under joined keys (``("a", "b")`` ->
        ``"a.b"``)."""
        out = type(self)._new({}, self._batch_size, self._device)
        for key, v in self.items(True, True):
            name = key if type(key) is str else separator.join(key)
            if name in out._tensordict:
                raise KeyError(f"TensorDict.flatten_keys: two keys flatten to {name!r}")
            out._tensordict[name] = v
        if inplace:
            self._tensordict = out._tensordict
            return self
        return out

    def unflatten_keys(self, separator=".", inplace=False):
        """The inverse of ``flatten_keys``: ``"a.b"`` -> ``("a", "b")``."""
        out = type(self)._new({}, self._batch_size, self._device)
        for k, v in self._tensordict.items():
            if isinstance(v, ApplyOps):
                v = v.unflatten_keys(separator)
            path = tuple(k.split(separator)) if separator in k else (k,)
            parent = out._sub(path[:-1], create=True)
            if path[-1] in parent._tensordict:
                raise KeyError(f"TensorDict.unflatten_keys: {k!r} collides with another key")
            parent._tensordict[path[-1]] = v
        if inplace:
            self._tensordict = out._tensordict
            return self
        return out


class _Const:
    """Stands for a plain default value where ``apply`` expects another TensorDict."""

    __slots__ = ("_tensordict",)

    def __init__(self, value, like):
        self._tensordict = {k: value for k in like._tensordict}
