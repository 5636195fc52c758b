"""``ember.nn.init``: in-place initialisers with PyTorch's names, defaults and fan rules.

Each fills its tensor in place without recording autograd history and returns it; each
takes ``generator=`` (an ``ember.Generator``) for reproducible draws.

    >>> import ember
    >>> from ember.nn import init
    >>> w = ember.empty(64, 32)
    >>> _ = init.kaiming_uniform_(w, a=5 ** 0.5)
    >>> bool(w.abs().max() <= 1 / 32 ** 0.5)
    True
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _backend as B
from ..autograd.grad_mode import no_grad
from ..random import _gen

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {list(tensor.shape)})")
    receptive = math.prod(tensor.shape[2:]) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor, values):
    """Write ``values`` (an array) into ``tensor`` in place, outside autograd."""
    d = tensor.array
    if not B.is_meta(d):
        B.namespace(d).copyto(d, values, casting="unsafe")
    tensor._bump()
    return tensor


def _work_dtype(tensor):
    dt = tensor.array.dtype
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float32)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b]: values outside are redrawn (only those), which
    samples the truncated distribution exactly; after 100 rounds any left are clamped."""
    if tensor.is_meta:
        return tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    d = tensor.array
    xp = B.namespace(d)
    rng = _gen(generator, tensor.device)
    v = rng.standard_normal(d.shape, dtype=np.float64) * std + mean
    for _ in range(100):
        bad = xp.flatnonzero((v < a) | (v > b))
        if bad.size == 0:
            break
        v.reshape(-1)[bad] = rng.standard_normal(bad.size, dtype=np.float64) * std + mean
    return _fill(tensor, xp.clip(v, a, b))


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """The identity matrix in a 2-D tensor (ones on the main diagonal)."""
    if tensor.is_meta:
        return tensor
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape "
                         f"{list(tensor.shape)}")
    xp = B.namespace(tensor.array)
    return _fill(tensor, xp.eye(*tensor.shape, dtype=tensor.array.dtype))


def dirac_(tensor, groups=1):
    """A conv weight (3-5 dims) that passes its input through (per group)."""
    if tensor.is_meta:
        return tensor
    nd = tensor.ndim
    if nd not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported, got shape "
                         f"{list(tensor.shape)}")
    out_ch = tensor.shape[0]
    if out_ch % groups:
        raise ValueError(f"dim 0 ({out_ch}) must be divisible by groups ({groups})")
    per = out_ch // groups
    n = min(per, tensor.shape[1])
    xp = B.namespace(tensor.array)
    z = xp.zeros(tensor.shape, tensor.array.dtype)
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for i in range(n):
            z[(g * per + i, i) + centre] = 1
    return _fill(tensor, z)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (QR of a Gaussian draw, signs fixed by R's diagonal), over
    the flattened trailing dims."""
    if tensor.is_meta:
        return tensor
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported, got shape "
                         f"{list(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    rng = _gen(generator, tensor.device)
    xp = B.namespace(tensor.array)
    flat = rng.standard_normal((rows, cols), dtype=np.float64)
    if rows < cols:
        flat = flat.T
    q, r = xp.linalg.qr(flat)
    q = q * xp.sign(xp.diagonal(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor with ``ceil(sparsity * rows)`` zeros per column, the rest N(0, std)."""
    if tensor.is_meta:
        return tensor
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape "
                         f"{list(tensor.shape)}")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    rng = _gen(generator, tensor.device)
    v = rng.standard_normal((rows, cols), dtype=_work_dtype(tensor)) * std
    for c in range(cols):
        v[rng.permutation(rows)[:zeros], c] = 0
    return _fill(tensor, v)
