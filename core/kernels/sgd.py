"""Fused SGD step (momentum, dampening, Nesterov, weight decay, maximize): one pass, in place.

A job is ``(arrays, hyper)`` exactly as ``ember.optim.SGD`` builds them for
``ember._fused.run``: ``arrays = (p, g)`` without momentum, ``(p, g, b)`` with the momentum
buffer ``b``, same shape; ``hyper = (wd, maximize, lr, momentum, damp, nesterov, first)``
with ``damp = 1 - dampening``, PyTorch's algorithm::

    g = -g if maximize;  g += wd * p
    b = g (first step)   or   b = momentum * b + damp * g
    g = g + momentum * b if nesterov else b
    p -= lr * g

The numpy reference is that sequence of in-place ufuncs (3-6 passes); the compiled step
reads and writes each element once, parameters cut into 64K-element blocks spread over
ember's threads.

    >>> import numpy as np
    >>> p, g, b = np.ones(2), np.ones(2), np.zeros(2)
    >>> sgd_step([((p, g, b), (0.0, False, 0.5, 0.9, 1.0, False, True))])
    >>> p.tolist(), b.tolist()
    ([0.5, 0.5], [1.0, 1.0])
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import real_views as _real, run_step_jobs

__all__ = ["sgd_step"]


# ----------------------------------------------------------------------------- reference

def _reference_one(arrays, hyper):
    wd, maximize, lr, momentum, damp, nesterov, first = hyper
    p, g = arrays[0], arrays[1]
    if maximize:
        g = -g
    if wd:
        g = g + wd * p
    if len(arrays) == 3:
        b = arrays[2]
        if first:
            np.copyto(b, g)
        else:
            np.multiply(b, momentum, out=b)
            b += g * damp if damp != 1.0 else g
        g = g + momentum * b if nesterov else b
    p -= lr * g


def sgd_step_reference(jobs):
    """Apply each job's SGD update in place (a ufunc pass per operation)."""
    for arrays, hyper in jobs:
        _reference_one(_real(arrays), hyper)


# ----------------------------------------------------------------------------- compiled

@jit
def _sgd(p, g, wd, sign, lr, lo, hi):
    ps, gs = p[lo:hi], g[lo:hi]
    for i in range(hi - lo):
        pi = ps[i]
        gi = gs[i] * sign
        if wd != 0:
            gi = gi + wd * pi
        ps[i] = pi - lr * gi


@jit
def _sgd_mom(p, g, b, wd, sign, lr, mom, damp, nesterov, first, lo, hi):
    """With a momentum buffer; the options stay outside the loops where they change the
    loop's shape (first step, Nesterov), so each loop vectorises."""
    ps, gs, bs = p[lo:hi], g[lo:hi], b[lo:hi]
    n = hi - lo
    if first:
        if nesterov:
            for i in range(n):
                pi = ps[i]
                gi = gs[i] * sign
                if wd != 0:
                    gi = gi + wd * pi
                bs[i] = gi
                ps[i] = pi - lr * (gi + mom * gi)
        else:
            for i in range(n):
                pi = ps[i]
                gi = gs[i] * sign
                if wd != 0:
                    gi = gi + wd * pi
                bs[i] = gi
                ps[i] = pi - lr * gi
    elif nesterov:
        for i in range(n):
            pi = ps[i]
            gi = gs[i] * sign
            if wd != 0:
                gi = gi + wd * pi
            bi = bs[i] * mom + damp * gi
            bs[i] = bi
            ps[i] = pi - lr * (gi + mom * bi)
    else:
        for i in range(n):
            pi = ps[i]
            gi = gs[i] * sign
            if wd != 0:
                gi = gi + wd * pi
            bi = bs[i] * mom + damp * gi
            bs[i] = bi
            ps[i] = pi - lr * bi


def _sgd_args(flat, hyper):
    dt = flat[0].dtype.type
    wd, maximize, lr, momentum, damp, nesterov, first = hyper
    sign = dt(-1.0 if maximize else 1.0)
    if len(flat) == 3:
        fn = _sgd_mom
        args = flat + (dt(wd), sign, dt(lr), dt(momentum), dt(damp), bool(nesterov),
                       bool(first))
    else:
        fn = _sgd
        args = flat + (dt(wd), sign, dt(lr))
    return fn, args


def sgd_step(jobs):
    """Apply each job's update in place, compiled: one pass per parameter (see the module
    doc). Complex parameters run as real views; jobs the kernel does not take (float16,
    non-contiguous) run the reference."""
    run_step_jobs(jobs, _reference_one, _sgd_args)


register("sgd_step", reference=sgd_step_reference, cpu=sgd_step)
