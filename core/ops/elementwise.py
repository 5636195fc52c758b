"""Elementwise ops: arithmetic, comparison, logic, unary math, clamping, casting, and the
in-place variants. Forward and backward of each op sit together; backward formulas use
ember ops, so they are differentiable again (higher-order gradients)."""
from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from . import _special
from ._util import device_error, to_tensor, unbroadcast, wrap

_ndarray = np.ndarray
_result_type = D.result_type
_scalar_type = D.scalar_result_type
_SCALAR = (int, float, bool)
_FLOATING = frozenset("fc")


def _is_float(dt):
    return dt.kind in _FLOATING or dt == D.bfloat16


def _operands(op, a, b):
    """Arrays for ``a <op> b`` with PyTorch's promotion; ``b`` may be a scalar or array.
    Returns ``(ad, bd, b_tensor_or_None)``."""
    ad = a.data
    Tensor = type(a)
    if type(b) is Tensor or isinstance(b, Tensor):
        bd = b.data
        if ad.dtype is not bd.dtype:
            dt = _result_type(ad, bd)
            if ad.dtype is not dt:
                ad = ad.astype(dt)
            if bd.dtype is not dt:
                bd = bd.astype(dt)
        if type(ad) is not type(bd):
            raise device_error(op, ad, bd)
        return ad, bd, b
    if type(b) in _SCALAR:
        dt = _scalar_type(ad.dtype, b)
        if dt is not ad.dtype:
            ad = ad.astype(dt)
        return ad, b, None
    bt = to_tensor(b, a, name="other")
    return _operands(op, a, bt)


def _other_tensor(a, b):
    return b if isinstance(b, type(a)) else to_tensor(b, a, name="other")


# --------------------------------------------------------------------------- casting

class CastBackward(Node):
    __slots__ = ("src",)

    def backward(self, g):
        return (g._cast(self.src),)


def _cast(x, dt):
    d = x.data
    if d.dtype is dt:
        return x
    out = wrap(d.astype(dt))
    if STATE.enabled and x.requires_grad and _is_float(dt):
        n = new_node(CastBackward)
        n.src = d.dtype
        record(n, out, x)
    return out


# --------------------------------------------------------------------------- binary nodes

class AddBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "alpha")

    def backward(self, g):
        nx = self.next
        ga = unbroadcast(g, self.ashape, self.adtype) if nx[0] is not None else None
        gb = None
        if nx[1] is not None:
            gb = g if self.alpha == 1 else g * self.alpha
            gb = unbroadcast(gb, self.bshape, self.bdtype)
        return ga, gb


class SubBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "alpha")

    def backward(self, g):
        nx = self.next
        ga = unbroadcast(g, self.ashape, self.adtype) if nx[0] is not None else None
        gb = None
        if nx[1] is not None:
            gb = unbroadcast(-g if self.alpha == 1 else g * (-self.alpha), self.bshape, self.bdtype)
        return ga, gb


class MulBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "scalar")

    def backward(self, g):
        nx = self.next
        if self.scalar is not None:
            return (unbroadcast(g * self.scalar, self.ashape, self.adtype),)
        a, b = self.unpack()
        ga = unbroadcast(g * b, self.ashape, self.adtype) if nx[0] is not None else None
        gb = unbroadcast(g * a, self.bshape, self.bdtype) if nx[1] is not None else None
        return ga, gb


class DivBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "scalar")

    def backward(self, g):
        nx = self.next
        if self.scalar is not None:
            return (unbroadcast(g / self.scalar, self.ashape, self.adtype),)
        a, b = self.unpack()
        ga = unbroadcast(g / b, self.ashape, self.adtype) if nx[0] is not None else None
        gb = unbroadcast(-g * a / (b * b), self.bshape, self.bdtype) if nx[1] is not None else None
        return ga, gb


class RDivBackward(Node):  # scalar / tensor
    __slots__ = ("scalar",)

    def backward(self, g):
        (b,) = self.unpack()
        return (-g * self.scalar / (b * b),)


class PowBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "scalar")

    def backward(self, g):
        nx = self.next
        if self.scalar is not None:
            (a,) = self.unpack()
            e = self.scalar
            if e == 0:
                return (unbroadcast(g * 0, self.ashape, self.adtype),)
            return (unbroadcast(g * e * a.pow(e - 1), self.ashape, self.adtype),)
        a, b = self.unpack()
        ga = gb = None
        if nx[0] is not None:
            ga = g * b * a.pow(b - 1)
            ga = unbroadcast(ga.masked_fill((b == 0), 0.0) if True else ga, self.ashape, self.adtype)
        if nx[1] is not None:
            out = a.pow(b)
            la = a.log().masked_fill(a == 0, 0.0)
            gb = unbroadcast(g * out * la, self.bshape, self.bdtype)
        return ga, gb


