"""``TensorDictSequential``: TensorDict modules run one after the other on one TensorDict.

Its ``in_keys`` are the keys some module reads before any earlier module wrote them; its
``out_keys`` are every key the modules write, in order.

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.tensordict.nn import TensorDictModule, TensorDictSequential
    >>> net = TensorDictSequential(
    ...     TensorDictModule(nn.Linear(4, 8), ["obs"], ["hidden"]),
    ...     TensorDictModule(nn.Linear(8, 2), ["hidden"], ["action"]))
    >>> net.in_keys, net.out_keys
    (['obs'], ['hidden', 'action'])
    >>> net(TensorDict({"obs": ember.randn(5, 4)}, [5]))["action"].shape
    (5, 2)
"""
from __future__ import annotations

from collections import OrderedDict

from ember import nn

from .._base import TensorDict
from .common import TensorDictModuleBase, norm_keys

__all__ = ["TensorDictSequential"]


class _FunctionModule(TensorDictModuleBase):
    """A plain function ``td -> td`` as a step of a sequence (no declared keys)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.in_keys, self.out_keys = [], []

    def forward(self, tensordict):
        out = self.fn(tensordict)
        return tensordict if out is None else out

    def __repr__(self):
        return f"_FunctionModule({self.fn!r})"


def _as_step(m):
    if isinstance(m, TensorDictModuleBase):
        return m
    if callable(m):
        return _FunctionModule(m)
    raise TypeError(f"TensorDictSequential: {m!r} is neither a TensorDict module nor a "
                    "function of a TensorDict")


class TensorDictSequential(TensorDictModuleBase):
    """Run ``modules`` in order on one TensorDict.

    Args:
        *modules: TensorDict modules (or functions ``td -> td``), or one ``OrderedDict`` of
            named modules.
        partial_tolerant: skip a module whose inputs are missing instead of failing.
        selected_out_keys: keep only these of the written keys in the result.
    """

    def __init__(self, *modules, partial_tolerant=False, selected_out_keys=None):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            steps = OrderedDict((k, _as_step(m)) for k, m in modules[0].items())
            self.module = nn.ModuleDict(steps)
            self._named = True
        else:
            self.module = nn.ModuleList([_as_step(m) for m in modules])
            self._named = False
        self.partial_tolerant = partial_tolerant
        self.selected_out_keys = None if selected_out_keys is None else norm_keys(
            selected_out_keys, "selected_out_keys")
        self._refresh_keys()

    def _steps(self):
        return list(self.module.values()) if self._named else list(self.module)

    def _refresh_keys(self):
        in_keys, out_keys, written = [], [], set()
        for m in self._steps():
            for k in m.in_keys:
                if k not in written and k not in in_keys:
                    in_keys.append(k)
            for k in m.out_keys:
                if k != "_" and k not in out_keys:
                    out_keys.append(k)
                written.add(k)
        self.in_keys = in_keys
        self.out_keys = out_keys if self.selected_out_keys is None else list(
            self.selected_out_keys)

    def forward(self, tensordict=None, *args, tensordict_out=None, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        td = tensordict
        for m in self._steps():
            if self.partial_tolerant and any(k not in td for k in m.in_keys):
                continue
            td = m(td, **kwargs) if kwargs else m(td)
        if self.selected_out_keys is not None:
            drop = [k for k in self._all_out_keys() if k not in self.selected_out_keys]
            td = td.exclude(*drop, inplace=True)
        if tensordict_out is not None:
            tensordict_out.update(td)
            return tensordict_out
        return td

    def _all_out_keys(self):
        keys = []
        for m in self._steps():
            keys += [k for k in m.out_keys if k != "_" and k not in keys]
        return keys

    def __len__(self):
        return len(self.module)

    def __getitem__(self, index):
        steps = self._steps()
        if isinstance(index, slice):
            return TensorDictSequential(*steps[index], partial_tolerant=self.partial_tolerant)
        if isinstance(index, str) and self._named:
            return self.module[index]
        return steps[index]

    def __repr__(self):
        body = ",\n".join("    " + repr(m).replace("\n", "\n    ") for m in self._steps())
        return (f"{type(self).__name__}(\n    module=[\n{body}],\n    in_keys={self.in_keys},"
                f"\n    out_keys={self.out_keys})")
