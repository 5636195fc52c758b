"""Distances and statistics torch has at top level: ``cdist``, ``pdist``, ``dist``, ``renorm``,
``cov``, ``corrcoef``, ``quantile``/``nanquantile``, ``trapezoid``/``trapz``,
``cumulative_trapezoid``, ``poisson``, and the nn.functional ops torch also exposes there
(``dropout``, ``alpha_dropout``, ``feature_alpha_dropout``, ``cosine_similarity``,
``pairwise_distance``, ``triplet_margin_loss``).

Each is a composition of differentiable ember ops (sort + gather + lerp for quantiles, a GEMM
for covariance, vector norms for renorm), so gradients and double gradients follow.

    >>> x = ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]])
    >>> ember.cov(x).shape, ember.quantile(x, 0.5, dim=1).shape
    ((2, 2), (2,))
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _backend as B
from .. import dtypes as D
from . import _util as U
from ._util import norm_dim, to_tensor, wrap


def _float(t):
    return t if t.dtype.kind in "fc" or t.dtype == D.bfloat16 else t._cast(D.get_default_dtype())


# --------------------------------------------------------------------------- distances

def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M)."""
    from ..nn.functional import cdist as _cdist

    return _cdist(x1, x2, p, compute_mode)


def pdist(input, p=2):
    """p-norm distances between all pairs of rows i < j of input (N, M)."""
    from ..nn.functional import pdist as _pdist

    return _pdist(input, p)


def dist(input, other, p=2):
    """The p-norm of ``input - other`` (broadcast) over all elements."""
    from ..linalg import vector_norm

    other = to_tensor(other, input)
    return vector_norm(_float(input - other), p)


