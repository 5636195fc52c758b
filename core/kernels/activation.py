"""Elementwise activations with their derivative, in one pass: ``(y, dy) = act(x)``.

``activation(x, kind, need, out=None)`` returns ``y = f(x)`` and, with ``need``, the
derivative ``dy = f'(x)`` (the backward is ``g * dy``); ``out`` may be ``x`` (in place,
then ``dy`` is computed from the input before it is overwritten). ``kind`` is one of
``KINDS``: relu, relu6, hardswish, hardsigmoid (PyTorch's gradients at the kinks), silu,
gelu (exact, ``x * Phi(x)``) and gelu_tanh (PyTorch's ``approximate="tanh"``).

The numpy reference makes several passes per op (``exp``, add, divide, multiply, ...).
The compiled kernel makes one, in blocks of ``BLOCK`` elements spread over ember's threads.
For float32, ``exp`` and ``erf`` are computed with vectorisable float32 approximations
(Cody-Waite range reduction and a degree-6 polynomial for ``exp``, with the power of two
built in an int32 scratch block; a rational minimax fit for ``erf`` on [-4, 4], Eigen's
``generic_fast_erf_float``): both within 2 ulp-ish of libm, well inside torch's own
tolerance for these ops. float64 calls libm.

    >>> import numpy as np
    >>> y, dy = activation(np.array([-1.0, 0.5, 4.0], np.float32), "relu6", True)
    >>> y.tolist(), dy.tolist()
    ([0.0, 0.5, 4.0], [0.0, 1.0, 1.0])
"""
from __future__ import annotations

import math

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import FLOATS, split

__all__ = ["KINDS", "activation"]

KINDS = ("relu", "relu6", "hardswish", "hardsigmoid", "silu", "gelu", "gelu_tanh")
BLOCK = 4096  # elements per unit of threaded work (and per scratch block)


def _code(kind):
    try:
        return KINDS.index(kind)
    except ValueError:
        raise ValueError(f"activation: kind must be one of {KINDS}, got {kind!r}") from None


# ----------------------------------------------------------------------------- reference

def _erf(x):
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:  # pragma: no cover - scipy is a test dependency here
        return np.vectorize(math.erf, otypes=[x.dtype])(x)


def activation_reference(x, kind, need=False, out=None):
    """``(f(x), f'(x) or None)`` with numpy ufuncs, in x's dtype."""
    code = _code(kind)
    f = x.dtype.type
    dy = None
    if code == 0:
        y = np.maximum(x, f(0))
        dy = (x > 0).astype(x.dtype) if need else None
    elif code == 1:
        y = np.clip(x, f(0), f(6))
        dy = ((x > 0) & (x < 6)).astype(x.dtype) if need else None
    elif code == 2:
        y = x * np.clip(x + f(3), f(0), f(6)) * f(1 / 6)
        if need:
            dy = np.where(x < -3, f(0), np.where(x >= 3, f(1), x * f(1 / 3) + f(0.5)))
            dy = np.where(x <= -3, f(0), dy).astype(x.dtype)
    elif code == 3:
        y = np.clip(x + f(3), f(0), f(6)) * f(1 / 6)
        dy = (((x > -3) & (x < 3)) * f(1 / 6)).astype(x.dtype) if need else None
    elif code == 4:
        with np.errstate(over="ignore"):
            s = f(1) / (f(1) + np.exp(-x))
        y = x * s
        dy = s * (f(1) + x * (f(1) - s)) if need else None
    elif code == 5:
        cdf = f(0.5) * (f(1) + _erf(x * f(1 / math.sqrt(2))).astype(x.dtype))
        y = x * cdf
        if need:
            dy = cdf + x * np.exp(x * x * f(-0.5)) * f(1 / math.sqrt(2 * math.pi))
    else:
        k = f(math.sqrt(2 / math.pi))
        t = np.tanh(k * (x + f(0.044715) * x * x * x))
        y = f(0.5) * x * (f(1) + t)
        if need:
            dy = f(0.5) * (f(1) + t) + f(0.5) * x * (f(1) - t * t) * k * (
                f(1) + f(3 * 0.044715) * x * x)
    y = y.astype(x.dtype, copy=False)
    if dy is not None:
        dy = dy.astype(x.dtype, copy=False)
    if out is not None:
        out[...] = y
        y = out
    return y, dy


# ----------------------------------------------------------------------------- compiled

@jit(inline="always")
def _exp_block(z, e, ib, fast):
    """``e[k] = exp(z[k])`` for the block. ``fast`` (float32): range reduction
    ``z = n ln2 + r``, a degree-6 polynomial in ``r``, ``2^n`` built as int32 bits in ``ib``
    and read back through a float32 view; every loop vectorises."""
    n = z.shape[0]
    if not fast:
        for k in range(n):
            e[k] = np.exp(z[k])
        return
    f = z.dtype.type
    lo, hi = f(-87.3), f(88.7)
    log2e, ln2hi, ln2lo = f(1.44269504), f(0.693359375), f(-2.12194440e-4)
    half, one = f(0.5), f(1)
    c2, c3, c4, c5, c6 = (f(0.5), f(0.166666672), f(0.0416666418), f(0.00833339803),
                          f(0.00138833502))
    for k in range(n):
        v = min(max(z[k], lo), hi)
        t = np.floor(v * log2e + half)
        r = v - t * ln2hi - t * ln2lo
        p = one + r * (one + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * c6)))))
        e[k] = p
        ib[k] = (np.int32(t) + np.int32(127)) << np.int32(23)
    fb = ib[:n].view(np.float32)
    for k in range(n):
        e[k] = e[k] * fb[k]


