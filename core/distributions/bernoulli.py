"""``Bernoulli``: 0/1 outcomes with probability ``probs`` of a 1 (or log-odds ``logits``)."""
from __future__ import annotations

import math

import ember
from ..autograd import no_grad
from . import constraints
from .distribution import Distribution
from .utils import (broadcast_all, is_number, lazy_property, logits_to_probs, probs_to_logits,
                    softplus, uniform)

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """Bernoulli distribution; samples are 0.0/1.0 in the parameter's dtype.

        >>> import ember
        >>> d = Bernoulli(logits=ember.tensor([0.0, 2.0]))
        >>> d.log_prob(ember.tensor([1.0, 0.0])).shape
        (2,)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: give exactly one of probs or logits")
        if probs is not None:
            scalar = is_number(probs)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            scalar = is_number(logits)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(() if scalar else tuple(self._param.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        m = (p >= 0.5).to(p.dtype)
        return ember.where(p == 0.5, math.nan, m)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs.expand(shape)
            return (uniform(shape, p) < p).to(p.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return value * logits - softplus(logits)

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = ember.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values
