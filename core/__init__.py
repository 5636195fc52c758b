"""ember: the PyTorch domain-library experience on numpy (CPU) and cupy (GPU).

    >>> import ember
    >>> x = ember.randn(3, 4, requires_grad=True)
    >>> y = (x @ x.T).sum()
    >>> y.backward()
"""
from __future__ import annotations

import os as _os
import sys as _sys

if "numpy" not in _sys.modules:
    # OpenBLAS's idle threads spin for 2**28 cycles (~0.1 s) after each GEMM, and on a few
    # cores they take the cores that numpy's elementwise passes and ember's threaded loops
    # need between GEMMs. 2**20 cycles (~0.4 ms) still bridges the gaps between the GEMMs of
    # a training step (measured: MLP step unchanged, MobileNetV3 inference 14% faster).
    # OpenBLAS reads the variable once, when numpy loads it: import ember before numpy to
    # get it, or set it yourself.
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

from . import dtypes as _dtypes
from ._backend import cuda_available as _cuda_available, device, get_default_device, \
    set_default_device
from .dtypes import (bfloat16, bool, cdouble, cfloat, complex64, complex128, double, float,
                     float16, float32, float64, get_default_dtype, half, int, int8, int16, int32,
                     int64, long, set_default_dtype, short, uint8)
from ._tensor import Tensor
from ._memory_format import (channels_last, channels_last_3d, contiguous_format,  # noqa
                             memory_format, preserve_format)
from ._legacy import *  # noqa: F401,F403  (FloatTensor, LongTensor, ...)
from ._format import set_printoptions
from .autograd import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                       set_grad_enabled)
from . import autograd
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,
                     seed, set_rng_state)
from .factories import *  # noqa: F401,F403
from .factories import __all__ as _fact_all
from .ops.elementwise import *  # noqa: F401,F403
from .ops.reduce import *  # noqa: F401,F403
from .ops.shape import *  # noqa: F401,F403
from .ops.index import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.special import *  # noqa: F401,F403
from .ops.extra import *  # noqa: F401,F403
from .ops.stats import *  # noqa: F401,F403
from .ops.complex import *  # noqa: F401,F403  (binds ember.complex, as torch.complex)
from .spectral import *  # noqa: F401,F403
from . import linalg
from .serialization import load, save
from ._parallel import num_threads as get_num_threads, set_num_threads
from . import hub
from ._sparse_coo import layout, sparse_coo, sparse_coo_tensor, strided
from .sparse import spmm

__version__ = "0.1.0"

Size = tuple
dtype = type(_dtypes.float32).__mro__[-2]  # numpy.dtype: every ember dtype is an instance


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(t) -> bool:
    return t.is_floating_point()


def numel(t):
    return t.numel()


def promote_types(a, b):
    return _dtypes.promote_types(a, b)


def result_type(a, b):
    from .ops._util import to_tensor

    ta = a if isinstance(a, Tensor) else None
    tb = b if isinstance(b, Tensor) else None
    if ta is not None and tb is not None:
        return _dtypes.result_type(ta.array, tb.array)
    if ta is not None:
        return _dtypes.scalar_result_type(ta.dtype, b)
    if tb is not None:
        return _dtypes.scalar_result_type(tb.dtype, a)
    return to_tensor(a).dtype


_DETERMINISTIC = [False]
_MATMUL_PRECISION = ["highest"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Accepted for torch code and recorded; it changes no op. ember's CPU ops give the same
    bits on every run of the same inputs and thread count; on the GPU, scatter-adds through
    cupy's atomics may sum in a different order from run to run."""
    _DETERMINISTIC[0] = True if mode else False  # (``bool`` here is ember.bool, a dtype)


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC[0]


def set_float32_matmul_precision(precision):
    """Accepted for torch code; float32 GEMMs always run in IEEE float32 ("highest")."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"precision must be 'highest', 'high' or 'medium', got {precision!r}")
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision():
    return _MATMUL_PRECISION[0]


class cuda:  # namespace, mirrors torch.cuda's most used entry points
    @staticmethod
    def is_available():
        return _cuda_available()

    @staticmethod
    def device_count():
        if not _cuda_available():
            return 0
        from ._backend import cupy

        return cupy().cuda.runtime.getDeviceCount()

    @staticmethod
    def synchronize(device=None):
        if _cuda_available():
            from ._backend import cupy

            cupy().cuda.Device().synchronize()

    @staticmethod
    def manual_seed(s):
        manual_seed(s)

    manual_seed_all = manual_seed


_LAZY = ("nn", "optim", "sparse", "data", "vision", "text", "audio", "rec", "rl", "recipes",
         "distributed", "jagged", "distributions", "multiprocessing", "kernels", "utils",
         "backends", "serialization", "accelerator", "fft", "special")


def __getattr__(name):
    """``ember.nn``, ``ember.optim``, ``ember.data``, ... import on first use (as ``torch.nn``
    is there after ``import torch``), so ``import ember`` stays fast."""
    if name in _LAZY:
        import importlib

        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