@jit(inline="always")
def _erf_fast(x):
    """Rational minimax ``erf`` for float32 on [-4, 4] (clamped: +-1 beyond)."""
    f = type(x)
    x = min(max(x, f(-4.0)), f(4.0))
    x2 = x * x
    p = f(-2.72614225801306e-10)
    p = p * x2 + f(2.77068142495902e-08)
    p = p * x2 + f(-2.10102402082508e-06)
    p = p * x2 + f(-5.69250639462346e-05)
    p = p * x2 + f(-7.34990630326855e-04)
    p = p * x2 + f(-2.95459980854025e-03)
    p = p * x2 + f(-1.60960333262415e-02)
    q = f(-1.45660718464996e-05)
    q = q * x2 + f(-2.13374055278905e-04)
    q = q * x2 + f(-1.68282697438203e-03)
    q = q * x2 + f(-7.37332916720468e-03)
    q = q * x2 + f(-1.42647390514189e-02)
    return x * p / q


@jit
def _act(x, y, dy, code, need, fast, lo, hi):
    """Blocks ``lo..hi`` of ``BLOCK`` elements of flat ``x`` -> ``y`` (and ``dy``)."""
    n_all = x.shape[0]
    f = x.dtype.type
    zero, one, half, three, six = f(0), f(1), f(0.5), f(3), f(6)
    sixth, third = f(1.0 / 6.0), f(1.0 / 3.0)
    e = np.empty(4096, x.dtype)
    z = np.empty(4096, x.dtype)
    ib = np.empty(4096, np.int32)
    tb = np.empty(4096, x.dtype)
    for blk in range(lo, hi):
        a = blk * 4096
        b = min(a + 4096, n_all)
        xs, ys, ds = x[a:b], y[a:b], dy[a:b]
        n = b - a
        ts = tb[:n]  # results go to an L1 scratch block first: with y = x (in place) a
        # direct store would fail LLVM's runtime alias check and run the scalar loop (5x)
        if code == 0:
            if need:
                for k in range(n):
                    ds[k] = one if xs[k] > zero else zero
            for k in range(n):
                ts[k] = max(xs[k], zero)
        elif code == 1:
            if need:
                for k in range(n):
                    v = xs[k]
                    ds[k] = one if (v > zero and v < six) else zero
            for k in range(n):
                ts[k] = min(max(xs[k], zero), six)
        elif code == 2:
            if need:
                for k in range(n):
                    v = xs[k]
                    ds[k] = zero if v <= -three else (one if v >= three else v * third + half)
            for k in range(n):
                v = xs[k]
                ts[k] = v * min(max(v + three, zero), six) * sixth
        elif code == 3:
            if need:
                for k in range(n):
                    v = xs[k]
                    ds[k] = sixth if (v > -three and v < three) else zero
            for k in range(n):
                ts[k] = min(max(xs[k] + three, zero), six) * sixth
        elif code == 4:  # silu: s = 1 / (1 + exp(-x))
            zs, es = z[:n], e[:n]
            for k in range(n):
                zs[k] = -xs[k]
            _exp_block(zs, es, ib, fast)
            if need:
                for k in range(n):
                    v = xs[k]
                    s = one / (one + es[k])
                    ds[k] = s * (one + v * (one - s))
                    ts[k] = v * s
            else:
                for k in range(n):
                    ts[k] = xs[k] / (one + es[k])
        elif code == 5:  # gelu: x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2
            r2 = f(0.7071067811865476)
            cs = z[:n]  # Phi(x); the branch on ``fast`` stays outside the loops
            if fast:
                for k in range(n):
                    cs[k] = half + half * _erf_fast(xs[k] * r2)
            else:
                for k in range(n):
                    cs[k] = half + half * math.erf(xs[k] * r2)
            if need:
                es = e[:n]
                for k in range(n):
                    v = xs[k]
                    es[k] = v * v * -half
                _exp_block(es, es, ib, fast)
                c = f(0.3989422804014327)
                for k in range(n):
                    v = xs[k]
                    ds[k] = cs[k] + v * es[k] * c
            for k in range(n):
                ts[k] = xs[k] * cs[k]
        else:  # gelu_tanh: tanh(u) = 1 - 2 / (exp(2u) + 1)
            kk = f(0.7978845608028654)
            ca = f(0.044715)
            zs, es = z[:n], e[:n]
            for k in range(n):
                v = xs[k]
                zs[k] = f(2) * kk * (v + ca * v * v * v)
            _exp_block(zs, es, ib, fast)
            for k in range(n):
                v = xs[k]
                t = one - f(2) / (es[k] + one)
                if need:
                    ds[k] = half * (one + t) + half * v * (one - t * t) * kk * (
                        one + f(3) * ca * v * v)
                ts[k] = half * v * (one + t)
        for k in range(n):
            ys[k] = ts[k]


def activation(x, kind, need=False, out=None):
    """``(f(x), f'(x) or None)``, compiled: one pass (see the module doc)."""
    code = _code(kind)
    if type(x) is not np.ndarray or x.dtype not in FLOATS or (
            out is not None and (type(out) is not np.ndarray or out.dtype != x.dtype
                                 or out.shape != x.shape or not out.flags.c_contiguous)):
        return activation_reference(x, kind, need, out)
    src = x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)
    # out may be x: each element is read (dy first) before it is written
    y = np.empty(x.shape, x.dtype) if out is None else out
    dy = np.empty(x.shape, x.dtype) if need else np.empty(0, x.dtype)
    yf, df = y.reshape(-1), dy.reshape(-1)
    n = src.shape[0]
    fast = x.dtype == np.float32
    nb = -(-n // BLOCK)
    split(lambda lo, hi: _act(src, yf, df, code, need, fast, lo, hi), nb,
          2 * n)
    return y, (dy if need else None)


register("activation", reference=activation_reference, cpu=activation)
