"""Small helpers shared by the kernel wrappers."""
from __future__ import annotations

import numpy as np

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
