"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm`` and
``clip_grads_with_norm_`` (PyTorch's semantics; the gradients change in place, under no_grad).

The total norm of gradients ``g_1..g_n`` is the ``norm_type``-norm of their per-tensor norms,
i.e. the norm of all gradients concatenated (``inf``: the largest ``|g|``). Clipping multiplies
every gradient by ``min(1, max_norm / (total_norm + 1e-6))``. Row-sparse gradients
(``ember.sparse.RowSparseGrad``) count with their coalesced rows.

    >>> import ember
    >>> w = ember.zeros(2, requires_grad=True)
    >>> w.grad = ember.tensor([3.0, 4.0])
    >>> float(clip_grad_norm_([w], max_norm=1.0))
    5.0
    >>> [round(x, 4) for x in w.grad.tolist()]
    [0.6, 0.8]
"""
from __future__ import annotations

import math
import types
import warnings

import numpy as np

from ... import _backend as B
from ..._tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors):
    if isinstance(tensors, Tensor) or getattr(tensors, "is_sparse", False):
        return [tensors]
    return list(tensors)


def _values(g):
    """The raw array whose norm is the gradient's norm (a sparse one's coalesced rows)."""
    if g.is_sparse:
        return g.coalesce().values
    return g.array


def _norm(a, p):
    """The ``p``-norm of all of ``a``'s elements, as a 0-d array of ``a``'s (real) dtype; 16-bit
    floats are summed in float32 (as PyTorch does), so their squares cannot overflow."""
    xp = B.namespace(a)
    if a.dtype.kind == "c":
        a = xp.abs(a)
    if a.dtype.itemsize < 4:
        return _norm(a.astype(np.float32), p).astype(a.dtype)
    if a.size == 0:
        if math.isinf(p):
            raise RuntimeError("cannot compute the infinity norm of an empty tensor: the "
                               "operation has no identity")
        return xp.zeros((), a.dtype)
    if p == 2.0:
        flat = a.reshape(-1)
        return xp.sqrt(xp.dot(flat, flat)).astype(a.dtype, copy=False)
    if p == math.inf:
        return xp.abs(a).max()
    if p == -math.inf:
        return xp.abs(a).min()
    if p == 0.0:
        return xp.asarray(xp.count_nonzero(a), a.dtype)
    if p == 1.0:
        return xp.abs(a).sum(dtype=a.dtype)
    s = (xp.abs(a) ** a.dtype.type(p)).sum(dtype=a.dtype)
    return s ** a.dtype.type(1.0 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of ``tensors`` (gradients) taken together, a 0-d Tensor on the
    first tensor's device.

    Args:
        tensors: a Tensor or an iterable of Tensors (or row-sparse gradients).
        norm_type: ``p`` of the p-norm; ``inf`` for the max-norm.
        error_if_nonfinite: raise if the total is nan or inf.
        foreach: accepted for PyTorch compatibility (no effect).
    """
    tensors = _as_list(tensors)
    p = float(norm_type)
    if not tensors:
        return Tensor._make(np.zeros((), np.float32))
    first = B.device_of(_values(tensors[0]))
    norms = [B.to_device(_norm(_values(t), p), first) for t in tensors]
    xp = B.namespace(norms[0])
    total = _norm(xp.stack(norms), p)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {p} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite "
            "norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``,
    in place, given the ``total_norm`` that ``get_total_norm`` computed."""
    params = _as_list(parameters)
    grads = [(p, p.grad) for p in params if p.grad is not None]
    if not grads:
        return
    tn = total_norm.array if isinstance(total_norm, Tensor) else np.asarray(total_norm,
                                                                           np.float32)
    xp = B.namespace(tn)
    coef = xp.minimum(float(max_norm) / (tn + tn.dtype.type(1e-6)), tn.dtype.type(1.0))
    for p, g in grads:
        if g.is_sparse:
            p.grad = g * float(coef)
            continue
        c = coef if B.namespace(g.array) is xp else B.to_device(coef, g.device)
        g.array *= c
        g._bump()


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradients of ``parameters`` so that their total ``norm_type``-norm is at most
    ``max_norm``; returns the total norm before clipping (a 0-d Tensor)."""
    if isinstance(parameters, Tensor):
        params = [parameters]
    else:
        gen = isinstance(parameters, types.GeneratorType)
        params = list(parameters)
        if gen and not params:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=2)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`ember.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in place."""
    v = float(clip_value)
    for p in _as_list(parameters):
        g = p.grad
        if g is None:
            continue
        if g.is_sparse:
            xp = B.namespace(g.values)
            p.grad = type(g)(g.indices, xp.clip(g.values, -v, v), g.shape, g.is_coalesced())
            continue
        xp = B.namespace(g.array)
        xp.clip(g.array, -v, v, out=g.array)
        g._bump()
