"""Special functions on raw arrays (numpy or cupy, one code path through ``xp``).

numpy has no gamma-family, Bessel or inverse-error functions; these are written here from
their textbook expansions. Every function takes an array, computes in float64 and returns
float64 (the tensor ops in ``special.py`` cast back to the input's dtype). Only elementwise
``xp`` calls and ``xp.where`` are used (no boolean indexing), so cupy runs the same code.

Methods (relative accuracy ~1e-14 unless noted):
- ``lgamma``: Stirling's series for x >= 10 after the recurrence Gamma(x+1) = x Gamma(x);
  reflection Gamma(x) Gamma(1-x) = pi / sin(pi x) for x < 0.
- ``digamma``: the same recurrence and the asymptotic series in Bernoulli numbers; reflection.
- ``zeta`` (Hurwitz, with d/ds), ``polygamma``: Euler-Maclaurin summation.
- ``erfinv``/``ndtri``: Winitzki's closed-form estimate refined by Halley steps on erf (centre)
  or Newton steps on log erfc (tails, where 1 - |y| is kept exactly).
- ``i0``/``i1`` (and the scaled ``i0e``/``i1e``): power series for |x| < 30, Hankel's
  asymptotic series beyond.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _backend as B
from . import _special

# Bernoulli numbers B_2, B_4, ..., B_24
_BERN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
         43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
_SQRT_PI = math.sqrt(math.pi)
_SQRT2 = math.sqrt(2.0)


def f64(x):
    """``x`` as a float64 array of its own namespace."""
    xp = B.namespace(x)
    return xp.asarray(x).astype(np.float64, copy=False)


def _sinpi(xp, x):
    """sin(pi x), exactly 0 at the integers; the argument is reduced to [-1, 1] exactly
    first, so tiny arguments keep their precision."""
    r = x - 2.0 * xp.round(0.5 * x)
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


def _cospi(xp, x):
    r = xp.abs(x - 2.0 * xp.round(0.5 * x))
    return xp.where(r == 0.5, 0.0, xp.cos(math.pi * r))


def _shift_up(xp, y, limit, fn):
    """Apply ``acc = fn(acc, y)`` and ``y += 1`` wherever ``y < limit`` until none is left;
    returns (acc, shifted y). Elements already past ``limit`` are untouched."""
    acc = xp.zeros_like(y)
    finite = xp.isfinite(y)
    lo = float(xp.min(xp.where(finite, y, limit))) if y.size else limit
    for _ in range(max(0, int(math.ceil(limit - lo)))):
        small = y < limit
        acc = xp.where(small, fn(acc, y), acc)
        y = xp.where(small, y + 1.0, y)
    return acc, y


# --------------------------------------------------------------------------- gamma family

def lgamma(x):
    """log|Gamma(x)|; +inf at 0 and the negative integers."""
    x = f64(x)
    xp = B.namespace(x)
    refl = x < 0.0
    y = xp.where(refl, 1.0 - x, x)
    y = xp.where(y == 0.0, 1.0, y)  # keep the recurrence away from 0 (patched below)
    with np.errstate(divide="ignore", invalid="ignore"):
        logprod, y = _shift_up(xp, y, 10.0, lambda acc, v: acc + xp.log(v))
        inv = 1.0 / y
        inv2 = inv * inv
        series = xp.zeros_like(y)  # sum_k B_2k / (2k (2k-1) y^(2k-1))
        for k in range(len(_BERN), 0, -1):
            series = series * inv2 + _BERN[k - 1] / (2 * k * (2 * k - 1))
        pos = (y - 0.5) * xp.log(y) - y + _HALF_LOG_2PI + series * inv - logprod
        out = pos
        if bool(refl.any()):
            s = xp.abs(_sinpi(xp, x))
            out = xp.where(refl, _LOG_PI - xp.log(s) - pos, pos)
    out = xp.where(x == 0.0, math.inf, out)
    return xp.where(xp.isinf(x), math.inf, out)


def digamma(x):
    """psi(x) = d/dx log Gamma(x); -inf at 0 (as torch), nan at the negative integers."""
    x = f64(x)
    xp = B.namespace(x)
    refl = x < 0.5
    y = xp.where(refl, 1.0 - x, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc, y = _shift_up(xp, y, 10.0, lambda a, v: a - 1.0 / v)
        inv2 = 1.0 / (y * y)
        series = xp.zeros_like(y)  # sum_k B_2k / (2k y^2k)
        for k in range(len(_BERN), 0, -1):
            series = (series + _BERN[k - 1] / (2 * k)) * inv2
        out = acc + xp.log(y) - 0.5 / y - series
        if bool(refl.any()):
            cot = _cospi(xp, x) / _sinpi(xp, x)
            r = out - math.pi * cot
            r = xp.where((x < 0) & (x == xp.floor(x)), math.nan, r)
            out = xp.where(refl, r, out)
    out = xp.where(x == 0.0, xp.copysign(math.inf, -x), out)  # +0 -> -inf, -0 -> inf (torch)
    out = xp.where(x == math.inf, math.inf, out)
    return xp.where(x == -math.inf, math.nan, out)


def zeta(s, q, want_ds=False):
    """Hurwitz zeta sum_{k>=0} (q + k)^-s for s > 1 (inf at s = 1, nan below); for q <= 0 it
    is inf at the integers and defined by the same sum for integer s. With ``want_ds`` also
    returns d/ds (nan where q + k < 0 for some k). Euler-Maclaurin summation: the terms are
    added directly until q + k >= N, then the tail integral with Bernoulli corrections."""
    s, q = f64(s), f64(q)
    xp = B.namespace(s)
    s, q = xp.broadcast_arrays(s, q)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        N = 12.0 + xp.clip(s, 0.0, 40.0)
        a = q
        acc = xp.zeros_like(a)
        dacc = xp.zeros_like(a)
        lo = float(xp.min(xp.where(xp.isfinite(a), a - N, 0.0))) if a.size else 0.0
        for _ in range(max(0, int(math.ceil(-lo)))):
            small = a < N
            p = a ** -s
            acc = xp.where(small, acc + p, acc)
            if want_ds:
                dacc = xp.where(small, dacc - xp.log(a) * p, dacc)
            a = xp.where(small, a + 1.0, a)
        la = xp.log(a)
        ams = a ** -s
        tail = a * ams / (s - 1.0) + 0.5 * ams
        if want_ds:
            dtail = -a * ams * (la / (s - 1.0) + 1.0 / (s - 1.0) ** 2) - 0.5 * la * ams
        P, dP = s, xp.ones_like(s)  # s (s+1) ... (s + 2j - 2) and its derivative
        term = ams / a  # a^(-s - 2j + 1)
        inv2 = 1.0 / (a * a)
        for j, b in enumerate(_BERN, 1):
            c = b / math.factorial(2 * j)
            tail = tail + c * P * term
            if want_ds:
                dtail = dtail + c * term * (dP - P * la)
            dP = dP * (s + 2 * j - 1) * (s + 2 * j) + P * (2 * s + 4 * j - 1)
            P = P * (s + 2 * j - 1) * (s + 2 * j)
            term = term * inv2
        out = acc + tail
        out = xp.where(s == 1.0, math.inf, xp.where(s < 1.0, math.nan, out))
        qint = q == xp.floor(q)
        bad_q = q <= 0
        out = xp.where(bad_q & qint, math.inf, xp.where(bad_q & (s != xp.floor(s)), math.nan, out))
        if not want_ds:
            return out
        d = dacc + dtail
        d = xp.where(s <= 1.0, math.nan, xp.where(bad_q, math.nan, d))
    return out, d


def polygamma(n, x):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    if n == 0:
        return digamma(x)
    x = f64(x)
    xp = B.namespace(x)
    z = zeta(xp.full_like(x, float(n + 1)), x)
    fac = math.factorial(n) * (1.0 if n % 2 else -1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        return fac * z


def mvlgamma(x, p):
    """log of the multivariate gamma function of dimension ``p``."""
    x = f64(x)
    out = p * (p - 1) / 4.0 * _LOG_PI
    for i in range(p):
        out = out + lgamma(x - i / 2.0)
    return out


# --------------------------------------------------------------------------- error functions

def erf(x):
    return f64(_special.erf(f64(x)))


def _log_erfc_tail(z):
    """log erfc(z) for z >= 3 by its continued fraction (no underflow)."""
    xp = B.namespace(z)
    f = z.copy()
    for k in range(60, 0, -1):
        f = z + (k / 2.0) / f
    return -z * z - math.log(_SQRT_PI) - xp.log(f)


def _split(cond, x, f_true, f_false):
    """``f_true`` on the elements of ``x`` where ``cond`` holds, ``f_false`` on the others
    (each function sees only its own elements: no work on the rest)."""
    xp = B.namespace(x)
    out = xp.empty_like(x)
    if bool(cond.any()):
        out[cond] = f_true(x[cond])
    rest = ~cond
    if bool(rest.any()):
        out[rest] = f_false(x[rest])
    return out


def erfc(x):
    """erfc with relative accuracy in the upper tail (1 - erf below 3, where erfc > 2e-5)."""
    x = f64(x)
    xp = B.namespace(x)
    return _split(x >= 3.0, x, lambda v: xp.exp(_log_erfc_tail(v)), lambda v: 1.0 - erf(v))


def log_erfc(x):
    x = f64(x)
    xp = B.namespace(x)
    with np.errstate(divide="ignore"):
        return _split(x >= 3.0, x, _log_erfc_tail, lambda v: xp.log(1.0 - erf(v)))


def _winitzki(L):
    """Closed-form estimate of |erfinv(y)| from L = log(1 - y^2) (relative error < 2e-3)."""
    xp = B.namespace(L)
    a = 0.147
    t = 2.0 / (math.pi * a) + 0.5 * L
    return xp.sqrt(xp.maximum(xp.sqrt(t * t - L / a) - t, 0.0))


def _erfcinv(c):
    """z >= 0 with erfc(z) = c, for c in (0, 1]; Newton on log erfc (quadratic convergence)."""
    xp = B.namespace(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = _winitzki(xp.log(c * (2.0 - c)))
        lc = xp.log(c)
        for _ in range(4):
            le = log_erfc(z)
            # d/dz log erfc(z) = -2/sqrt(pi) exp(-z^2) / erfc(z)
            z = z + (le - lc) * _SQRT_PI / 2.0 * xp.exp(z * z + le)
    return z


def _erfinv_centre(t):
    """erfinv on [-0.5, 0.5]: Halley steps on erf from Winitzki's estimate (cubic)."""
    xp = B.namespace(t)
    x = _winitzki(xp.log1p(-t * t)) * xp.sign(t)
    for _ in range(2):  # f = erf(x) - t, f''/f' = -2x
        f = erf(x) - t
        fp = 2.0 / _SQRT_PI * xp.exp(-x * x)
        x = x - f / (fp + x * f)
    return x


