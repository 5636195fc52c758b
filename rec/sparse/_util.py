"""Small helpers shared by the sparse-feature types: tensors from user input, host copies."""
from __future__ import annotations

import numpy as np

import ember
from ember import _backend as B
from ember._tensor import Tensor

_INT = "iu"


def as_tensor(x, what, *, integer=False, like=None):
    """``x`` as an ember Tensor (a Tensor is returned as is); ``integer`` checks the dtype.
    ``like``: the Tensor whose device a new tensor is created on."""
    if x is None:
        return None
    if not isinstance(x, Tensor):
        a = np.asarray(x)
        if integer and a.size == 0 and a.dtype.kind == "f":  # ``[]`` reads as float64
            a = a.astype(np.int64)
        if a.dtype == np.float64 and not integer:  # no silent float64 from Python floats
            a = a.astype(np.float32)
        x = ember.from_numpy(np.ascontiguousarray(a))
        if like is not None and like.device != x.device:
            x = x.to(like.device)
    if integer and x.dtype.kind not in _INT:
        raise TypeError(f"{what} must hold integers, got dtype {x.dtype}")
    return x


def host(t):
    """A numpy array of a Tensor's (or array's) data (a device -> host copy for cupy)."""
    a = t.array if isinstance(t, Tensor) else t
    return a if type(a) is np.ndarray else B.to_device(a, B.device("cpu"))


def xp_of(t):
    return B.namespace(t.array if isinstance(t, Tensor) else t)


def cumsum0(lengths):
    """Offsets ``[0, cumsum(lengths)...]`` (int64, on the lengths' device) from a lengths array."""
    xp = B.namespace(lengths)
    out = xp.zeros(lengths.shape[0] + 1, np.int64)
    xp.cumsum(lengths, out=out[1:])
    return out


def wrap(a):
    return Tensor._make(a)
