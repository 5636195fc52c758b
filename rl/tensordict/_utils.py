"""Small helpers shared by the TensorDict files: nested keys, batch sizes, error messages."""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor

_MISSING = object()  # 'no default given'
_ABSENT = object()  # a default that marks a missing key


def unravel_key(key):
    """A nested key as a flat tuple of strings: ``"a"`` -> ``("a",)``,
    ``("a", ("b", "c"))`` -> ``("a", "b", "c")``.

    >>> unravel_key(("a", ("b", "c")))
    ('a', 'b', 'c')
    """
    if type(key) is str:
        return (key,)
    if type(key) is not tuple:
        raise TypeError(f"TensorDict keys are strings or tuples of strings, got "
                        f"{type(key).__name__} {key!r}")
    out = []
    for k in key:
        if type(k) is str:
            out.append(k)
        else:
            out.extend(unravel_key(k))
    if not out:
        raise KeyError("TensorDict: the empty tuple is not a key")
    return tuple(out)


def is_key(obj) -> bool:
    """True for a string or a (possibly nested) tuple of strings: a key, not an index."""
    if type(obj) is str:
        return True
    if type(obj) is not tuple or not obj:
        return False
    return all(type(k) is str or (type(k) is tuple and is_key(k)) for k in obj)


def key_str(key) -> str:
    """A key as it reads in messages: ``'a'`` or ``('a', 'b')``."""
    return repr(key[0] if type(key) is tuple and len(key) == 1 else key)


def as_batch_size(batch_size) -> tuple:
    """``None`` -> ``()``, an int -> ``(n,)``, any sequence of ints -> a tuple of ints."""
    if batch_size is None:
        return ()
    t = type(batch_size)
    if t is tuple or t is list:  # the common case, checked without a generator
        out = tuple(batch_size)
        for s in out:
            if type(s) is not int or s < 0:
                break
        else:
            return out
    if isinstance(batch_size, (int, np.integer)):
        batch_size = (batch_size,)
    elif isinstance(batch_size, Tensor):
        batch_size = batch_size.tolist()
    out = tuple(int(s) for s in batch_size)
    for s in out:
        if s < 0:
            raise ValueError(f"TensorDict: batch_size must hold sizes >= 0, got {list(out)}")
    return out


def batch_mismatch(batch_size, shape, key):
    """The error for a value whose leading dims are not the batch size: it names both shapes."""
    return RuntimeError(
        f"TensorDict: batch size mismatch for key {key_str(key)}: the TensorDict has "
        f"batch_size={list(batch_size)} but the value has shape {list(shape)}; the leading "
        "dims of every value must equal the batch size")


def as_device(device):
    return None if device is None else ember.device(device)


def to_numpy_index(item):
    """One index item with tensors turned into numpy arrays (for computing shapes)."""
    if isinstance(item, Tensor):
        a = item.array
        return a if isinstance(a, np.ndarray) else a.get()
    if isinstance(item, (list, range)):
        return np.asarray(item)
    return item


def _consumed(item) -> int:
    """How many batch dims one index item consumes."""
    if item is None:
        return 0
    if isinstance(item, (Tensor, np.ndarray)):
        dt = item.dtype
        if dt == np.bool_:
            return max(item.ndim, 1)
        return 1
    if isinstance(item, (list, range)):
        arr = np.asarray(item)
        return max(arr.ndim, 1) if arr.dtype == np.bool_ else 1
    return 1


def normalize_index(index, batch_dims, batch_size):
    """``index`` as a tuple with no Ellipsis, so that it touches batch dims only (the feature
    dims of every value stay whole). Lists become numpy arrays."""
    t = type(index)
    if t is Tensor or t is np.ndarray or t is int or t is slice:  # one item: the hot path
        if _consumed(index) > batch_dims:
            raise IndexError(f"TensorDict: too many indices for batch_size="
                             f"{list(batch_size)}: the index {index!r} uses "
                             f"{_consumed(index)} batch dims")
        return (index,)
    items = index if t is tuple else (index,)
    out = []
    ellipsis_at = None
    used = 0
    for it in items:
        if it is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError("TensorDict: an index can only have a single ellipsis ('...')")
            ellipsis_at = len(out)
            continue
        if isinstance(it, (list, range)):
            it = np.asarray(it)
        elif isinstance(it, bool):
            raise IndexError("TensorDict: a Python bool is not a batch index (use a mask)")
        used += _consumed(it)
        out.append(it)
    if used > batch_dims:
        raise IndexError(f"TensorDict: too many indices for batch_size={list(batch_size)}: "
                         f"the index {index!r} uses {used} batch dims")
    if ellipsis_at is not None:
        out[ellipsis_at:ellipsis_at] = [slice(None)] * (batch_dims - used)
    return tuple(out)


def has_advanced(index) -> bool:
    """True when a normalised index holds an array (its result is a copy, not a view)."""
    for it in index:
        if isinstance(it, (Tensor, np.ndarray)):
            return True
    return False


def indexed_batch_size(batch_size, index):
    """The batch size after ``index`` (a normalised tuple), computed on a zero-stride array."""
    dummy = np.broadcast_to(np.zeros((), np.bool_), batch_size)
    return dummy[tuple(to_numpy_index(i) for i in index)].shape


def norm_dim(dim, ndim, what="dim"):
    if not -ndim <= dim < ndim:
        raise IndexError(f"TensorDict: {what} {dim} out of range for {ndim} batch dims")
    return dim + ndim if dim < 0 else dim
