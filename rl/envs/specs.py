"""Tensor specs: what shape, dtype, device and range a value of an environment may take.

Every spec offers ``rand(shape=(), generator=None)`` (a random in-spec value with ``shape`` as
extra leading dims), ``zero(shape=())``, ``is_in(value)``, ``project(value)`` (the nearest in-spec
value) and ``encode(value)`` (numpy / python data to an ember tensor of the spec's dtype), plus
``shape``, ``dtype``, ``device`` and ``expand(*batch)`` (prepend batch dims). ``Composite`` groups
specs under (nested) keys and works on TensorDicts. ``generator`` is a ``numpy.random.Generator``.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.rl.tensordict import TensorDict

__all__ = ["TensorSpec", "Bounded", "Unbounded", "Categorical", "OneHot", "MultiCategorical",
           "Binary", "Composite"]

_DEFAULT_RNG = np.random.default_rng()


def _np(value):
    if isinstance(value, ember.Tensor):
        return value.detach().numpy(force=True)
    return np.asarray(value)


def _shape(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class TensorSpec:
    """Base of the leaf specs: holds ``shape``, ``dtype`` (a numpy dtype, as ember's) and ``device``."""

    def __init__(self, shape, dtype, device=None):
        self.shape = _shape(shape)
        self.dtype = np.dtype(dtype)
        self.device = ember.device(device) if device is not None else ember.device("cpu")

    # ------------------------------------------------------------------ helpers
    def _wrap(self, arr):
        arr = np.asarray(arr, dtype=self.dtype)
        return ember.tensor(arr if arr.flags.c_contiguous else arr.copy(), device=self.device)

    def _full(self, shape):
        return _shape(shape or ()) + self.shape

    def _rng(self, generator):
        return _DEFAULT_RNG if generator is None else generator

    def _shape_ok(self, arr):
        return arr.ndim >= len(self.shape) and tuple(arr.shape[arr.ndim - len(self.shape):]) == self.shape

    def _dtype_ok(self, arr):
        return arr.dtype == self.dtype

    # ------------------------------------------------------------------ api
    def zero(self, shape=()):
        return self._wrap(np.zeros(self._full(shape), self.dtype))

    def encode(self, value):
        """Convert ``value`` (array-like or tensor) to an ember tensor of this spec's dtype."""
        arr = _np(value)
        if not self._shape_ok(arr):
            if arr.size == int(np.prod(self.shape)):
                arr = arr.reshape(self.shape)
            else:
                raise ValueError(f"{type(self).__name__}.encode: value of shape {arr.shape} does not "
                                 f"fit spec shape {self.shape}")
        return self._wrap(arr.astype(self.dtype, copy=False))

    def is_in(self, value) -> bool:
        arr = _np(value)
        return bool(self._shape_ok(arr) and self._dtype_ok(arr) and self._range_ok(arr))

    def _range_ok(self, arr):
        return True

    def expand(self, *batch):
        if len(batch) == 1 and not isinstance(batch[0], (int, np.integer)):
            batch = tuple(batch[0])
        return self._expanded(_shape(batch))

    def __eq__(self, other):
        return (type(self) is type(other) and self.shape == other.shape and self.dtype == other.dtype
                and self.device == other.device and self._extra_eq(other))

    def _extra_eq(self, other):
        return True

    __hash__ = None

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, device={self.device})"


