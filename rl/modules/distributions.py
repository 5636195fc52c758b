"""Distributions for RL policies: ``TanhNormal``, a Normal squashed by tanh into
``[low, high]`` (the SAC policy), with torchrl's arguments.

    >>> import ember
    >>> from ember.rl.modules import TanhNormal
    >>> d = TanhNormal(ember.zeros(4, 2), ember.ones(4, 2), low=-2.0, high=2.0)
    >>> a = d.rsample()
    >>> a.shape, d.log_prob(a).shape              # the last dim is the event dim
    ((4, 2), (4,))
    >>> d.deterministic_sample.abs().max().item()  # tanh(loc) scaled: 0 here
    0.0
"""
from __future__ import annotations

import numpy as np

import ember
from ember.distributions import (AffineTransform, ComposeTransform, Independent, Normal,
                                 TanhTransform, TransformedDistribution, constraints)

__all__ = ["TanhNormal", "SafeTanhTransform"]


def _eps(dtype):
    return float(np.finfo(np.dtype(dtype)).resolution)


def _clamp_keep_grad(x, lo, hi):
    """``x`` clamped to [lo, hi] in value, with the gradient of ``x`` itself."""
    return x + (x.clamp(lo, hi) - x).detach()


class SafeTanhTransform(TanhTransform):
    """tanh whose outputs (and the inputs of its inverse) stay ``resolution`` away from
    +-1, so ``log_prob`` stays finite for actions at the bounds; the clamp keeps the
    gradient of the unclamped expression."""

    def _call(self, x):
        e = _eps(x.dtype)
        return _clamp_keep_grad(x.tanh(), -1.0 + e, 1.0 - e)

    def _inverse(self, y):
        e = _eps(y.dtype)
        return _clamp_keep_grad(y, -1.0 + e, 1.0 - e).atanh()


class TanhNormal(TransformedDistribution):
    """``low + (high - low) * (tanh(x) + 1) / 2`` with ``x ~ Normal(loc, scale)``.

    Args:
        loc, scale: the Normal's parameters (``scale > 0``).
        upscale: with ``tanh_loc=True``, ``loc`` is first mapped to
            ``upscale * tanh(loc / upscale)``.
        low, high: the bounds (numbers or tensors), ``high > low``.
        event_dims: trailing dims that form one event (default ``min(1, loc.ndim)``).
        tanh_loc: see ``upscale``.
        safe_tanh: keep samples and scored values inside the open interval (see
            ``SafeTanhTransform``).

    ``deterministic_sample`` (and ``mode``) is the squashed ``loc``. There is no closed-form
    mean (``ProbabilisticTensorDictModule`` averages samples for ``MEAN``).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, upscale=5.0, low=-1.0, high=1.0, event_dims=None,
                 tanh_loc=False, safe_tanh=True):
        if not isinstance(loc, ember.Tensor):
            loc = ember.as_tensor(loc, dtype=ember.get_default_dtype())
        if not isinstance(scale, ember.Tensor):
            scale = ember.as_tensor(scale, dtype=loc.dtype, device=loc.device)
        if bool((ember.as_tensor(high) <= ember.as_tensor(low)).any()):
            raise ValueError(f"TanhNormal: high ({high}) must be greater than low ({low})")
        if event_dims is None:
            event_dims = min(1, loc.ndim)
        self.upscale, self.tanh_loc = upscale, tanh_loc
        self.low, self.high = low, high
        self._event_dims = event_dims
        if tanh_loc:
            loc = (loc / upscale).tanh() * upscale
        self.loc, self.scale = loc, scale
        t = SafeTanhTransform(cache_size=1) if safe_tanh else TanhTransform(cache_size=1)
        trivial = _is(low, -1.0) and _is(high, 1.0)
        transforms = [t] if trivial else [t, AffineTransform((high + low) / 2,
                                                             (high - low) / 2)]
        base = Normal(loc, scale)
        if event_dims:
            base = Independent(base, event_dims)
        super().__init__(base, transforms)

    @property
    def deterministic_sample(self):
        return ComposeTransform(self.transforms)(self.loc)

    @property
    def mode(self):
        return self.deterministic_sample

    @property
    def support(self):
        return constraints.interval(self.low, self.high)


def _is(v, x):
    return not isinstance(v, ember.Tensor) and float(v) == x
