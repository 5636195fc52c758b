"""Small helpers shared by the kernel wrappers."""
from __future__ import annotations

import numpy as np

from .._fused import _real_views
from .._parallel import parallel_for, split_threads

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def compiled_dtype(*arrays) -> bool:
    """True when every array is a float32/float64 numpy array of one dtype: what the
    compiled kernels take (other dtypes run the numpy reference)."""
    dt = arrays[0].dtype
    return dt in FLOATS and all(type(a) is np.ndarray and a.dtype == dt for a in arrays)


def contiguous(a):
    """``a`` as a C-contiguous array (a copy only when it is not one already)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def split(fn, n, work):
    """``fn(lo, hi)`` over ``range(n)``, over ember's threads when ``work`` (elements
    touched) is worth it: the kernels run single-threaded with the GIL released."""
    parallel_for(fn, n, work=work)


def launch(kernel, args, n, work):
    """``kernel(*args, lo, hi)`` over ``range(n)`` split as ``split`` does."""
    parallel_for(lambda lo, hi: kernel(*args, lo, hi), n, work=work)


def chunks(n, work):
    """``[(lo, hi), ...]``: ``range(n)`` cut into one contiguous range per thread that
    ``work`` elements are worth (for kernels that keep a partial result per range)."""
    nt = max(1, min(split_threads(work), n))
    per = -(-n // nt) if n else 0
    return [(lo, min(lo + per, n)) for lo in range(0, n, per)] if n else []


def pair(v, what):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{what}: expected 2 values, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


# ----------------------------------------------------------------------------- optimizer steps
STEP_BLOCK = 65536  # elements per unit of threaded work in the optimizer-step kernels


def real_views(arrays):
    """Complex parameters update their real and imaginary parts as separate reals (torch's
    ``view_as_real``), as ember's optimizer engine does."""
    return _real_views(arrays) if arrays[0].dtype.kind == "c" else arrays


def _steppable(arrays):
    a0 = arrays[0]
    return (type(a0) is np.ndarray and a0.dtype in FLOATS
            and all(type(a) is np.ndarray and a.dtype == a0.dtype and a.shape == a0.shape
                    and a.flags.c_contiguous for a in arrays))


def run_step_jobs(jobs, reference_one, kernel_for):
    """An optimizer step over ``jobs`` (``(arrays, hyper)`` per parameter), compiled: every
    parameter is cut into blocks of ``STEP_BLOCK`` elements and the blocks of all parameters
    are spread over ember's threads. ``kernel_for(flat_arrays, hyper)`` gives ``(fn, args)``
    with ``fn(*args, lo, hi)`` updating elements ``lo..hi``; jobs the kernels do not take
    (float16, non-contiguous) run ``reference_one(arrays, hyper)``."""
    units = []
    total = 0
    for arrays, hyper in jobs:
        arrays = real_views(arrays)
        if not _steppable(arrays):
            reference_one(arrays, hyper)
            continue
        flat = tuple(a.reshape(-1) for a in arrays)
        fn, args = kernel_for(flat, hyper)
        n = flat[0].size
        for lo in range(0, n, STEP_BLOCK):
            units.append((fn, args, lo, min(lo + STEP_BLOCK, n)))
        total += n

    def run(lo, hi):
        for fn, args, a, b in units[lo:hi]:
            fn(*args, a, b)

    if units:
        split(run, len(units), total)
