"""Which classes and functions a checkpoint may name when it is unpickled.

ember checkpoints never run code by default: a state dict is tensors and plain containers.
A whole pickled object (``ember.save(model)``) names classes, so loading it needs one of torch's
three escape hatches, under the same names:

* ``ember.serialization.add_safe_globals([Net, ...])``: allow these classes from now on;
* ``with ember.serialization.safe_globals([Net, ...]):``: allow them inside the block;
* ``ember.load(path, weights_only=False)``: trust the whole file (it may run any code; warns
  once).

ember's own ``nn.Module`` classes and its tensor types are allowed without asking: they are
rebuilt field by field and run no code from the file.
"""
from __future__ import annotations

import contextvars
import threading

_LOCK = threading.Lock()
_GLOBAL = {}  # "module.qualname" -> object, for add_safe_globals
_SCOPED = contextvars.ContextVar("ember_safe_globals", default=())  # safe_globals(...) blocks


def _entries(objs):
    out = []
    for o in objs:
        if isinstance(o, tuple) and len(o) == 2 and isinstance(o[1], str):
            out.append((o[1], o[0]))  # (obj, "module.name") as torch accepts
        else:
            mod = getattr(o, "__module__", None)
            qn = getattr(o, "__qualname__", None) or getattr(o, "__name__", None)
            if mod is None or qn is None:
                raise TypeError(f"add_safe_globals: {o!r} is not a class or function (expected "
                                "objects with __module__ and __qualname__, or (obj, 'mod.name'))")
            out.append((f"{mod}.{qn}", o))
    return out


def add_safe_globals(safe_globals):
    """Allow these classes/functions in checkpoints loaded from now on (process-wide)."""
    with _LOCK:
        _GLOBAL.update(_entries(safe_globals))


def get_safe_globals():
    """The objects allowed by ``add_safe_globals`` (not counting open ``safe_globals`` blocks)."""
    with _LOCK:
        return list(_GLOBAL.values())


def clear_safe_globals():
    with _LOCK:
        _GLOBAL.clear()


class safe_globals:
    """Allow these classes/functions while the block runs (this thread/context only).

        >>> import ember
        >>> with ember.serialization.safe_globals([dict]):
        ...     pass
    """

    def __init__(self, safe_globals):
        self._add = tuple(_entries(safe_globals))
        self._token = None

    def __enter__(self):
        self._token = _SCOPED.set(_SCOPED.get() + self._add)
        return self

    def __exit__(self, *exc):
        _SCOPED.reset(self._token)
        return False


def lookup(module, name):
    """The allowed object for ``module.name``, or None."""
    key = f"{module}.{name}"
    for k, o in reversed(_SCOPED.get()):
        if k == key:
            return o
    with _LOCK:
        return _GLOBAL.get(key)


def allowed_types():
    with _LOCK:
        objs = list(_GLOBAL.values())
    return {o for o in objs + [o for _, o in _SCOPED.get()] if isinstance(o, type)}


def ways_out(qualname):
    return (f"To load it, allow the class if you trust it: "
            f"ember.serialization.add_safe_globals([{qualname.rsplit('.', 1)[-1]}]), or "
            f"`with ember.serialization.safe_globals([...]):` around ember.load, or "
            f"ember.load(path, weights_only=False) if you trust the whole file (it can run "
            f"any code)")


TRUST_ALL = contextvars.ContextVar("ember_trust_all", default=False)  # weights_only=False
