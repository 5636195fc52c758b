"""``Optimizer``: parameter groups, per-parameter state, ``state_dict`` and step hooks.

Subclasses implement ``step(closure=None)``; the base wraps every subclass's ``step`` so that
it runs under ``no_grad`` with the registered pre/post hooks (the closure, when given, is
re-evaluated under ``enable_grad`` by ``_closure``).

``state_dict()`` has PyTorch's layout: ``{"state": {index: {...}}, "param_groups": [{...,
"params": [index, ...]}]}`` with parameters numbered in group order. Its tensors are the live
state (not copies, as in PyTorch): ``copy.deepcopy`` it to keep a snapshot while training on.
``load_state_dict`` copies every tensor onto its parameter's device (floating state cast to the
parameter's dtype, ``step`` kept as is), so the loaded optimizer owns its buffers. Tensors may be
ember Tensors or anything numpy can read (numpy arrays; CPU torch tensors).

The step counter ``state["step"]`` is a 0-d float32 CPU tensor, as in PyTorch (SparseAdam: an
int, as in PyTorch); an int or float loaded from an older checkpoint is converted.

    >>> import ember
    >>> w = ember.zeros(3, requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.1)
    >>> (w - 1.0).pow(2).sum().backward()
    >>> opt.step(); [round(x, 4) for x in w.tolist()]
    [0.2, 0.2, 0.2]
"""
from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain

import numpy as np

