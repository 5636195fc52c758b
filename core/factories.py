"""Tensor factories: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``/``ones``/``full``/
``empty`` (and ``_like``), ``arange``, ``linspace``, ``eye``, and the random ones."""
from __future__ import annotations

import math

import numpy as np

from . import _backend as B
from . import dtypes as D
from .random import _gen

_ndarray = np.ndarray


_TENSOR = []


def _T():
    """The Tensor class (imported on first use: ``_tensor`` imports this module)."""
    if not _TENSOR:
        from ._tensor import Tensor

        _TENSOR.append(Tensor)
    return _TENSOR[0]


def _xp(device):
    if device is None:
        device = B._DEFAULT_DEVICE[-1]
        if device is None:
            return np, B.CPU
    dev = B.device(device)
    if dev.type == "cuda":
        return B.cupy(), dev
    if dev.type == "meta":
        return _META_XP, dev
    return np, dev


class _MetaNamespace:
    """The creation functions factories call, returning memory-less meta arrays."""

    @staticmethod
    def _dt(dtype):
        return np.dtype(D.get_default_dtype() if dtype is None else dtype)

    def zeros(self, shape, dtype=None, **kw):
        return B.meta_array(shape, self._dt(dtype))

    ones = empty = zeros

    def full(self, shape, fill_value, dtype=None):
        return B.meta_array(shape, self._dt(dtype))

    def eye(self, n, m=None, dtype=None, **kw):
        return B.meta_array((n, n if m is None else m), self._dt(dtype))

    def arange(self, start, stop=None, step=1, dtype=None):
        if stop is None:
            start, stop = 0, start
        n = max(0, math.ceil((stop - start) / step))
        return B.meta_array((n,), np.dtype(dtype or np.int64))

    def linspace(self, start, stop, num, dtype=None, **kw):
        return B.meta_array((int(num),), self._dt(dtype))

    logspace = linspace


class _MetaRNG:
    """A random source whose draws are meta arrays (nothing is drawn, no state advances)."""

    def random(self, shape, dtype=np.float64, **kw):
        return B.meta_array(shape, dtype)

    standard_normal = standard_exponential = random

    def integers(self, low, high=None, size=(), dtype=np.int64, **kw):
        return B.meta_array(size if isinstance(size, tuple) else (size,), dtype)

    def permutation(self, n):
        return B.meta_array((int(n),), np.int64)


_META_XP = _MetaNamespace()
_META_RNG = _MetaRNG()


def _rng(generator, dev):
    return _META_RNG if dev.type == "meta" else _gen(generator, dev)


def _infer_dtype(data):
    """PyTorch's inference for Python data: floats -> default dtype, ints -> int64,
    bools -> bool; arrays keep their dtype."""
    if isinstance(data, (bool, np.bool_)):
        return D.bool
    if isinstance(data, (int, np.integer)) and not isinstance(data, np.integer):
        return D.int64
    if isinstance(data, float):
        return D.get_default_dtype()
    if isinstance(data, complex):
        return D.complex64
    return None


def _to_array(data, dtype=None, device=None, copy=True):
    Tensor = _T()
    dt = D.to_dtype(dtype)
    xp, dev = _xp(device)
    if isinstance(data, Tensor):
        arr = data.array
        if device is not None:
            arr = B.to_device(arr, dev)
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        elif copy and arr is data.array:
            arr = arr.copy()
        return arr
    if isinstance(data, _ndarray) or B.is_cuda_array(data) or isinstance(data, np.generic):
        arr = data
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        elif copy:
            arr = arr.copy()
        arr = np.asarray(arr) if isinstance(arr, np.generic) else arr
        return B.to_device(arr, dev) if device is not None or B.is_cuda_array(arr) is False \
            else arr
    if dt is None:
        dt = _infer_dtype(data)
        if dt is None:
            arr = _asarray(data)
            if arr.dtype.kind == "f":
                arr = arr.astype(D.get_default_dtype())
            elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
                arr = arr.astype(np.int64)
            elif arr.dtype.kind == "c":
                arr = arr.astype(D.complex64)
            elif arr.dtype.kind not in "biuf":
                raise TypeError(f"can't convert data of type {arr.dtype} to a tensor: expected "
                                "numbers, bools, sequences of them, arrays or tensors")
            return B.to_device(arr, dev)
    arr = _asarray(data, dt)
    return B.to_device(arr, dev)


def _asarray(data, dtype=None):
    """``np.asarray`` of nested Python data, with a clear error for ragged sequences."""
    seq = _unwrap_seq(data)
    try:
        return np.asarray(seq, dtype=dtype)
    except ValueError:
        msg = _ragged(seq, 0)
        if msg is None:
            raise
        raise ValueError(msg) from None