class RPowBackward(Node):  # scalar ** tensor
    __slots__ = ("scalar",)

    def backward(self, g):
        (out,) = self.unpack()
        return (g * out * math.log(self.scalar) if self.scalar > 0 else g * 0,)


class MaxMinBackward(Node):
    """maximum/minimum: the gradient goes to the selected input; ties split evenly."""
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "is_max")

    def backward(self, g):
        a, b = self.unpack()
        sel = (a > b) if self.is_max else (a < b)
        tie = (a == b)
        wa = sel._cast(g.dtype) + tie._cast(g.dtype) * 0.5
        nx = self.next
        ga = unbroadcast(g * wa, self.ashape, self.adtype) if nx[0] is not None else None
        gb = unbroadcast(g * (1 - wa), self.bshape, self.bdtype) if nx[1] is not None else None
        return ga, gb


class Atan2Backward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype")

    def backward(self, g):
        a, b = self.unpack()
        den = a * a + b * b
        nx = self.next
        ga = unbroadcast(g * b / den, self.ashape, self.adtype) if nx[0] is not None else None
        gb = unbroadcast(-g * a / den, self.bshape, self.bdtype) if nx[1] is not None else None
        return ga, gb


class RemainderBackward(Node):
    __slots__ = ("ashape", "adtype", "bshape", "bdtype", "floor")

    def backward(self, g):
        nx = self.next
        ga = unbroadcast(g, self.ashape, self.adtype) if nx[0] is not None else None
        gb = None
        if nx[1] is not None:
            a, b = self.unpack()
            q = (a / b).floor() if self.floor else (a / b).trunc()
            gb = unbroadcast(-g * q, self.bshape, self.bdtype)
        return ga, gb


def _binary_node(cls, out, a, ad, b, bd, save):
    n = new_node(cls)
    n.ashape = a.data.shape
    n.adtype = a.data.dtype
    if b is None:
        n.scalar = bd
        if save:
            n.save(a)
        return record(n, out, a)
    n.bshape = b.data.shape
    n.bdtype = b.data.dtype
    if cls is MulBackward or cls is DivBackward or cls is PowBackward:
        n.scalar = None
    if save:
        n.save(a, b)
    return record(n, out, a, b)


def _grad_on(a, b):
    return STATE.enabled and (a.requires_grad or (b is not None and b.requires_grad))


# --------------------------------------------------------------------------- functions

def add(input, other, *, alpha=1):
    ad, bd, b = _operands("add", input, other)
    if alpha != 1:
        bd = bd * alpha
    out = wrap(ad + bd)
    if STATE.enabled and (input.requires_grad or (b is not None and b.requires_grad)):
        n = new_node(AddBackward)
        n.ashape = input.data.shape
        n.adtype = input.data.dtype
        n.alpha = alpha
        if b is None:
            return record(n, out, input)
        n.bshape = b.data.shape
        n.bdtype = b.data.dtype
        record(n, out, input, b)
    return out


def sub(input, other, *, alpha=1):
    ad, bd, b = _operands("sub", input, other)
    if ad.dtype.kind == "b":
        raise TypeError("subtraction of bool tensors is not supported: use logical_xor or ~")
    if alpha != 1:
        bd = bd * alpha
    out = wrap(ad - bd)
    if STATE.enabled and (input.requires_grad or (b is not None and b.requires_grad)):
        n = new_node(SubBackward)
        n.ashape = input.data.shape
        n.adtype = input.data.dtype
        n.alpha = alpha
        if b is None:
            return record(n, out, input)
        n.bshape = b.data.shape
        n.bdtype = b.data.dtype
        record(n, out, input, b)
    return out


def rsub(input, other, *, alpha=1):
    return sub(_other_tensor(input, other), input, alpha=alpha)


def mul(input, other):
    ad, bd, b = _operands("mul", input, other)
    out = wrap(ad * bd)
    if STATE.enabled and (input.requires_grad or (b is not None and b.requires_grad)):
        _binary_node(MulBackward, out, input, ad, b, bd, b is not None)
    return out


def div(input, other, *, rounding_mode=None):
    ad, bd, b = _operands("div", input, other)
    if rounding_mode is not None:
        xp = B.namespace(ad)
        if rounding_mode == "floor":
            if ad.dtype.kind in "iu" and (b is None or bd.dtype.kind in "iu"):
                return wrap(xp.floor_divide(ad, bd))
            return wrap(xp.floor(ad / bd).astype(ad.dtype, copy=False))
        if rounding_mode == "trunc":
            if ad.dtype.kind in "iu" and (b is None or bd.dtype.kind in "iu"):
                q = xp.trunc(ad / bd)
                return wrap(q.astype(ad.dtype))
            return wrap(xp.trunc(ad / bd).astype(ad.dtype, copy=False))
        raise ValueError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"{rounding_mode!r}")
    if not _is_float(ad.dtype):
        dt = D.get_default_dtype()
        ad = ad.astype(dt)
        if b is not None or isinstance(bd, _ndarray):
            bd = bd.astype(dt)
    elif b is not None and bd.dtype is not ad.dtype:
        bd = bd.astype(ad.dtype)
    out = wrap(ad / bd)
    if STATE.enabled and (input.requires_grad or (b is not None and b.requires_grad)):
        _binary_node(DivBackward, out, input, ad, b, bd, b is not None)
    return out


