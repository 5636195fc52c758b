"""Fused Adam / AdamW step: one pass over parameter, gradient and state, in place.

A job is ``(arrays, hyper)`` exactly as ``ember.optim.Adam`` builds them for
``ember._fused.run``: ``arrays = (p, g, m, v)`` (``+ (v_max,)`` with amsgrad), same shape,
and ``hyper = (decay, wd, maximize, w1, b2, c2, eps_s, k)``::

    p *= decay                       # AdamW's decoupled decay (1 - lr * wd), else 1
    g = -g if maximize;  g += wd * p # L2 weight decay (Adam), else wd = 0
    m = lerp(m, g, w1)               # w1 = 1 - beta1, torch's lerp formula
    v = b2 * v + c2 * g * g          # c2 = 1 - beta2
    v_max = max(v_max, v)            # amsgrad: the denominator uses v_max
    p += k * m / (sqrt(v) + eps_s)   # k = -lr * sqrt(1 - beta2^t) / (1 - beta1^t),
                                     # eps_s = eps * sqrt(1 - beta2^t)

The numpy reference is that sequence of in-place ufuncs (about a dozen passes, chunked in
cache by ember's optimizer engine); the compiled step reads and writes each element once.
Parameters are cut into 64K-element blocks spread over ember's threads.

    >>> import numpy as np
    >>> p = np.ones(3, np.float32); g = np.ones(3, np.float32)
    >>> m, v = np.zeros(3, np.float32), np.zeros(3, np.float32)
    >>> lr, b1, b2, t = 0.1, 0.9, 0.999, 1  # step t: bias corrections folded into k, eps_s
    >>> k, eps_s = -lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t), 1e-8 * (1 - b2 ** t) ** 0.5
    >>> adam_step([((p, g, m, v), (1.0, 0.0, False, 1 - b1, b2, 1 - b2, eps_s, k))])
    >>> [round(float(x), 4) for x in p]
    [0.9, 0.9, 0.9]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import FLOATS, real_views as _real, run_step_jobs

__all__ = ["adam_step"]

# ----------------------------------------------------------------------------- reference

def _reference_one(arrays, hyper):
    decay, wd, maximize, w1, b2, c2, eps_s, k = hyper
    p, g, m, v = arrays[:4]
    if decay != 1.0:
        np.multiply(p, decay, out=p)
    if maximize:
        g = -g
    if wd:
        g = g + wd * p
    if w1 < 0.5:
        m += w1 * (g - m)
    else:
        m[...] = g - (g - m) * (1.0 - w1)
    np.multiply(v, b2, out=v)
    v += (g * c2) * g
    if len(arrays) == 5:
        np.maximum(arrays[4], v, out=arrays[4])
        v = arrays[4]
    p += (m / (np.sqrt(v) + eps_s)) * k


def adam_step_reference(jobs):
    """Apply each job's Adam/AdamW update in place (a ufunc pass per operation)."""
    for arrays, hyper in jobs:
        _reference_one(_real(arrays), hyper)


# ----------------------------------------------------------------------------- compiled

@jit
def _adam(p, g, m, v, decay, wd, sign, w1, lerp_lo, b2, c2, eps_s, k, lo, hi):
    """Elements ``lo..hi`` of flat arrays. Loops run over slices from 0 (an index from a
    signed ``lo`` keeps numba's negative-index check, which stops vectorisation), and the
    options are arithmetic rather than branches where that is exact (``decay`` and the
    maximize ``sign`` multiply by 1 when off)."""
    one = p.dtype.type(1)
    w1c = one - w1
    ps, gs, ms, vs = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]
    for i in range(hi - lo):
        pi = ps[i] * decay
        gi = gs[i] * sign
        if wd != 0:
            gi = gi + wd * pi
        mi = ms[i]
        mi = mi + w1 * (gi - mi) if lerp_lo else gi - (gi - mi) * w1c
        vi = vs[i] * b2 + (gi * c2) * gi
        ms[i] = mi
        vs[i] = vi
        ps[i] = pi + (mi / (np.sqrt(vi) + eps_s)) * k