def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` is scaled down to norm
    ``maxnorm`` (by maxnorm / (norm + 1e-7)); the others are unchanged."""
    from ..linalg import vector_norm
    from .index import where

    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = norm_dim(dim, input.dim())
    others = tuple(i for i in range(input.dim()) if i != d)
    nrm = vector_norm(input, p, others, keepdim=True)
    factor = where(nrm > maxnorm, maxnorm / (nrm + 1e-7), 1.0)
    return input * factor


# --------------------------------------------------------------------------- covariance

def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in the rows of ``input`` (variables x observations; a 1-d
    input is one variable), with integer frequency weights and float observation weights."""
    from .linalg import matmul

    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = _float(input)
    if x.dim() < 2:
        x = x.reshape(1, -1)
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.dim() > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {fweights.dim()} dimensions")
        if fweights.dtype.kind not in "iu":
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {D.name(fweights.dtype)} dtype")
        if fweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fweights.numel()} != {n_obs}")
        if bool((fweights.array < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if aweights.dim() > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {aweights.dim()} dimensions")
        if aweights.dtype.kind != "f":
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {D.name(aweights.dtype)} dtype")
        if aweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aweights.numel()} != {n_obs}")
        if bool((aweights.array < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is not None:
        w = w._cast(x.dtype) if w.dtype != x.dtype else w
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    else:
        w_sum = n_obs
        avg = x.sum(1) / n_obs
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    nf = float(norm_factor.item()) if isinstance(norm_factor, U.Tensor) else float(norm_factor)
    if nf <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", RuntimeWarning, stacklevel=2)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, U.Tensor) else 0.0
    xc = x - avg.unsqueeze(1)
    rhs = xc * w if w is not None else xc
    c = matmul(xc, rhs.transpose(0, 1).conj())
    if not isinstance(norm_factor, U.Tensor) and norm_factor == 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            c = c / wrap(B.namespace(c.array).asarray(0.0, dtype=c.dtype))
    else:
        c = c / norm_factor
    return c.squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c if c.is_complex() else c.clamp(-1.0, 1.0)


# --------------------------------------------------------------------------- quantiles

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    from .index import take_along_dim
    from .reduce import sort

    if interpolation not in _MODES:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    xp = B.namespace(input.array)
    scalar_q = not isinstance(q, U.Tensor)
    if scalar_q:
        qa = xp.asarray([float(q)], dtype=input.dtype)
    else:
        if q.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qa = q.array.reshape(-1)
    if input.numel() and qa.size and not bool(((qa >= 0) & (qa <= 1)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    nd = input.dim()
    if dim is None:
        x = input.reshape(-1)
        kept = (1,) * nd
    else:
        d = norm_dim(dim, max(nd, 1))
        x = input if nd else input.reshape(1)
        x = x.movedim(d, -1)
        kept = tuple(1 if i == d else s for i, s in enumerate(input.shape))
    n = x.shape[-1]
    if n == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    srt = sort(x, -1).values
    nan_mask = xp.isnan(srt.array)
    qq = qa.astype(input.dtype)
    if ignore_nan:
        cnt = (~nan_mask).sum(-1, keepdims=True).astype(input.dtype)
        ranks = qq * (cnt - 1)
        ranks = xp.where(ranks < 0, 0, ranks).astype(input.dtype)
    else:
        ranks = xp.broadcast_to(qq * (n - 1), srt.array.shape[:-1] + (qq.size,))
        ranks = xp.where(nan_mask.any(-1, keepdims=True), n - 1, ranks).astype(input.dtype)
    if interpolation == "lower":
        ranks = xp.floor(ranks)
    elif interpolation == "higher":
        ranks = xp.ceil(ranks)
    elif interpolation == "nearest":
        ranks = xp.round(ranks)
    below = ranks.astype(np.int64)
    out = take_along_dim(srt, wrap(below), -1)
    if interpolation in ("linear", "midpoint"):
        above = xp.ceil(ranks).astype(np.int64)
        w = xp.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        hi = take_along_dim(srt, wrap(above), -1)
        out = out + wrap(w.astype(input.dtype, copy=False)) * (hi - out)
    # (..., Q) -> (Q, ...) with the reduced dims restored or dropped
    out = out.movedim(-1, 0)
    if keepdim:
        shape = kept
    elif dim is None:
        shape = ()
    else:
        shape = tuple(s for i, s in enumerate(input.shape) if i != norm_dim(dim, max(nd, 1)))
    out = out.reshape((qa.size,) + shape)
    if scalar_q or q.dim() == 0:
        out = out.reshape(shape)
    return out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (a float or a 0-d/1-d tensor in [0, 1]) along ``dim`` (all
    elements when None); a row holding nan gives nan. A 1-d ``q`` adds a leading dim."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring nans (a row of only nans gives nan)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# --------------------------------------------------------------------------- integration

def _empty_integral(y, dim):
    from ..factories import zeros

    shape = tuple(s for i, s in enumerate(y.shape) if i != dim)
    return zeros(shape, dtype=_float(y).dtype, device=y.device)


def _x_steps(x, y, dim):
    """Differences of the sample points ``x`` laid out to broadcast against y's steps."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        xv = x.reshape(shape)
    elif x.dim() < y.dim():
        xv = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    else:
        xv = x
    n = xv.shape[dim]
    return xv.narrow(dim, 1, n - 1) - xv.narrow(dim, 0, n - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Integral of samples ``y`` along ``dim`` by the trapezoidal rule, at sample points
    ``x`` (a tensor) or with spacing ``dx`` (default 1)."""
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: cannot pass both x and dx")
    dim = norm_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return _empty_integral(y, dim)
    if isinstance(x, U.Tensor):
        if y.dtype == D.bool or x.dtype == D.bool:
            raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is "
                               "not supported")
        steps = _x_steps(x, y, dim)
        return ((steps * (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1))) / 2.0).sum(dim)
    if x is not None:  # torch.trapezoid(y, 0.5) passes the spacing positionally
        dx = x
    dx = 1 if dx is None else dx
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * dx


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoidal integral along ``dim`` (one element shorter than y there)."""
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: cannot pass both x and dx")
    dim = norm_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)._cast(_float(y).dtype)
    pair = y.narrow(dim, 0, n - 1) + y.narrow(dim, 1, n - 1)
    if isinstance(x, U.Tensor):
        steps = _x_steps(x, y, dim)
        return (steps / 2.0 * pair).cumsum(dim)
    if x is not None:
        dx = x
    dx = 1 if dx is None else dx
    return (pair * (dx / 2.0)).cumsum(dim)


# --------------------------------------------------------------------------- sampling

def poisson(input, generator=None):
    """Samples from Poisson distributions with rates ``input`` (same shape and dtype; no
    gradient, as in torch)."""
    from ..random import default_generator

    g = default_generator if generator is None else generator
    lam = input.array
    if lam.dtype.kind not in "f":
        raise RuntimeError(f"poisson is only implemented for floating point rates, got "
                           f"{D.name(lam.dtype)}")
    xp = B.namespace(lam)
    if bool((lam < 0).any()) or bool(xp.isnan(lam).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    cpu = B.to_device(lam, "cpu").astype(np.float64)
    r = g.numpy_generator().poisson(cpu).astype(lam.dtype)
    return wrap(B.to_device(r, input.device))


# --------------------------------------------------------------------------- nn.functional aliases

def dropout(input, p=0.5, train=True):
    from ..nn.functional import dropout as _dropout

    return _dropout(input, p, training=train)


def alpha_dropout(input, p=0.5, train=True):
    from ..nn.functional import alpha_dropout as _ad

    return _ad(input, p, training=train)


def feature_alpha_dropout(input, p=0.5, train=True):
    from ..nn.functional import feature_alpha_dropout as _fad

    return _fad(input, p, training=train)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from ..nn.functional import cosine_similarity as _cs

    return _cs(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from ..nn.functional import pairwise_distance as _pd

    return _pd(x1, x2, p, eps, keepdim)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction="mean"):
    """torch's top-level form: ``reduction`` may also be the enum value 0/1/2 (none/mean/sum)."""
    from ..nn.functional import triplet_margin_loss as _tml

    if isinstance(reduction, int):
        reduction = _REDUCTIONS[reduction]
    return _tml(anchor, positive, negative, margin=margin, p=p, eps=eps, swap=swap,
                reduction=reduction)


class StatsOps:
    """Tensor methods of this family (mixed into Tensor)."""

    __slots__ = ()

    def dist(self, other, p=2):
        return dist(self, other, p)

    def renorm(self, p, dim, maxnorm):
        return renorm(self, p, dim, maxnorm)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        return corrcoef(self)

    def renorm_(self, p, dim, maxnorm):
        from .elementwise import apply_inplace

        return apply_inplace(self, renorm, p, dim, maxnorm)


__all__ = ["cdist", "pdist", "dist", "renorm", "cov", "corrcoef", "quantile", "nanquantile",
           "trapezoid", "trapz", "cumulative_trapezoid", "poisson", "dropout", "alpha_dropout",
           "feature_alpha_dropout", "cosine_similarity", "pairwise_distance",
           "triplet_margin_loss"]
