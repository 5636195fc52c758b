"""``stack`` and ``cat`` of TensorDicts, and the dispatch that lets ``ember.stack`` /
``ember.cat`` take TensorDicts (through ``TensorDict.__ember_function__``).

    >>> import ember
    >>> from ember.rl.tensordict import TensorDict, stack, cat
    >>> a = TensorDict({"x": ember.zeros(3, 2)}, batch_size=[3])
    >>> stack([a, a], dim=1).batch_size, cat([a, a]).batch_size
    ((3, 2), (6,))
"""
from __future__ import annotations

import ember
from ember._tensor import Tensor

from ._nontensor import NonTensorData, NonTensorStack, stack_non_tensor

__all__ = ["stack", "cat", "dispatch"]

_NONTENSOR = (NonTensorData, NonTensorStack)


def _check(tds, name):
    from ._base import TensorDict

    tds = list(tds)
    if not tds:
        raise RuntimeError(f"{name}: expected a non-empty list of TensorDicts")
    for i, td in enumerate(tds):
        if not isinstance(td, TensorDict):
            raise TypeError(f"{name}: entry {i} is a {type(td).__name__}, not a TensorDict")
    keys = tds[0]._tensordict.keys()
    for i, td in enumerate(tds[1:], 1):
        if td._tensordict.keys() != keys:
            diff = sorted(set(keys) ^ set(td._tensordict))
            raise KeyError(f"{name}: TensorDict 0 and TensorDict {i} have different keys: "
                           f"{diff} are in only one of them")
    return tds


def stack(tds, dim=0):
    """Join equally sized TensorDicts along a new batch dim ``dim``."""
    tds = _check(tds, "stack")
    bs = tds[0].batch_size
    for i, td in enumerate(tds[1:], 1):
        if td.batch_size != bs:
            raise RuntimeError(f"stack: TensorDicts must have one batch_size, got "
                               f"{list(bs)} at entry 0 and {list(td.batch_size)} at entry {i}")
    nb = len(bs)
    if not -nb - 1 <= dim <= nb:
        raise IndexError(f"stack: dim {dim} out of range for {nb} batch dims")
    d = dim + nb + 1 if dim < 0 else dim
    out = {}
    for k, v0 in tds[0]._tensordict.items():
        vals = [td._tensordict[k] for td in tds]
        if isinstance(v0, Tensor):
            out[k] = ember.stack(vals, d)
        elif isinstance(v0, _NONTENSOR):
            out[k] = stack_non_tensor(vals, d)
        else:
            out[k] = stack(vals, d)
    return type(tds[0])._new(out, bs[:d] + (len(tds),) + bs[d:], _device(tds))


def cat(tds, dim=0):
    """Join TensorDicts along batch dim ``dim`` (the other batch dims must agree)."""
    tds = _check(tds, "cat")
    bs = tds[0].batch_size
    nb = len(bs)
    if not nb:
        raise RuntimeError("cat: TensorDicts with no batch dims cannot be concatenated")
    if not -nb <= dim < nb:
        raise IndexError(f"cat: dim {dim} out of range for {nb} batch dims")
    d = dim + nb if dim < 0 else dim
    for i, td in enumerate(tds[1:], 1):
        b = td.batch_size
        if len(b) != nb or b[:d] != bs[:d] or b[d + 1:] != bs[d + 1:]:
            raise RuntimeError(f"cat: batch sizes must match except in dim {d}, got "
                               f"{list(bs)} at entry 0 and {list(b)} at entry {i}")
    out = {}
    for k, v0 in tds[0]._tensordict.items():
        vals = [td._tensordict[k] for td in tds]
        if isinstance(v0, Tensor):
            out[k] = ember.cat(vals, d)
        elif isinstance(v0, _NONTENSOR):
            out[k] = stack_non_tensor(vals, d, cat=True)
        else:
            out[k] = cat(vals, d)
    n = sum(td.batch_size[d] for td in tds)
    return type(tds[0])._new(out, bs[:d] + (n,) + bs[d + 1:], _device(tds))


def _device(tds):
    dev = tds[0].device
    return dev if all(td.device == dev for td in tds) else None


def dispatch(func, args, kwargs):
    """What ``ember.<func>(TensorDicts...)`` means: stack, cat (also under the names concat
    and concatenate) and unbind."""
    name = getattr(func, "__name__", "")
    if name == "stack":
        return stack(*args, **kwargs)
    if name in ("cat", "concat", "concatenate"):
        if "axis" in kwargs:
            kwargs = dict(kwargs)
            kwargs["dim"] = kwargs.pop("axis")
        return cat(*args, **kwargs)
    if name == "unbind":
        td, *rest = args
        return td.unbind(*rest, **kwargs)
    raise TypeError(f"ember.{name} does not take TensorDicts (supported: stack, cat, unbind)")