def _ragged(seq, dim):
    """Where a nested sequence stops being rectangular, or None."""
    if not isinstance(seq, (list, tuple)):
        return None
    lens = [len(x) if isinstance(x, (list, tuple)) else None for x in seq]
    first = lens[0] if lens else None
    def what(n):
        return "a number" if n is None else f"a sequence of length {n}"
    for n in lens:
        if n != first:
            return (f"expected {what(first)} at dim {dim + 1} (got {what(n)}): nested "
                    "sequences must be rectangular")
    for x in seq:
        m = _ragged(x, dim + 1)
        if m is not None:
            return m
    return None


def _unwrap_seq(data):
    """Lists may hold 0-d tensors (``[t1, t2]``): take their values."""
    Tensor = _T()
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, (Tensor, list, tuple)) for x in data):
            return [_unwrap_seq(x) for x in data]
        return data
    if isinstance(data, Tensor):
        return data.array if type(data.array) is _ndarray else B.to_device(data.array, "cpu")
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (numbers, nested sequences, arrays, tensors)."""
    Tensor = _T()
    t = Tensor._make(_to_array(data, dtype, device, copy=True))
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` when dtype and device allow."""
    Tensor = _T()
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    return Tensor._make(_to_array(data, dtype, device, copy=False))


def from_numpy(array):
    """A tensor sharing memory with ``array`` (writes show through both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return _T()._make(array)


def from_dlpack(ext):
    Tensor = _T()
    if B.is_cuda_array(ext) or (hasattr(ext, "__dlpack_device__") and ext.__dlpack_device__()[0] != 1):
        return Tensor._make(B.cupy().from_dlpack(ext))
    return Tensor._make(np.from_dlpack(ext))


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = tuple(int(s) for s in size)
    for s in out:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(out)}")
    return out


def _finish(arr, requires_grad):
    t = _T()._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _dt(dtype):
    dt = D.to_dtype(dtype)
    return D.get_default_dtype() if dt is None else dt


def zeros(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None):
    size = shape if size is None else (size,)
    xp, _ = _xp(device)
    return _finish(xp.zeros(_size(size), _dt(dtype)), requires_grad)


def ones(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None):
    size = shape if size is None else (size,)
    xp, _ = _xp(device)
    return _finish(xp.ones(_size(size), _dt(dtype)), requires_grad)


def empty(*shape, size=None, dtype=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None, out=None):
    size = shape if size is None else (size,)
    xp, _ = _xp(device)
    return _finish(xp.empty(_size(size), _dt(dtype)), requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    xp, _ = _xp(device)
    dt = D.to_dtype(dtype)
    if dt is None:
        if hasattr(fill_value, "item"):
            fill_value = fill_value.item()
        dt = _infer_dtype(fill_value) or D.get_default_dtype()
    return _finish(xp.full(_size((size,) if isinstance(size, int) else (size,)), fill_value, dt),
                   requires_grad)


def _like(input, dtype, device):
    dt = D.to_dtype(dtype) or input.dtype
    dev = input.device if device is None else device
    return dt, dev


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like(input, dtype, device)
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None):
    dt, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if hasattr(v, "item") else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    dt = D.to_dtype(dtype)
    if dt is None:
        dt = D.get_default_dtype() if any(isinstance(v, float) for v in vals) else D.int64
    xp, _ = _xp(device)
    n = max(0, math.ceil((end - start) / step))
    if dt.kind in "iu":
        arr = xp.arange(start, end, step, dtype=dt)
    else:
        arr = (start + xp.arange(n, dtype=np.float64) * step).astype(dt)
    return _finish(arr, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    xp, _ = _xp(device)
    dt = _dt(dtype)
    return _finish(xp.linspace(start, end, int(steps), dtype=np.float64).astype(dt), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    xp, _ = _xp(device)
    dt = _dt(dtype)
    return _finish(xp.logspace(start, end, int(steps), base=base, dtype=np.float64).astype(dt),
                   requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    xp, _ = _xp(device)
    return _finish(xp.eye(n, n if m is None else m, dtype=_dt(dtype)), requires_grad)


# --------------------------------------------------------------------------- random

def _rand_common(size, dtype, device):
    xp, dev = _xp(device)
    return _size(size), _dt(dtype), dev


def rand(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1)."""
    size = shape if size is None else (size,)
    shape, dt, dev = _rand_common(size, dtype, device)
    g = _rng(generator, dev)
    if dt in (D.float32, D.float64):
        arr = g.random(shape, dtype=dt)
    elif dt.kind == "c":  # as torch: real and imaginary parts each uniform in [0, 1)
        arr = _complex_from(g.random(tuple(shape) + (2,), dtype=_part_dtype(dt)), dt)
    else:
        arr = g.random(shape, dtype=np.float32).astype(dt)
    return _finish(arr, requires_grad)


