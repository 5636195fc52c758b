"""The engine under every dense optimizer step: elementwise updates run in place, allocation-free.

An optimizer describes one parameter's update as a *kernel*: a function over same-shaped
arrays (the parameter, its gradient, its state buffers) that writes its results with ufuncs
``out=``. ``run(kernel, nscratch, jobs)`` applies it to every parameter of a step:

* numpy: each parameter is cut into chunks of about ``CHUNK`` elements (flat chunks when all
  its arrays are C-contiguous, else blocks of rows, e.g. for a transposed gradient), so the
  dozen ufunc passes of an Adam update run over data that stays in the core's L2 cache
  instead of streaming every array from memory a dozen times; a large step is split across
  ``num_threads()`` threads (numpy releases the GIL inside ufunc loops);
* cupy: one kernel call over each whole array.

Temporaries come from per-thread scratch buffers that grow once and are then reused, so a
steady-state step allocates no arrays. Kernels write ``xp.multiply(x, s, out=x)`` rather than
``x *= s`` for a Python scalar ``s``: numpy's in-place operator costs twice the call overhead
(measured ~1.1 us against ~0.5 us), which a step over many small parameters pays per ufunc.
A kernel has the signature::

    kernel(xp, arrays, scratch, hyper)
        xp       numpy or cupy
        arrays   tuple of same-shaped arrays, arrays[0] the parameter (written in place)
        scratch  tuple of ``nscratch`` arrays of that shape (free to overwrite)
        hyper    the job's tuple of Python scalars

    >>> import numpy as np
    >>> def axpy(xp, a, s, h):          # p += alpha * g
    ...     p, g = a
    ...     xp.multiply(g, h[0], out=s[0])
    ...     p += s[0]
    >>> p, g = np.zeros(5, np.float32), np.ones(5, np.float32)
    >>> run(axpy, 1, [((p, g), (0.5,))])
    >>> p.tolist()
    [0.5, 0.5, 0.5, 0.5, 0.5]
"""
from __future__ import annotations

import threading

import numpy as np

from . import _backend as B
from . import _parallel

CHUNK = 32768          # elements per chunk: ~6 float32 arrays of it fit in a core's L2 cache
# with threads, a ufunc must run long enough to hide the GIL hand-over between two threads
# (each ufunc call re-takes the GIL): 64K elements still fit the 2 MB L2 of a core
CHUNK_THREADED = 65536
PARALLEL_MIN = _parallel.PARALLEL_MIN  # a step with fewer elements runs in the calling thread

_ndarray = np.ndarray
num_threads = _parallel.num_threads
set_num_threads = _parallel.set_num_threads


class _Local(threading.local):
    def __init__(self):
        self.bufs = {}
        self.views = {}


_local = _Local()


def _scratch(xp, dtype, n, k, device=None):
    """``k`` flat buffers of at least ``n`` elements, owned by this thread (grown, never shrunk)."""
    key = (dtype, k, device)
    bufs = _local.bufs.get(key)
    if bufs is None or bufs[0].shape[0] < n:
        bufs = tuple(xp.empty(max(n, CHUNK if xp is np else n), dtype) for _ in range(k))
        _local.bufs[key] = bufs
    return bufs


def _whole(kernel, nscratch, arrays, hyper):
    """One kernel call over whole (cupy) arrays."""
    a0 = arrays[0]
    xp = B.namespace(a0)
    dev = None if xp is np else a0.device.id
    n = a0.size
    bufs = _scratch(xp, a0.dtype, n, nscratch, dev)
    shape = a0.shape
    kernel(xp, arrays, tuple(b[:n].reshape(shape) for b in bufs), hyper)