from .. import _backend as B
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _Required:
    """Marks a hyper-parameter every param group must give (``lr=required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


class _HookHandle:
    """``handle.remove()`` unregisters a hook (also a context manager)."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = _HookHandle._next_id
        _HookHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _register(hooks, fn, prepend=False):
    h = _HookHandle(hooks)
    hooks[h.id] = fn
    if prepend:
        hooks.move_to_end(h.id, last=False)
    return h


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` before every optimizer's step."""
    return _register(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs) -> None`` after every optimizer's step."""
    return _register(_global_post_hooks, hook)


def _wrap_step(fn):
    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        if self._in_step:  # a subclass's step calling super().step(): hooks ran already
            return fn(self, *args, **kwargs)
        for hook in chain(tuple(_global_pre_hooks.values()),
                          tuple(self._optimizer_step_pre_hooks.values())):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(
                        f"optimizer step pre-hook must return None or a tuple of (new_args, "
                        f"new_kwargs), but got {res!r}")
                args, kwargs = res
        self._in_step = True
        try:
            with no_grad():
                out = fn(self, *args, **kwargs)
        finally:
            self._in_step = False
        self._opt_called = True
        for hook in chain(tuple(self._optimizer_step_post_hooks.values()),
                          tuple(_global_post_hooks.values())):
            hook(self, args, kwargs)
        return out

    step._ember_wrapped = True
    return step


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (param groups,
            each with ``"params"`` and optional per-group hyper-parameters).
        defaults: the hyper-parameters a group gets when it does not set them.
    """

    _in_step = False
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("step")
        if fn is not None and not getattr(fn, "_ember_wrapped", False):
            cls.step = _wrap_step(fn)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    # -- pickling / repr ----------------------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for k in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                  "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                  "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(k, OrderedDict())

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    # -- groups -------------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group ``{"params": [...], **hyper}``; missing hyper-parameters take the
        defaults. A parameter may belong to one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__module__}.{type(p).__name__}")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(map(id, tensors))):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", stacklevel=3)
        seen = set()
        for g in self.param_groups:
            seen.update(map(id, g["params"]))
            if ("param_names" in param_group) != ("param_names" in g):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if not seen.isdisjoint(map(id, tensors)):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True):
        """Reset every parameter's gradient: to ``None`` (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif g.is_sparse:
                    p.grad = type(g)(g.indices[:0], g.values[:0], g.shape, coalesced=True)
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad = False
                    g.array[...] = 0
                    g._bump()

    # -- stepping -----------------------------------------------------------------------------
    def step(self, closure=None):
        """Update the parameters once; ``closure()`` re-evaluates the loss (returned)."""
        raise RuntimeError(f"{type(self).__name__} does not implement step(): an Optimizer "
                           "subclass must define it")

    @staticmethod
    def _closure(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before step."""
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None`` after step."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` before ``state_dict()`` builds its result."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None or a new state_dict``."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None or the state_dict to load``."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` after ``load_state_dict`` finished."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dict ---------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: per-param state}, "param_groups": [...]}`` (PyTorch's layout)."""
        for hook in tuple(self._optimizer_state_dict_pre_hooks.values()):
            hook(self)
        index = {}
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for i, p in enumerate(g["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in g["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        sd = {"state": state, "param_groups": groups}
        for hook in tuple(self._optimizer_state_dict_post_hooks.values()):
            r = hook(self, sd)
            if r is not None:
                sd = r
        return sd

    def load_state_dict(self, state_dict):
        """Load a ``state_dict()`` of an optimizer with the same group structure."""
        state_dict = dict(state_dict)
        for hook in tuple(self._optimizer_load_state_dict_pre_hooks.values()):
            r = hook(self, state_dict)
            if r is not None:
                state_dict = r
        groups = self.param_groups
        saved = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, s in zip(groups, saved):
            if len(g["params"]) != len(s["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = {key: _cast(p, val, key) for key, val in v.items()}
            else:
                state[k] = copy.deepcopy(v)
        new_groups = []
        for g, s in zip(groups, saved):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups
        self._fix_loaded_state()
        for hook in tuple(self._optimizer_load_state_dict_post_hooks.values()):
            hook(self)

    def _fix_loaded_state(self):
        """Normalise state loaded from older or foreign checkpoints (``step`` as a tensor)."""
        for group in self.param_groups:
            for k, v in self.defaults.items():
                group.setdefault(k, v)
            for p in group["params"]:
                st = self.state.get(p)
                if st and "step" in st and not isinstance(st["step"], Tensor):
                    st["step"] = _step_tensor(float(st["step"]))

    # -- helpers for subclasses -----------------------------------------------------------------
    def _params_with_grad(self, group):
        """``(param, grad)`` for each parameter of ``group`` that has a gradient."""
        out = []
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            if not g.is_sparse and g.array.shape != p.array.shape:
                raise RuntimeError(f"{type(self).__name__}: a parameter of shape "
                                   f"{tuple(p.shape)} has a gradient of shape {tuple(g.shape)}")
            out.append((p, g))
        return out


def _step_tensor(value=0.0):
    return Tensor._make(np.array(value, np.float32))


def advance_state(state, p, buffers=(), scalars=()):
    """``p``'s state with its step counter advanced; created at the first step as torch lays
    it out: ``step``, then the 0-d ``scalars`` ((name, initial value) pairs), then zero
    ``buffers`` shaped like ``p``. Returns ``(state, step as a float)``."""
    from ._util import zeros_like

    st = state[p]
    if not st:
        st["step"] = _step_tensor()
        for name, value in scalars:
            st[name] = _step_tensor(value)
        for name in buffers:
            st[name] = zeros_like(p)
    step = st["step"].array
    step += 1
    return st, float(step)


def _cast(param, value, key=None):
    """A copy of ``value`` for ``param``'s state: tensors on its device, floating ones in its
    dtype (``step`` keeps its own)."""
    if isinstance(value, Tensor) or (hasattr(value, "__array__")
                                     and not isinstance(value, (np.generic, float, int))):
        arr = value.array if isinstance(value, Tensor) else np.asarray(value)
        if key == "step":
            if not isinstance(arr, np.ndarray):
                arr = B.to_device(arr, "cpu")
            return Tensor._make(np.array(arr, copy=True))
        if arr.dtype.kind == "f" and param.array.dtype.kind == "f":
            arr = arr.astype(param.array.dtype, copy=False)
        xp = B.namespace(param.array)
        if B.namespace(arr) is not xp:
            arr = B.to_device(arr, param.device)
        return Tensor._make(xp.array(arr, copy=True))
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    return copy.deepcopy(value)
