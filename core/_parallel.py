"""Independent blocks of numpy work spread over a few threads.

numpy releases the GIL inside a ufunc loop, so two Python threads running ufuncs over
disjoint parts of an array use two cores: on this project's 2-core reference machine a
10M-element ``multiply`` + ``add`` drops from 12.2 to 7.4 ms. Handing work to a thread costs
tens of microseconds, so only work above ``PARALLEL_MIN`` elements is split. GEMMs are not
run here: OpenBLAS already threads them.

``parallel_for(fn, n, work)`` calls ``fn(lo, hi)`` over contiguous ranges covering
``range(n)``, the calling thread taking the first range. A call made from inside one of the
pool's threads runs inline (a nested split would wait on itself). Exceptions propagate to
the caller after every range has finished.

    >>> import numpy as np
    >>> a = np.arange(8.0); out = np.empty(8)
    >>> parallel_for(lambda lo, hi: np.multiply(a[lo:hi], 2, out=out[lo:hi]), 8, work=1 << 20)
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
"""
from __future__ import annotations

import os
import threading

import numpy as np

PARALLEL_MIN = 1 << 18  # elements of work below which one thread does it all

_pool = None
_threads = None
_inside = threading.local()
_lock = threading.Lock()


def num_threads() -> int:
    """Threads large numpy work uses: ``OMP_NUM_THREADS`` if set, else the usable cores."""
    global _threads
    if _threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "")
        try:
            n = int(env.split(",")[0]) if env else len(os.sched_getaffinity(0))
        except (ValueError, AttributeError):
            n = os.cpu_count() or 1
        _threads = max(1, min(n, 16))
    return _threads


def set_num_threads(n: int) -> None:
    """Set how many threads large numpy work (optimizer steps, normalization, depthwise
    convolutions, ...) may use; 1 keeps everything in the calling thread."""
    global _threads, _pool
    if isinstance(n, bool) or int(n) < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n!r}")
    with _lock:
        _threads = int(n)
        if _pool is not None:
            _pool.shutdown(wait=True)
            _pool = None


def _forget_pool():
    """In a forked child the pool's threads do not exist: start a new pool when needed."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _mark_worker():
    _inside.flag = True


def _get_pool(nt):
    global _pool
    with _lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(nt - 1, thread_name_prefix="ember-par",
                                       initializer=_mark_worker)
        return _pool


def split_threads(work: int) -> int:
    """How many threads ``work`` elements are worth (1 in a pool thread or below the floor)."""
    nt = num_threads()
    if nt == 1 or work < PARALLEL_MIN or getattr(_inside, "flag", False):
        return 1
    return min(nt, max(1, work // (PARALLEL_MIN // 2)))


def parallel_for(fn, n: int, work: int | None = None, threads: int | None = None) -> None:
    """``fn(lo, hi)`` over contiguous ranges covering ``range(n)`` (see the module doc).

    ``work`` is the number of elements the whole loop touches (default ``n``); ``threads``
    caps the split (default: what ``work`` is worth)."""
    nt = split_threads(n if work is None else work)
    if threads is not None:
        nt = min(nt, threads)
    nt = min(nt, n)
    if nt <= 1:
        if n > 0:
            fn(0, n)
        return
    per = -(-n // nt)
    pool = _get_pool(num_threads())
    futs = [pool.submit(fn, lo, min(lo + per, n)) for lo in range(per, n, per)]
    try:
        fn(0, min(per, n))
    finally:
        err = None
        for f in futs:
            try:
                f.result()
            except BaseException as e:  # noqa: BLE001 - re-raised below, after every range
                err = err or e
        if err is not None:
            raise err


def run_tasks(fns) -> None:
    """Call every zero-argument function of ``fns`` (a list), spread over the threads."""
    parallel_for(lambda lo, hi: [f() for f in fns[lo:hi]], len(fns),
                 work=PARALLEL_MIN * len(fns))


_BLOCK = 65536  # elements per ufunc call in a split loop: in cache, long enough to hide the GIL


def ufunc(uf, a, b, out, **kw) -> None:
    """``uf(a, b, out=out, **kw)`` (``b=None``: a unary ufunc). Over equal-shaped C-contiguous
    numpy arrays (``b`` may be a scalar) of ``PARALLEL_MIN`` or more elements, the call is
    split over threads in cache-sized blocks; anything else (broadcasting, partial overlap,
    cupy, small arrays) is numpy's own single call."""
    if not _splittable(a, b, out):
        uf(*((a,) if b is None else (a, b)), out=out, **kw)
        return
    n = out.size
    flat = [x.reshape(-1) if isinstance(x, np.ndarray) and x.ndim else x
            for x in ((a,) if b is None else (a, b))]
    o = out.reshape(-1)

    def part(lo, hi):
        for s in range(lo * _BLOCK, min(hi * _BLOCK, n), _BLOCK):
            e = min(s + _BLOCK, n)
            uf(*(x[s:e] if np.ndim(x) else x for x in flat), out=o[s:e], **kw)

    parallel_for(part, -(-n // _BLOCK), work=n)


def _splittable(a, b, out) -> bool:
    if (type(out) is not np.ndarray or out.size < PARALLEL_MIN or not out.flags.c_contiguous
            or split_threads(out.size) == 1):
        return False
    for x in ((a,) if b is None else (a, b)):
        if isinstance(x, np.ndarray) and x.ndim:
            if x.shape != out.shape or not x.flags.c_contiguous or (
                    x is not out and np.may_share_memory(x, out)):
                return False  # broadcasting, or a partial overlap that needs numpy's buffering
        elif not (isinstance(x, np.ndarray) or np.isscalar(x)):
            return False
    return True