def erfinv(y):
    """Inverse of erf on [-1, 1]: +-inf at +-1, nan outside."""
    y = f64(y)
    xp = B.namespace(y)
    t = xp.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _split(t <= 0.5, y, _erfinv_centre,
                     lambda v: _erfcinv(xp.clip(1.0 - xp.abs(v), 1e-300, 0.5)) * xp.sign(v))
        out = xp.where(t == 1.0, xp.sign(y) * math.inf, out)
    return xp.where((t > 1.0) | xp.isnan(y), math.nan, out)


def ndtr(x):
    """The standard normal CDF."""
    x = f64(x)
    return 0.5 * erfc(-x / _SQRT2)


def log_ndtr(x):
    """log of the standard normal CDF, accurate in both tails."""
    x = f64(x)
    xp = B.namespace(x)
    z = -x / _SQRT2
    upper = z < -3.0  # x > 4.24: log(1 - ndtr(-x)) without cancellation
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = math.log(0.5) + log_erfc(xp.where(upper, 0.0, z))
        hi = xp.log1p(-0.5 * xp.exp(_log_erfc_tail(xp.maximum(-z, 3.0))))
    return xp.where(upper, hi, lo)


def ndtri(p):
    """Inverse of the standard normal CDF on [0, 1]: -inf at 0, inf at 1, nan outside."""
    p = f64(p)
    xp = B.namespace(p)
    c = xp.minimum(p, 1.0 - p) * 2.0  # erfc(|x| / sqrt2) = 2 min(p, 1 - p), exact
    with np.errstate(divide="ignore", invalid="ignore"):
        cs = xp.clip(xp.where(xp.isnan(c), 1.0, c), 1e-300, 1.0)
        z = _split(cs > 0.5, cs, lambda v: _erfinv_centre(1.0 - v),
                   lambda v: _erfcinv(v))
        out = xp.where(p <= 0.5, -z, z) * _SQRT2
        out = xp.where(p == 0.0, -math.inf, xp.where(p == 1.0, math.inf, out))
    return xp.where((p < 0) | (p > 1) | xp.isnan(p), math.nan, out)


