"""Special functions the distributions need and numpy lacks: ``lgamma``, ``digamma``,
``polygamma``, ``erfinv`` and the regularised lower incomplete gamma ``gammainc``, as
differentiable ember ops, plus ``standard_gamma_grad`` (the implicit reparameterisation
gradient of a Gamma(alpha, 1) sample with respect to alpha).

Everything is computed in float64 against the array namespace ``xp`` of the input (numpy or
cupy) and cast back to the input's dtype. Accuracy: ~1e-14 relative for positive arguments
(the distributions' parameters); reflection formulas cover negative non-integers.

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
from ..ops._special import erf as _erf_array

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
# Bernoulli numbers B_2, B_4, ..., B_20 (asymptotic series of digamma and the Hurwitz zeta)
_BERN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
         43867 / 798, -174611 / 330)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_EPS = 1e-15
_MAX_TERMS = 20000  # a safety bound on the incomplete-gamma series and continued fraction


def _f64(x):
    return x.astype(np.float64, copy=False)


def _sinpi(xp, x):
    """sin(pi x) with the argument reduced mod 2 first (exact zeros at the integers)."""
    r = xp.remainder(x, 2.0)
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


# --------------------------------------------------------------------------- arrays

def lgamma_array(x):
    """log|Gamma(x)| on an array (float64 out): Lanczos (g=7) for x >= 0.5, reflection below."""
    xp = B.namespace(x)
    x = _f64(x)
    refl = x < 0.5
    z = xp.where(refl, 1.0 - x, x) - 1.0
    a = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        a = a + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(a)
        if not bool(refl.any()):
            return pos
        s = xp.abs(_sinpi(xp, x))
        neg = math.log(math.pi) - xp.log(s) - pos
    return xp.where(refl, neg, pos)


def digamma_array(x):
    """psi(x) = d/dx log Gamma(x): recurrence up to x >= 10, then the asymptotic series;
    psi(x) = psi(1 - x) - pi / tan(pi x) below 0.5 (-inf at 0, nan at the negative integers)."""
    xp = B.namespace(x)
    x = _f64(x)
    refl = x < 0.5
    y = xp.where(refl, 1.0 - x, x)
    acc = xp.zeros_like(y)
    for _ in range(10):
        small = y < 10.0
        acc = acc - xp.where(small, 1.0 / y, 0.0)
        y = xp.where(small, y + 1.0, y)
    inv2 = 1.0 / (y * y)
    series = xp.zeros_like(y)  # sum_k B_2k / (2k y^2k), by Horner in 1/y^2
    for k in range(len(_BERN), 0, -1):
        series = (series + _BERN[k - 1] / (2 * k)) * inv2
    out = acc + xp.log(y) - 0.5 / y - series
    if not bool(refl.any()):
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        s = _sinpi(xp, x)
        cot = xp.cos(math.pi * xp.remainder(x, 2.0)) / s
        r = out - math.pi * cot
        r = xp.where(x == 0, -math.inf, r)
        r = xp.where((x < 0) & (s == 0), math.nan, r)
    return xp.where(refl, r, out)


def _hurwitz_zeta(s, x, xp):
    """zeta(s, x) = sum_k (x + k)^-s for integer s >= 2 and x > 0 (Euler-Maclaurin)."""
    N = 12.0 + s
    acc = xp.zeros_like(x)
    steps = int(max(0.0, math.ceil(N - float(x.min())))) if x.size else 0
    for _ in range(steps):
        small = x < N
        acc = acc + xp.where(small, x ** -s, 0.0)
        x = xp.where(small, x + 1.0, x)
    out = x ** (1 - s) / (s - 1) + 0.5 * x ** -s
    fac = float(s)  # s (s+1) ... (s+2j-2) / (2j)!
    term_pow = x ** (-s - 1)
    inv2 = 1.0 / (x * x)
    for j, b in enumerate(_BERN, 1):
        out = out + (b / math.factorial(2 * j) * fac) * term_pow
        fac *= (s + 2 * j - 1) * (s + 2 * j)
        term_pow = term_pow * inv2
    return acc + out


def _cot_derivative_poly(n):
    """Coefficients c_k (ascending) with d^n/dy^n cot(y) = sum_k c_k cot(y)^k."""
    p = [0.0, 1.0]
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))]  # P'(c)
        q = [0.0] * (len(dp) + 2)
        for k, v in enumerate(dp):  # -(1 + c^2) P'(c)
            q[k] -= v
            q[k + 2] -= v
        p = q
    return p


def polygamma_array(n, x):
    """psi^(n)(x) for integer n >= 1: (-1)^(n+1) n! zeta(n + 1, x); reflection below 0.5."""
    if n == 0:
        return digamma_array(x)
    xp = B.namespace(x)
    x = _f64(x)
    refl = x < 0.5
    y = xp.where(refl, 1.0 - x, x)
    sign = 1.0 if n % 2 else -1.0
    out = sign * math.factorial(n) * _hurwitz_zeta(n + 1, y, xp)
    if not bool(refl.any()):
        return out
    # psi^(n)(1 - x) + (-1)^(n+1) psi^(n)(x) = (-1)^n pi d^n/dx^n cot(pi x)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = _sinpi(xp, x)
        c = xp.cos(math.pi * xp.remainder(x, 2.0)) / s
        poly = xp.zeros_like(c)
        for coef in reversed(_cot_derivative_poly(n)):
            poly = poly * c + coef
        rhs = (-1.0) ** n * math.pi ** (n + 1) * poly
        r = (rhs - out) * (-1.0) ** (n + 1)
        r = xp.where(s == 0, math.inf if n % 2 else math.nan, r)
    return xp.where(refl, r, out)


def erfinv_array(y):
    """The inverse of erf on (-1, 1): Giles' single-precision approximation refined by two
    Newton steps on erf in float64; +-inf at +-1, nan outside [-1, 1]."""
    xp = B.namespace(y)
    y = _f64(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -xp.log((1.0 - y) * (1.0 + y))
        wc = w - 2.5
        p = xp.full_like(y, 2.81022636e-08)
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * wc
        wt = xp.sqrt(w) - 3.0
        q = xp.full_like(y, -0.000200214257)
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            q = c + q * wt
        x = xp.where(w < 5.0, p, q) * y
        inner = xp.abs(y) < 1
        xs = xp.where(inner, x, 0.0)
        for _ in range(2):
            pdf = 2.0 / math.sqrt(math.pi) * xp.exp(-xs * xs)
            xs = xp.where(inner, xs - (_erf_array(xs) - y) / pdf, 0.0)
        # the tails: Newton on log erfc(|x|) = log(1 - |y|) (1 - |y| is exact, erf(x) ~ 1 is
        # not, and the approximation above is for single precision only)
        t = xp.abs(y)
        tail = inner & (t > 0.99999)
        if bool(tail.any()):
            lc = xp.log(1.0 - t[tail])
            ax = xp.abs(xs[tail])
            for _ in range(4):
                ec = _erfc_tail(xp.maximum(ax, 3.0))
                pdf = 2.0 / math.sqrt(math.pi) * xp.exp(-ax * ax)
                ax = ax + (xp.log(ec) - lc) * ec / pdf
            xs[tail] = xp.sign(y[tail]) * ax
    out = xp.where(inner, xs, math.nan)
    out = xp.where(y == 1, math.inf, out)
    return xp.where(y == -1, -math.inf, out)


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


class _Lgamma(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _out(lgamma_array(_float_in(x, "lgamma")), x.array)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * digamma(x)


class _Polygamma(Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.order = n
        return _out(polygamma_array(n, _float_in(x, "polygamma")), x.array)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * polygamma(ctx.order + 1, x), None


class _Erfinv(Function):
    @staticmethod
    def forward(ctx, y):
        out = _out(erfinv_array(_float_in(y, "erfinv")), y.array)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x * x).exp() * (math.sqrt(math.pi) / 2)


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


def lgamma(x):
    """log|Gamma(x)|, differentiable (gradient: digamma)."""
    return _Lgamma.apply(x)


def digamma(x):
    """psi(x) = d/dx lgamma(x), differentiable (gradient: polygamma(1, x))."""
    return _Polygamma.apply(x, 0)


def polygamma(n, x):
    """The n-th derivative of digamma (n >= 0), differentiable."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative int, got {n!r}")
    return _Polygamma.apply(x, n)


def erfinv(y):
    """The inverse error function on [-1, 1], differentiable."""
    return _Erfinv.apply(y)


def gammainc(a, x):
    """Regularised lower incomplete gamma P(a, x), differentiable in x (the Gamma pdf) and
    in a (through the implicit derivative of the CDF)."""
    if not isinstance(a, Tensor) or not isinstance(x, Tensor):
        raise TypeError("gammainc: expected Tensors for a and x")
    return _Gammainc.apply(a, x)
