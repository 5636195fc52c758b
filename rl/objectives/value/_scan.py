"""The reverse-time linear scan behind the vectorised estimators::

    x_t = a_t + c_t * x_{t+1}        (x_T = 0), along dim -2 of [*batch, T, features]

Two implementations, both differentiable:

* ``masked_scan(a, breaks, k)`` for ``c_t = k * (1 - breaks_t)`` with a Python float ``k``
  (every estimator with scalar gamma/lambda): the compiled scan of ``ember.kernels`` (the
  ``"gae"`` kernel run with zero values and no bootstrap, which is exactly this recurrence),
  or its numpy reference (``EMBER_KERNELS=numpy``). Its gradient is the same scan run
  backwards in time, so it goes through the same kernel (and double backward works).
* ``reverse_linear_scan(a, c)`` for any coefficient tensor ``c`` (time-dependent gamma or
  lambda, gradients to them, cupy arrays, other dtypes): log2(T) rounds of vectorised ember
  ops (a Hillis-Steele scan of the affine maps ``x -> a_t + c_t x``).
"""
from __future__ import annotations

import numpy as np

import ember
from ember import kernels
from ember._tensor import Tensor
from ember.autograd.function import Function

__all__ = ["masked_scan", "reverse_linear_scan", "kernel_ok"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernel_ok(*tensors) -> bool:
    """True when the tensors are numpy float32/float64 arrays of one dtype (what the scan
    kernel takes)."""
    dt = tensors[0].array.dtype
    return dt in _FLOATS and all(
        isinstance(t.array, np.ndarray) and t.array.dtype == dt for t in tensors)


def _time_major(x):
    return np.ascontiguousarray(np.moveaxis(x, -2, 0))


def _batch_major(x):
    return np.ascontiguousarray(np.moveaxis(x, 0, -2))


class _MaskedReverseScan(Function):
    """``x_t = a_t + k * (~breaks_t) * x_{t+1}`` through the registry's ``"gae"`` scan."""

    @staticmethod
    def forward(ctx, a, breaks, k):
        at = _time_major(a.array)
        bt = _time_major(breaks)
        zeros = np.zeros_like(at)
        no_bootstrap = np.ones(bt.shape, np.bool_)
        x, _ = kernels.get("gae", at)(at, zeros, zeros, bt, no_bootstrap, k, 1.0)
        ctx.breaks, ctx.k = breaks, k
        return Tensor._make(_batch_major(x))

    @staticmethod
    def backward(ctx, grad):
        # d x_t / d a_s = prod_{t <= j < s} c_j, so grad_a_s = grad_s + c_{s-1} grad_a_{s-1}:
        # a scan forwards in time, i.e. this scan on time-reversed arrays with the breaks
        # shifted by one step.
        b = ctx.breaks
        shifted = np.concatenate([b[..., :-1, :][..., ::-1, :],
                                  np.ones_like(b[..., :1, :])], axis=-2)
        g = _MaskedReverseScan.apply(grad.flip(-2), shifted, ctx.k)
        return g.flip(-2), None, None


def _bool_array(x):
    a = x.array if isinstance(x, Tensor) else x
    return a if a.dtype == np.bool_ else a.astype(np.bool_)


def masked_scan(a, breaks, k):
    """``x_t = a_t + k * (1 - breaks_t) * x_{t+1}`` (``breaks``: bool tensor or array of
    ``a``'s shape; ``k``: a float)."""
    if kernel_ok(a) and a.shape[-2] > 0:
        return _MaskedReverseScan.apply(a, _bool_array(breaks), float(k))
    keep = ember.logical_not(breaks if isinstance(breaks, Tensor) else ember.as_tensor(breaks))
    return reverse_linear_scan(a, keep.to(a.dtype) * float(k))


def reverse_linear_scan(a, c):
    """``x_t = a_t + c_t * x_{t+1}`` along dim -2 (``x_T = 0``) in ceil(log2 T) rounds.

    After the round with offset ``d``, ``a_t`` sums the terms of steps ``t .. t+2d-1`` and
    ``c_t`` is the product of the coefficients over the same steps (clipped at T), so the
    next round joins blocks of twice the length."""
    a, c = ember.broadcast_tensors(a, c)
    T = a.shape[-2]
    d = 1
    while d < T:
        head = a[..., :T - d, :] + c[..., :T - d, :] * a[..., d:, :]
        a = ember.cat([head, a[..., T - d:, :]], -2)
        if 2 * d < T:
            c = ember.cat([c[..., :T - d, :] * c[..., d:, :], c[..., T - d:, :]], -2)
        d *= 2
    return a