def rdiv(input, other):
    if type(other) in _SCALAR:
        d = input.data
        if not _is_float(d.dtype):
            d = d.astype(D.get_default_dtype())
        out = wrap(other / d)
        if STATE.enabled and input.requires_grad:
            n = new_node(RDivBackward)
            n.scalar = other
            n.save(input)
            record(n, out, input)
        return out
    return div(_other_tensor(input, other), input)


def floor_divide(input, other):
    return div(input, other, rounding_mode="floor")


def remainder(input, other):
    ad, bd, b = _operands("remainder", input, other)
    xp = B.namespace(ad)
    out = wrap(xp.remainder(ad, bd))
    if _grad_on(input, b):
        n = new_node(RemainderBackward)
        n.floor = True
        _fill_shapes(n, input, b)
        if b is not None:
            n.save(input, b)
            return record(n, out, input, b)
        return record(n, out, input)
    return out


def fmod(input, other):
    ad, bd, b = _operands("fmod", input, other)
    xp = B.namespace(ad)
    out = wrap(xp.fmod(ad, bd))
    if _grad_on(input, b):
        n = new_node(RemainderBackward)
        n.floor = False
        _fill_shapes(n, input, b)
        if b is not None:
            n.save(input, b)
            return record(n, out, input, b)
        return record(n, out, input)
    return out


def _fill_shapes(n, a, b):
    n.ashape, n.adtype = a.data.shape, a.data.dtype
    if b is not None:
        n.bshape, n.bdtype = b.data.shape, b.data.dtype


def pow(input, exponent):
    Tensor = type(input)
    if not isinstance(input, Tensor) or type(input) is not Tensor and not hasattr(input, "data"):
        raise TypeError("pow expects a Tensor base")
    if type(exponent) in _SCALAR:
        d = input.data
        dt = _scalar_type(d.dtype, exponent)
        if dt is not d.dtype:
            d = d.astype(dt)
        xp = B.namespace(d)
        if exponent == 2:
            r = d * d
        elif exponent == 0.5 and _is_float(d.dtype):
            r = xp.sqrt(d)
        elif d.dtype.kind in "iu" and type(exponent) is int and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        else:
            r = d ** exponent
        out = wrap(r)
        if STATE.enabled and input.requires_grad:
            n = new_node(PowBackward)
            n.ashape, n.adtype, n.scalar = input.data.shape, input.data.dtype, exponent
            n.save(input)
            record(n, out, input)
        return out
    ad, bd, b = _operands("pow", input, exponent)
    out = wrap(ad ** bd)
    if _grad_on(input, b):
        _binary_node(PowBackward, out, input, ad, b, bd, True)
    return out


def rpow(input, base):
    if type(base) in _SCALAR:
        d = input.data
        if not _is_float(d.dtype) and isinstance(base, float):
            d = d.astype(D.get_default_dtype())
        xp = B.namespace(d)
        out = wrap(xp.power(xp.asarray(base, dtype=d.dtype), d))
        if STATE.enabled and input.requires_grad:
            n = new_node(RPowBackward)
            n.scalar = base
            from ..autograd.graph import saved_output

            record(n, out, input)
            n.saved = (saved_output(out),)
        return out
    return pow(_other_tensor(input, base), input)


def maximum(input, other):
    return _maxmin(input, other, True)


def minimum(input, other):
    return _maxmin(input, other, False)


def _maxmin(input, other, is_max):
    other = _other_tensor(input, other)
    ad, bd, b = _operands("maximum" if is_max else "minimum", input, other)
    xp = B.namespace(ad)
    out = wrap(xp.maximum(ad, bd) if is_max else xp.minimum(ad, bd))
    if _grad_on(input, b):
        n = new_node(MaxMinBackward)
        _fill_shapes(n, input, b)
        n.is_max = is_max
        n.save(input, b)
        record(n, out, input, b)
    return out


def fmax(input, other):
    return maximum(input, other)


def fmin(input, other):
    return minimum(input, other)


def atan2(input, other):
    other = _other_tensor(input, other)
    ad, bd, b = _operands("atan2", input, other)
    if not _is_float(ad.dtype):
        ad, bd = ad.astype(D.get_default_dtype()), bd.astype(D.get_default_dtype())
    xp = B.namespace(ad)
    out = wrap(xp.arctan2(ad, bd))
    if _grad_on(input, b):
        n = new_node(Atan2Backward)
        _fill_shapes(n, input, b)
        n.save(input, b)
        record(n, out, input, b)
    return out


