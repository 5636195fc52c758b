"""Special functions as differentiable tensor ops: the gamma family (``lgamma``, ``digamma``,
``polygamma``, ``mvlgamma``, Hurwitz ``zeta``), ``erfinv``, the normal distribution
(``ndtr``, ``ndtri``, ``log_ndtr``), modified Bessel ``i0``/``i0e``/``i1``/``i1e``, ``sinc``,
``entr``, ``logit``, ``xlog1py``, and the float helpers ``heaviside``, ``float_power``,
``deg2rad``, ``rad2deg``, ``frexp``, ``ldexp``.

Forwards run the raw-array routines of ``_specfun.py`` (float64 inside, cast back to the
input's dtype; integer inputs give the default float dtype). Backwards are ember ops, so they
differentiate again (``lgamma -> digamma -> polygamma(1) -> polygamma(2) ...``).

    >>> x = ember.tensor([0.5, 3.0], requires_grad=True)
    >>> ember.lgamma(x).sum().backward()        # x.grad == ember.digamma(x)
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from ..autograd.function import _OnceDifferentiableBackward
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record, saved_output
from . import _specfun as F
from . import _util as U
from ._util import to_tensor, unbroadcast, wrap

_SQRT_2PI = math.sqrt(2.0 * math.pi)
frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


def _float_dtype(dt):
    return dt if dt.kind == "f" or dt == D.bfloat16 else D.get_default_dtype()


def _check_real(name, d):
    if d.dtype.kind == "c":
        raise RuntimeError(f"{name}: complex inputs are not supported")


# --------------------------------------------------------------------------- unary ops

# the backward of a unary special function is elementwise's: ``fn(x, y, g)`` with the input
# and the output
from .elementwise import UnaryBackward as SpecialBackward  # noqa: E402


def _unary(name, fwd, bwd):
    """A unary op computing ``fwd(float64 array)`` and casting back to the float dtype."""

    def op(input):
        input = to_tensor(input)
        d = input.array
        _check_real(name, d)
        dt = _float_dtype(d.dtype)
        out = wrap(fwd(d).astype(dt, copy=False))
        if STATE.enabled and input.requires_grad:
            n = new_node(SpecialBackward)
            n.fn, n.op = bwd, name
            record(n, out, input)
            n.saved = ((input, 0 if input._version is None else input._version[0]),
                       saved_output(out))
        return out
    op.__name__ = op.__qualname__ = name
    return op


def _nonzero(x):
    """``x`` with its zeros replaced by ones (a safe divisor)."""
    return x.masked_fill(x == 0, 1.0)


lgamma = _unary("lgamma", F.lgamma, lambda x, y, g: g * digamma(x))
digamma = _unary("digamma", F.digamma, lambda x, y, g: g * polygamma(1, x))
erfinv = _unary("erfinv", F.erfinv,
                lambda x, y, g: g * (y * y).exp() * (math.sqrt(math.pi) / 2.0))
i0 = _unary("i0", F.i0, lambda x, y, g: g * i1(x))
i0e = _unary("i0e", F.i0e, lambda x, y, g: g * (i1e(x) - x.sign() * y))
i1 = _unary("i1", F.i1, lambda x, y, g: g * (i0(x) - y / _nonzero(x)).masked_fill(x == 0, 0.5))
i1e = _unary("i1e", F.i1e, lambda x, y, g: g * (
    i0e(x) - y * (x.sign() + 1.0 / _nonzero(x))).masked_fill(x == 0, 0.5))
erfc = _unary("erfc", F.erfc,  # relative accuracy in the upper tail (ember.special.erfc)
              lambda x, y, g: g * (x * x * -1.0).exp() * (-2.0 / math.sqrt(math.pi)))
ndtr = _unary("ndtr", F.ndtr, lambda x, y, g: g * (x * x * -0.5).exp() / _SQRT_2PI)
ndtri = _unary("ndtri", F.ndtri, lambda x, y, g: g * (y * y * 0.5).exp() * _SQRT_2PI)
log_ndtr = _unary("log_ndtr", F.log_ndtr,
                  lambda x, y, g: g * (x * x * -0.5 - y).exp() / _SQRT_2PI)


def _entr_fwd(d):
    xp = B.namespace(d)
    x = F.f64(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = -x * xp.log(xp.where(x > 0, x, 1.0))
    return xp.where(x > 0, r, xp.where(x == 0, 0.0, xp.where(x < 0, -math.inf, x)))


entr = _unary("entr", _entr_fwd, lambda x, y, g: g * -(x.log() + 1.0))


def _polygamma_op(n):
    return _unary("polygamma", lambda d: F.polygamma(n, d),
                  lambda x, y, g: g * polygamma(n + 1, x))


def polygamma(n, input):
    """The ``n``-th derivative of digamma (``n >= 0``), differentiable."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n!r}")
    n = int(n)
    if n == 0:
        return digamma(input)
    return _polygamma_op(n)(input)


