"""``Independent(base, n)``: reinterpret the rightmost ``n`` batch dims of ``base`` as event
dims, so ``log_prob`` sums over them (e.g. a diagonal Gaussian over vectors from a batch of
``Normal``s)."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """
        >>> import ember
        >>> from ember.distributions import Normal
        >>> d = Independent(Normal(ember.zeros(4, 3), ember.ones(4, 3)), 1)
        >>> d.batch_shape, d.event_shape
        ((4,), (3,))
    """

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if not isinstance(base_distribution, Distribution):
            raise TypeError("Independent: base_distribution must be a Distribution, got "
                            f"{type(base_distribution).__name__}")
        n = reinterpreted_batch_ndims
        if not isinstance(n, int) or n < 0 or n > len(base_distribution.batch_shape):
            raise ValueError(
                "Independent: reinterpreted_batch_ndims must be an int in [0, "
                f"len(base_distribution.batch_shape) = {len(base_distribution.batch_shape)}], "
                f"got {n!r}")
        shape = base_distribution.batch_shape + base_distribution.event_shape
        event_dim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = tuple(batch_shape)
        n = self.reinterpreted_batch_ndims
        new.base_dist = self.base_dist.expand(batch_shape + self.event_shape[:n])
        new.reinterpreted_batch_ndims = n
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        s = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(s, n) if n else s

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise ValueError("Independent: enumerating the cartesian product of the "
                             "reinterpreted dims is not supported; enumerate the base "
                             "distribution instead")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