arctan2 = atan2


# --------------------------------------------------------------------------- comparison / logic

def _compare(ufunc_name):
    def op(input, other):
        ad, bd, _ = _operands(ufunc_name, input, other)
        return wrap(getattr(B.namespace(ad), ufunc_name)(ad, bd))
    op.__name__ = ufunc_name
    return op


eq = _compare("equal")
ne = _compare("not_equal")
lt = _compare("less")
le = _compare("less_equal")
gt = _compare("greater")
ge = _compare("greater_equal")
eq.__name__, ne.__name__, lt.__name__, le.__name__, gt.__name__, ge.__name__ = \
    "eq", "ne", "lt", "le", "gt", "ge"
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _bitwise(name, bool_name):
    def op(input, other):
        ad, bd, _ = _operands(name, input, other)
        if _is_float(ad.dtype):
            raise TypeError(f"{name} is only supported for integer and bool tensors, "
                            f"got {D.name(ad.dtype)}")
        return wrap(getattr(B.namespace(ad), bool_name)(ad, bd))
    op.__name__ = name
    return op


bitwise_and = _bitwise("bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor")


def bitwise_not(input):
    d = input.data
    if _is_float(d.dtype):
        raise TypeError(f"bitwise_not is only supported for integer and bool tensors, "
                        f"got {D.name(d.dtype)}")
    return wrap(B.namespace(d).invert(d))


def logical_not(input):
    return wrap(B.namespace(input.data).logical_not(input.data))


def _logical(name):
    def op(input, other):
        other = _other_tensor(input, other)
        return wrap(getattr(B.namespace(input.data), name)(input.data, other.data))
    op.__name__ = name
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    other = _other_tensor(input, other)
    return wrap(B.namespace(input.data).isclose(input.data, other.data, rtol, atol, equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).data.all())


def equal(input, other):
    return input.data.shape == other.data.shape and bool((input.data == other.data).all())


def isnan(input):
    return wrap(B.namespace(input.data).isnan(input.data))


def isinf(input):
    return wrap(B.namespace(input.data).isinf(input.data))


def isfinite(input):
    return wrap(B.namespace(input.data).isfinite(input.data))


def isposinf(input):
    return wrap(B.namespace(input.data).isposinf(input.data))


def isneginf(input):
    return wrap(B.namespace(input.data).isneginf(input.data))


def signbit(input):
    return wrap(B.namespace(input.data).signbit(input.data))


# --------------------------------------------------------------------------- unary math
# Each unary op is (forward on arrays, backward(x, y, g) in ember ops, what backward needs).

class UnaryBackward(Node):
    __slots__ = ("fn",)

    def backward(self, g):
        x, y = self.unpack()
        return (self.fn(x, y, g),)


_UNARY = {}


def _unary(name, fwd, bwd, needs="x", float_only=True):
    """Define a unary op; ``bwd(x, y, g)`` gets the input, output and incoming grad."""

    def op(input):
        d = input.data
        if float_only and not _is_float(d.dtype):
            d = d.astype(D.get_default_dtype())
        out = wrap(fwd(B.namespace(d), d))
        if bwd is not None and STATE.enabled and input.requires_grad:
            n = new_node(UnaryBackward)
            n.fn = bwd
            record(n, out, input)
            from ..autograd.graph import saved_output

            sx = (input, 0 if input._version is None else input._version[0]) if "x" in needs \
                else None
            sy = saved_output(out) if "y" in needs else None
            n.saved = (sx, sy)
        return out
    op.__name__ = name
    op.__qualname__ = name
    _UNARY[name] = op
    return op


def _ones_like_g(g):
    return g