def mvlgamma(input, p):
    """log of the multivariate gamma function of dimension ``p``:
    p (p - 1) / 4 log(pi) + sum_{i<p} lgamma(x - i / 2). Every element must exceed (p-1)/2."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p!r}")
    input = to_tensor(input)
    if input.dtype.kind not in "f" and input.dtype != D.bfloat16:
        input = input._cast(D.get_default_dtype())
    xp = B.namespace(input.array)
    if not bool(xp.all(input.array > (p - 1) / 2.0)):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = lgamma(input)
    for i in range(1, p):
        out = out + lgamma(input - i / 2.0)
    return out + p * (p - 1) / 4.0 * math.log(math.pi)


multigammaln = mvlgamma


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0."""
    input = to_tensor(input)
    if input.dtype.kind in "iub":
        input = input._cast(D.get_default_dtype())
    zero = input == 0
    px = (input * math.pi).masked_fill(zero, 1.0)
    return (px.sin() / px).masked_fill(zero, 1.0)


def logit(input, eps=None):
    """log(p / (1 - p)), with ``p`` clamped to [eps, 1 - eps] when ``eps`` is given."""
    input = to_tensor(input)
    if input.dtype.kind in "iub":
        input = input._cast(D.get_default_dtype())
    x = input if eps is None else input.clamp(eps, 1.0 - eps)
    return (x / (1.0 - x)).log()


def expit(input):
    return to_tensor(input).sigmoid()


def _pair(name, input, other):
    """Two operands of a binary special function as tensors of one float dtype."""
    Tensor = U.Tensor
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}: expected at least one Tensor argument")
    if not isinstance(input, Tensor):
        input = to_tensor(input, other)
    if not isinstance(other, Tensor):
        other = to_tensor(other, input)
    dt = D.result_type(input.array, other.array)
    dt = _float_dtype(dt)
    return input._cast(dt), other._cast(dt)


def xlog1py(input, other):
    """x * log1p(y), 0 where x == 0 (unless y is nan)."""
    x, y = _pair("xlog1py", input, other)
    r = x * y.log1p()
    return r.masked_fill((x == 0) & ~y.isnan(), 0.0)


# --------------------------------------------------------------------------- zeta

class ZetaBackward(Node):
    __slots__ = ("xshape", "qshape", "dtype")

    def backward(self, g):
        x, q = self.unpack()
        gx = gq = None
        if self.next[1] is not None:
            gq = unbroadcast(g * -x * zeta(x + 1.0, q), self.qshape, self.dtype)
        if self.next[0] is not None:
            gx = unbroadcast(g * _zeta_ds(x, q), self.xshape, self.dtype)
        return gx, gq


def _zeta_ds(x, q):
    """d zeta(x, q) / dx as a tensor; differentiating it again raises (raw-array formula)."""
    _, d = F.zeta(x.array, q.array, want_ds=True)
    out = wrap(d.astype(x.dtype, copy=False))
    if STATE.enabled and (x.requires_grad or q.requires_grad):
        n = new_node(_OnceDifferentiableBackward)
        n.fn_name = "zeta (derivative in x)"
        record(n, out, x, q)
    return out


def zeta(input, other):
    """Hurwitz zeta sum_{k>=0} (other + k) ** -input; differentiable in both arguments."""
    x, q = _pair("zeta", input, other)
    out = wrap(F.zeta(x.array, q.array).astype(x.dtype, copy=False))
    if STATE.enabled and (x.requires_grad or q.requires_grad):
        n = new_node(ZetaBackward)
        n.xshape, n.qshape, n.dtype = x.array.shape, q.array.shape, x.dtype
        record(n, out, x, q)
        n.save(x, q)
    return out


# --------------------------------------------------------------------------- float helpers

