"""What the distributions need beyond the core's special functions (``lgamma``,
``digamma``, ``polygamma``, ``erfinv`` live in ``ember.ops.special`` and are re-exported
here): the regularised lower incomplete gamma ``gammainc`` as a differentiable op, and
``standard_gamma_grad`` (the implicit reparameterisation gradient of a Gamma(alpha, 1) sample
with respect to alpha).

Everything is computed in float64 against the array namespace ``xp`` of the input (numpy or
cupy) and cast back to the input's dtype.

    >>> import ember
    >>> from ember.distributions._special import lgamma, digamma
    >>> x = ember.tensor([0.5, 3.0], requires_grad=True)
    >>> lgamma(x).sum().backward()          # x.grad == digamma(x)
"""
from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from .._tensor import Tensor
from ..autograd import Function
from ..ops import _specfun as _sf
from ..ops._special import erf as _erf_array
from ..ops.special import digamma, erfinv, lgamma, polygamma  # noqa: F401  (re-exported)

__all__ = ["lgamma", "digamma", "polygamma", "erfinv", "gammainc", "standard_gamma_grad_array"]

_EPS = 1e-15
_MAX_TERMS = 20000  # a safety bound on the incomplete-gamma series and continued fraction


def _f64(x):
    return x.astype(np.float64, copy=False)


# --------------------------------------------------------------------------- arrays

# lgamma, digamma, polygamma and erfinv on arrays are the core's (``ember.ops._specfun``)
def lgamma_array(x):
    return _sf.lgamma(x)


def digamma_array(x):
    return _sf.digamma(x)


def polygamma_array(n, x):
    return _sf.polygamma(n, x)


def erfinv_array(y):
    return _sf.erfinv(y)


def _erfc_tail(x):
    """erfc(x) for x >= 3 by its continued fraction (relative accuracy, unlike 1 - erf)."""
    xp = B.namespace(x)
    f = x.copy()
    for k in range(60, 0, -1):
        f = x + (k / 2.0) / f
    return xp.exp(-x * x) / math.sqrt(math.pi) / f


# ----------------------------------------------------------- incomplete gamma and its a-grad

_BIG_A = 2e3  # from here on Temme's uniform asymptotic expansion (two terms, relative error
#              ~3e-10, falling as a^-2) replaces the series, which needs ~9 sqrt(a) terms


def _series(a, x, xp, want_grad):
    """Series region (x <= a + 1): P = x^a e^-x / Gamma(a + 1) * S, S = sum_n c_n,
    c_n = x^n / ((a+1)...(a+n)); T = sum_n c_n H_n, H_n = sum_{k<=n} 1/(a+k), dS/da = -T."""
    S, T = xp.ones_like(x), xp.zeros_like(x)
    idx = xp.arange(x.size)
    ai, xi, ci, Si, Ti, Hi = a, x, xp.ones_like(x), S.copy(), T.copy(), xp.zeros_like(x)
    n = 0
    while idx.size:
        for _ in range(8):
            n += 1
            d = ai + n
            ci = ci * (xi / d)
            Si = Si + ci
            if want_grad:
                Hi = Hi + 1.0 / d
                Ti = Ti + ci * Hi
        done = ci <= _EPS * Si
        if want_grad:
            done &= ci * Hi <= _EPS * xp.maximum(Ti, 1e-300)
        if n >= _MAX_TERMS:  # not reached for finite a < _BIG_A (~9 sqrt(a) terms suffice)
            done[:] = True
        S[idx[done]] = Si[done]
        T[idx[done]] = Ti[done]
        keep = ~done
        idx, ai, xi, ci, Si, Ti, Hi = (v[keep] for v in (idx, ai, xi, ci, Si, Ti, Hi))
    return S, T


