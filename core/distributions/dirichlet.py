"""``Dirichlet(concentration)`` on the simplex and ``Beta(concentration1, concentration0)``
on [0, 1] (a two-class Dirichlet), both with reparameterised sampling from Gamma draws:
x_i = g_i / sum_j g_j with g_i ~ Gamma(alpha_i, 1), whose gradient combines the implicit
gradients dg_i/dalpha_i of the Gamma draws (see ``gamma.py``)."""
from __future__ import annotations

import numpy as np

import ember
from .. import _backend as B
from .._tensor import Tensor
from ..autograd import Function
from . import constraints
from ._special import digamma, lgamma, standard_gamma_grad_array
from .distribution import Distribution
from .gamma import _draw_standard_gamma
from .utils import broadcast_all, finfo, is_number, xlogy

__all__ = ["Dirichlet", "Beta"]


class _DirichletSample(Function):
    """Forward: Gamma draws (float64) normalised over the last dim, clamped into the open
    simplex of the output dtype. Backward: with w_j = (dg_j/dalpha_j) / sum(g),
    grad alpha_j = w_j (v_j - sum_i v_i x_i)."""

    @staticmethod
    def forward(ctx, alpha):
        a = alpha.array
        xp = B.namespace(a)
        g = _draw_standard_gamma(a, np.float64, alpha.device)
        total = g.sum(-1, keepdims=True)
        x = g / total
        fi = finfo(alpha.dtype)
        x = xp.clip(x, fi.tiny, np.nextafter(fi.dtype.type(1), fi.dtype.type(0)))
        ctx.gamma, ctx.total = g, total
        out = Tensor._make(x.astype(alpha.dtype, copy=False))
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, v):
        alpha, x = ctx.saved_tensors
        w = standard_gamma_grad_array(ctx.gamma, alpha.array) / ctx.total
        w = Tensor._make(w.astype(alpha.dtype, copy=False))
        return w * (v - (v * x).sum(-1, keepdim=True))


class Dirichlet(Distribution):
    """Dirichlet over the simplex of the last dim of ``concentration`` (event_shape
    ``(K,)``, batch_shape ``concentration.shape[:-1]``).

        >>> import ember
        >>> d = Dirichlet(ember.tensor([[1.0, 2.0, 3.0]]))
        >>> d.rsample((5,)).shape
        (5, 1, 3)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if not isinstance(concentration, Tensor):
            raise TypeError("Dirichlet: concentration must be a Tensor, got "
                            f"{type(concentration).__name__}")
        if concentration.dim() < 1:
            raise ValueError("Dirichlet: concentration must be at least one-dimensional (the "
                             f"last dim is the event), got shape {tuple(concentration.shape)}")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _DirichletSample.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        with np.errstate(invalid="ignore"):  # 0/0: no interior mode (all alpha <= 1)
            mode = cm1 / cm1.sum(-1, keepdim=True)
        # every alpha < 1: the density is unbounded at the vertices; like torch, the first
        # vertex found by argmax (argmax of an all-NaN row is 0)
        corner = ember.nn.functional.one_hot(mode.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        allsmall = (self.concentration < 1).all(-1, keepdim=True)
        return ember.where(allsmall, corner, mode)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - \
            ((c - 1.0) * digamma(c)).sum(-1)


class Beta(Distribution):
    """Beta distribution on [0, 1], density x^(c1-1) (1-x)^(c0-1) / B(c1, c0).

        >>> import ember
        >>> Beta(ember.tensor([0.5, 2.0]), 3.0).mean
        tensor([0.1429, 0.4000])
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if is_number(concentration1) and is_number(concentration0):
            both = ember.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = ember.stack([c1, c0], -1)
        # parameters are checked here under their own names, not the inner Dirichlet's
        self._dirichlet = Dirichlet(both, validate_args=False)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = tuple(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self._dirichlet.concentration.dtype)
        return self._dirichlet.log_prob(ember.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    def __repr__(self):
        return (f"Beta(concentration1: {_short(self.concentration1)}, "
                f"concentration0: {_short(self.concentration0)})")


def _short(t):
    return t.item() if t.numel() == 1 else tuple(t.shape)