class Bounded(TensorSpec):
    """Values in ``[low, high]`` (element-wise, broadcast to ``shape``); float or integer dtype."""

    def __init__(self, low, high, shape=None, dtype=np.float32, device=None):
        low, high = np.asarray(_np(low), np.float64), np.asarray(_np(high), np.float64)
        if shape is None:
            shape = np.broadcast_shapes(low.shape, high.shape)
        super().__init__(shape, dtype, device)
        self.low = np.broadcast_to(low, self.shape).astype(self.dtype)
        self.high = np.broadcast_to(high, self.shape).astype(self.dtype)
        if np.any(self.low > self.high):
            raise ValueError("Bounded: low must be <= high everywhere")

    def _expanded(self, batch):
        return Bounded(np.broadcast_to(self.low, batch + self.shape),
                       np.broadcast_to(self.high, batch + self.shape), batch + self.shape,
                       self.dtype, self.device)

    def rand(self, shape=(), generator=None):
        rng, full = self._rng(generator), self._full(shape)
        lo = np.broadcast_to(self.low.astype(np.float64), full)
        hi = np.broadcast_to(self.high.astype(np.float64), full)
        if self.dtype.kind in "iub":
            out = rng.integers(lo.astype(np.int64), hi.astype(np.int64), endpoint=True, size=full)
            return self._wrap(out)
        # finite ranges: uniform; half-open: exponential tail from the finite end; open: normal
        big = np.finfo(self.dtype).max
        lo_f, hi_f = np.isfinite(lo) & (lo > -big), np.isfinite(hi) & (hi < big)
        lo_c, hi_c = np.clip(lo, -big / 2, big / 2), np.clip(hi, -big / 2, big / 2)
        u = rng.uniform(size=full)
        out = lo_c + u * (hi_c - lo_c)
        e = rng.exponential(size=full)
        out = np.where(lo_f & ~hi_f, lo + e, out)
        out = np.where(~lo_f & hi_f, hi - e, out)
        out = np.where(~lo_f & ~hi_f, rng.standard_normal(size=full), out)
        return self._wrap(np.clip(out, lo, hi))

    def _range_ok(self, arr):
        return bool(np.all(arr >= self.low) and np.all(arr <= self.high))

    def project(self, value):
        arr = _np(value).astype(np.float64)
        if self.dtype.kind in "iub":
            arr = np.round(arr)
        return self._wrap(np.clip(arr, self.low.astype(np.float64), self.high.astype(np.float64)))

    def _extra_eq(self, other):
        return np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high)

    def __repr__(self):
        return (f"Bounded(shape={self.shape}, low={self.low.min()}.., high=..{self.high.max()}, "
                f"dtype={self.dtype}, device={self.device})")


class Unbounded(TensorSpec):
    """Any value of the given shape and dtype (float: standard normal samples)."""

    def __init__(self, shape=(), dtype=np.float32, device=None):
        super().__init__(shape, dtype, device)

    def _expanded(self, batch):
        return Unbounded(batch + self.shape, self.dtype, self.device)

    def rand(self, shape=(), generator=None):
        rng, full = self._rng(generator), self._full(shape)
        if self.dtype.kind == "b":
            return self._wrap(rng.integers(0, 2, size=full))
        if self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            lo, hi = max(info.min, -(2 ** 31)), min(info.max, 2 ** 31 - 1)
            return self._wrap(rng.integers(lo, hi, endpoint=True, size=full))
        return self._wrap(rng.standard_normal(size=full))

    def _range_ok(self, arr):
        return not (arr.dtype.kind == "f" and np.isnan(arr).any())

    def project(self, value):
        arr = _np(value)
        if self.dtype.kind in "iu":
            arr = np.round(arr)
        return self._wrap(arr)


class Categorical(TensorSpec):
    """Integer indices in ``[0, n)`` with the given ``shape`` (``()`` for a single index)."""

    def __init__(self, n, shape=(), dtype=np.int64, device=None):
        super().__init__(shape, dtype, device)
        self.n = int(n)

    def _expanded(self, batch):
        return Categorical(self.n, batch + self.shape, self.dtype, self.device)

    def rand(self, shape=(), generator=None):
        return self._wrap(self._rng(generator).integers(0, self.n, size=self._full(shape)))

    def _range_ok(self, arr):
        if arr.dtype.kind == "b":
            return self.n >= 2
        return bool(np.all(arr >= 0) and np.all(arr < self.n) and np.all(arr == np.round(arr)))

    def project(self, value):
        return self._wrap(np.clip(np.round(_np(value).astype(np.float64)), 0, self.n - 1))

    def _extra_eq(self, other):
        return self.n == other.n

    def __repr__(self):
        return f"Categorical(n={self.n}, shape={self.shape}, dtype={self.dtype}, device={self.device})"


