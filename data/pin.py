"""``pin_memory``: copy a batch into page-locked host memory so that host-to-GPU copies can
run asynchronously. Needs cupy and a CUDA GPU; without one it warns once and does nothing
(as PyTorch does).
"""
from __future__ import annotations

import warnings

import numpy as np

from ember import _backend as B

_WARNED = [False]


def _pin_array(a):
    import cupyx

    out = cupyx.empty_pinned(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def pin(tree):
    """The batch with every CPU array (and Tensor) copied into pinned memory."""
    from ember import Tensor

    if not B.cuda_available():
        if not _WARNED[0]:
            _WARNED[0] = True
            warnings.warn("pin_memory=True but no CUDA GPU is available: batches stay in "
                          "ordinary memory", RuntimeWarning, stacklevel=3)
        return tree
    if isinstance(tree, Tensor):
        return Tensor._make(_pin_array(tree.array)) if isinstance(tree.array, np.ndarray) else tree
    if isinstance(tree, np.ndarray):
        return _pin_array(tree)
    if isinstance(tree, dict):
        return {k: pin(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(pin(v) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(pin(v) for v in tree)
    return tree
