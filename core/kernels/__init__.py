"""Compiled kernels: one registry of ops that numpy needs several passes for (see README.md).

    >>> import numpy as np
    >>> from ember import kernels
    >>> x = np.arange(6, dtype=np.float32)
    >>> kernels.get("segment_sum", x)(x, np.array([0, 2, 6])).tolist()
    [1.0, 14.0]
"""
from __future__ import annotations

from ._jit import available, cache_dir, mode, set_mode
from ._registry import Kernel, get, lookup, names, register
# the kernel modules register themselves on import (numpy only: numba loads on first call)
from . import (activation, adam, batchnorm, depthwise, dropout, embedding_bag,  # noqa: F401
               norm, pool, rnn, scan, segment, sgd, softmax)

__all__ = ["Kernel", "available", "cache_dir", "get", "lookup", "mode", "names", "register",
           "set_mode"]
