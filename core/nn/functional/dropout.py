"""Dropout: ``dropout``, ``dropout1d/2d/3d`` (whole channels), ``alpha_dropout`` and
``feature_alpha_dropout``.

Each draws a keep-mask from ember's random generator (``ember.manual_seed`` makes it
repeatable) and multiplies: ``out = input * mask`` with ``mask`` in {0, 1 / (1 - p)}, so the
gradient flows through the kept elements only (and double backward comes for free). Alpha
dropout keeps SELU's mean and variance: ``out = a * (input * keep + alpha' * (1 - keep)) + b``.
The channel-wise ("feature") variants draw one value per (sample, channel) and broadcast it
over the spatial dims.

Plain out-of-place dropout of a float32/float64 numpy array runs ``ember.kernels``'
``dropout_apply``: the same uniform draws, compared, scaled and multiplied in one pass, the
mask kept for backward as uint8 (``dropout_backward``: one pass too). Its results are
bit-identical to the ufunc version.
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import _backend as B
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops._util import wrap
from ...random import _gen

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_SELU_ALPHA_SCALED = 1.7580993408473766  # SELU's scale * alpha: the value dropped units take


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep(input, p, shape):
    """A {0, 1} mask of ``shape`` in ``input``'s float dtype, each 1 with probability 1 - p."""
    d = input.array
    gen = _gen(None, input.device)
    dt = d.dtype if d.dtype.kind == "f" else np.dtype(np.float32)
    udt = dt if dt in (np.float32, np.float64) else np.float32
    u = gen.random(shape, dtype=udt)
    return (u >= p).astype(dt, copy=False)


class DropoutBackward(Node):
    """``g * mask * scale`` (mask: uint8 keep-mask of the forward)."""

    __slots__ = ("mask", "scale")

    def backward(self, g):
        ga = g.array
        if STATE.enabled:  # create_graph: a differentiable product
            m = self.mask.astype(ga.dtype)
            m *= ga.dtype.type(self.scale)
            return (g * wrap(m),)
        from ... import kernels

        return (wrap(kernels.get("dropout_backward", ga)(ga, self.mask, self.scale)),)


def _fused(input, p):
    """Plain dropout through the one-pass kernel (numpy float32/float64 input)."""
    from ... import kernels

    d = input.array
    u = _gen(None, input.device).random(d.shape, dtype=d.dtype)
    scale = 1.0 / (1.0 - p)
    out, mask = kernels.get("dropout_apply", d)(d, u, p, scale)
    res = wrap(out)
    if STATE.enabled and input.requires_grad:
        n = new_node(DropoutBackward)
        n.mask, n.scale = mask, scale
        n.saved = ()
        record(n, res, input)
    return res


def _noise_shape(input, feature):
    s = tuple(input.shape)
    if not feature:
        return s
    if len(s) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return s[:2] + (1,) * (len(s) - 2)


def _apply(input, mask, shift, inplace):
    """``input * mask (+ shift)``, out of place or written into ``input``."""
    m = wrap(mask)
    if inplace:
        input.mul_(m)
        if shift is not None:
            input.add_(wrap(shift))
        return input
    out = input * m
    return out if shift is None else out + wrap(shift)


def _dropout(input, p, training, inplace, feature, alpha):
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        zero = wrap(B.namespace(input.array).zeros((), input.dtype))
        return input.mul_(zero) if inplace else input * zero
    if not (alpha or feature or inplace) and type(input.array) is np.ndarray and \
            input.array.dtype in (np.float32, np.float64):
        return _fused(input, p)
    keep = _keep(input, p, _noise_shape(input, feature))
    if not alpha:
        keep *= 1.0 / (1.0 - p)
        return _apply(input, keep, None, inplace)
    a = 1.0 / ((_SELU_ALPHA_SCALED ** 2 * p + 1) * (1 - p)) ** 0.5  # a Python float
    # kept: a * x + alpha' * a * p; dropped: -alpha' * a + alpha' * a * p
    shift = (keep - 1) * (_SELU_ALPHA_SCALED * a) + _SELU_ALPHA_SCALED * a * p
    keep *= a
    return _apply(input, keep, shift.astype(keep.dtype, copy=False), inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (identity when ``training=False``).

    >>> _ = ember.manual_seed(0)
    >>> F.dropout(ember.ones(8), p=0.5).shape
    (8,)
    """
    _check_p(p)
    return _dropout(input, p, training, inplace, False, False)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability ``p``.

    >>> F.dropout1d(ember.ones(2, 4, 5)).shape
    (2, 4, 5)
    """
    _check_p(p)
    nd = input.ndim
    if nd not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature(input, p, training, inplace, batched=nd == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p``. A 3-D input is
    taken as (N, C, L) (with a warning), as PyTorch does.

    >>> F.dropout2d(ember.ones(2, 4, 3, 3)).shape
    (2, 4, 3, 3)
    """
    _check_p(p)
    nd = input.ndim
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _dropout(input, p, training, inplace, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability ``p``.

    >>> F.dropout3d(ember.ones(2, 4, 2, 2, 2)).shape
    (2, 4, 2, 2, 2)
    """
    _check_p(p)
    nd = input.ndim
    if nd not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature(input, p, training, inplace, batched=nd == 5)


def _feature(input, p, training, inplace, batched):
    """Channel-wise dropout; an unbatched input gets a batch dim of 1 for the mask."""
    if batched:
        return _dropout(input, p, training, inplace, True, False)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _dropout(input, p, training, inplace, True, False)
    keep = _keep(input, p, (input.shape[0],) + (1,) * (input.ndim - 1))
    keep *= 1.0 / (1.0 - p)
    return _apply(input, keep, None, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and
    the result is rescaled so mean and variance are kept. Note ``training=False`` by
    default, as in PyTorch.

    >>> F.alpha_dropout(ember.randn(16), 0.2, training=True).shape
    (16,)
    """
    _check_p(p)
    return _dropout(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels of (N, C, *) inputs.

    >>> F.feature_alpha_dropout(ember.randn(2, 3, 4), 0.2, training=True).shape
    (2, 3, 4)
    """
    _check_p(p)
    return _dropout(input, p, training, inplace, True, True)
