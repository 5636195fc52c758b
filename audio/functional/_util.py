"""Small helpers shared by the functional DSP modules."""
from __future__ import annotations

import numpy as np

import ember
from ember import _backend as B

__all__ = ["as_tensor", "xp_of", "const", "float_dtype"]


def as_tensor(x, name="waveform"):
    """Tensors pass through; numpy arrays and sequences become tensors (no copy for
    arrays)."""
    if isinstance(x, ember.Tensor):
        return x
    if isinstance(x, np.ndarray):
        return ember.from_numpy(x)
    if B.is_cuda_array(x):
        return ember.Tensor._make(x)
    try:
        return ember.as_tensor(x)
    except Exception:
        raise TypeError(f"{name} must be an ember Tensor or an array, got "
                        f"{type(x).__name__}") from None


def xp_of(t):
    """The array namespace (numpy or cupy) of a tensor."""
    return B.namespace(t.array)


def const(values, like, dtype=None):
    """A constant tensor (no grad) from a numpy array, on ``like``'s device, in ``dtype``
    (default: ``like``'s real float dtype)."""
    dt = dtype if dtype is not None else float_dtype(like)
    arr = np.asarray(values).astype(dt, copy=False)
    xp = xp_of(like)
    return ember.Tensor._make(xp.asarray(arr))


def float_dtype(t):
    """``t``'s dtype if it is a real float type, its real part's for complex, else float32."""
    dt = t.dtype
    if dt.kind == "f":
        return dt
    if dt.kind == "c":
        return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return np.dtype(np.float32)
