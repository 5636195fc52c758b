"""``Gamma(concentration, rate)`` with reparameterised sampling.

``rsample`` draws x ~ Gamma(alpha, 1) and divides by the rate. Its gradient with respect to
alpha is the implicit reparameterisation gradient: holding the sample's CDF level u = P(alpha, x)
fixed, dx/dalpha = -(dP/dalpha) / pdf(x), computed in ``_special.standard_gamma_grad_array``
from the series / continued fraction of the incomplete gamma function and their exact
alpha-derivatives.
"""
from __future__ import annotations

import numpy as np

import ember
from .. import _backend as B
from .._tensor import Tensor
from ..autograd import Function
from ..random import _gen
from . import constraints
from ._special import digamma, gammainc, lgamma, standard_gamma_grad_array
from .distribution import Distribution
from .utils import broadcast_all, finfo, is_number, xlogy

__all__ = ["Gamma", "standard_gamma"]


def _draw_standard_gamma(alpha, dtype, device):
    """Gamma(alpha, 1) samples (an array of alpha's shape) from ember's default generator."""
    rng = _gen(None, device)
    dt = np.float32 if np.dtype(dtype) != np.float64 else np.float64
    out = rng.standard_gamma(alpha.astype(dt, copy=False), dtype=dt)
    return B.namespace(alpha).asarray(out, dtype=dt).reshape(alpha.shape)  # 0-d: a scalar


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        a = alpha.array
        x = _draw_standard_gamma(a, alpha.dtype, alpha.device)
        x = B.namespace(x).maximum(x, finfo(x.dtype).tiny).astype(alpha.dtype, copy=False)
        ctx.sample = x
        ctx.save_for_backward(alpha)
        return Tensor._make(x)

    @staticmethod
    def backward(ctx, g):
        (alpha,) = ctx.saved_tensors
        d = standard_gamma_grad_array(ctx.sample, alpha.array).astype(alpha.dtype, copy=False)
        return g * Tensor._make(d)


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples, one per element of ``alpha``, differentiable in ``alpha``."""
    return _StandardGamma.apply(alpha)


class Gamma(Distribution):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``:
    density rate^c x^(c-1) exp(-rate x) / Gamma(c) on x >= 0.

        >>> import ember
        >>> c = ember.tensor([0.5, 3.0], requires_grad=True)
        >>> Gamma(c, 2.0).rsample((10,)).mean().backward()   # c.grad by implicit reparam.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch = () if is_number(concentration) and is_number(rate) else \
            tuple(self.concentration.shape)
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return x.clamp(min=float(finfo(x.dtype).tiny))

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return xlogy(c, r) + xlogy(c - 1, value) - r * value - lgamma(c)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, x = ember.broadcast_tensors(self.concentration, self.rate * value)
        return gammainc(c, x)
