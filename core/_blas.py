"""numpy's BLAS thread count, changed at run time.

Convolutions run one GEMM per image (or per chunk of images). On a few cores, splitting the
images over Python threads that each run a single-threaded GEMM beats letting OpenBLAS thread
every GEMM: the im2col copies then run in parallel too, and no GEMM waits for OpenBLAS's
threads to wake and meet (measured on the 2-core reference machine, batch 8, 3x3 convs:
64 channels at 56x56 13.2 -> 10.6 ms, 128 at 28x28 10.3 -> 8.0 ms, 256 at 14x14 9.8 -> 7.8 ms,
bit-identical outputs). ``single_threaded()`` sets OpenBLAS to one thread for the duration
of such a split and restores it after.

The OpenBLAS numpy links is found among the libraries loaded into the process
(``/proc/self/maps``; numpy's wheels bundle ``libscipy_openblas``) and driven through its
``openblas_set_num_threads``. With another BLAS (MKL, Accelerate), or none found,
``available()`` is False and callers keep the BLAS's own threading.
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "")

_state = {"probed": False, "set": None, "get": None}
_lock = threading.Lock()
_depth = 0
_saved = 1


def _loaded_openblas():
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and ".so" in p)


def _probe():
    import numpy  # noqa: F401 - loads its BLAS, so that the library is mapped

    del numpy

    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pre in _PREFIXES:
            for suf in _SUFFIXES:
                setter = getattr(lib, f"{pre}_set_num_threads{suf}", None)
                getter = getattr(lib, f"{pre}_get_num_threads{suf}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    return setter, getter
    return None, None


def _fns():
    if not _state["probed"]:
        with _lock:
            if not _state["probed"]:
                _state["set"], _state["get"] = _probe()
                _state["probed"] = True
    return _state["set"], _state["get"]


def available() -> bool:
    """Whether numpy's BLAS thread count can be changed at run time (OpenBLAS found)."""
    return _fns()[0] is not None


def get_num_threads() -> int | None:
    """OpenBLAS's current thread count (None without OpenBLAS)."""
    get = _fns()[1]
    return None if get is None else int(get())


@contextmanager
def single_threaded():
    """OpenBLAS runs each call on the calling thread inside the block (nests; process-wide,
    so a GEMM another thread makes meanwhile is single-threaded too)."""
    global _depth, _saved
    setter, getter = _fns()
    if setter is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = int(getter())
            if _saved != 1:
                setter(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved != 1:
                setter(_saved)
