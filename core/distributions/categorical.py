"""``Categorical`` (class indices) and ``OneHotCategorical`` (one-hot vectors) over K
classes, given by ``probs`` (non-negative, normalised over the last dim) or ``logits``
(unnormalised log-probabilities)."""
from __future__ import annotations

import math

import numpy as np

import ember
from .. import _backend as B
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_param(cls, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError(f"{cls}: give exactly one of probs or logits")
    name, p = ("probs", probs) if probs is not None else ("logits", logits)
    if not isinstance(p, Tensor):
        raise TypeError(f"{cls}: {name} must be a Tensor, got {type(p).__name__}")
    if p.dim() < 1:
        raise ValueError(f"{cls}: {name} must be at least one-dimensional (the last dim holds "
                         f"the classes), got shape {tuple(p.shape)}")
    return name, p


class Categorical(Distribution):
    """Samples are class indices in ``[0, K)``; batch_shape is ``param.shape[:-1]``.

        >>> import ember
        >>> d = Categorical(logits=ember.zeros(2, 5))
        >>> d.sample((3,)).shape, d.log_prob(ember.tensor([1, 4])).shape
        ((3, 2), (2,))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, p = _one_param("Categorical", probs, logits)
        if name == "probs":
            self.probs = p / p.sum(-1, keepdim=True)
            self._param = self.probs
        else:
            self.logits = p - p.logsumexp(-1, keepdim=True)
            self._param = self.logits
        self._num_events = p.shape[-1]
        super().__init__(tuple(p.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return tuple(self._param.shape)

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self._param.dtype,
                          device=self._param.device)

    variance = mean

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        """Inverse-CDF sampling of all rows at once: one uniform per draw, located in the
        row's cumulative probabilities (offset by the row number so one sorted search serves
        every row)."""
        shape = self._extended_shape(sample_shape)
        k = self._num_events
        p = self.probs.detach().array.reshape(-1, k)
        xp = B.namespace(p)
        rows = p.shape[0]
        n = int(np.prod(shape)) // max(rows, 1) if rows else 0
        c = xp.cumsum(p.astype(np.float64), axis=-1)
        c = c / c[:, -1:]  # the last entry is exactly 1
        off = xp.arange(rows, dtype=np.float64)[:, None]
        u = 1.0 - ember.rand((n, rows), dtype=ember.float64, device=self._param.device).array
        pos = xp.searchsorted((c + off).ravel(), (u + off[:, 0]).ravel(), side="left")
        idx = pos.reshape(n, rows) - (xp.arange(rows) * k)[None, :]
        idx = xp.minimum(idx, k - 1).astype(np.int64)
        return Tensor._make(idx.reshape(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, logp = ember.broadcast_tensors(value, self.logits)
        return logp.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=float(finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """Like ``Categorical`` but samples are one-hot vectors: event_shape is ``(K,)``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = tuple(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _check_parameters(self):
        pass  # the inner Categorical checked them

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return ember.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        p = self._categorical.probs
        return p * (1 - p)

    def sample(self, sample_shape=()):
        idx = self._categorical.sample(sample_shape)
        return ember.nn.functional.one_hot(idx, self._categorical._num_events).to(
            self._param.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + self.batch_shape + (n,)) if expand else values

    def __repr__(self):
        return f"{type(self).__name__}({self._categorical!r})"


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot samples whose gradient is that of the probabilities (straight-through)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
