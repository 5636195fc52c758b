"""``ember.fft``: discrete Fourier transforms, as ``torch.fft``.

Every transform reduces to three differentiable primitives on the backend's pocketFFT/cuFFT
(``xp.fft``), each unscaled and then multiplied by the factor its ``norm`` asks for:

- ``_c2c``: complex -> complex, forward or inverse. Its adjoint is the opposite direction
  with the same factor.
- ``_r2c``: real -> one-sided complex (the last transformed dim keeps n // 2 + 1 bins). Its
  adjoint zero-pads the gradient back to n bins, runs the inverse c2c and keeps the real part.
- ``_c2r``: one-sided complex -> real of length n. Its adjoint is r2c of the gradient with the
  bins that stand for two (k and n - k: all but DC and, for even n, Nyquist) doubled: the
  Hermitian weighting.

Backwards call these same primitives, so double backward works. Real inputs are promoted to
complex with a cast whose gradient is the real part; float32 in gives complex64 out, float64
gives complex128 (integers: the default float dtype first, as torch).

``n``/``s`` zero-pad or trim the input along the transformed dims first (for ``irfft`` and
``hfft`` they give the output length); ``norm`` is "backward" (default: no factor forward,
1/n inverse), "ortho" (1/sqrt(n) both ways) or "forward" (1/n forward, none inverse).

    >>> x = ember.randn(8, requires_grad=True)
    >>> y = ember.fft.rfft(x)                 # (5,) complex64
    >>> ember.fft.irfft(y, n=8)               # x again
"""
from __future__ import annotations

import math

import numpy as np

from . import _backend as B
from . import dtypes as D
from .autograd.grad_mode import STATE
from .autograd.graph import Node, new_node, record
from .ops._util import norm_dim, to_tensor, wrap
from .ops.complex import complex_dtype, real, real_dtype
from .ops.elementwise import conj
from .ops.shape import roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


# --------------------------------------------------------------------------- primitives

class C2CBackward(Node):
    __slots__ = ("axes", "forward", "scale")

    def backward(self, g):
        return (_c2c(g, self.axes, not self.forward, self.scale),)


def _c2c(x, axes, forward, scale):
    d = x.array
    xp = B.namespace(d)
    if not axes:
        r = d.copy()
    elif forward:
        r = xp.fft.fftn(d, axes=axes)
    else:
        r = xp.fft.ifftn(d, axes=axes, norm="forward")
    r = r.astype(d.dtype, copy=False)
    if scale != 1.0:
        r *= scale
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        n = new_node(C2CBackward)
        n.axes, n.forward, n.scale = axes, forward, scale
        record(n, out, x)
    return out


class R2CBackward(Node):
    __slots__ = ("axes", "n", "scale")

    def backward(self, g):
        full = _resize(g, {self.axes[-1]: self.n})
        return (real(_c2c(full, self.axes, False, self.scale)),)


def _r2c(x, axes, scale):
    d = x.array
    xp = B.namespace(d)
    r = xp.fft.rfftn(d, axes=axes).astype(complex_dtype(d.dtype), copy=False)
    if scale != 1.0:
        r *= scale
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        n = new_node(R2CBackward)
        n.axes, n.n, n.scale = axes, d.shape[axes[-1]], scale
        record(n, out, x)
    return out


class C2RBackward(Node):
    __slots__ = ("axes", "n", "scale")

    def backward(self, g):
        r = _r2c(g, self.axes, self.scale)
        m = r.array.shape[self.axes[-1]]
        xp = B.namespace(r.array)
        w = np.ones(m, real_dtype(r.array.dtype))
        w[1:1 + self.n - m] = 2.0  # bins k that also stand for n - k
        shape = [1] * r.array.ndim
        shape[self.axes[-1]] = m
        return (r * wrap(xp.asarray(w.reshape(shape))),)


def _c2r(x, axes, n, scale):
    """``x``'s last transformed dim must hold n // 2 + 1 bins; the result has n there."""
    d = x.array
    xp = B.namespace(d)
    s = [d.shape[a] for a in axes[:-1]] + [n]
    r = xp.fft.irfftn(d, s=s, axes=axes, norm="forward").astype(real_dtype(d.dtype), copy=False)
    if scale != 1.0:
        r *= scale
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        nd_ = new_node(C2RBackward)
        nd_.axes, nd_.n, nd_.scale = axes, n, scale
        record(nd_, out, x)
    return out


