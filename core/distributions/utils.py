"""Helpers shared by the distributions: parameter broadcasting, probs <-> logits, the
lazily computed parameter property, and summing over the rightmost dims."""
from __future__ import annotations

import functools

import numpy as np

import ember
from .._tensor import Tensor
from ..autograd import enable_grad

euler_constant = 0.57721566490153286061  # Euler-Mascheroni

_Number = (int, float)


def is_number(v):
    return isinstance(v, _Number) and not isinstance(v, bool) or isinstance(v, np.floating)


def broadcast_all(*values):
    """Tensors and numbers -> tensors of one broadcast shape. Numbers take the dtype and device
    of the first tensor among ``values`` (the default float dtype when there is none)."""
    for v in values:
        if not isinstance(v, Tensor) and not is_number(v):
            raise ValueError("expected every parameter to be a Tensor or a number, got "
                             f"{type(v).__name__}")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is None:
        out = [ember.tensor(float(v)) for v in values]
    else:
        dt = like.dtype if like.dtype.kind == "f" else ember.get_default_dtype()
        out = [v if isinstance(v, Tensor) else ember.tensor(float(v), dtype=dt, device=like.device)
               for v in values]
    if len(out) == 1:
        return (out[0],)
    shapes = {tuple(t.shape) for t in out}
    if len(shapes) == 1:
        return tuple(out)
    return tuple(ember.broadcast_tensors(*out))


def finfo(dtype):
    return np.finfo(np.dtype(dtype))


def clamp_probs(probs):
    """Probabilities clamped to [eps, 1 - eps] of their dtype."""
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log-odds (``is_binary``) or log-probabilities of (clamped) probabilities."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


def logits_to_probs(logits, is_binary=False):
    """sigmoid (``is_binary``) or softmax over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def sum_rightmost(value, dim):
    """Sum over the rightmost ``dim`` dims (``dim == 0``: unchanged)."""
    if dim == 0:
        return value
    if not isinstance(value, Tensor):
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def xlogy(x, y):
    """x * log(y), 0 where x == 0 and y == 0; d/dx is log(y) also at x == 0 (ember.xlogy
    masks the output there, which zeroes that gradient)."""
    both_zero = (x == 0) & (y == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x * ember.where(both_zero, 1.0, y).log()


def softplus(x):
    """log(1 + exp(x)), exact in both tails (no linear cut-off), gradient sigmoid(x)."""
    return ember.nn.functional.softplus(x, threshold=float("inf"))


class lazy_property:
    """A property computed on first access (with grad recording on) and then stored on the
    instance; seen on the class, it also reads as a plain property (for ``arg_constraints``
    that are only set lazily, e.g. ``probs`` of a Categorical made from logits)."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.fn(instance)
        setattr(instance, self.fn.__name__, value)
        return value


def size(shape):
    """A shape argument (tuple, list, torch-style Size or int) as a tuple of ints."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"expected a shape (a tuple of ints), got {shape!r}") from None


def standard_normal(shape, like):
    """Standard normal samples of ``shape`` with ``like``'s dtype and device (drawn from
    ember's default generator)."""
    return ember.randn(tuple(shape), dtype=like.dtype, device=like.device)


def uniform(shape, like):
    """Uniform samples in [0, 1) of ``shape`` with ``like``'s dtype and device."""
    return ember.rand(tuple(shape), dtype=like.dtype, device=like.device)
