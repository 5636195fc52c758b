"""``TensorDictModule``: a module (or any callable) that reads ``in_keys`` from a TensorDict
and writes its outputs at ``out_keys``.

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.tensordict.nn import TensorDictModule
    >>> actor = TensorDictModule(nn.Linear(4, 2), in_keys=["obs"], out_keys=["action"])
    >>> td = actor(TensorDict({"obs": ember.randn(8, 4)}, batch_size=[8]))
    >>> td["action"].shape
    (8, 2)
    >>> actor(ember.randn(3, 4)).shape         # tensors in, tensors out
    (3, 2)
"""
from __future__ import annotations

from ember import nn

from .._base import TensorDict
from .._nontensor import NonTensorData, NonTensorStack
from .._utils import unravel_key

__all__ = ["TensorDictModuleBase", "TensorDictModule", "norm_key", "norm_keys"]


def norm_key(key):
    """A key as tensordict writes it: a string, or a flat tuple of two strings or more."""
    path = unravel_key(key)
    return path[0] if len(path) == 1 else path


def norm_keys(keys, what="keys"):
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    try:
        return [norm_key(k) for k in keys]
    except TypeError as e:
        raise ValueError(f"{what} must be a key or a list of keys (strings or tuples of "
                         f"strings): {e}") from None


def read(td, key, strict, who):
    """The value at ``key`` for a module input (non-tensor values as their data)."""
    v = td.get(key, None)
    if v is None and strict:
        raise KeyError(f"{who}: input key {key!r} is missing from the TensorDict (its keys: "
                       f"{list(td.keys(True))})")
    if isinstance(v, (NonTensorData, NonTensorStack)):
        return v.data
    return v


class TensorDictModuleBase(nn.Module):
    """Base of the modules that read and write TensorDicts: they have ``in_keys`` and
    ``out_keys`` and accept tensors too (see ``TensorDictModule``)."""

    in_keys: list
    out_keys: list

    def _tensors_call(self, args, kwargs):
        """``module(x, y)`` / ``module(obs=x)``: the inputs in ``in_keys`` order (keyword
        names: the key, nested keys joined by ``_``); returns the outputs (one tensor, or a
        tuple in ``out_keys`` order)."""
        td = TensorDict({}, batch_size=[])
        if len(args) > len(self.in_keys):
            raise TypeError(f"{type(self).__name__}: {len(args)} positional inputs for "
                            f"in_keys {self.in_keys}")
        for key, a in zip(self.in_keys, args):
            td.set(key, a)
        names = {k if isinstance(k, str) else "_".join(k): k for k in self.in_keys}
        for name, a in kwargs.items():
            if name not in names:
                raise TypeError(f"{type(self).__name__}: unexpected input {name!r}; expected "
                                f"one of {sorted(names)}")
            td.set(names[name], a)
        out = self.forward(td)
        vals = [out.get(k) for k in self.out_keys if k != "_"]
        return vals[0] if len(vals) == 1 else tuple(vals)


class TensorDictModule(TensorDictModuleBase):
    """Wrap ``module`` so that it reads ``in_keys`` and writes ``out_keys``.

    Args:
        module: an ``nn.Module`` or a callable. It may return a tensor, a tuple of tensors
            (one per out key) or a dict/TensorDict holding the out keys.
        in_keys: a key, a list of keys (positional arguments, in order), or a dict (keyword
            arguments: ``{argument: tensordict_key}``; ``out_to_in_map=False`` reads it as
            ``{tensordict_key: argument}``).
        out_keys: a key or a list of keys, one per output; ``"_"`` drops that output.
        inplace: ``True`` writes into the input TensorDict; ``False`` into a new one with
            only the outputs (no batch size); ``"empty"`` into ``tensordict.empty()``.
        method: call this method of ``module`` instead of the module itself.
        strict: raise ``KeyError`` on a missing input key (else ``None`` is passed).
    """

    def __init__(self, module, in_keys, out_keys, *, out_to_in_map=None, inplace=True,
                 method=None, method_kwargs=None, strict=False):
        super().__init__()
        if isinstance(in_keys, dict):
            if out_to_in_map is None or out_to_in_map:
                kwargs_names, keys = list(in_keys), list(in_keys.values())
            else:
                keys, kwargs_names = list(in_keys), list(in_keys.values())
            self._kwargs = kwargs_names
            in_keys = keys
        else:
            self._kwargs = None
        self.in_keys = norm_keys(in_keys, "in_keys")
        self.out_keys = norm_keys(out_keys, "out_keys")
        if inplace not in (True, False, "empty"):
            raise ValueError(f"TensorDictModule: inplace must be True, False or 'empty', got "
                             f"{inplace!r}")
        if method is None and not callable(module):
            raise ValueError(f"TensorDictModule: {module!r} is not callable (pass method= "
                             "to call one of its methods)")
        self.module = module
        self.inplace = inplace
        self.method = method
        self.method_kwargs = dict(method_kwargs or {})
        self.strict = strict

    def _call_module(self, tensors, kwargs):
        fn = self.module if self.method is None else getattr(self.module, self.method)
        if self.method_kwargs:
            kwargs = {**self.method_kwargs, **kwargs}
        if self._kwargs is not None:
            return fn(**dict(zip(self._kwargs, tensors)), **kwargs)
        return fn(*tensors, **kwargs)

    def _outputs(self, out):
        keys = self.out_keys
        if isinstance(out, (dict, TensorDict)):
            return [out[k] if k != "_" else None for k in keys]
        if not isinstance(out, (tuple, list)):
            out = (out,)
        if len(out) != len(keys):
            raise RuntimeError(f"TensorDictModule: the module returned {len(out)} outputs for "
                               f"{len(keys)} out_keys {keys}")
        return out

    def forward(self, tensordict=None, *args, tensordict_out=None, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        who = f"TensorDictModule({type(self.module).__name__})"
        tensors = [read(tensordict, k, self.strict, who) for k in self.in_keys]
        outs = self._outputs(self._call_module(tensors, kwargs))
        if tensordict_out is None:
            if self.inplace is True:
                tensordict_out = tensordict
            elif self.inplace == "empty":
                tensordict_out = tensordict.empty()
            else:
                tensordict_out = TensorDict({}, batch_size=[])
        for key, val in zip(self.out_keys, outs):
            if key != "_":
                tensordict_out.set(key, val)
        return tensordict_out

    def __repr__(self):
        inner = repr(self.module).replace("\n", "\n    ")
        return (f"{type(self).__name__}(\n    module={inner},\n    in_keys={self.in_keys},"
                f"\n    out_keys={self.out_keys})")
