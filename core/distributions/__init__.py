"""``ember.distributions``: probability distributions with sampling (reparameterised where
defined), log-densities, moments, entropies and KL divergences, differentiable in their
parameters; the surface of ``torch.distributions`` for the families below.

    >>> import ember
    >>> from ember.distributions import Normal, kl_divergence
    >>> loc = ember.zeros(3, requires_grad=True)
    >>> d = Normal(loc, ember.ones(3))
    >>> x = d.rsample((8,))                    # (8, 3), differentiable in loc
    >>> d.log_prob(x).sum().backward()
    >>> kl_divergence(d, Normal(1.0, 2.0)).shape
    (3,)
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform,
                         TanhTransform, Transform, identity_transform)
from .uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Categorical", "ComposeTransform", "Dirichlet",
    "Distribution", "ExpTransform", "Gamma", "Independent", "MultivariateNormal", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "SigmoidTransform", "TanhTransform",
    "Transform", "TransformedDistribution", "Uniform", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transforms",
]