class OneHot(TensorSpec):
    """One-hot vectors over ``n`` classes (last dim ``n``); ``encode`` also accepts indices."""

    def __init__(self, n, shape=None, dtype=np.bool_, device=None):
        shape = (int(n),) if shape is None else _shape(shape)
        if shape[-1] != int(n):
            raise ValueError(f"OneHot: last dim of shape {shape} must be n={n}")
        super().__init__(shape, dtype, device)
        self.n = int(n)

    def _expanded(self, batch):
        return OneHot(self.n, batch + self.shape, self.dtype, self.device)

    def _onehot(self, idx):
        return np.eye(self.n, dtype=self.dtype)[idx]

    def rand(self, shape=(), generator=None):
        full = self._full(shape)
        return self._wrap(self._onehot(self._rng(generator).integers(0, self.n, size=full[:-1])))

    def _range_ok(self, arr):
        return bool(np.all((arr == 0) | (arr == 1)) and np.all(arr.sum(-1) == 1))

    def project(self, value):
        return self._wrap(self._onehot(np.argmax(_np(value), axis=-1)))

    def encode(self, value):
        arr = _np(value)
        if arr.shape[-1:] == (self.n,) and arr.shape == self.shape:
            return self._wrap(arr.astype(self.dtype))
        idx = arr.astype(np.int64)
        if np.any(idx < 0) or np.any(idx >= self.n):
            raise ValueError(f"OneHot.encode: index out of range [0, {self.n})")
        return self._wrap(self._onehot(idx).reshape(self.shape))

    def to_categorical(self, value):
        return ember.tensor(np.argmax(_np(value), axis=-1).astype(np.int64), device=self.device)

    def _extra_eq(self, other):
        return self.n == other.n


class MultiCategorical(TensorSpec):
    """Independent indices, entry ``i`` in ``[0, nvec[i])`` (nvec broadcast over leading dims)."""

    def __init__(self, nvec, shape=None, dtype=np.int64, device=None):
        nvec = np.asarray(_np(nvec), np.int64)
        shape = nvec.shape if shape is None else _shape(shape)
        super().__init__(shape, dtype, device)
        self.nvec = np.broadcast_to(nvec, self.shape).copy()

    def _expanded(self, batch):
        return MultiCategorical(np.broadcast_to(self.nvec, batch + self.shape), batch + self.shape,
                                self.dtype, self.device)

    def rand(self, shape=(), generator=None):
        full = self._full(shape)
        return self._wrap(self._rng(generator).integers(0, np.broadcast_to(self.nvec, full), size=full))

    def _range_ok(self, arr):
        return bool(np.all(arr >= 0) and np.all(arr < self.nvec) and np.all(arr == np.round(arr)))

    def project(self, value):
        return self._wrap(np.clip(np.round(_np(value).astype(np.float64)), 0, self.nvec - 1))

    def _extra_eq(self, other):
        return np.array_equal(self.nvec, other.nvec)


class Binary(TensorSpec):
    """0/1 vectors of length ``n`` (gymnasium's MultiBinary); dtype int8 by default."""

    def __init__(self, n=None, shape=None, dtype=np.int8, device=None):
        if shape is None:
            shape = (int(n),)
        super().__init__(shape, dtype, device)
        self.n = self.shape[-1] if self.shape else 1

    def _expanded(self, batch):
        return Binary(self.n, batch + self.shape, self.dtype, self.device)

    def rand(self, shape=(), generator=None):
        return self._wrap(self._rng(generator).integers(0, 2, size=self._full(shape)))

    def _range_ok(self, arr):
        return bool(np.all((arr == 0) | (arr == 1)))

    def project(self, value):
        return self._wrap(_np(value).astype(np.float64) > 0.5)