def _contfrac(a, x, xp, want_grad):
    """Continued fraction region (x > a + 1): Q = x^a e^-x / Gamma(a) * G with
    G = 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))); returns G and dG/da (forward
    recurrences for numerators and denominators, carried with their a-derivatives)."""
    G, dG = xp.zeros_like(x), xp.zeros_like(x)
    idx = xp.arange(x.size)
    z, o = xp.zeros_like(x), xp.ones_like(x)
    b1 = x + 1.0 - a
    # the state after the first step, n = 1: A_0 = 0, A_1 = 1, B_0 = 1, B_1 = beta_1 = b1,
    # their a-derivatives (only beta_1' = -1 is nonzero), G_1 = 1 / b1 and G_1' = 1 / b1^2
    st = [a, x, z, o, o, b1, z, z, z, -o, o / b1, o / (b1 * b1)]
    n = 1
    while idx.size:
        ai, xi, A2, A1, B2, B1, dA2, dA1, dB2, dB1, g, dg = st
        for _ in range(4):
            n += 1
            k = n - 1
            al = -k * (k - ai)
            be = xi + 2 * n - 1 - ai
            A0 = be * A1 + al * A2
            B0 = be * B1 + al * B2
            if want_grad:
                dA0 = -A1 + be * dA1 + k * A2 + al * dA2
                dB0 = -B1 + be * dB1 + k * B2 + al * dB2
                dA2, dA1, dB2, dB1 = dA1 / B0, dA0 / B0, dB1 / B0, dB0 / B0
            A2, A1, B2, B1 = A1 / B0, A0 / B0, B1 / B0, xp.ones_like(B0)
            g_new = A1
            dg_new = dA1 - g_new * dB1 if want_grad else dg
            conv = xp.abs(g_new - g) <= _EPS * xp.abs(g_new)
            if want_grad:
                conv &= xp.abs(dg_new - dg) <= _EPS * xp.abs(dg_new) + 1e-300
            g, dg = g_new, dg_new
        if n >= _MAX_TERMS:
            conv[:] = True
        G[idx[conv]] = g[conv]
        dG[idx[conv]] = dg[conv]
        keep = ~conv
        idx = idx[keep]
        st = [v[keep] for v in (ai, xi, A2, A1, B2, B1, dA2, dA1, dB2, dB1, g, dg)]
    return G, dG


def _erfc(y):
    """erfc in float64, with relative accuracy in the upper tail."""
    xp = B.namespace(y)
    tail = y >= 3.0
    out = 1.0 - _erf_array(xp.where(tail, 0.0, y))
    if bool(tail.any()):
        out = xp.where(tail, _erfc_tail(xp.maximum(y, 3.0)), out)
    return out


def _temme_P(a, x, xp):
    """P(a, x) and Q = 1 - P for large a by Temme's expansion (DLMF 8.12): with t = x/a - 1,
    d = t - log(1 + t), eta = sign(t) sqrt(2 d):
    P = erfc(-eta sqrt(a/2)) / 2 - exp(-a d) / sqrt(2 pi a) (c0(eta) + c1(eta) / a)."""
    t = (x - a) / a
    ts = xp.where(xp.abs(t) < 0.1, t, 0.0)
    series = xp.zeros_like(t)  # t - log1p(t) = sum_k>=2 (-1)^k t^k / k, no cancellation
    for k in range(30, 1, -1):
        series = (series + (-1.0) ** k / k) * ts
    d = xp.where(xp.abs(t) < 0.1, series * ts, t - xp.log1p(t))
    eta = xp.sign(t) * xp.sqrt(2.0 * xp.maximum(d, 0.0))
    small = xp.abs(eta) < 1e-3
    e = xp.where(small, 1.0, eta)
    tt = xp.where(small, 1.0, t)
    c0 = xp.where(small, -1 / 3 + eta / 12 - 2 * eta ** 2 / 135 + eta ** 3 / 864,
                  1.0 / tt - 1.0 / e)
    c1 = xp.where(small, -1 / 540 - eta / 288 + eta ** 2 / 378,
                  1.0 / e ** 3 - 1.0 / tt ** 3 - 1.0 / tt ** 2 - 1.0 / (12.0 * tt))
    R = xp.exp(-a * d) / xp.sqrt(2 * math.pi * a) * (c0 + c1 / a)
    z = eta * xp.sqrt(a / 2.0)
    return 0.5 * _erfc(-z) - R, 0.5 * _erfc(z) + R, d, t


def _temme(a, x, xp, want_grad):
    """(P, dx/da at fixed P) for large a: dP/da by a central difference of the expansion
    (smooth on the scale sqrt(a)), the pdf from log f = -a d - log(1 + t) - log(2 pi a)/2 -
    (Stirling remainder of lgamma(a))."""
    P, Q, d, t = _temme_P(a, x, xp)
    if not want_grad:
        return P, None
    h = 1e-4 * xp.sqrt(a)
    Pp, Qp, _, _ = _temme_P(a + h, x, xp)
    Pm, Qm, _, _ = _temme_P(a - h, x, xp)
    # difference the smaller of P and Q (the other is ~1 and has lost the digits)
    dP = xp.where(P < 0.5, Pp - Pm, Qm - Qp) / (2.0 * h)
    stirling = 1.0 / (12.0 * a) - 1.0 / (360.0 * a ** 3) + 1.0 / (1260.0 * a ** 5)
    logpdf = -a * d - xp.log1p(t) - 0.5 * xp.log(2 * math.pi * a) - stirling
    return P, -dP / xp.exp(logpdf)