exp = _unary("exp", lambda xp, d: xp.exp(d), lambda x, y, g: g * y, "y")
exp2 = _unary("exp2", lambda xp, d: xp.exp2(d), lambda x, y, g: g * y * math.log(2.0), "y")
expm1 = _unary("expm1", lambda xp, d: xp.expm1(d), lambda x, y, g: g * (y + 1), "y")
log = _unary("log", lambda xp, d: xp.log(d), lambda x, y, g: g / x)
log2 = _unary("log2", lambda xp, d: xp.log2(d), lambda x, y, g: g / (x * math.log(2.0)))
log10 = _unary("log10", lambda xp, d: xp.log10(d), lambda x, y, g: g / (x * math.log(10.0)))
log1p = _unary("log1p", lambda xp, d: xp.log1p(d), lambda x, y, g: g / (x + 1))
sqrt = _unary("sqrt", lambda xp, d: xp.sqrt(d), lambda x, y, g: g / (y * 2), "y")
rsqrt = _unary("rsqrt", lambda xp, d: 1 / xp.sqrt(d), lambda x, y, g: g * y * y * y * -0.5, "y")
sin = _unary("sin", lambda xp, d: xp.sin(d), lambda x, y, g: g * x.cos())
cos = _unary("cos", lambda xp, d: xp.cos(d), lambda x, y, g: -g * x.sin())
tan = _unary("tan", lambda xp, d: xp.tan(d), lambda x, y, g: g * (y * y + 1), "y")
asin = _unary("asin", lambda xp, d: xp.arcsin(d), lambda x, y, g: g * (1 - x * x).rsqrt())
acos = _unary("acos", lambda xp, d: xp.arccos(d), lambda x, y, g: -g * (1 - x * x).rsqrt())
atan = _unary("atan", lambda xp, d: xp.arctan(d), lambda x, y, g: g / (x * x + 1))
sinh = _unary("sinh", lambda xp, d: xp.sinh(d), lambda x, y, g: g * x.cosh())
cosh = _unary("cosh", lambda xp, d: xp.cosh(d), lambda x, y, g: g * x.sinh())
tanh = _unary("tanh", lambda xp, d: xp.tanh(d), lambda x, y, g: g * (1 - y * y), "y")
asinh = _unary("asinh", lambda xp, d: xp.arcsinh(d), lambda x, y, g: g * (x * x + 1).rsqrt())
acosh = _unary("acosh", lambda xp, d: xp.arccosh(d), lambda x, y, g: g * (x * x - 1).rsqrt())
atanh = _unary("atanh", lambda xp, d: xp.arctanh(d), lambda x, y, g: g / (1 - x * x))
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def _sigmoid_fwd(xp, d):
    # numerically stable in both tails: exp of a non-positive number only
    e = xp.exp(-xp.abs(d))
    return xp.where(d >= 0, 1 / (1 + e), e / (1 + e)).astype(d.dtype, copy=False)


sigmoid = _unary("sigmoid", _sigmoid_fwd, lambda x, y, g: g * y * (1 - y), "y")
erf = _unary("erf", lambda xp, d: _special.erf(d),
             lambda x, y, g: g * (x * x * -1).exp() * (2.0 / math.sqrt(math.pi)))
erfc = _unary("erfc", lambda xp, d: 1 - _special.erf(d),
              lambda x, y, g: g * (x * x * -1).exp() * (-2.0 / math.sqrt(math.pi)))
reciprocal = _unary("reciprocal", lambda xp, d: 1 / d, lambda x, y, g: -g * y * y, "y")
square = _unary("square", lambda xp, d: d * d, lambda x, y, g: g * x * 2, float_only=False)
neg = _unary("neg", lambda xp, d: -d, lambda x, y, g: -g, "", float_only=False)
negative = neg
abs = _unary("abs", lambda xp, d: xp.abs(d), lambda x, y, g: g * x.sign(), float_only=False)
absolute = abs
relu = _unary("relu", lambda xp, d: xp.maximum(d, 0), lambda x, y, g: g * (y > 0)._cast(g.dtype),
              "y", float_only=False)


def _const_grad(x, y, g):
    return g * 0


sign = _unary("sign", lambda xp, d: xp.sign(d), _const_grad, "", float_only=False)
sgn = sign
floor = _unary("floor", lambda xp, d: xp.floor(d) if d.dtype.kind == "f" else d.copy(),
               _const_grad, "", float_only=False)
ceil = _unary("ceil", lambda xp, d: xp.ceil(d) if d.dtype.kind == "f" else d.copy(),
              _const_grad, "", float_only=False)
trunc = _unary("trunc", lambda xp, d: xp.trunc(d) if d.dtype.kind == "f" else d.copy(),
               _const_grad, "", float_only=False)
fix = trunc
frac = _unary("frac", lambda xp, d: d - xp.trunc(d), lambda x, y, g: g, "")


def round(input, *, decimals=0):
    d = input.data
    xp = B.namespace(d)
    out = wrap(xp.round(d, decimals) if d.dtype.kind == "f" else d.copy())
    if STATE.enabled and input.requires_grad:
        n = new_node(UnaryBackward)
        n.fn = _const_grad
        record(n, out, input)
        n.saved = (None, None)
    return out


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    d = input.data
    return wrap(B.namespace(d).nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf))


# --------------------------------------------------------------------------- clamp / lerp / addc*

class ClampBackward(Node):
    __slots__ = ()

    def backward(self, g):
        (mask,) = self.unpack()
        return (g * mask._cast(g.dtype),)


def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    Tensor = type(input)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    d = input.data
    if (isinstance(min, float) or isinstance(max, float)) and not _is_float(d.dtype):
        d = d.astype(D.get_default_dtype())
    xp = B.namespace(d)
    r = xp.clip(d, min, max)
    if r.dtype is not d.dtype:
        r = r.astype(d.dtype)
    out = wrap(r)
    if STATE.enabled and input.requires_grad:
        keep = xp.ones(d.shape, dtype=bool)
        if min is not None:
            keep &= d >= min
        if max is not None:
            keep &= d <= max
        n = new_node(ClampBackward)
        n.saved = ((wrap(keep), 0),)
        record(n, out, input)
    return out


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def lerp(input, end, weight):
    return input + (_other_tensor(input, end) - input) * weight


