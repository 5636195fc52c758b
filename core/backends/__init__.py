"""``ember.backends``: torch's backend switches, for code that sets them unconditionally.

What each flag does in ember (no cuDNN, MKL-DNN or MPS exists under numpy/cupy):

* ``cudnn.benchmark``: no effect. ember's GPU convolutions are im2col + cuBLAS GEMMs (CuPy has
  no cuDNN), with one algorithm per shape, so there is nothing to benchmark.
* ``cudnn.deterministic``: no effect. ember's CPU ops give the same bits on every run of the
  same inputs; on the GPU, scatter-adds through cupy's atomics may sum in any order.
* ``cudnn.enabled``: no effect; ``cudnn.is_available()`` is False, ``cudnn.version()`` None.
* ``cuda.matmul.allow_tf32`` / ``cudnn.allow_tf32``: no effect: GEMMs run in the inputs'
  dtype (float32 stays IEEE float32).
* ``mkldnn.is_available()``, ``mps.is_available()``, ``mps.is_built()``: False.
* ``openmp.is_available()``: False (ember's CPU threads are its own pool; see
  ``ember.set_num_threads``).
"""
from __future__ import annotations

from . import cuda, cudnn, mkldnn, mps, openmp  # noqa: F401

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