def _part_dtype(dt):
    return np.float64 if dt == D.complex128 else np.float32


def _complex_from(pairs, dt):
    """(..., 2) real pairs -> complex ``dt`` (..., ), one copy."""
    xp = B.namespace(pairs)
    return xp.ascontiguousarray(pairs).view(dt)[..., 0]


def randn(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples."""
    size = shape if size is None else (size,)
    shape, dt, dev = _rand_common(size, dtype, device)
    g = _rng(generator, dev)
    if dt in (D.float32, D.float64):
        arr = g.standard_normal(shape, dtype=dt)
    elif dt.kind == "c":  # as torch: variance 1 split evenly between the two parts
        pairs = g.standard_normal(tuple(shape) + (2,), dtype=_part_dtype(dt))
        pairs *= np.sqrt(0.5).astype(pairs.dtype)
        arr = _complex_from(pairs, dt)
    else:
        arr = g.standard_normal(shape, dtype=np.float32).astype(dt)
    return _finish(arr, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniformly in [low, high). ``randint(high, size)`` is accepted too."""
    if high is None and size is not None:  # randint(high, size=...)
        low, high = 0, low
    if high is None:
        raise TypeError("randint() missing the 'high' argument")
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing the 'size' argument")
    shape = _size((size,))
    dt = D.to_dtype(dtype) or D.int64
    xp, dev = _xp(device)
    arr = _rng(generator, dev).integers(low, high, shape, dtype=np.int64)
    return _finish(arr.astype(dt, copy=False), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    xp, dev = _xp(device)
    dt = D.to_dtype(dtype) or D.int64
    arr = _rng(generator, dev if dev.type == "meta" else B.CPU).permutation(int(n)).astype(dt)
    return _finish(B.to_device(arr, dev), requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or floats with ``size``."""
    Tensor = _T()
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        m = mean.array if isinstance(mean, Tensor) else mean
        s = std.array if isinstance(std, Tensor) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        g = _gen(generator, ref.device)
        z = g.standard_normal(shape, dtype=np.float64 if ref.dtype == D.float64 else np.float32)
        return _finish((m + s * z).astype(ref.dtype, copy=False), requires_grad)
    if size is None:
        size = ()
    t = randn(*(size if isinstance(size, (tuple, list)) else (size,)), generator=generator,
              dtype=dtype, device=device)
    t.array *= std
    t.array += mean
    if requires_grad:
        t.requires_grad_(True)
    return t


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(input, dtype, device)
    return rand(input.shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    dt, dev = _like(input, dtype, device)
    return randn(input.shape, generator=generator, dtype=dt, device=dev,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None):
    if high is None:
        low, high = 0, low
    dt, dev = _like(input, dtype, device)
    return randint(low, high, input.shape, generator=generator, dtype=dt, device=dev)


def bernoulli(input, p=None, *, generator=None):
    """Samples 0/1 with probabilities ``input`` (or the scalar ``p``)."""
    probs = input.array if p is None else p
    g = _gen(generator, input.device)
    u = g.random(input.shape, dtype=np.float64 if input.dtype == D.float64 else np.float32)
    return _finish((u < probs).astype(input.dtype), False)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices sampled from the rows of ``input`` (unnormalized, non-negative weights)."""
    p = np.asarray(B.to_device(input.array, "cpu"), dtype=np.float64)
    single = p.ndim == 1
    p2 = p.reshape(1, -1) if single else p
    g = _gen(generator, B.CPU)
    rows = []
    for row in p2:
        if row.sum() <= 0 or (row < 0).any() or not np.isfinite(row).all():
            raise RuntimeError("multinomial: probability rows must be finite, non-negative and "
                               "have a positive sum")
        if not replacement and num_samples > (row > 0).sum():
            raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) "
                               "samples without replacement")
        rows.append(g.choice(row.size, size=num_samples, replace=replacement, p=row / row.sum()))
    out = np.stack(rows).astype(np.int64)
    out = out[0] if single else out
    return _finish(B.to_device(out, input.device), False)


__all__ = [
    "tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "empty", "full",
    "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye",
    "rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like",
    "bernoulli", "multinomial",
]
