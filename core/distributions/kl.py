"""``kl_divergence(p, q)`` = E_p[log p(x) - log q(x)], batched over batch_shape, and the
``register_kl`` decorator that adds a closed form for a pair of distribution types.

Lookup finds the most specific registered pair for ``(type(p), type(q))`` by subclass order;
when the best match for p and the best match for q disagree, it warns and takes the first.

    >>> import ember
    >>> from ember.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
"""
from __future__ import annotations

import math
import warnings

import ember
from ._special import digamma, lgamma
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .gamma import Gamma
from .independent import Independent
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _tril_inverse
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import softplus, sum_rightmost, xlogy

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}  # (type_p, type_q) -> fn: the registrations
_KL_MEMO = {}      # (type(p), type(q)) -> fn or None: resolved lookups


def register_kl(type_p, type_q):
    """Register ``fn(p, q)`` as KL(p || q) for p of ``type_p`` and q of ``type_q``
    (subclasses included unless a more specific pair is registered)::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q):
            ...
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"register_kl: {name} must be a Distribution subclass, got {t!r}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMO.clear()
        return fn
    return decorator


def _depth_key(order_first, cp, cq, pair):
    """Sort key of a registered pair: its distance from (cp, cq) in the MROs, p first (or q
    first)."""
    dp = cp.__mro__.index(pair[0])
    dq = cq.__mro__.index(pair[1])
    return (dp, dq) if order_first == "p" else (dq, dp)


def _dispatch(cp, cq):
    matches = [pair for pair in _KL_REGISTRY if issubclass(cp, pair[0]) and issubclass(cq, pair[1])]
    if not matches:
        return None
    left = min(matches, key=lambda m: _depth_key("p", cp, cq, m))
    right = min(matches, key=lambda m: _depth_key("q", cp, cq, m))
    if _KL_REGISTRY[left] is not _KL_REGISTRY[right]:
        warnings.warn(f"ambiguous kl_divergence({cp.__name__}, {cq.__name__}): register_kl("
                      f"{left[0].__name__}, {right[1].__name__}) to choose", RuntimeWarning,
                      stacklevel=3)
    return _KL_REGISTRY[left]


def kl_divergence(p, q):
    """KL(p || q), a tensor of shape ``batch_shape``. Raises ``NotImplementedError`` naming
    the pair when no closed form is registered for it."""
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"no KL(p || q) is registered for p of type {type(p).__name__}"
                                  f" and q of type {type(q).__name__}; add one with "
                                  "@register_kl")
    return fn(p, q)


def _inf_like(t):
    return ember.full_like(t, math.inf)


def _x_log_x(t):
    return xlogy(t, t)


# --------------------------------------------------------------------------- same family

@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = ember.where(p.probs == 0, 0.0, ember.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = ember.where(p.probs == 1, 0.0, ember.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), math.inf, t)
    t = ember.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp = p.concentration1 + p.concentration0
    sq = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sp)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sq)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sq - sp) * digamma(sp)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sp = p.concentration.sum(-1)
    sq = q.concentration.sum(-1)
    t1 = lgamma(sp) - lgamma(sq)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sp).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return ember.where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL between MultivariateNormals of different event shapes "
                         f"{p.event_shape} and {q.event_shape} is undefined")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - \
        Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    term2 = ember.matmul(_tril_inverse(Lq), Lp).pow(2).sum((-2, -1))  # tr(Sq^-1 Sp)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError("KL between TransformedDistributions is only defined here "
                                  "for equal transforms")
    if p.event_shape != q.event_shape:
        raise NotImplementedError("KL between TransformedDistributions is only defined here "
                                  "for equal event shapes")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents is only defined here for equal "
                                  "reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# --------------------------------------------------------------------------- cross pairs

@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    t1 = -p.entropy()
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (digamma(p.concentration1) -
                                  digamma(p.concentration1 + p.concentration0))
    t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
    return t1 + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    e = p.concentration1 / (p.concentration1 + p.concentration0)
    var_q = q.scale.pow(2)
    t1 = -p.entropy()
    t2 = 0.5 * (var_q * 2 * math.pi).log()
    t3 = (e * (1 - e) / (p.concentration1 + p.concentration0 + 1) + e.pow(2)) * 0.5
    t4 = q.loc * e
    t5 = q.loc.pow(2) * 0.5
    return t1 + t2 + (t3 - t4 + t5) / var_q


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return ember.where((q.low > 0) | (q.high < 1), math.inf, result)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var_q = q.scale.pow(2)
    rate2 = p.rate.pow(2)
    c = p.concentration
    t1 = 0.5 * (rate2 * var_q * 2 * math.pi).log() - c - lgamma(c)
    t2 = 0.5 * (c.pow(2) + c) / rate2
    t3 = q.loc * c / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (c - 1) * digamma(c) + (t2 - t3 + t4) / var_q


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p, q):
    return _inf_like(p.concentration)


@register_kl(Normal, Beta)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p, q):
    return _inf_like(p.loc)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t1 = width.log()
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = lgamma(q.concentration1) + lgamma(q.concentration0) - \
        lgamma(q.concentration1 + q.concentration0)
    result = t3 + t4 - t1 - t2
    return ember.where((p.high > 1) | (p.low < 0), math.inf, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t1 = width.log()
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    return ember.where(p.low < 0, math.inf, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)