def addcmul(input, tensor1, tensor2, *, value=1):
    return input + tensor1 * tensor2 * value if value != 1 else input + tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    return input + tensor1 / tensor2 * value if value != 1 else input + tensor1 / tensor2


def xlogy(input, other):
    other = _other_tensor(input, other)
    r = input * other.log()
    return r.masked_fill(input == 0, 0.0)


def hypot(input, other):
    return (input * input + other * other).sqrt()


def logaddexp(input, other):
    m = maximum(input, other).detach()
    return m + ((input - m).exp() + (other - m).exp()).log()


def where_scalar_safe(cond, x, y):  # used by tests of numerics
    from .index import where

    return where(cond, x, y)


# --------------------------------------------------------------------------- in-place machinery

def _leaf_check(t):
    if t.requires_grad and t.grad_fn is None and STATE.enabled:
        raise RuntimeError(
            "a leaf tensor that requires grad is being used in an in-place operation; wrap the "
            "update in ember.no_grad() or use an out-of-place op")


def apply_inplace(self, fn, *args, **kwargs):
    """Run ``fn(self, *args)`` out of place and write the result into ``self``'s memory,
    moving the autograd history onto ``self``. The version counter is bumped, so a saved
    tensor that was overwritten is caught at backward."""
    Tensor = type(self)
    grad = STATE.enabled and (self.requires_grad or any(
        isinstance(a, Tensor) and a.requires_grad for a in args))
    if grad:
        _leaf_check(self)
        if self._base is not None and (self._base.requires_grad or not self.requires_grad):
            raise RuntimeError(
                "in-place operation with autograd on a view of another tensor is not supported: "
                "apply it to a .clone() or use the out-of-place op")
        src = Tensor._make(self.data.copy())
        src.grad_fn, src._out_nr, src.requires_grad = self.grad_fn, self._out_nr, self.requires_grad
        res = fn(src, *args, **kwargs)
    else:
        res = fn(self, *args, **kwargs)
    _write(self, res.data, fn)
    if grad:
        self.grad_fn, self._out_nr, self.requires_grad = res.grad_fn, res._out_nr, True
    self._bump()
    return self


def _write(self, data, fn):
    d = self.data
    if data.dtype is not d.dtype and not np.can_cast(data.dtype, d.dtype, "same_kind"):
        raise RuntimeError(
            f"result type {D.name(data.dtype)} of {getattr(fn, '__name__', 'op')} can't be cast "
            f"to the desired output type {D.name(d.dtype)}")
    if data.shape != d.shape:
        try:
            np.broadcast_shapes(data.shape, d.shape) == d.shape or (_ for _ in ()).throw(ValueError)
        except ValueError:
            raise RuntimeError(
                f"output with shape {list(d.shape)} doesn't match the broadcast shape "
                f"{list(np.broadcast_shapes(data.shape, d.shape))}") from None
    if not d.flags.writeable:
        raise RuntimeError("in-place operation on a read-only tensor (a broadcast view made by "
                           "expand): clone() it first")
    B.namespace(d).copyto(d, data, casting="unsafe")


def _fast_inplace(self, ufunc_name, other):
    """No-grad fast path: ``ufunc(self, other, out=self)`` with no allocation."""
    d = self.data
    Tensor = type(self)
    o = other.data if isinstance(other, Tensor) else other
    if isinstance(o, _ndarray) or B.is_cuda_array(o):
        if type(o) is not type(d):
            raise device_error(ufunc_name, d, o)
        if o.dtype is not d.dtype and not np.can_cast(o.dtype, d.dtype, "same_kind"):
            raise RuntimeError(f"result type {D.name(o.dtype)} can't be cast to the desired "
                               f"output type {D.name(d.dtype)}")
    elif isinstance(o, float) and not _is_float(d.dtype):
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.name(d.dtype)}")
    if not d.flags.writeable:
        raise RuntimeError("in-place operation on a read-only tensor (a broadcast view made by "
                           "expand): clone() it first")
    getattr(B.namespace(d), ufunc_name)(d, o, out=d, casting="unsafe")
    self._bump()
    return self


def _can_fast(self, other):
    if STATE.enabled and (self.requires_grad or getattr(other, "requires_grad", False)):
        return False
    return True


# --------------------------------------------------------------------------- mixin