# --------------------------------------------------------------------------- Bessel I0, I1

_BESSEL_SWITCH = 30.0


def _bessel_series(ax, nu):
    """I_nu(ax) for nu in {0, 1} by its power series (ax < 30: 80 terms reach 1e-17)."""
    xp = B.namespace(ax)
    h = 0.25 * ax * ax
    term = xp.ones_like(ax) if nu == 0 else 0.5 * ax
    total = term
    for k in range(1, 80):
        term = term * h / (k * (k + nu))
        total = total + term
    return total


def _bessel_asym_scaled(ax, nu):
    """exp(-ax) I_nu(ax) for ax >= 30 by Hankel's asymptotic series."""
    xp = B.namespace(ax)
    mu = 4.0 * nu * nu
    c = xp.ones_like(ax)
    total = c
    for k in range(1, 40):
        c = c * -(mu - (2 * k - 1) ** 2) / (8.0 * k * ax)
        total = total + c
    return total / xp.sqrt(2.0 * math.pi * ax)


def _bessel(x, nu, scaled):
    x = f64(x)
    xp = B.namespace(x)
    ax = xp.abs(x)
    big = ax >= _BESSEL_SWITCH
    with np.errstate(over="ignore", invalid="ignore"):
        small_v = _bessel_series(xp.where(big, 0.0, ax), nu)
        big_v = _bessel_asym_scaled(xp.where(big, ax, _BESSEL_SWITCH), nu)
        if scaled:
            out = xp.where(big, big_v, small_v * xp.exp(-ax))
        else:
            out = xp.where(big, big_v * xp.exp(ax), small_v)
    out = xp.where(xp.isnan(x), math.nan, out)
    if xp.isinf(x).any():
        out = xp.where(xp.isinf(x), 0.0 if scaled else math.inf, out)
    if nu == 1:
        out = out * xp.sign(x)
    return out


def i0(x):
    return _bessel(x, 0, False)


def i0e(x):
    return _bessel(x, 0, True)


def i1(x):
    return _bessel(x, 1, False)


def i1e(x):
    return _bessel(x, 1, True)
