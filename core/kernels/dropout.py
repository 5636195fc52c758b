"""Dropout in one pass: ``(out, mask) = dropout_apply(x, u, p, scale)`` and its backward.

``u`` holds uniform draws in [0, 1) of ``x``'s shape (from ember's generator, so
``ember.manual_seed`` still makes a run repeatable and the draws are the ones the ufunc
version used); an element is kept when ``u >= p``. The kernel writes ``out = x * m`` with
``m`` in {0, scale} and the keep-mask as ``uint8`` (1 byte per element, a quarter of the
float mask the ufunc version saved for backward), reading ``x`` and ``u`` once.
``dropout_backward(g, mask, scale)`` is ``g * mask * scale`` in one pass.

The results are bit-identical to ``x * ((u >= p).astype(dtype) * scale)``.

    >>> import numpy as np
    >>> x = np.ones(4, np.float32); u = np.array([0.1, 0.7, 0.5, 0.2], np.float32)
    >>> out, mask = dropout_apply(x, u, 0.5, 2.0)
    >>> out.tolist(), mask.tolist()
    ([0.0, 2.0, 2.0, 0.0], [0, 1, 1, 0])
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import FLOATS, contiguous, split

__all__ = ["dropout_apply", "dropout_backward"]
BLOCK = 1 << 16  # elements per unit of threaded work


def _check(x, other, what, name):
    if other.shape != x.shape:
        raise ValueError(f"{what}: {name} must have the input's shape {x.shape}, got "
                         f"{other.shape}")


# ----------------------------------------------------------------------------- reference

def dropout_apply_reference(x, u, p, scale):
    """``(x * keep * scale, keep as uint8)`` with ``keep = u >= p``."""
    _check(x, u, "dropout_apply", "u")
    keep = u >= p
    m = keep.astype(x.dtype)
    m *= x.dtype.type(scale)
    return x * m, keep.view(np.uint8)


def dropout_backward_reference(g, mask, scale):
    """``g * mask * scale``."""
    _check(g, mask, "dropout_backward", "mask")
    m = mask.astype(g.dtype)
    m *= g.dtype.type(scale)
    return g * m


# ----------------------------------------------------------------------------- compiled

@jit
def _apply(x, u, p, scale, out, mask, lo, hi):
    zero = x.dtype.type(0)
    n = x.shape[0]
    for blk in range(lo, hi):
        a = blk * 65536
        b = min(a + 65536, n)
        xs, us, os, ms = x[a:b], u[a:b], out[a:b], mask[a:b]
        for k in range(b - a):
            keep = us[k] >= p
            ms[k] = np.uint8(keep)
            os[k] = xs[k] * (scale if keep else zero)


@jit
def _backward(g, mask, scale, out, lo, hi):
    zero = g.dtype.type(0)
    n = g.shape[0]
    for blk in range(lo, hi):
        a = blk * 65536
        b = min(a + 65536, n)
        gs, ms, os = g[a:b], mask[a:b], out[a:b]
        for k in range(b - a):
            os[k] = gs[k] * (scale if ms[k] != 0 else zero)


def _blocks(n):
    return -(-n // BLOCK)


def dropout_apply(x, u, p, scale):
    """``dropout_apply_reference``, compiled: one pass."""
    _check(x, u, "dropout_apply", "u")
    if x.dtype not in FLOATS or type(x) is not np.ndarray or type(u) is not np.ndarray:
        return dropout_apply_reference(x, u, p, scale)
    xf, uf = contiguous(x).reshape(-1), contiguous(u).reshape(-1)
    out = np.empty(x.shape, x.dtype)
    mask = np.empty(x.shape, np.uint8)
    of, mf = out.reshape(-1), mask.reshape(-1)
    pu, s = u.dtype.type(p), x.dtype.type(scale)
    split(lambda lo, hi: _apply(xf, uf, pu, s, of, mf, lo, hi), _blocks(xf.size), 3 * xf.size)
    return out, mask


def dropout_backward(g, mask, scale):
    """``dropout_backward_reference``, compiled: one pass."""
    _check(g, mask, "dropout_backward", "mask")
    if g.dtype not in FLOATS or type(g) is not np.ndarray or type(mask) is not np.ndarray:
        return dropout_backward_reference(g, mask, scale)
    gf, mf = contiguous(g).reshape(-1), contiguous(mask).reshape(-1)
    out = np.empty(g.shape, g.dtype)
    of = out.reshape(-1)
    s = g.dtype.type(scale)
    split(lambda lo, hi: _backward(gf, mf, s, of, lo, hi), _blocks(gf.size), 2 * gf.size)
    return out


register("dropout_apply", reference=dropout_apply_reference, cpu=dropout_apply)
register("dropout_backward", reference=dropout_backward_reference, cpu=dropout_backward)