@jit
def _adam_ams(p, g, m, v, vmax, decay, wd, sign, w1, lerp_lo, b2, c2, eps_s, k, lo, hi):
    """``_adam`` with amsgrad: the denominator uses the running maximum ``vmax``."""
    one = p.dtype.type(1)
    w1c = one - w1
    ps, gs, ms, vs, xs = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], vmax[lo:hi]
    for i in range(hi - lo):
        pi = ps[i] * decay
        gi = gs[i] * sign
        if wd != 0:
            gi = gi + wd * pi
        mi = ms[i]
        mi = mi + w1 * (gi - mi) if lerp_lo else gi - (gi - mi) * w1c
        vi = vs[i] * b2 + (gi * c2) * gi
        ms[i] = mi
        vs[i] = vi
        vm = max(xs[i], vi)
        xs[i] = vm
        ps[i] = pi + (mi / (np.sqrt(vm) + eps_s)) * k


def _adam_args(flat, hyper):
    dt = flat[0].dtype.type
    decay, wd, maximize, w1, b2, c2, eps_s, k = hyper
    fn = _adam_ams if len(flat) == 5 else _adam
    return fn, flat + (dt(decay), dt(wd), dt(-1.0 if maximize else 1.0), dt(w1), w1 < 0.5,
                       dt(b2), dt(c2), dt(eps_s), dt(k))


def adam_step(jobs):
    """Apply each job's update in place, compiled: one pass per parameter (see the module
    doc). Complex parameters run as real views; jobs the kernel does not take (float16,
    non-contiguous) run the reference."""
    run_step_jobs(jobs, _reference_one, _adam_args)


# ----------------------------------------------------------------------------- CUDA

_CUDA_BODY = """
    T pi = p * decay;
    T gi = g * sign;
    if (wd != (T)0) gi = gi + wd * pi;
    T mi = lerp_lo ? m + w1 * (gi - m) : gi - (gi - m) * ((T)1 - w1);
    T vi = v * b2 + (gi * c2) * gi;
    m = mi;
    v = vi;
    %s
    p = pi + (mi / (sqrt(vi) + eps_s)) * k;
"""
_cuda_kernels = {}


def _cuda_kernel(ams):
    """cupy ElementwiseKernels (created on first use): the same update, one thread per
    element; ``p``, ``m``, ``v`` (and ``vmax``) are read and written in place."""
    k = _cuda_kernels.get(ams)
    if k is None:
        import cupy

        k = _cuda_kernels[ams] = cupy.ElementwiseKernel(
            "T g, T decay, T wd, T sign, T w1, bool lerp_lo, T b2, T c2, T eps_s, T k",
            "T p, T m, T v" + (", T vmax" if ams else ""),
            _CUDA_BODY % ("vmax = max(vmax, vi); vi = vmax;" if ams else ""),
            "ember_adam_ams" if ams else "ember_adam")
    return k


def adam_step_cuda(jobs):
    """``adam_step`` on cupy arrays: one ElementwiseKernel launch per parameter (complex
    ones as real views; float16 runs the reference)."""
    for arrays, hyper in jobs:
        arrays = _real(arrays)
        p = arrays[0]
        if p.dtype not in FLOATS or any(a.dtype != p.dtype for a in arrays):
            _reference_one(arrays, hyper)
            continue
        decay, wd, maximize, w1, b2, c2, eps_s, k = hyper
        dt = p.dtype.type
        kern = _cuda_kernel(len(arrays) == 5)
        kern(arrays[1], dt(decay), dt(wd), dt(-1.0 if maximize else 1.0), dt(w1), w1 < 0.5,
             dt(b2), dt(c2), dt(eps_s), dt(k), p, arrays[2], arrays[3], *arrays[4:])


register("adam_step", reference=adam_step_reference, cpu=adam_step, cuda=adam_step_cuda)