def heaviside(input, values):
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0 (not differentiable)."""
    values = to_tensor(values, input)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    d, v = input.array, values.array
    xp = B.namespace(d)
    if d.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    out = xp.where(d == 0, v, (d > 0).astype(d.dtype))
    return wrap(xp.asarray(out, dtype=d.dtype))


def float_power(input, exponent):
    """``input ** exponent`` computed in double precision (float64, or complex128)."""
    Tensor = U.Tensor

    def wide(t):
        return t._cast(D.complex128 if t.dtype.kind == "c" else D.float64)
    if not isinstance(input, Tensor):
        exponent = to_tensor(exponent)
        base = to_tensor(input, exponent)
        cplx = isinstance(input, complex) or exponent.dtype.kind == "c"
        base = base._cast(D.complex128 if cplx else D.float64)
        return base.pow(wide(exponent) if exponent.dtype.kind == "c" or cplx else
                        exponent._cast(D.float64))
    x = wide(input)
    if isinstance(exponent, Tensor):
        e = exponent._cast(D.complex128 if x.dtype.kind == "c" or exponent.dtype.kind == "c"
                           else D.float64)
        if e.dtype.kind == "c" and x.dtype.kind != "c":
            x = x._cast(D.complex128)
        return x.pow(e)
    if isinstance(exponent, complex) and x.dtype.kind != "c":
        x = x._cast(D.complex128)
    return x.pow(exponent)


def deg2rad(input):
    input = to_tensor(input)
    if input.dtype.kind in "iub":
        input = input._cast(D.get_default_dtype())
    return input * (math.pi / 180.0)


def rad2deg(input):
    input = to_tensor(input)
    if input.dtype.kind in "iub":
        input = input._cast(D.get_default_dtype())
    return input * (180.0 / math.pi)


class FrexpBackward(Node):
    __slots__ = ()

    def backward(self, g):
        (e,) = self.unpack()
        return (g * (e._cast(g.dtype) * -1.0).exp2(),)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent and 0.5 <= |mantissa| < 1;
    exponent is int32. The mantissa is differentiable (gradient 2 ** -exponent)."""
    d = input.array
    if d.dtype.kind != "f" and d.dtype != D.bfloat16:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = B.namespace(d)
    src = d if d.dtype.kind == "f" else d.astype(np.float32)
    m, e = xp.frexp(src)
    mant = wrap(m.astype(d.dtype, copy=False))
    expo = wrap(e.astype(np.int32, copy=False))
    if STATE.enabled and input.requires_grad:
        n = new_node(FrexpBackward)
        record(n, mant, input)
        n.save(expo)
    return frexp_result(mant, expo)


def ldexp(input, other):
    """input * 2 ** other (a float result)."""
    input = to_tensor(input)
    other = to_tensor(other, input)
    scale = other.exp2() if other.dtype.kind in "fc" or other.dtype == D.bfloat16 else \
        other._cast(D.get_default_dtype()).exp2()
    out = input * scale
    if out.dtype.kind in "iub":
        out = out._cast(D.get_default_dtype())
    return out


# --------------------------------------------------------------------------- Tensor methods

def _inplace(fn, name):
    def method(self, *args, **kwargs):
        from .elementwise import apply_inplace

        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


class SpecialOps:
    """Tensor methods of the special-function family (mixed into Tensor)."""

    __slots__ = ()

    def lgamma(self):
        return lgamma(self)

    def digamma(self):
        return digamma(self)

    def polygamma(self, n):
        return polygamma(n, self)

    def mvlgamma(self, p):
        return mvlgamma(self, p)

    def erfinv(self):
        return erfinv(self)

    def i0(self):
        return i0(self)

    def sinc(self):
        return sinc(self)

    def logit(self, eps=None):
        return logit(self, eps)

    def heaviside(self, values):
        return heaviside(self, values)

    def float_power(self, exponent):
        return float_power(self, exponent)

    def deg2rad(self):
        return deg2rad(self)

    def rad2deg(self):
        return rad2deg(self)

    def frexp(self):
        return frexp(self)

    def ldexp(self, other):
        return ldexp(self, other)

    lgamma_ = _inplace(lgamma, "lgamma_")
    digamma_ = _inplace(digamma, "digamma_")
    erfinv_ = _inplace(erfinv, "erfinv_")
    i0_ = _inplace(i0, "i0_")
    sinc_ = _inplace(sinc, "sinc_")
    logit_ = _inplace(logit, "logit_")
    deg2rad_ = _inplace(deg2rad, "deg2rad_")
    rad2deg_ = _inplace(rad2deg, "rad2deg_")
    ldexp_ = _inplace(ldexp, "ldexp_")
    mvlgamma_ = _inplace(mvlgamma, "mvlgamma_")
    heaviside_ = _inplace(heaviside, "heaviside_")

    def polygamma_(self, n):
        from .elementwise import apply_inplace

        return apply_inplace(self, lambda s: polygamma(n, s))

    def float_power_(self, exponent):
        if self.dtype not in (D.float64, D.complex128):
            want = "complex128" if self.dtype.kind == "c" else "float64"
            raise RuntimeError(
                f"the base given to float_power_ has dtype {D.name(self.dtype)} but the "
                f"operation's result requires dtype {want}")
        from .elementwise import apply_inplace

        return apply_inplace(self, float_power, exponent)


__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "sinc", "heaviside",
           "float_power", "deg2rad", "rad2deg", "frexp", "ldexp", "i0", "logit"]
