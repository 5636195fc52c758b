"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

Children are registered under their position (``"0"``, ``"1"``, ...) or key, so state-dict
keys read ``features.0.weight`` exactly as in PyTorch.

    >>> from ember import nn
    >>> net = nn.Sequential(nn.Identity(), nn.Flatten())
    >>> len(net), type(net[1]).__name__, type(net[:1]).__name__
    (2, 'Flatten', 'Sequential')
"""
from __future__ import annotations

import operator
from collections import OrderedDict

from ..parameter import Parameter
from .module import Module


def _index(idx, n, what):
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i + n if i < 0 else i


_FUSE_TYPES = None  # (BatchNorm classes, {activation class: kind}), set on first use


def _fuse_types():
    global _FUSE_TYPES
    from . import activation as A
    from . import normalization as N

    _FUSE_TYPES = ((N.BatchNorm1d, N.BatchNorm2d, N.BatchNorm3d),
                   {A.ReLU: "relu", A.ReLU6: "relu6", A.Hardswish: "hardswish",
                    A.Hardsigmoid: "hardsigmoid", A.SiLU: "silu"})


def _no_hooks(m):
    return not (m._forward_pre_hooks or m._forward_hooks)


def bn_act(bn, act, x):
    """``act(bn(x))``, as one pass of the compiled batch-norm kernel with the activation fused
    (``F.normalization._batch_norm_act``) when ``bn`` is a BatchNorm in eval mode with running
    statistics, ``act`` a ReLU/ReLU6/Hardswish/Hardsigmoid/SiLU, neither has hooks and no
    gradient is recorded; otherwise the two modules are called as usual. Conv-BN-act blocks
    call it (``Sequential`` does for such pairs, ResNet's blocks explicitly)."""
    if _FUSE_TYPES is None:
        _fuse_types()
    bns, acts = _FUSE_TYPES
    if type(bn) in bns and not bn.training and bn.track_running_stats:
        kind = acts.get(type(act))
        if kind is not None and _no_hooks(bn) and _no_hooks(act):
            from ..functional.normalization import _batch_norm_act

            bn._check_input_dim(x)
            y = _batch_norm_act(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                bn.eps, kind)
            if y is not None:
                return y
    return act(bn(x))


def _forward_fusing(mods, x):
    """``Sequential.forward`` where each BatchNorm directly followed by an activation runs
    through :func:`bn_act`; every other module is called as usual."""
    bns, acts = _FUSE_TYPES
    i, n = 0, len(mods)
    while i < n:
        m = mods[i]
        if i + 1 < n and type(m) in bns and type(mods[i + 1]) in acts:
            x = bn_act(m, mods[i + 1], x)
            i += 2
            continue
        x = m(x)
        i += 1
    return x


class Sequential(Module):
    """Chains modules: ``forward(x)`` feeds ``x`` through each in order. Built from modules
    (named ``0``, ``1``, ...) or from one ``OrderedDict`` of named modules."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        mods = self._modules
        if _FUSE_TYPES is None:
            _fuse_types()
        for m in mods.values():
            if type(m) in _FUSE_TYPES[0]:  # a BatchNorm: maybe fused with the next module
                return _forward_fusing(list(mods.values()), input)
        for m in mods.values():
            input = m(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                del self._modules[k]
        else:
            del self._modules[keys[_index(idx, len(self), "Sequential")]]
        # renumber so that positions stay 0..n-1 (as torch does)
        items = list(self._modules.items())
        self._modules.clear()
        for i, (k, m) in enumerate(items):
            self._modules[str(i) if k.isdigit() else k] = m

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"index {index} is out of range for Sequential of length {n}")
        index = index + n if index < 0 else index
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)
        return self

    def pop(self, index=-1):
        m = self[index]
        del self[index]
        return m

    def __add__(self, other):
        if not isinstance(other, Sequential):
            return NotImplemented
        return Sequential(*self, *other)


def _parameters_repr(self):
    """The ``(name): Parameter containing: [dtype of size shape]`` lines of the parameter
    containers."""
    return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                     for k, p in self._parameters.items())


class _ListView:
    """The list protocol of a container over one of Module's stores (``_store``), entries
    registered under "0", "1", ... by the subclass's ``_register(name, value)``."""

    _store = "_modules"

    def _register(self, name, value):  # pragma: no cover - every subclass defines it
        raise TypeError(f"{type(self).__name__} must define _register(name, value)")

    def _items(self):
        return list(getattr(self, self._store).values())

    def _renumber(self, values):
        getattr(self, self._store).clear()
        for i, v in enumerate(values):
            self._register(str(i), v)

    def __len__(self):
        return len(getattr(self, self._store))

    def __iter__(self):
        return iter(getattr(self, self._store).values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(self._items()[idx])
        return getattr(self, self._store)[str(_index(idx, len(self), type(self).__name__))]

    def __setitem__(self, idx, value):
        self._register(str(_index(idx, len(self), type(self).__name__)), value)

    def __delitem__(self, idx):
        values = self._items()
        del values[idx if isinstance(idx, slice) else _index(idx, len(self),
                                                              type(self).__name__)]
        self._renumber(values)

    def __iadd__(self, values):
        return self.extend(values)

    def __add__(self, other):
        return type(self)(self._items() + list(other))

    def append(self, value):
        self._register(str(len(self)), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def insert(self, index, value):
        values = self._items()
        values.insert(index, value)
        self._renumber(values)

    def pop(self, index=-1):
        v = self[index]
        del self[index]
        return v


class ModuleList(_ListView, Module):
    """A list of modules registered as children (no ``forward`` of its own)."""

    def __repr__(self):
        # runs of identical children print once, as torch's: "(0-2): 3 x Linear(...)"
        from .module import _addindent

        reprs = [repr(m) for m in self._modules.values()]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first, last, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _register(self, name, module):
        self.add_module(name, module)


class _DictView:
    """The read side of a dict-like container over one of Module's stores (``_store``)."""

    _store = "_modules"

    def __getitem__(self, key):
        return getattr(self, self._store)[key]

    def __delitem__(self, key):
        del getattr(self, self._store)[key]

    def __len__(self):
        return len(getattr(self, self._store))

    def __iter__(self):
        return iter(getattr(self, self._store))

    def __contains__(self, key):
        return key in getattr(self, self._store)

    def keys(self):
        return getattr(self, self._store).keys()

    def values(self):
        return getattr(self, self._store).values()

    def items(self):
        return getattr(self, self._store).items()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def update(self, entries):
        for k, v in (entries.items() if hasattr(entries, "items") else entries):
            self[k] = v


class ModuleDict(_DictView, Module):
    """An ordered dict of modules registered as children."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def clear(self):
        self._modules.clear()


class ParameterList(_ListView, Module):
    """A list of parameters registered under ``"0"``, ``"1"``, ... (tensors become
    Parameters)."""

    _store = "_parameters"

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def _register(self, name, value):
        self.register_parameter(name, _param(value))

    extra_repr = _parameters_repr


class ParameterDict(_DictView, Module):
    """An ordered dict of parameters (tensors become Parameters)."""

    _store = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        self.register_parameter(key, _param(value))

    extra_repr = _parameters_repr


def _param(value):
    if isinstance(value, Parameter) or value is None:
        return value
    return Parameter(value)