class ElementwiseOps:
    """Methods and operators of the elementwise family (mixed into Tensor)."""

    __slots__ = ()

    _cast = _cast

    # arithmetic operators ---------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(self, other)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return rsub(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(self, other)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return rdiv(self, other)

    def __floordiv__(self, other):
        return div(self, other, rounding_mode="floor")

    def __rfloordiv__(self, other):
        return div(_other_tensor(self, other), self, rounding_mode="floor")

    def __mod__(self, other):
        return remainder(self, other)

    def __rmod__(self, other):
        return remainder(_other_tensor(self, other), self)

    def __pow__(self, other):
        return pow(self, other)

    def __rpow__(self, other):
        return rpow(self, other)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return abs(self)

    def __invert__(self):
        return bitwise_not(self)

    def __and__(self, other):
        return bitwise_and(self, other)

    __rand__ = __and__

    def __or__(self, other):
        return bitwise_or(self, other)

    __ror__ = __or__

    def __xor__(self, other):
        return bitwise_xor(self, other)

    __rxor__ = __xor__

    def __eq__(self, other):
        if other is None:
            return False
        return eq(self, other)

    def __ne__(self, other):
        if other is None:
            return True
        return ne(self, other)

    def __lt__(self, other):
        return lt(self, other)

    def __le__(self, other):
        return le(self, other)

    def __gt__(self, other):
        return gt(self, other)

    def __ge__(self, other):
        return ge(self, other)

    # in-place operators -------------------------------------------------------------
    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    # named methods -------------------------------------------------------------------
    add = add
    sub = sub
    subtract = sub
    mul = mul
    multiply = mul
    div = div
    divide = div
    true_divide = div
    floor_divide = floor_divide
    remainder = remainder
    fmod = fmod
    pow = pow
    maximum = maximum
    minimum = minimum
    fmax = fmax
    fmin = fmin
    atan2 = atan2
    arctan2 = atan2
    eq = eq
    ne = ne
    lt = lt
    le = le
    gt = gt
    ge = ge
    greater = gt
    greater_equal = ge
    less = lt
    less_equal = le
    not_equal = ne
    logical_not = logical_not
    logical_and = logical_and
    logical_or = logical_or
    logical_xor = logical_xor
    bitwise_not = bitwise_not
    bitwise_and = bitwise_and
    bitwise_or = bitwise_or
    bitwise_xor = bitwise_xor
    isclose = isclose
    allclose = allclose
    equal = equal
    isnan = isnan
    isinf = isinf
    isfinite = isfinite
    isposinf = isposinf
    isneginf = isneginf
    signbit = signbit
    exp = exp
    exp2 = exp2
    expm1 = expm1
    log = log
    log2 = log2
    log10 = log10
    log1p = log1p
    sqrt = sqrt
    rsqrt = rsqrt
    sin = sin
    cos = cos
    tan = tan
    asin = asin
    acos = acos
    atan = atan
    arcsin = asin
    arccos = acos
    arctan = atan
    sinh = sinh
    cosh = cosh
    tanh = tanh
    asinh = asinh
    acosh = acosh
    atanh = atanh
    arcsinh = asinh
    arccosh = acosh
    arctanh = atanh
    sigmoid = sigmoid
    erf = erf
    erfc = erfc
    reciprocal = reciprocal
    square = square
    neg = neg
    negative = neg
    abs = abs
    absolute = abs
    relu = relu
    sign = sign
    sgn = sign
    floor = floor
    ceil = ceil
    trunc = trunc
    fix = trunc
    frac = frac
    round = round
    nan_to_num = nan_to_num
    clamp = clamp
    clip = clamp
    clamp_min = clamp_min
    clamp_max = clamp_max
    lerp = lerp
    addcmul = addcmul
    addcdiv = addcdiv
    xlogy = xlogy
    hypot = hypot
    logaddexp = logaddexp

    # in-place variants ---------------------------------------------------------------
    def add_(self, other, *, alpha=1):
        if alpha == 1 and _can_fast(self, other):
            return _fast_inplace(self, "add", other)
        return apply_inplace(self, add, other, alpha=alpha)

    def sub_(self, other, *, alpha=1):
        if alpha == 1 and _can_fast(self, other):
            return _fast_inplace(self, "subtract", other)
        return apply_inplace(self, sub, other, alpha=alpha)

    def mul_(self, other):
        if _can_fast(self, other):
            return _fast_inplace(self, "multiply", other)
        return apply_inplace(self, mul, other)

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None and _is_float(self.data.dtype) and _can_fast(self, other):
            return _fast_inplace(self, "true_divide", other)
        return apply_inplace(self, div, other, rounding_mode=rounding_mode)

    def pow_(self, exponent):
        return apply_inplace(self, pow, exponent)

    def clamp_(self, min=None, max=None):
        if _can_fast(self, None) and not isinstance(min, ElementwiseOps) \
                and not isinstance(max, ElementwiseOps):
            d = self.data
            B.namespace(d).clip(d, min, max, out=d)
            self._bump()
            return self
        return apply_inplace(self, clamp, min, max)

    clip_ = clamp_

    def clamp_min_(self, min):
        return self.clamp_(min=min)

    def clamp_max_(self, max):
        return self.clamp_(max=max)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        if _can_fast(self, None) and not tensor1.requires_grad and not tensor2.requires_grad:
            d = self.data
            tmp = tensor1.data * tensor2.data
            if value != 1:
                tmp *= value
            d += tmp
            self._bump()
            return self
        return apply_inplace(self, addcmul, tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        if _can_fast(self, None) and not tensor1.requires_grad and not tensor2.requires_grad:
            d = self.data
            tmp = tensor1.data / tensor2.data
            if value != 1:
                tmp *= value
            d += tmp
            self._bump()
            return self
        return apply_inplace(self, addcdiv, tensor1, tensor2, value=value)

    def lerp_(self, end, weight):
        if _can_fast(self, end) and not getattr(weight, "requires_grad", False):
            d = self.data
            e = end.data if isinstance(end, ElementwiseOps) else end
            w = weight.data if isinstance(weight, ElementwiseOps) else weight
            d += (e - d) * w
            self._bump()
            return self
        return apply_inplace(self, lerp, end, weight)

    def zero_(self):
        return self.fill_(0)

    def fill_(self, value):
        if isinstance(value, ElementwiseOps):
            if value.data.size != 1:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                                   f"with {value.data.ndim} dimensions")
            if STATE.enabled and value.requires_grad:
                from .shape import expand

                return apply_inplace(self, lambda s, v: expand(v.reshape(()), s.shape)._cast(
                    s.dtype), value)
            value = value.item()
        if STATE.enabled and self.requires_grad:
            return apply_inplace(self, lambda s: s * 0 + value)
        self.data.fill(value)
        self._bump()
        return self

    def copy_(self, src, non_blocking=False):
        Tensor = type(self)
        src = src if isinstance(src, Tensor) else to_tensor(src, self, name="src")
        if STATE.enabled and (self.requires_grad or src.requires_grad):
            from .shape import expand

            def _copy(s, x):
                x = x.to(s.device) if x.device != s.device else x
                return expand(x, s.shape)._cast(s.dtype) if x.shape != s.shape else x._cast(s.dtype)
            return apply_inplace(self, _copy, src)
        sd = src.data
        if type(sd) is not type(self.data):
            sd = B.to_device(sd, self.device)
        try:
            B.namespace(self.data).copyto(self.data, sd, casting="unsafe")
        except ValueError:
            raise RuntimeError(f"copy_: the source of shape {list(sd.shape)} can't be broadcast "
                               f"to the destination of shape {list(self.data.shape)}") from None
        self._bump()
        return self

    def neg_(self):
        return apply_inplace(self, neg)

    def abs_(self):
        return apply_inplace(self, abs)

    def exp_(self):
        return apply_inplace(self, exp)

    def log_(self):
        return apply_inplace(self, log)

    def sqrt_(self):
        if _can_fast(self, None) and _is_float(self.data.dtype):
            d = self.data
            B.namespace(d).sqrt(d, out=d)
            self._bump()
            return self
        return apply_inplace(self, sqrt)

    def sigmoid_(self):
        return apply_inplace(self, sigmoid)

    def tanh_(self):
        return apply_inplace(self, tanh)

    def relu_(self):
        return apply_inplace(self, relu)

    def floor_(self):
        return apply_inplace(self, floor)

    def ceil_(self):
        return apply_inplace(self, ceil)

    def round_(self, *, decimals=0):
        return apply_inplace(self, round, decimals=decimals)

    def trunc_(self):
        return apply_inplace(self, trunc)

    def reciprocal_(self):
        return apply_inplace(self, reciprocal)

    def sin_(self):
        return apply_inplace(self, sin)

    def cos_(self):
        return apply_inplace(self, cos)

    def sign_(self):
        return apply_inplace(self, sign)

    def square_(self):
        return apply_inplace(self, square)

    def remainder_(self, other):
        return apply_inplace(self, remainder, other)

    def fmod_(self, other):
        return apply_inplace(self, fmod, other)

    def maximum_(self, other):
        return apply_inplace(self, maximum, other)

    def minimum_(self, other):
        return apply_inplace(self, minimum, other)

    def erf_(self):
        return apply_inplace(self, erf)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return apply_inplace(self, nan_to_num, nan, posinf, neginf)

    def logical_not_(self):
        return apply_inplace(self, logical_not)


__all__ = [
    "add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
    "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "fmax", "fmin", "atan2",
    "arctan2", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "logical_not", "logical_and", "logical_or", "logical_xor",
    "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "isclose", "allclose", "equal",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "round", "nan_to_num",
    "clamp", "clip", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "xlogy", "hypot",
    "logaddexp", *_UNARY.keys(), "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
    "negative", "absolute", "sgn", "fix",
]
subtract, multiply, divide, true_divide = sub, mul, div, div
