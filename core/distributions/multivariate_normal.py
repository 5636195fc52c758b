"""``MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)``.

Everything runs through the lower Cholesky factor L of the covariance (``scale_tril``):
samples are ``loc + L eps``, the Mahalanobis term is ``|L^-1 (x - loc)|^2`` and
``log det Sigma = 2 sum log diag L``. L keeps its own (unbroadcast) batch shape, so a batch of
means sharing one covariance factors it once.
"""
from __future__ import annotations

import math

import ember
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def _tril_inverse(L):
    """L^-1 for lower-triangular L, reading only its lower triangle (as a triangular solve
    does, so the strict upper part gets no gradient)."""
    return ember.linalg.inv(L.tril())


def _batch_mahalanobis(L, x):
    """|L^-1 x|^2 over the last dim; L is (..., n, n), x is (..., n), batch dims broadcast."""
    y = ember.matmul(_tril_inverse(L), x.unsqueeze(-1)).squeeze(-1)
    return y.pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1 without forming P^-1: with J the flip of both axes,
    chol(J P J) = J U^T J where P^-1 = L L^T and L = (J chol(J P J) J)^-T."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.flip(Lf, (-2, -1)).mT
    return _tril_inverse(L_inv)


def _matrix_arg(name, m):
    if not isinstance(m, Tensor):
        raise TypeError(f"MultivariateNormal: {name} must be a Tensor, got {type(m).__name__}")
    if m.dim() < 2:
        raise ValueError(f"MultivariateNormal: {name} must be at least two-dimensional (..., n, "
                         f"n), got shape {tuple(m.shape)}")
    return m


class MultivariateNormal(Distribution):
    """Gaussian over vectors of size n (event_shape ``(n,)``), given by ``loc`` and exactly one
    of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (lower-triangular with a
    positive diagonal), batch dims broadcast.

        >>> import ember
        >>> d = MultivariateNormal(ember.zeros(2), covariance_matrix=ember.eye(2))
        >>> d.rsample((4,)).shape
        (4, 2)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if not isinstance(loc, Tensor):
            raise TypeError(f"MultivariateNormal: loc must be a Tensor, got {type(loc).__name__}")
        if loc.dim() < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional, got a "
                             "0-d tensor")
        given = [(k, v) for k, v in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: give exactly one of covariance_matrix, "
                             f"precision_matrix or scale_tril (got {[k for k, _ in given]})")
        name, m = given[0]
        _matrix_arg(name, m)
        n = loc.shape[-1]
        if tuple(m.shape[-2:]) != (n, n):
            raise ValueError(f"MultivariateNormal: {name} must be ({n}, {n}) to match loc's last "
                             f"dim, got shape {tuple(m.shape)}")
        batch = ember.broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, m.expand(batch + (n, n)))
        self.loc = loc.expand(batch + (n,))
        super().__init__(batch, (n,), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = m
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(m)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(m)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        mat = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for k in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if k in self.__dict__:
                setattr(new, k, self.__dict__[k].expand(mat))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _mat_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._mat_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._mat_shape())

    @lazy_property
    def precision_matrix(self):
        Li = _tril_inverse(self._unbroadcasted_scale_tril)
        return ember.matmul(Li.mT, Li).expand(self._mat_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + ember.matmul(self._unbroadcasted_scale_tril,
                                       eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        H = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H.expand(self._batch_shape) if self._batch_shape else H
