"""Complex numbers: ``complex(real, imag)``, ``polar``, ``real``/``imag``, ``view_as_real``/
``view_as_complex`` and ``angle``.

Gradients follow PyTorch's convention for a real loss L of a complex z = a + ib: the gradient
is dL/da + i dL/db. So ``real``'s backward sends g to ``complex(g, 0)``, ``imag``'s to
``complex(0, g)``, and ``complex(a, b)``'s splits g into ``(real(g), imag(g))``. Every
backward here multiplies only real tensors (conjugation never enters), and each is written
with these same ops, so double backward works.

``real``, ``imag``, ``view_as_real`` and ``view_as_complex`` share memory with their input
(as in torch) and its version counter; unlike torch, an in-place op with autograd on such a
result does not re-route the input's history (write to the input instead).

    >>> z = ember.complex(ember.tensor([1.0]), ember.tensor([2.0]))
    >>> ember.view_as_real(z)
    tensor([[1., 2.]])
"""
from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from . import _util as U
from ._util import to_tensor, unbroadcast, wrap

_TO_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_TO_REAL = {v: k for k, v in _TO_COMPLEX.items()}


def complex_dtype(dt):
    """The complex dtype holding pairs of ``dt`` (float32 -> complex64)."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    if dt not in _TO_COMPLEX:
        raise RuntimeError(f"no complex dtype for {D.name(dt)}: expected float32 or float64")
    return _TO_COMPLEX[dt]


def real_dtype(dt):
    dt = np.dtype(dt)
    return _TO_REAL.get(dt, dt)


def _share(out, src):
    """``out`` shares ``src``'s memory: share its version counter too."""
    out._version = src._vc()
    return out


# --------------------------------------------------------------------------- complex / polar

class ComplexBackward(Node):
    __slots__ = ("shapes", "dtype")

    def backward(self, g):
        gr = unbroadcast(real(g), self.shapes[0], self.dtype) if self.next[0] is not None else None
        gi = unbroadcast(imag(g), self.shapes[1], self.dtype) if self.next[1] is not None else None
        return gr, gi


def complex(real, imag):
    """The complex tensor ``real + i imag`` (both float32 or both float64; broadcast)."""
    re, im = real, imag
    if not isinstance(re, U.Tensor) or not isinstance(im, U.Tensor):
        raise TypeError("complex(): expected both real and imag to be Tensors")
    rd, idt = re.array.dtype, im.array.dtype
    if rd != idt:
        raise RuntimeError(
            f"complex(): expected real and imag to have the same dtype, got {D.name(rd)} and "
            f"{D.name(idt)}")
    if rd not in _TO_COMPLEX:
        raise RuntimeError(
            f"complex(): expected both inputs to be float32 or float64, got {D.name(rd)}")
    xp = B.namespace(re.array)
    shape = np.broadcast_shapes(re.array.shape, im.array.shape)
    out = xp.empty(shape, _TO_COMPLEX[rd])
    out.real = re.array
    out.imag = im.array
    res = wrap(out)
    if STATE.enabled and (re.requires_grad or im.requires_grad):
        n = new_node(ComplexBackward)
        n.shapes, n.dtype = (re.array.shape, im.array.shape), rd
        record(n, res, re, im)
    return res


def polar(abs, angle):
    """``abs * (cos(angle) + i sin(angle))``."""
    if abs.dtype != angle.dtype:
        raise RuntimeError(
            f"polar(): expected abs and angle to have the same dtype, got {D.name(abs.dtype)} "
            f"and {D.name(angle.dtype)}")
    return complex(abs * angle.cos(), abs * angle.sin())


# --------------------------------------------------------------------------- real / imag

class RealBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (complex(g, g * 0),)


class ImagBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (complex(g * 0, g),)


def real(input):
    """The real part (a view); a real tensor is returned as is."""
    d = input.array
    if d.dtype.kind != "c":
        return input
    out = _share(wrap(d.real), input)
    if STATE.enabled and input.requires_grad:
        record(new_node(RealBackward), out, input)
    return out


def imag(input):
    """The imaginary part (a view); complex tensors only."""
    d = input.array
    if d.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    out = _share(wrap(d.imag), input)
    if STATE.enabled and input.requires_grad:
        record(new_node(ImagBackward), out, input)
    return out


# --------------------------------------------------------------------------- views

class ViewAsRealBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (view_as_complex(g.contiguous()),)


class ViewAsComplexBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (view_as_real(g),)


def view_as_real(input):
    """A complex tensor (...,) as a real one (..., 2) of (real, imag) pairs, sharing memory."""
    d = input.array
    if d.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    rd = _TO_REAL[d.dtype]
    if B.namespace(d) is np:
        r = d[..., None].view(rd)
    else:  # cupy views a different itemsize only on contiguous memory
        r = B.namespace(d).ascontiguousarray(d)[..., None].view(rd)
    out = _share(wrap(r), input)
    if STATE.enabled and input.requires_grad:
        record(new_node(ViewAsRealBackward), out, input)
    return out


def view_as_complex(input):
    """A real tensor (..., 2) as a complex one (...,), sharing memory."""
    d = input.array
    if d.dtype not in _TO_COMPLEX:
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {D.name(d.dtype)}")
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if d.strides[-1] != d.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * d.itemsize) for s in d.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    c = d.view(_TO_COMPLEX[d.dtype]).reshape(d.shape[:-1])
    out = _share(wrap(c), input)
    if STATE.enabled and input.requires_grad:
        record(new_node(ViewAsComplexBackward), out, input)
    return out


# --------------------------------------------------------------------------- angle

class AngleBackward(Node):
    __slots__ = ("is_complex",)

    def backward(self, g):
        (x,) = self.unpack()
        if not self.is_complex:
            return (g * 0,)
        a, b = real(x), imag(x)
        zero = (a == 0) & (b == 0)
        r2 = (a * a + b * b).masked_fill(zero, 1.0)
        # d angle / da = -b / r^2, d angle / db = a / r^2 (0 at the origin, as torch)
        return (complex((g * -b / r2).masked_fill(zero, 0.0), (g * a / r2).masked_fill(zero, 0.0)),)


def angle(input):
    """The argument atan2(imag, real) of each element; for real tensors pi where negative,
    else 0 (nan stays nan), as a float tensor."""
    input = to_tensor(input)
    d = input.array
    xp = B.namespace(d)
    if d.dtype.kind == "c":
        r = xp.angle(d)
    else:
        dt = d.dtype if d.dtype.kind == "f" or d.dtype == D.bfloat16 else D.get_default_dtype()
        x = d.astype(dt, copy=False)
        r = xp.where(x < 0, math.pi, 0.0).astype(dt)
        r = xp.where(xp.isnan(x), x, r).astype(dt, copy=False)
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        n = new_node(AngleBackward)
        n.is_complex = d.dtype.kind == "c"
        record(n, out, input)
        n.save(input)
    return out


class ComplexOps:
    """Tensor methods and properties of the complex family (mixed into Tensor)."""

    __slots__ = ()

    @property
    def real(self):
        return real(self)

    @property
    def imag(self):
        return imag(self)

    def angle(self):
        return angle(self)


__all__ = ["complex", "polar", "real", "imag", "view_as_real", "view_as_complex", "angle"]
