"""``Module``: parameters, buffers and submodules in a tree, with state dicts whose keys match
PyTorch's for the same architecture.

    >>> import ember
    >>> from ember import nn
    >>> class Affine(nn.Module):
    ...     def __init__(self, n):
    ...         super().__init__()
    ...         self.w = nn.Parameter(ember.ones(n))
    ...         self.register_buffer("shift", ember.zeros(n))
    ...     def forward(self, x):
    ...         return x * self.w + self.shift
    >>> m = Affine(3)
    >>> list(m.state_dict())
    ['w', 'shift']
    >>> m(ember.ones(3)).shape
    (3,)
"""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ..._convert import Convertible, parse_to_args
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeysResult(_IncompatibleKeys):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


class RemovableHandle:
    """Returned by ``register_*_hook``: ``handle.remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, *dicts):
        self.id = next(RemovableHandle._ids)
        self._dicts = dicts

    def remove(self):
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(text, n):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * n + ln for ln in lines[1:])


class Module(Convertible):
    """Base class of every layer and model. Subclasses call ``super().__init__()`` first, then
    assign ``Parameter``s, submodules and buffers as attributes, and define ``forward``."""

    training: bool
    _version = 1  # bump in a subclass when its state-dict layout changes

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments: "
                            f"{args} {kwargs} (Module.__init__ takes none)")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", {})
        sa(self, "_buffers", {})
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", {})
        sa(self, "_forward_pre_hooks", OrderedDict())
        sa(self, "_forward_pre_hooks_with_kwargs", set())
        sa(self, "_forward_hooks", OrderedDict())
        sa(self, "_forward_hooks_with_kwargs", set())
        sa(self, "_forward_hooks_always_called", set())
        sa(self, "_state_dict_hooks", OrderedDict())
        sa(self, "_load_state_dict_pre_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook with kwargs must return None or a "
                                           f"tuple (new_args, new_kwargs), got {r!r}")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        called = set()
        try:
            out = self.forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                called.add(hid)
                if hid in self._forward_hooks_with_kwargs:
                    r = hook(self, args, kwargs, out)
                else:
                    r = hook(self, args, out)
                if r is not None:
                    out = r
        except Exception:
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called and hid not in called:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:
                        pass
            raise
        return out

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args) -> None | new_args`` (or ``hook(module, args, kwargs) -> None |
        (args, kwargs)`` with ``with_kwargs=True``), run before ``forward``."""
        h = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(h.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output) -> None | new_output``, run after ``forward``."""
        h = RemovableHandle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
        if always_call:
            self._forward_hooks_always_called.add(h.id)
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    # ------------------------------------------------------------------ attributes
    def __getattr__(self, name):
        d = self.__dict__
        s = d.get("_parameters")  # the hot lookup (``self.weight`` in every forward) first
        if s is not None and name in s:
            return s[name]
        for store in ("_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError(
                    "cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (ember.nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
            return
        modules = d.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (ember.nn.Module or None expected)")
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(ember.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drop ``name`` from the instance dict and the stores other than ``keep``, where a
        re-assignment then replaces the entry in place (its position in the module order, as
        in torch)."""
        d = self.__dict__
        d.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and store != keep:
                s.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            s = self.__dict__[store]
            if name in s:
                del s[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------------ registration
    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if hasattr(self, name) and name not in self._parameters and name not in \
                self._buffers and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (ember.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"cannot assign non-leaf Tensor to parameter '{name}'; make it a "
                             "leaf with .detach() first")
        self._buffers.pop(name, None)
        self._modules.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor kept with the module (moved by ``.to()``, saved in the state dict unless
        ``persistent=False``) that is not a learnable parameter."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ember.Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = Tensor._make(tensor.array)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._parameters.pop(name, None)
        self._buffers.pop(name, None)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no submodule `{item}` "
                                     f"(looking up '{target}')")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._buffers:
            raise AttributeError(f"{mod._get_name()} has no buffer `{name}`")
        return mod._buffers[name]

    def get_extra_state(self):
        raise RuntimeError("get_extra_state() called on a module that does not define it")

    def set_extra_state(self, state):
        raise RuntimeError("set_extra_state() called on a module that does not define it")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            pre, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in memo:
                    continue
                memo.add(id(mod))
            yield pre, mod
            children = [(pre + ("." if pre else "") + n, m) for n, m in mod._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for pre, mod in mods:
            for name, v in getattr(mod, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield pre + ("." if pre else "") + name, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none or p.grad.is_sparse:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    p.grad = g = g.detach()
                g.array[...] = 0

    def apply(self, fn):
        """``fn(m)`` for every submodule (children first) and then ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ device and dtype
    def _apply(self, fn, recurse=True):
        """Replace each parameter's, gradient's and buffer's array by ``fn(tensor)``'s, in place
        (the Parameter objects stay the same, as optimizers hold them)."""
        mods = self.modules() if recurse else [self]
        for m in mods:
            for name, p in m._parameters.items():
                if p is None:
                    continue
                with no_grad():
                    new = fn(p)
                if new.array is not p.array:
                    p.array = new.array
                    p._bump()
                if p.grad is not None and not p.grad.is_sparse:
                    with no_grad():
                        g = fn(p.grad)
                    if g.array is not p.grad.array:
                        p.grad.array = g.array
            for name, b in m._buffers.items():
                if b is not None:
                    with no_grad():
                        m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(tensor)``; a dtype applies
        to floating-point parameters and buffers only (integer buffers keep theirs)."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)  # applies to 4-D/5-D tensors, as in torch
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        device, dtype = parse_to_args(args, device, dtype)
        dt = D.to_dtype(dtype)
        if dt is not None and not (D.is_floating(dt) or dt.kind == "c"):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={D.name(dt)}")
        dev = None if device is None else B.device(device)

        def convert(t):
            out = t
            if dev is not None and out.device != dev:
                out = out.to(dev)
            if dt is not None and (D.is_floating(out.dtype) or out.dtype.kind == "c") and \
                    out.dtype != dt:
                out = out.to(dt)
            if fmt is not None and fmt.name != "preserve_format" and out.ndim in (4, 5) and \
                    (fmt.name == "contiguous_format" or (out.ndim == 4) == (fmt.name ==
                                                                          "channels_last")):
                out = out.contiguous(memory_format=fmt)
            return out
        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """Give every parameter and buffer fresh uninitialized memory on ``device`` (same
        shapes and dtypes): the step after building a model on the ``meta`` device, followed by
        ``reset_parameters()`` or ``load_state_dict``."""
        from ... import factories

        return self._apply(lambda t: factories.empty_like(t, device=device), recurse)

    def type(self, dst_type):
        return self.to(dst_type)

    def share_memory(self):
        """Move every parameter, buffer and grad into shared memory, so processes started
        through ``ember.multiprocessing`` update this same model (Hogwild). Returns self."""
        from ...multiprocessing import share_memory

        return share_memory(self)

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered ``{dotted name: tensor}`` of parameters and persistent buffers, tensors
        detached but sharing memory with the module (``keep_vars=True``: the objects
        themselves)."""
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][
                len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, None)
            if r is not None:
                destination = r
        return destination

    def _register_state_dict_hook(self, hook):
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module's keys are loaded (e.g. to rename
        keys of an older layout in place)."""
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = hook
        return h

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = itertools.chain(self._parameters.items(), persistent.items())
        for name, param in local:
            key = prefix + name
            if param is None:
                continue
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            arr = _as_array(value)
            if arr is None:
                error_msgs.append(f'While copying the parameter named "{key}", expected a '
                                  f"tensor or array from checkpoint but received "
                                  f"{type(value).__name__}")
                continue
            if arr.shape != param.array.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {list(arr.shape)} "
                    f"from checkpoint, the shape in current model is {list(param.array.shape)}.")
                continue
            try:
                if assign:  # take the checkpoint's array itself (its device, no copy)
                    new = arr
                    if isinstance(param, Parameter):
                        param.array = new
                        param._bump()
                    else:
                        self._buffers[name] = Tensor._make(new)
                else:
                    _copy_into(param, arr)
            except Exception as e:  # dtype that cannot be cast, device trouble, ...
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {list(param.array.shape)} and "
                                  f"whose dimensions in the checkpoint are {list(arr.shape)}, "
                                  f"an exception occurred: {e}")
        extra = prefix + "_extra_state"
        if self._has_extra_state():
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        if strict:  # a key is unexpected when its first component names nothing here
            for key in state_dict:
                if not key.startswith(prefix) or key == extra:
                    continue
                rest = key[len(prefix):]
                head = rest.split(".", 1)[0]
                if head not in self._modules and head not in self._parameters and \
                        head not in persistent:
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict``'s tensors (ember Tensors or numpy arrays, e.g. from
        ``ember.load`` of a PyTorch ``.pth``) into this module's parameters and buffers.
        ``strict`` reports missing and unexpected keys as an error; the returned named tuple
        lists them either way."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        # a shallow copy, as torch makes: a module's _load_from_state_dict may rename keys
        # (old layouts) without changing the caller's dict
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        for name, mod in self.named_modules(remove_duplicate=False):
            prefix = name + "." if name else ""
            local_meta = {} if metadata is None else metadata.get(name, {})
            mod._load_from_state_dict(state_dict, prefix, local_meta, True, missing,
                                      unexpected, errors, assign)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t" +
                               "\n\t".join(errors))
        return _IncompatibleKeysResult(missing, unexpected)

    # ------------------------------------------------------------------ repr and pickling
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        if not self._modules:
            return f"{self._get_name()}({extra})" if len(lines) <= 1 else \
                self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __setstate__(self, state):
        self.__dict__.update(state)


def _as_array(value):
    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, np.ndarray) or B.is_cuda_array(value):
        return value
    if isinstance(value, (int, float, bool)):
        return np.asarray(value)
    return None


def _copy_into(param, arr):
    d = param.array
    if B.is_meta(d):  # nothing to copy into; load with assign=True to adopt the arrays
        return
    if type(arr) is not type(d):
        arr = B.to_device(arr, param.device)
    if arr.dtype != d.dtype and not np.can_cast(arr.dtype, d.dtype, "same_kind") and not (
            D.is_floating(arr.dtype) and D.is_floating(d.dtype)):
        raise RuntimeError(f"cannot copy a {D.name(arr.dtype)} value into a "
                           f"{D.name(d.dtype)} tensor")
    B.namespace(d).copyto(d, arr, casting="unsafe")
    param._bump()