class ResizeBackward(Node):
    __slots__ = ("sizes",)

    def backward(self, g):
        return (_resize(g, self.sizes),)


def _resize(x, sizes):
    """Trim or zero-pad ``x`` to ``sizes`` ({axis: length}); its adjoint is the reverse."""
    d = x.array
    if all(d.shape[a] == n for a, n in sizes.items()):
        return x
    xp = B.namespace(d)
    shape = list(d.shape)
    common = [slice(None)] * d.ndim
    for a, n in sizes.items():
        shape[a] = n
        common[a] = slice(0, min(n, d.shape[a]))
    r = xp.zeros(shape, d.dtype)
    common = tuple(common)
    r[common] = d[common]
    out = wrap(r)
    if STATE.enabled and x.requires_grad:
        nd_ = new_node(ResizeBackward)
        nd_.sizes = {a: d.shape[a] for a in sizes}
        record(nd_, out, x)
    return out


class ToComplexBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (real(g),)


def _to_complex(x):
    d = x.array
    if d.dtype.kind == "c":
        return x
    out = wrap(d.astype(complex_dtype(d.dtype)))
    if STATE.enabled and x.requires_grad:
        record(new_node(ToComplexBackward), out, x)
    return out


# --------------------------------------------------------------------------- argument handling

def _float_input(x):
    """Integers and half precisions computed in the default float dtype / float32."""
    x = to_tensor(x)
    dt = x.array.dtype
    if dt.kind in "iub":
        return x._cast(D.get_default_dtype())
    if dt.kind == "f" and dt.itemsize < 4 or dt == D.bfloat16:
        return x._cast(D.float32)
    return x


def _scale(norm, n, forward):
    if norm is None or norm == "backward":
        return 1.0 if forward else 1.0 / n
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 / n if forward else 1.0
    raise ValueError(f'Invalid normalization mode: "{norm}"')