def _gamma_parts(a, x, want_grad):
    """(P(a, x), dx/da at fixed P) for float64 arrays of one shape, a > 0, x >= 0."""
    xp = B.namespace(x)
    P = xp.zeros_like(x)
    dx = xp.zeros_like(x)
    pos = (x > 0) & xp.isfinite(x) & (a > 0) & xp.isfinite(a)
    big = pos & (a >= _BIG_A)
    ser = pos & ~big & (x <= a + 1.0)
    cf = pos & ~big & ~ser
    if bool(big.any()):
        Pb, dxb = _temme(a[big], x[big], xp, want_grad)
        P[big] = Pb
        if want_grad:
            dx[big] = dxb
    if bool(ser.any()):
        aa, xx = a[ser], x[ser]
        S, T = _series(aa, xx, xp, want_grad)
        lx = xp.log(xx)
        P[ser] = xp.exp(aa * lx - xx - lgamma_array(aa + 1.0)) * S
        if want_grad:
            dx[ser] = -(xx / aa) * (S * (lx - digamma_array(aa + 1.0)) - T)
    if bool(cf.any()):
        aa, xx = a[cf], x[cf]
        G, dG = _contfrac(aa, xx, xp, want_grad)
        lx = xp.log(xx)
        P[cf] = 1.0 - xp.exp(aa * lx - xx - lgamma_array(aa)) * G
        if want_grad:
            dx[cf] = xx * (G * (lx - digamma_array(aa)) + dG)
    P = xp.where(xp.isinf(x) & (x > 0), 1.0, P)
    bad = xp.isnan(a) | xp.isnan(x) | (a <= 0) | (x < 0)
    return xp.where(bad, math.nan, P), xp.where(bad, math.nan, dx)


def gammainc_array(a, x):
    """Regularised lower incomplete gamma P(a, x) (float64), broadcast; nan where a <= 0 or
    x < 0."""
    xp = B.namespace(x)
    a, x = xp.broadcast_arrays(_f64(a), _f64(x))
    P, _ = _gamma_parts(xp.ascontiguousarray(a), xp.ascontiguousarray(x), False)
    return P


def standard_gamma_grad_array(x, alpha):
    """d x / d alpha of a Gamma(alpha, 1) sample x, holding its CDF level fixed (implicit
    reparameterisation): -(dP/dalpha) / pdf(x). float64, broadcast."""
    xp = B.namespace(x)
    a, xx = xp.broadcast_arrays(_f64(alpha), _f64(x))
    _, dx = _gamma_parts(xp.ascontiguousarray(a), xp.ascontiguousarray(xx), True)
    return dx


# --------------------------------------------------------------------------- tensor ops

def _out(arr, like):
    return Tensor._make(arr.astype(like.dtype if like.dtype.kind == "f" else np.float32,
                                   copy=False))


def _float_in(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x.array


class _Gammainc(Function):
    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return _out(gammainc_array(a.array, x.array), x.array if x.dtype.kind == "f" else a.array)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        xp = B.namespace(x.array)
        aa, xx = xp.broadcast_arrays(_f64(a.array), _f64(x.array))
        with np.errstate(divide="ignore", invalid="ignore"):
            pdf = xp.exp((aa - 1.0) * xp.log(xx) - xx - lgamma_array(aa))
        pdf = xp.where(xx > 0, pdf, xp.where(aa == 1.0, 1.0, xp.where(aa < 1.0, math.inf, 0.0)))
        ga = gx = None
        if ctx.needs_input_grad[1]:
            gx = _reduce(g * _out(pdf, g.array), x.shape)
        if ctx.needs_input_grad[0]:
            dP = -pdf * standard_gamma_grad_array(xx, aa)  # dP/da = -pdf * dx/da
            ga = _reduce(g * _out(xp.where(xx > 0, dP, 0.0), g.array), a.shape)
        return ga, gx


def _reduce(t, shape):
    from ..ops._util import sum_to

    return sum_to(t, tuple(shape))


def gammainc(a, x):
    """Regularised lower incomplete gamma P(a, x), differentiable in x (the Gamma pdf) and
    in a (through the implicit derivative of the CDF)."""
    if not isinstance(a, Tensor) or not isinstance(x, Tensor):
        raise TypeError("gammainc: expected Tensors for a and x")
    return _Gammainc.apply(a, x)
