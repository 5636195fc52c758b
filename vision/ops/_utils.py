"""Helpers shared by the ops families: argument checks, host copies and constant tensors."""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor


def _boxes(b, name="boxes", batched=False):
    """Check ``b`` is a box tensor: (N, 4), or (..., N, 4) where ``batched``."""
    if not isinstance(b, Tensor):
        raise TypeError(f"{name} should be a Tensor (N, 4), got {type(b).__name__}")
    if (b.ndim < 2 if batched else b.ndim != 2) or b.shape[-1] != 4:
        want = "(..., N, 4)" if batched else "(N, 4)"
        raise ValueError(f"{name} should have shape {want}, got {tuple(b.shape)}")
    return b


def _host(t):
    """A numpy copy (or view) of a tensor's values, whatever its device."""
    a = t.detach().array
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _xp(t):
    return ember._backend.namespace(t.array)


def _const(xp, arr):
    """A constant (no grad) tensor on the backend ``xp`` from a host or device array."""
    return Tensor._make(xp.asarray(arr))


def _pair(v):
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(v)
    if len(v) == 1:
        return int(v[0]), int(v[0])
    return int(v[0]), int(v[1])


def _float_dtype(t):
    """The numpy dtype box/coordinate arithmetic runs in for ``t``: its own float dtype
    (float16 computes in float32), float32 for integer tensors."""
    dt = np.dtype(t.array.dtype)
    if dt == np.float64 or dt == np.float32:
        return dt
    return np.dtype(np.float32)


def _upcast_float(t):
    """float32/float64 stay, anything else (ints, float16, bool) becomes float32."""
    if t.dtype in (ember.float32, ember.float64):
        return t
    return t.float()


def _upcast(t):
    """Widen narrow types before products: float16 -> float32, small ints -> int32."""
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _reduce(loss, reduction):
    """Apply a loss reduction; 'mean' of nothing is 0 (with a graph), not NaN."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    return loss.sum()


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction}'; supported "
                         "reduction modes: 'none', 'mean', 'sum'")
