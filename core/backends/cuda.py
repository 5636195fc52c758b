"""``ember.backends.cuda``: ``matmul.allow_tf32`` and friends are accepted and have no effect
(cuBLAS GEMMs run in the inputs' dtype)."""
from __future__ import annotations


class _Matmul:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()


def is_built():
    from .._backend import cuda_available

    return cuda_available()
