"""``Distribution``: the base class of every probability distribution.

Shapes: a distribution holds a batch of independent distributions (``batch_shape``), each
over points of ``event_shape``; ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape`` and ``log_prob(value)`` returns the broadcast
of ``value.shape[:-len(event_shape)]`` with ``batch_shape``.

    >>> import ember
    >>> from ember.distributions import Normal
    >>> d = Normal(ember.zeros(3), ember.ones(3))      # batch_shape (3,), event_shape ()
    >>> d.sample((5,)).shape
    (5, 3)

Validation (on by default, as Python's ``assert``; off under ``python -O``): parameters are
checked against ``arg_constraints`` when the distribution is built, values against
``support`` in ``log_prob``/``cdf``. Turn it off per instance with ``validate_args=False``
or for all with ``Distribution.set_default_validate_args(False)``.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..autograd import no_grad
from . import constraints
from .utils import lazy_property, size

__all__ = ["Distribution"]


class Distribution:
    """Abstract base: subclasses define ``arg_constraints``, ``support``, ``log_prob`` and
    whichever of ``rsample``/``sample``, ``mean``, ``variance``, ``entropy``, ``cdf``,
    ``icdf`` and ``expand`` they have."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution built afterwards."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = bool(value)

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = size(batch_shape)
        self._event_shape = size(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            warnings.warn(f"{type(self).__name__} does not define arg_constraints; set "
                          "arg_constraints = {} or pass validate_args=False", stacklevel=3)
            return
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue  # computed lazily from another parameter, which is checked instead
            value = getattr(self, param)
            if not isinstance(value, Tensor):
                continue
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{value}")

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return size(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None):
        """A new distribution of the same kind with the parameters expanded (no copy) to
        ``batch_shape``; arguments are not re-validated."""
        raise NotImplementedError(f"{type(self).__name__} must define expand(batch_shape)")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ is not cls.__init__:
            raise NotImplementedError(
                f"subclass {type(self).__name__} of {cls.__name__} defines its own __init__, "
                "so it must also define expand()")
        return type(self).__new__(type(self)) if _instance is None else _instance

    # ------------------------------------------------------------------ declared by subclasses
    @property
    def arg_constraints(self):
        """Parameter name -> the ``Constraint`` it must satisfy."""
        raise NotImplementedError(f"{type(self).__name__} must define arg_constraints")

    @property
    def support(self):
        """The ``Constraint`` holding this distribution's values."""
        raise NotImplementedError(f"{type(self).__name__} must define support")

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not define mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not define mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not define variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample of shape ``sample_shape + batch_shape + event_shape``, outside autograd."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterised sampler (has_rsample is False); "
            "use sample()")

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} must define log_prob(value)")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not define cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not define icdf")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not define entropy")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} has no enumerable support")

    def perplexity(self):
        return self.entropy().exp()

    # ------------------------------------------------------------------ validation
    def _validate_sample(self, value):
        if not isinstance(value, Tensor):
            raise ValueError(f"the value passed to {type(self).__name__}.log_prob/cdf must be "
                             f"a Tensor, got {type(value).__name__}")
        shape = tuple(value.shape)
        ev = self._event_shape
        if shape[len(shape) - len(ev):] != ev or len(shape) < len(ev):
            raise ValueError(f"the rightmost dims of value must match event_shape: value shape "
                             f"{shape} vs event_shape {ev}")
        want = self._batch_shape + ev
        for i, j in zip(reversed(shape), reversed(want)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"value of shape {shape} does not broadcast with "
                                 f"batch_shape + event_shape {want}")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self).__name__} does not define support, so values are not "
                          "validated; pass validate_args=False", stacklevel=3)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be within "
                f"the support ({support!r}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}")

    def __repr__(self):
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        parts = []
        for k in names:
            v = self.__dict__[k]
            parts.append(f"{k}: {v.item() if v.numel() == 1 else tuple(v.shape)}")
        return f"{type(self).__name__}({', '.join(parts)})"