class Composite:
    """Specs under (nested) keys; values are TensorDicts. ``shape`` is the batch shape: every leaf
    spec's shape starts with it."""

    def __init__(self, specs=None, shape=(), device=None, **kw):
        self.shape = _shape(shape)
        self.device = ember.device(device) if device is not None else ember.device("cpu")
        self._specs = {}
        for k, v in dict(specs or {}, **kw).items():
            self[k] = v

    dtype = None

    def __setitem__(self, key, spec):
        if isinstance(key, tuple) and len(key) > 1:
            if key[0] not in self._specs:
                self._specs[key[0]] = Composite(shape=self.shape, device=self.device)
            self._specs[key[0]][key[1:]] = spec
            return
        key = key[0] if isinstance(key, tuple) else key
        if isinstance(spec, dict):
            spec = Composite(spec, shape=self.shape, device=self.device)
        if tuple(spec.shape[:len(self.shape)]) != self.shape:
            raise ValueError(f"Composite: spec {key!r} of shape {spec.shape} does not start with the "
                             f"composite's shape {self.shape}")
        self._specs[key] = spec

    def __getitem__(self, key):
        if isinstance(key, tuple):
            spec = self
            for k in key:
                spec = spec._specs[k]
            return spec
        return self._specs[key]

    def __contains__(self, key):
        try:
            self[key]
            return True
        except (KeyError, TypeError):
            return False

    def __delitem__(self, key):
        del self._specs[key]

    def __len__(self):
        return len(self._specs)

    def keys(self, include_nested=False, leaves_only=False):
        out = []
        for k, v in self._specs.items():
            is_comp = isinstance(v, Composite)
            if not (leaves_only and is_comp):
                out.append(k)
            if include_nested and is_comp:
                out.extend((k,) + (sk if isinstance(sk, tuple) else (sk,))
                           for sk in v.keys(True, leaves_only))
        return out

    def items(self, include_nested=False, leaves_only=False):
        return [(k, self[k]) for k in self.keys(include_nested, leaves_only)]

    def _map(self, fn, shape=()):
        return TensorDict({k: fn(k, v) for k, v in self._specs.items()},
                          batch_size=_shape(shape) + self.shape, device=None)

    def rand(self, shape=(), generator=None):
        return self._map(lambda k, v: v.rand(shape, generator), shape)

    def zero(self, shape=()):
        return self._map(lambda k, v: v.zero(shape), shape)

    def is_in(self, td) -> bool:
        for k, v in self._specs.items():
            if k not in td.keys():
                return False
            if not v.is_in(td.get(k)):
                return False
        return True

    def project(self, td):
        lead = tuple(td.batch_size[:len(td.batch_size) - len(self.shape)])
        return self._map(lambda k, v: v.project(td.get(k)), lead)

    def encode(self, vals, ignore_device=False):
        return self._map(lambda k, v: v.encode(vals[k]))

    def expand(self, *batch):
        if len(batch) == 1 and not isinstance(batch[0], (int, np.integer)):
            batch = tuple(batch[0])
        batch = _shape(batch)
        return Composite({k: v.expand(*batch) for k, v in self._specs.items()},
                         shape=batch + self.shape, device=self.device)

    def clone(self):
        return self.expand(())

    def __eq__(self, other):
        return (isinstance(other, Composite) and self.shape == other.shape
                and self._specs.keys() == other._specs.keys()
                and all(self._specs[k] == other._specs[k] for k in self._specs))

    __hash__ = None

    def __repr__(self):
        inner = ", ".join(f"{k}: {v!r}" for k, v in self._specs.items())
        return f"Composite({{{inner}}}, shape={self.shape})"