def _check_n(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _resolve(x, s, dim, half_last=False, name="fftn"):
    """(axes, lengths) from torch's ``s``/``dim`` rules; ``half_last``: the default length of
    the last axis is 2 * (m - 1) (the c2r transforms)."""
    nd = x.array.ndim
    if dim is None:
        if s is None:
            axes = tuple(range(nd))
        else:
            s = tuple(s)
            if len(s) > nd:
                raise RuntimeError(f"{name}: got shape with {len(s)} values but input tensor "
                                   f"only has {nd} dimensions.")
            axes = tuple(range(nd - len(s), nd))
    else:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        axes = tuple(norm_dim(a, nd) for a in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"{name}: dims must be unique")
        if s is not None and len(tuple(s)) != len(axes):
            raise RuntimeError(
                f"{name}: when given, dim and shape arguments must have the same length")
    if not axes:
        raise RuntimeError(f"{name} must transform at least one axis")
    shape = x.array.shape
    if s is None:
        lens = [shape[a] for a in axes]
        if half_last:
            lens[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        lens = list(s)
        for i, (a, n) in enumerate(zip(axes, lens)):
            if n == -1:
                lens[i] = 2 * (shape[a] - 1) if half_last and i == len(axes) - 1 else shape[a]
    for n in lens:
        _check_n(n)
    return axes, [int(n) for n in lens]


# --------------------------------------------------------------------------- n-dim transforms

def _cfft(input, s, dim, norm, forward, name):
    x = _float_input(input)
    axes, lens = _resolve(x, s, dim, name=name)
    x = _resize(_to_complex(x), dict(zip(axes, lens)))
    return _c2c(x, axes, forward, _scale(norm, math.prod(lens), forward))


def fftn(input, s=None, dim=None, norm=None):
    """N-dim discrete Fourier transform over ``dim`` (all dims by default)."""
    return _cfft(input, s, dim, norm, True, "fftn")


def ifftn(input, s=None, dim=None, norm=None):
    """N-dim inverse discrete Fourier transform."""
    return _cfft(input, s, dim, norm, False, "ifftn")


def _real_only(x, name):
    if x.array.dtype.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {D.name(x.dtype)}")


def rfftn(input, s=None, dim=None, norm=None):
    """N-dim FFT of a real input; the last transformed dim keeps n // 2 + 1 bins."""
    x = _float_input(input)
    _real_only(x, "rfftn")
    axes, lens = _resolve(x, s, dim, name="rfftn")
    x = _resize(x, dict(zip(axes, lens)))
    return _r2c(x, axes, _scale(norm, math.prod(lens), True))


def irfftn(input, s=None, dim=None, norm=None):
    """Inverse of ``rfftn``: a real output whose last transformed dim has ``s[-1]`` elements
    (default 2 * (m - 1) for m input bins)."""
    x = _to_complex(_float_input(input))
    axes, lens = _resolve(x, s, dim, half_last=True, name="irfftn")
    sizes = dict(zip(axes[:-1], lens[:-1]))
    sizes[axes[-1]] = lens[-1] // 2 + 1
    x = _resize(x, sizes)
    return _c2r(x, axes, lens[-1], _scale(norm, math.prod(lens), False))


def hfftn(input, s=None, dim=None, norm=None):
    """N-dim FFT of a Hermitian-symmetric signal given by its one-sided half: a real output."""
    x = _to_complex(_float_input(input))
    axes, lens = _resolve(x, s, dim, half_last=True, name="hfftn")
    sizes = dict(zip(axes[:-1], lens[:-1]))
    sizes[axes[-1]] = lens[-1] // 2 + 1
    x = conj(_resize(x, sizes))
    return _c2r(x, axes, lens[-1], _scale(norm, math.prod(lens), True))


def ihfftn(input, s=None, dim=None, norm=None):
    """Inverse of ``hfftn``: the one-sided half of the inverse FFT of a real input."""
    x = _float_input(input)
    _real_only(x, "ihfftn")
    axes, lens = _resolve(x, s, dim, name="ihfftn")
    x = _resize(x, dict(zip(axes, lens)))
    return conj(_r2c(x, axes, _scale(norm, math.prod(lens), False)))


# --------------------------------------------------------------------------- 1-d and 2-d forms

def _one(n, dim):
    if isinstance(dim, (tuple, list)):
        raise TypeError("dim must be an int for the 1-d transforms (use the n-dim forms)")
    return (None if n is None else (n,)), (dim,)


def fft(input, n=None, dim=-1, norm=None):
    """1-d discrete Fourier transform along ``dim`` (complex output)."""
    s, d = _one(n, dim)
    return _cfft(input, s, d, norm, True, "fft")


def ifft(input, n=None, dim=-1, norm=None):
    s, d = _one(n, dim)
    return _cfft(input, s, d, norm, False, "ifft")


def rfft(input, n=None, dim=-1, norm=None):
    s, d = _one(n, dim)
    return rfftn(input, s, d, norm)


def irfft(input, n=None, dim=-1, norm=None):
    s, d = _one(n, dim)
    return irfftn(input, s, d, norm)


def hfft(input, n=None, dim=-1, norm=None):
    s, d = _one(n, dim)
    return hfftn(input, s, d, norm)


def ihfft(input, n=None, dim=-1, norm=None):
    s, d = _one(n, dim)
    return ihfftn(input, s, d, norm)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    return ifftn(input, s, dim, norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    return irfftn(input, s, dim, norm)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    return ihfftn(input, s, dim, norm)


# --------------------------------------------------------------------------- helpers

def _freq_tensor(vals, dtype, device, requires_grad):
    from .factories import _dt, _finish, _xp

    xp, _ = _xp(device)
    return _finish(xp.asarray(vals).astype(_dt(dtype)), requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None,
            pin_memory=False):
    """Sample frequencies of an n-point FFT: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    n = int(n)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _freq_tensor(k / (d * n), dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """Sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (d n)."""
    n = int(n)
    return _freq_tensor(np.arange(0, n // 2 + 1) / (d * n), dtype, device, requires_grad)


def _shift(input, dim, sign):
    nd = input.array.ndim
    if dim is None:
        dims = tuple(range(nd))
    else:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        dims = tuple(norm_dim(a, nd) for a in dims)
    if not dims:
        return input
    shifts = tuple(sign * (input.array.shape[a] // 2) for a in dims)
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the centre (roll by n // 2 along ``dim``, all by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """Inverse of ``fftshift`` (roll by -(n // 2))."""
    return _shift(input, dim, -1)

