"""``ember.special``: the ``torch.special`` namespace (gamma family, error functions, the
normal distribution, Bessel functions, log-space helpers, softmax family).

    >>> import ember
    >>> ember.special.gammaln(ember.tensor([4.0]))   # log(3!)
    tensor([1.7918])
"""
from __future__ import annotations

from .ops import elementwise as _E
from .ops import reduce as _R
from .ops.special import (digamma, entr, erfc, erfinv, expit, i0, i0e, i1, i1e, log_ndtr,
                          logit, multigammaln, ndtr, ndtri, polygamma, sinc, xlog1py, zeta)
from .ops.special import lgamma as gammaln

psi = digamma
erf = _E.erf
xlogy = _E.xlogy
exp2 = _E.exp2
expm1 = _E.expm1
log1p = _E.log1p
round = _E.round


def logsumexp(input, dim, keepdim=False):
    return _R.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _R.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _R.log_softmax(input, dim, dtype=dtype)


__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfinv",
           "expit", "logit", "xlogy", "xlog1py", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri",
           "log_ndtr", "sinc", "entr", "logsumexp", "softmax", "log_softmax", "zeta", "exp2",
           "expm1", "log1p", "round"]