def _span(kernel, nscratch, work, lo, hi, chunk=CHUNK):
    """Run ``kernel`` over the global element range [lo, hi) of the jobs in ``work``.

    A job is ``(arrays, hyper, unit, rest)``: flat 1-D views (``unit`` 1, ``rest`` None), or
    N-d arrays cut along axis 0 (``unit`` elements per row, ``rest`` the row shape). A row
    belongs to the range holding its first element."""
    base = 0
    bufs = None
    key = None
    for arrays, hyper, unit, rest in work:
        n = arrays[0].shape[0]
        start = max(-(-(lo - base) // unit), 0)
        stop = min(-(-(hi - base) // unit), n)
        base += n * unit
        if start < stop:
            if key != (arrays[0].dtype, unit):
                key = (arrays[0].dtype, unit)
                bufs = _scratch(np, key[0], max(chunk, unit), nscratch)
            step = max(chunk // unit, 1)
            for i in range(start, stop, step):
                j = min(i + step, stop)
                if rest is None:
                    scr = tuple(b[:j - i] for b in bufs)
                else:
                    scr = tuple(b[:(j - i) * unit].reshape((j - i,) + rest) for b in bufs)
                kernel(np, tuple(a[i:j] for a in arrays), scr, hyper)
        if base >= hi:
            break


def _small_scratch(dtype, shape, k):
    """Scratch views of ``shape`` (at most CHUNK elements) for this thread, cached by shape."""
    views = _local.views.get((dtype, shape, k))
    if views is None:
        n = 1
        for s in shape:
            n *= s
        views = tuple(b[:n].reshape(shape) for b in _scratch(np, dtype, CHUNK, k))
        _local.views[(dtype, shape, k)] = views
    return views


def run(kernel, nscratch, jobs):
    """Apply ``kernel`` to every job ``(arrays, hyper)``, in place (see the module docstring)."""
    work = []
    total = 0
    for arrays, hyper in jobs:
        a0 = arrays[0]
        if a0.dtype.kind == "c":
            arrays = _real_views(arrays)
            a0 = arrays[0]
        if type(a0) is not _ndarray:
            _whole(kernel, nscratch, arrays, hyper)
            continue
        n = a0.size
        if n <= CHUNK:  # one chunk: a direct call, whatever the strides
            kernel(np, arrays, _small_scratch(a0.dtype, a0.shape, nscratch), hyper)
        elif all(a.flags.c_contiguous for a in arrays):
            work.append((tuple(a.reshape(-1) for a in arrays), hyper, 1, None))
            total += n
        else:  # e.g. a transposed gradient: cut along the first axis, rows stay contiguous
            unit = n // a0.shape[0]
            work.append((arrays, hyper, unit, a0.shape[1:]))
            total += n
    if not work:
        return
    # whole chunks per thread: the calling thread takes the first range
    c = CHUNK_THREADED
    if _parallel.split_threads(total) == 1:
        _span(kernel, nscratch, work, 0, total)
        return
    _parallel.parallel_for(
        lambda lo, hi: _span(kernel, nscratch, work, lo * c, min(hi * c, total), c),
        -(-total // c), work=total)


def _real_views(arrays):
    """Complex arrays as real ones with a trailing axis of 2 (PyTorch's ``view_as_real``): the
    update treats real and imaginary parts as separate parameters. Only the gradient
    (``arrays[1]``, read-only in every kernel) may be a non-contiguous array (it is copied)."""
    out = []
    for i, a in enumerate(arrays):
        rd = a.real.dtype
        if a.flags.c_contiguous:
            out.append(a.reshape(-1).view(rd).reshape(a.shape + (2,)))
        elif i == 1:
            out.append(B.namespace(a).stack((a.real, a.imag), -1))
        else:
            raise RuntimeError("optimizer: a complex parameter must be C-contiguous")
    return tuple(out)


# -- building blocks shared by the kernels -------------------------------------------------
def lerp_(xp, m, g, w, tmp):
    """``m = lerp(m, g, w)`` in place, with torch's formula (exact at both ends)."""
    xp.subtract(g, m, out=tmp)
    if w < 0.5:
        xp.multiply(tmp, w, out=tmp)
        m += tmp
    else:
        xp.multiply(tmp, 1.0 - w, out=tmp)
        xp.subtract(g, tmp, out=m)


def effective_grad(xp, p, g, wd, maximize, tmp):
    """The gradient the update sees: ``-g`` under maximize, plus ``wd * p`` (L2), in ``tmp``
    when it differs from ``g``."""
    if wd:
        xp.multiply(p, wd, out=tmp)
        if maximize:
            tmp -= g
        else:
            tmp += g
        return tmp
    if maximize:
        xp.negative(g, out=tmp)
        return tmp
    return g
