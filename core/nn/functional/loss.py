"""Loss functions of ``ember.nn.functional``, with PyTorch's signatures, defaults, reductions
(``'none' | 'mean' | 'sum'``) and legacy ``size_average``/``reduce`` arguments (mapped to a
reduction with a ``DeprecationWarning``).

- classification on class indices: ``cross_entropy`` and ``nll_loss`` are single fused ops
  (log-softmax + NLL in one pass, gradient ``softmax - onehot`` scaled, written with raw
  arrays when no graph is being built and with ember ops under ``create_graph=True``, so
  double backward works); ``multi_margin_loss``, ``multilabel_margin_loss``
- binary: ``binary_cross_entropy`` (fused: PyTorch's clamped logs and gradient formula),
  ``binary_cross_entropy_with_logits``, ``soft_margin_loss``, ``multilabel_soft_margin_loss``
- regression: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``
- distributions: ``kl_div``, ``poisson_nll_loss``, ``gaussian_nll_loss``
- embeddings: ``margin_ranking_loss``, ``hinge_embedding_loss``, ``cosine_embedding_loss``,
  ``triplet_margin_loss``, ``triplet_margin_with_distance_loss``
- sequences: ``ctc_loss`` (in ``ctc.py``)

Losses other than the fused ones are compositions of ember ops: autograd (and double
backward) comes with them.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> logits = ember.randn(8, 5, requires_grad=True)
    >>> F.cross_entropy(logits, ember.tensor([0, 1, 2, 3, 4, 0, 1, 2])).backward()
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops import _util as U
from ...ops._util import wrap
from ... import kernels as _kernels
from .activation import pairwise_distance
from .ctc import ctc_loss

__all__ = [
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss",
]


# ============================================================================ reductions

def _legacy(size_average, reduce, reduction):
    """The reduction string; the legacy pair (``size_average``, ``reduce``) wins when given."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", DeprecationWarning, stacklevel=3)
    return _check_reduction(reduction)


def _check_reduction(reduction):
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", DeprecationWarning, stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _t(x, like=None, name="input"):
    return U.to_tensor(x, like, name)


def _float_input(x, name):
    if not D.is_floating(x.array.dtype):
        raise RuntimeError(f"{name}: expected a floating point input, got {D.name(x.array.dtype)}")


def _same_device(op, a, b):
    if b is not None and B.namespace(a.array) is not B.namespace(b.array):
        raise U.device_error(op, a.array, b.array)


def _size(t):
    return tuple(t.shape)


def _shape_warning(input, target):
    if _size(input) != _size(target):
        warnings.warn(f"Using a target size ({_size(target)}) that is different to the input size "
                      f"({_size(input)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


# ============================================================= class-index targets (NLL, CE)

def _class_checks(name, input, target, weight):
    """Shape/dtype checks of (input (C,) | (N, C, *S), class-index target, weight)."""
    xd, td = input.array, target.array
    if xd.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if td.dtype.kind not in "iu":
        raise RuntimeError(f"expected target dtype to be Long or Byte (class indices), but got "
                           f"{D.name(td.dtype)}")
    if xd.ndim == 1:
        if td.ndim == 1 and td.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{td.shape[0]}")
        if td.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        if td.ndim == 0 or xd.shape[0] != td.shape[0]:
            raise ValueError(f"Expected input batch_size ({xd.shape[0]}) to match target "
                             f"batch_size ({td.shape[0] if td.ndim else 0}).")
        if xd.ndim == 2 and td.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if xd.ndim > 2 and td.shape[1:] != xd.shape[2:]:
            raise RuntimeError(f"Expected target size {[xd.shape[0], *xd.shape[2:]]}, got "
                               f"{list(td.shape)}")
    C = xd.shape[0] if xd.ndim == 1 else xd.shape[1]
    if weight is not None:
        if weight.array.ndim != 1 or weight.array.shape[0] != C:
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                               f"classes but got weight tensor of shape: {list(weight.shape)}")
        if STATE.enabled and weight.requires_grad:
            raise RuntimeError(f"{name}: not differentiable with respect to argument 'weight' for "
                               "class-index targets. This input cannot have requires_grad True.")


class _Targets:
    """Class-index targets of an (N, C, *S) input, prepared once: the safe index ``tt``
    (ignored -> 0), the per-element weight ``wt`` (``weight[t]``, 0 where ignored), the
    ``valid`` mask, the weighted-mean denominator, and flat positions of the targets."""

    __slots__ = ("tt", "valid", "wt", "wd", "C", "_lin", "shape")

    def __init__(self, name, xd, td, weight, ignore_index):
        xp = B.namespace(xd)
        C = xd.shape[1]
        valid = td != ignore_index
        bad = valid & ((td < 0) | (td >= C))
        if bool(bad.any()):
            v = int(td[bad].ravel()[0])
            raise IndexError(f"Target {v} is out of bounds. {name}: expected target class indices "
                             f"in [0, {C - 1}] (or ignore_index={ignore_index})")
        tt = xp.where(valid, td, 0).astype(np.int64, copy=False)
        dt = xd.dtype
        wd = None if weight is None else weight.array.astype(dt, copy=False)
        self.tt, self.valid, self.C, self.wd, self.shape = tt, valid, C, wd, xd.shape
        self.wt = valid.astype(dt) if wd is None else xp.where(valid, wd[tt], 0).astype(dt)
        self._lin = None

    def denom(self):
        return self.wt.sum()

    def lin(self):
        """Flat positions ``(n, t[n, s], s)`` of the targets in a C-contiguous (N, C, *S)."""
        if self._lin is None:
            xp = B.namespace(self.tt)
            N, C = self.shape[0], self.C
            S = self.tt.size // max(N, 1)
            n = xp.arange(N, dtype=np.int64)[:, None] * (C * S)
            s = xp.arange(S, dtype=np.int64)[None, :]
            self._lin = (n + self.tt.reshape(N, S) * S + s).ravel()
        return self._lin

    def onehot(self, values):
        """(N, C, *S) zeros holding ``values`` (shaped like the targets) at the targets."""
        xp = B.namespace(self.tt)
        out = xp.zeros(self.shape, values.dtype)
        out.reshape(-1)[self.lin()] = values.ravel()
        return out


def _class_view(shape):
    """Shape that broadcasts a (C,) vector along dim 1 of an (N, C, *S) array."""
    return (1, shape[1]) + (1,) * (len(shape) - 2)


def _reduced(loss, reduction, denom, dt):
    """(output array, gradient scale or None) of per-element ``loss``; mean divides by
    ``denom`` (0/0 gives NaN, as in PyTorch)."""
    xp = B.namespace(loss)
    if reduction == "none":
        return loss.astype(dt, copy=False), None
    total = loss.sum()
    if reduction == "sum":
        return xp.asarray(total, dtype=dt), None
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.asarray(total / denom, dtype=dt), 1 / denom


def _fold(coef, valid, scale):
    """Per-element gradient coefficient times the mean's scale; ignored elements stay 0
    even when the scale is infinite (every target ignored)."""
    if scale is None:
        return coef
    with np.errstate(invalid="ignore", over="ignore"):
        return B.namespace(coef).where(valid, coef * scale, 0).astype(coef.dtype, copy=False)


def _r(g, reduction, shape):
    """The upstream gradient as an array broadcastable to (N, 1, *S)."""
    if reduction == "none":
        return g.array.reshape((shape[0], 1) + tuple(shape[2:]))
    return g.array


def _r_t(g, reduction, shape):
    """``_r`` with ember ops (differentiable in ``g``)."""
    if reduction == "none":
        return g.reshape((shape[0], 1) + tuple(shape[2:]))
    return g


class CrossEntropyBackward(Node):
    """grad = r * (p * a - onehot * b - c * w): ``a``, ``b``, ``c`` per element (see
    ``_ce_class``, the mean's scale folded in), ``p`` the softmax, ``r`` the upstream grad."""

    __slots__ = ("p", "tg", "a", "b", "c", "reduction")

    def backward(self, g):
        tg, shape = self.tg, self.p.shape
        if not STATE.enabled:
            r = _r(g, self.reduction, shape)
            out = self.p * (self.a[:, None] * r)
            out.reshape(-1)[tg.lin()] -= (self.b[:, None] * r).ravel()
            if self.c is not None:
                cw = self.c[:, None] * r
                out -= cw if tg.wd is None else cw * tg.wd.reshape(_class_view(shape))
            return (wrap(out),)
        (x,) = self.unpack()
        r = _r_t(g, self.reduction, shape)
        const = tg.onehot(self.b)
        if self.c is not None:
            cw = self.c[:, None]
            const = const + (cw if tg.wd is None else cw * tg.wd.reshape(_class_view(shape)))
        p = x.softmax(1)
        return ((p * wrap(self.a[:, None]) - wrap(const)) * r,)


def _ce_class(x, target, weight, ignore_index, eps, reduction):
    """Fused log-softmax + NLL (+ label smoothing) on (N, C, *S) logits."""
    xd = x.array
    xp = B.namespace(xd)
    tg = _Targets("cross_entropy", xd, target.array, weight, ignore_index)
    C, wd, valid = tg.C, tg.wd, tg.valid
    z = xd - xd.max(axis=1, keepdims=True)
    zt = xp.take_along_axis(z, tg.tt[:, None], axis=1)[:, 0]
    if eps:
        zs = z.sum(axis=1) if wd is None else xp.tensordot(z, wd, axes=([1], [0]))
    p = xp.exp(z, out=z)
    s = p.sum(axis=1, keepdims=True)
    p /= s
    lse = xp.log(s[:, 0])
    loss = tg.wt * (lse - zt)
    wsum = C if wd is None else wd.sum()
    if eps:
        smooth = xp.where(valid, lse * wsum - zs, 0)
        loss = loss * (1 - eps) + smooth * (eps / C)
    out, scale = _reduced(loss, reduction, tg.denom(), xd.dtype)
    res = wrap(out)
    if STATE.enabled and x.requires_grad:
        n = new_node(CrossEntropyBackward)
        n.p, n.tg, n.reduction = p, tg, reduction
        if eps:
            n.b = _fold(tg.wt * (1 - eps), valid, scale)
            n.c = _fold(valid.astype(xd.dtype) * (eps / C), valid, scale)
            n.a = n.b + n.c * wsum
        else:
            n.a = n.b = _fold(tg.wt, valid, scale)
            n.c = None
        n.save(x)
        record(n, res, x)
    return res


class _CrossEntropyKernelBackward(CrossEntropyBackward):
    """Class indices, no weight/smoothing, over (N, C) rows: the raw backward is the
    compiled ``softmax - onehot`` kernel from the kept per-row logsumexp (no softmax kept);
    under ``create_graph``, ``CrossEntropyBackward``'s differentiable formula."""

    __slots__ = ("t", "lse", "scale", "ignore")

    def backward(self, g):
        (x,) = self.unpack()
        xd = x.array
        if not STATE.enabled:
            gd = g.array
            if self.reduction == "none":
                coef = gd.reshape(-1).astype(xd.dtype, copy=False)
            else:
                coef = np.full(xd.shape[0], gd * (1 if self.scale is None else self.scale),
                               xd.dtype)
            return (wrap(_kernels.lookup("cross_entropy_backward").cpu(
                xd, self.t, self.lse, coef, self.ignore)),)
        tg = _Targets("cross_entropy", xd, self.t, None, self.ignore)
        b = _fold(tg.wt, tg.valid, self.scale)
        r = _r_t(g, self.reduction, xd.shape)
        p = x.softmax(1)
        return ((p * wrap(b[:, None]) - wrap(tg.onehot(b))) * r,)


_CrossEntropyKernelBackward.__name__ = "CrossEntropyBackward"  # grad_fn.name(): the op's


def _ce_kernel_ok(x, weight, eps):
    d = x.array
    return (weight is None and not eps and type(d) is np.ndarray and d.ndim == 2
            and d.shape[1] > 0 and d.dtype in (np.float32, np.float64) and d.flags.c_contiguous
            and _kernels.available())


def _ce_class_kernel(x, target, ignore_index, reduction):
    """Fused log-softmax + NLL per row by the compiled kernel ((N, C) logits, class-index
    targets, no weight, no smoothing)."""
    xd, td = x.array, target.array
    C = xd.shape[1]
    valid = td != ignore_index
    bad = valid & ((td < 0) | (td >= C))
    if bool(bad.any()):
        v = int(td[bad].ravel()[0])
        raise IndexError(f"Target {v} is out of bounds. cross_entropy: expected target class "
                         f"indices in [0, {C - 1}] (or ignore_index={ignore_index})")
    t = td.astype(np.int64, copy=False)
    loss, lse = _kernels.lookup("cross_entropy").cpu(xd, t, ignore_index)
    out, scale = _reduced(loss, reduction, np.count_nonzero(valid), xd.dtype)
    res = wrap(out)
    if STATE.enabled and x.requires_grad:
        n = new_node(_CrossEntropyKernelBackward)
        n.t, n.lse, n.scale, n.ignore, n.reduction = t, lse, scale, ignore_index, reduction
        n.save(x)
        record(n, res, x)
    return res


class CrossEntropyProbBackward(Node):
    """Probability targets: loss = -sum_c w_c q'_c logp_c with q' = q (1 - eps) + eps / C."""

    __slots__ = ("logp", "qs", "eps", "reduction", "scale")

    def backward(self, g):
        x, q, w = self.unpack()
        logp, shape, eps = self.logp, self.logp.shape, self.eps
        view = _class_view(shape)
        red = (0,) + tuple(range(2, len(shape)))
        gx = gq = gw = None
        if not STATE.enabled:
            r = _r(g, self.reduction, shape)
            if self.scale is not None:
                r = r * self.scale
            xp = B.namespace(logp)
            wq = self.qs if w is None else self.qs * w.array.reshape(view)
            if self.next[0] is not None:
                gx = xp.exp(logp) * wq.sum(axis=1, keepdims=True)
                gx -= wq
                gx *= r
                gx = wrap(gx)
            if self.next[1] is not None:
                t = logp * r * (eps - 1)
                gq = wrap(t if w is None else t * w.array.reshape(view))
            if self.next[2] is not None:
                gw = wrap(-(self.qs * logp * r).sum(axis=red))
            return gx, gq, gw
        r = _r_t(g, self.reduction, shape)
        if self.scale is not None:
            r = r * wrap(self.scale)
        lp = x.log_softmax(1)
        qs = q * (1 - eps) + eps / shape[1] if eps else q
        wb = None if w is None else w.reshape(view)
        wq = qs if wb is None else qs * wb
        if self.next[0] is not None:
            gx = (lp.exp() * wq.sum(1, keepdim=True) - wq) * r
        if self.next[1] is not None:
            t = lp * r * (eps - 1)
            gq = t if wb is None else t * wb
        if self.next[2] is not None:
            gw = -(qs * lp * r).sum(red)
        return gx, gq, gw


def _ce_prob(x, q, weight, eps, reduction):
    xd, qd = x.array, q.array
    xp = B.namespace(xd)
    C = xd.shape[1]
    view = _class_view(xd.shape)
    z = xd - xd.max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        z -= xp.log(xp.exp(z).sum(axis=1, keepdims=True))
    logp = z
    qs = qd * (1 - eps) + eps / C if eps else qd
    wq = qs if weight is None else qs * weight.array.reshape(view)
    loss = -(wq * logp).sum(axis=1)
    if reduction == "none":
        out, scale = loss, None
    else:
        total = loss.sum()
        if reduction == "mean":
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = xp.asarray(1 / (xd.size // C) if xd.size else math.nan, xd.dtype)
            total = total * scale
        else:
            scale = None
        out = xp.asarray(total, dtype=xd.dtype)
    res = wrap(out)
    if U.needs_grad(x, q, weight):
        n = new_node(CrossEntropyProbBackward)
        n.logp, n.qs, n.eps, n.reduction, n.scale = logp, qs, eps, reduction, scale
        n.save(x, q, weight)
        record(n, res, x, q, weight)
    return res


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits and targets: log-softmax over the class dim + NLL, fused.

    ``input``: (C,), (N, C) or (N, C, d1, ..., dK) unnormalised logits. ``target``: class
    indices (), (N,) or (N, d1, ..., dK) (int64 or uint8; ``ignore_index`` entries
    contribute nothing), or class probabilities shaped like ``input``. ``weight``: (C,)
    per-class weights; with class indices the ``'mean'`` divides by the summed weight of the
    non-ignored targets. ``label_smoothing`` in [0, 1] mixes the target with the uniform
    distribution, exactly as PyTorch does (also with ``weight`` and ``ignore_index``).
    Returns a scalar, or the per-element loss (N, d1, ..., dK) for ``reduction='none'``.

        >>> x = ember.randn(4, 3, requires_grad=True)
        >>> F.cross_entropy(x, ember.tensor([0, 2, 1, 2]), label_smoothing=0.1).backward()
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    if weight is not None:
        weight = _t(weight, input, "weight")
    _same_device("cross_entropy", input, target)
    _same_device("cross_entropy", input, weight)
    _float_input(input, "cross_entropy")
    eps = float(label_smoothing)
    xd, td = input.array, target.array
    if xd.shape == td.shape:  # class probabilities
        if not D.is_floating(td.dtype):
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {D.name(td.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if eps > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {eps:g}")
        eps = max(eps, 0.0)  # PyTorch ignores a negative smoothing
        C = xd.shape[0] if xd.ndim == 1 else xd.shape[1]
        if weight is not None and (weight.array.ndim != 1 or weight.array.shape[0] != C):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {C} "
                               "classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        dt = D.promote_types(xd.dtype, td.dtype)
        x, q = input._cast(dt), target._cast(dt)
        w = None if weight is None else weight._cast(dt)
        if xd.ndim == 1:
            out = _ce_prob(x.reshape(1, C), q.reshape(1, C), w, eps, reduction)
            return out.reshape(()) if reduction == "none" else out
        return _ce_prob(x, q, w, eps, reduction)
    if eps > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {eps:g}")
    eps = max(eps, 0.0)  # PyTorch ignores a negative smoothing
    _class_checks("cross_entropy", input, target, weight)
    if xd.ndim == 1:
        out = _ce_class(input.reshape(1, -1), target.reshape(1), weight, ignore_index, eps,
                        reduction)
        return out.reshape(()) if reduction == "none" else out
    if _ce_kernel_ok(input, weight, eps):
        return _ce_class_kernel(input, target, ignore_index, reduction)
    return _ce_class(input, target, weight, ignore_index, eps, reduction)


class NllLossBackward(Node):
    """grad = -r * weight[t] at the targets (the mean's scale folded in), 0 elsewhere:
    linear in the upstream gradient ``r``."""

    __slots__ = ("tg", "coef", "reduction")

    def backward(self, g):
        tg = self.tg
        shape = tg.shape
        if not STATE.enabled:
            vals = self.coef[:, None] * _r(g, self.reduction, shape)
            out = B.namespace(vals).zeros(shape, vals.dtype)
            out.reshape(-1)[tg.lin()] = vals.ravel()
            return (wrap(out),)
        return (wrap(tg.onehot(self.coef)) * _r_t(g, self.reduction, shape),)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class-index targets given log-probabilities.

    ``input``: (C,), (N, C) or (N, C, d1, ..., dK) log-probabilities; ``target``: (), (N,)
    or (N, d1, ..., dK) class indices; ``weight``: (C,). loss = -weight[t] * input[t] per
    element, 0 where ``target == ignore_index``; ``'mean'`` divides by the summed weights of
    the non-ignored targets (NaN when every target is ignored, as in PyTorch).

        >>> lp = ember.randn(3, 5).log_softmax(1)
        >>> F.nll_loss(lp, ember.tensor([1, 0, 4]))
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    if weight is not None:
        weight = _t(weight, input, "weight")
    _same_device("nll_loss", input, target)
    _same_device("nll_loss", input, weight)
    _float_input(input, "nll_loss")
    _class_checks("nll_loss", input, target, weight)
    if input.array.ndim == 1:
        out = _nll(input.reshape(1, -1), target.reshape(1), weight, ignore_index, reduction)
        return out.reshape(()) if reduction == "none" else out
    return _nll(input, target, weight, ignore_index, reduction)


def _nll(x, target, weight, ignore_index, reduction):
    xd = x.array
    xp = B.namespace(xd)
    tg = _Targets("nll_loss", xd, target.array, weight, ignore_index)
    picked = xp.take_along_axis(xd, tg.tt[:, None], axis=1)[:, 0]
    loss = xp.where(tg.valid, -(tg.wt * picked), 0).astype(xd.dtype, copy=False)
    out, scale = _reduced(loss, reduction, tg.denom(), xd.dtype)
    res = wrap(out)
    if STATE.enabled and x.requires_grad:
        n = new_node(NllLossBackward)
        n.tg, n.reduction, n.coef = tg, reduction, -_fold(tg.wt, tg.valid, scale)
        record(n, res, x)
    return res


# ========================================================================== binary targets

class BinaryCrossEntropyBackward(Node):
    """PyTorch's formulas: d/dx = w (x - t) / max(x (1 - x), 1e-12); d/dt = -w logit(x)."""

    __slots__ = ("scale",)

    def backward(self, g):
        x, t, w = self.unpack()
        gx = gt = None
        if not STATE.enabled:
            xd, td = x.array, t.array
            xp = B.namespace(xd)
            r = g.array if self.scale is None else g.array * self.scale
            if w is not None:
                r = r * w.array
            if self.next[0] is not None:
                gx = wrap((xd - td) / xp.maximum(xd * (1 - xd), 1e-12) * r)
            if self.next[1] is not None:
                with np.errstate(divide="ignore"):
                    gt = wrap(-xp.log(xd / (1 - xd)) * r)
            return gx, gt
        r = g if self.scale is None else g * self.scale
        if w is not None:
            r = r * w
        if self.next[0] is not None:
            gx = (x - t) / (x * (1 - x)).clamp_min(1e-12) * r
        if self.next[1] is not None:
            gt = -(x / (1 - x)).log() * r
        return gx, gt


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log(x) + (1 - t) log(1 - x)) with each log clamped at -100, as PyTorch.

    ``input``: probabilities in [0, 1], any shape; ``target``: same shape; ``weight``
    broadcastable to it. Gradients w.r.t. input and target (and double backward).

        >>> F.binary_cross_entropy(ember.rand(4), ember.tensor([0., 1., 1., 0.]))
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    if _size(target) != _size(input):
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the input "
                         f"size ({_size(input)}) is deprecated. Please ensure they have the same "
                         "size.")
    _float_input(input, "binary_cross_entropy")
    _same_device("binary_cross_entropy", input, target)
    xd = input.array
    xp = B.namespace(xd)
    if xd.size and bool(((xd < 0) | (xd > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.array.dtype != xd.dtype:
        target = target._cast(xd.dtype)
    if weight is not None:
        weight = _t(weight, input, "weight")
        try:
            shape = np.broadcast_shapes(_size(target), _size(weight))
        except ValueError:
            shape = None
        if shape != _size(target):
            raise RuntimeError(f"binary_cross_entropy: weight of shape {list(weight.shape)} "
                               f"cannot be broadcast to the input's shape {list(input.shape)}")
        if STATE.enabled and weight.requires_grad:
            raise RuntimeError("binary_cross_entropy: not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
        weight = weight._cast(xd.dtype)
    td = target.array
    with np.errstate(divide="ignore"):
        loss = -(td * xp.maximum(xp.log(xd), -100) + (1 - td) * xp.maximum(xp.log(1 - xd), -100))
    if weight is not None:
        loss = loss * weight.array
    scale = None
    if reduction == "mean":
        scale = 1 / xd.size if xd.size else math.nan
        loss = loss.mean() if xd.size else xp.asarray(math.nan, xd.dtype)
    elif reduction == "sum":
        loss = loss.sum()
    out = wrap(xp.asarray(loss, dtype=xd.dtype))
    if U.needs_grad(input, target):
        n = new_node(BinaryCrossEntropyBackward)
        n.scale = scale
        n.save(input, target, weight)
        record(n, out, input, target)
    return out


def _logsigmoid(x):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for any x."""
    return x.clamp_max(0) - (-x.abs()).exp().log1p()


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy on logits, stable for any x:
    loss = (1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x)), times ``weight``.

    ``input``, ``target``: same shape (…, C); ``pos_weight`` broadcasts against the target
    (typically (C,)), ``weight`` against the loss.

        >>> F.binary_cross_entropy_with_logits(ember.randn(4, 3), ember.rand(4, 3),
        ...                                    pos_weight=ember.ones(3) * 2)
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    if _size(target) != _size(input):
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size "
                         f"({_size(input)})")
    _float_input(input, "binary_cross_entropy_with_logits")
    ls = _logsigmoid(input)
    if pos_weight is not None:
        ls = ls * ((_t(pos_weight, input, "pos_weight") - 1) * target + 1)
    loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * _t(weight, input, "weight")
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)) per element, y in {1, -1}.

        >>> F.soft_margin_loss(ember.randn(4), ember.tensor([1., -1., 1., 1.]))
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    return _reduce((-(input * target)).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Mean over the C classes (last dim) of -(y log(sigmoid(x)) + (1 - y) log(sigmoid(-x))),
    times ``weight`` (C,); one loss per sample (N,) before the reduction.

        >>> F.multilabel_soft_margin_loss(ember.randn(2, 3), ember.tensor([[1., 0, 1], [0, 0, 1]]))
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * _t(weight, input, "weight")
    C = input.shape[-1] if input.ndim else 1
    return _reduce(loss.sum(input.ndim - 1 if input.ndim else ()) / C, reduction)


# ============================================================================== regression

def _pointwise(name, input, target, weight, reduction, fn):
    input = _t(input)
    target = _t(target, input, "target")
    _shape_warning(input, target)
    x, t = input, target
    if _size(x) != _size(t):
        shape = np.broadcast_shapes(_size(x), _size(t))
        x, t = x.expand(shape), t.expand(shape)
    loss = fn(x - t)
    if weight is None:
        return _reduce(loss, reduction)
    weight = _t(weight, input, "weight")
    if _size(weight) != _size(input):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and name in ("mse_loss", "l1_loss"):
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(x - y)^2 per element (optionally times ``weight``, whose 'mean' divides by its sum).

        >>> F.mse_loss(ember.randn(3, 2), ember.zeros(3, 2))
    """
    reduction = _legacy(size_average, reduce, reduction)
    return _pointwise("mse_loss", input, target, weight, reduction, lambda d: d * d)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|x - y| per element (optionally times ``weight``, whose 'mean' divides by its sum).

        >>> F.l1_loss(ember.randn(3, 2), ember.zeros(3, 2))
    """
    reduction = _legacy(size_average, reduce, reduction)
    return _pointwise("l1_loss", input, target, weight, reduction, lambda d: d.abs())


def _huberish(d, beta, smooth):
    """0.5 d^2 / beta (smooth L1) or 0.5 d^2 (Huber) for |d| < beta, linear beyond."""
    from ...ops.index import where

    a = d.abs()
    if smooth:
        return where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta)
    return where(a < beta, d * d * 0.5, (a - 0.5 * beta) * beta)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta=0: L1).

        >>> F.smooth_l1_loss(ember.randn(4), ember.zeros(4), beta=0.5)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return _pointwise("smooth_l1_loss", input, target, None, reduction, lambda d: d.abs())
    return _pointwise("smooth_l1_loss", input, target, None, reduction,
                      lambda d: _huberish(d, beta, True))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber: 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); optional ``weight``
    (same shape as input; 'mean' is the plain mean of the weighted loss, as PyTorch).

        >>> F.huber_loss(ember.randn(4), ember.zeros(4), delta=2.0)
    """
    reduction = _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _pointwise("huber_loss", input, target, weight, reduction,
                      lambda d: _huberish(d, delta, False))


# =========================================================================== distributions

def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence with ``input`` as log-probabilities: t (log t - x) per element
    (``log_target``: exp(t) (t - x)). ``'batchmean'`` divides the sum by the batch size
    (dim 0), the mathematically correct KL; ``'mean'`` divides by every element (warns).

        >>> F.kl_div(ember.randn(2, 3).log_softmax(1), ember.rand(2, 3).softmax(1),
        ...          reduction="batchmean")
    """
    input = _t(input)
    target = _t(target, input, "target")
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    elif reduction != "batchmean":
        reduction = _check_reduction(reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log likelihood: exp(x) - t x (``log_input``) or x - t log(x + eps),
    plus Stirling's t log t - t + 0.5 log(2 pi t) where t > 1 when ``full``.

        >>> F.poisson_nll_loss(ember.randn(5), ember.tensor([0., 1., 2., 3., 4.]))
    """
    from ...ops.index import where

    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            st = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + where(target > 1, st, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood 0.5 (log(var) + (x - t)^2 / var) (+ 0.5 log(2 pi)
    when ``full``), ``var`` clamped to ``eps`` (without changing its gradient, as PyTorch).

    ``var``: same shape as input, one dim short of it, or broadcastable with exactly one
    mismatched size 1 (homoscedastic); or a float.

        >>> F.gaussian_nll_loss(ember.randn(4, 2), ember.randn(4, 2), ember.ones(4, 1))
    """
    from ...autograd.grad_mode import no_grad
    from ...factories import ones_like

    input = _t(input)
    target = _t(target, input, "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ones_like(input) * var
    else:
        var = _t(var, input, "var")
        if bool((var.array < 0).any()):
            raise ValueError("var has negative entry/entries")
    if _size(var) != _size(input):
        if _size(input)[:-1] == _size(var):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                b for a, b in zip(_size(input), _size(var)) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    d = input - target
    loss = (var.log() + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# =================================================================== ranking and embeddings

def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin), y in {1, -1}.

        >>> F.margin_ranking_loss(ember.randn(3), ember.randn(3), ember.tensor([1., -1., 1.]))
    """
    reduction = _legacy(size_average, reduce, reduction)
    input1 = _t(input1)
    input2, target = _t(input2, input1, "input2"), _t(target, input1, "target")
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but "
                           f"got sizes: input1: {_size(input1)}, input2: {_size(input2)}, target: "
                           f"{_size(target)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (both terms where y is neither).

        >>> F.hinge_embedding_loss(ember.rand(4), ember.tensor([1., -1., -1., 1.]))
    """
    from ...ops.index import where

    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    loss = where(target != 1, (margin - input).clamp_min(0), 0.0) + where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1.

    ``input1``, ``input2``: (N, D) with ``target`` (N,), or (D,) with a 0-d target.

        >>> F.cosine_embedding_loss(ember.randn(3, 4), ember.randn(3, 4), ember.tensor([1, -1, 1]))
    """
    from ...ops.index import where

    reduction = _legacy(size_average, reduce, reduction)
    input1 = _t(input1)
    input2, target = _t(input2, input1, "input2"), _t(target, input1, "target")
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if td == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{td}D target tensor expects {want}D input tensors, but found inputs "
                           f"with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(td)
    m1 = (input1 * input1).sum(td) + eps
    m2 = (input2 * input2).sum(td) + eps
    cos = prod / (m1 * m2).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin), d the p-norm distance ||x - y + eps||_p over the
    last dim; ``swap`` uses min(d(a, n), d(p, n)) for the negative distance.

        >>> a, p, n = ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)
        >>> F.triplet_margin_loss(a, p, n, margin=0.5)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return triplet_margin_with_distance_loss(
        anchor, positive, negative,
        distance_function=lambda a, b: pairwise_distance(a, b, p, eps),
        margin=margin, swap=swap, reduction=reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """Triplet loss with any ``distance_function(x, y) -> distances`` (default: the
    pairwise Euclidean distance).

        >>> a, p, n = ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> F.triplet_margin_with_distance_loss(a, p, n, distance_function=l1, margin=2.0)
    """
    from ...ops.elementwise import minimum

    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    anchor = _t(anchor, name="anchor")
    positive, negative = _t(positive, anchor, "positive"), _t(negative, anchor, "negative")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


# ====================================================================== multi-class margins

def _margin_batch(name, input, target):
    """(C,) / (N, C) input and its target -> 2-d input (N, C), target (N,), unbatched flag."""
    xd, td = input.array, target.array
    if not (xd.ndim == 1 and xd.shape[0] > 0 or xd.ndim == 2 and xd.shape[1] > 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(xd.shape)}")
    if td.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: expected target of an integer dtype, got {D.name(td.dtype)}")
    return xd.ndim == 1


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: per sample, sum over j != y of
    max(0, margin - x[y] + x[j])^p * weight[y], divided by C (p = 1 or 2).

    ``input``: (C,) or (N, C); ``target``: () / (1,) or (N,) class indices.

        >>> F.multi_margin_loss(ember.randn(3, 4), ember.tensor([0, 3, 1]))
    """
    from ...ops.index import gather

    reduction = _legacy(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    input = _t(input)
    target = _t(target, input, "target")
    if weight is not None:
        weight = _t(weight, input, "weight")
        if weight.ndim != 1:
            raise ValueError("weight must be one-dimensional")
    unbatched = _margin_batch("multi_margin_loss", input, target)
    xd, td = input.array, target.array
    N, C = (1, xd.shape[0]) if xd.ndim == 1 else xd.shape
    if td.size != N or (xd.ndim == 2 and td.ndim != 1) or td.ndim > 1:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the "
                           "number of input samples (batch size). Expected target size "
                           f"[{N}], but got {list(td.shape)}. Input has shape {list(xd.shape)}.")
    if weight is not None and weight.shape[0] != C:
        raise RuntimeError(f"inconsistent weight size, expected {C} but got {list(weight.shape)}")
    xp = B.namespace(xd)
    t = td.reshape(N).astype(np.int64, copy=False)
    if t.size and bool(((t < 0) | (t >= C)).any()):
        raise RuntimeError(f"target out of range: multi_margin_loss expects target class indices "
                           f"in [0, {C - 1}], got {int(t[(t < 0) | (t >= C)][0])}")
    x = input.reshape(N, C)
    z = (x - gather(x, 1, wrap(t[:, None])) + margin).clamp_min(0)
    if p == 2:
        z = z * z
    mask = xp.ones((N, C), xd.dtype)
    mask[xp.arange(N), t] = 0
    if weight is not None:
        mask *= weight.array.astype(xd.dtype, copy=False)[t][:, None]
    loss = (z * wrap(mask)).sum(1) / C
    if unbatched and td.ndim == 0:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: per sample, sum over target classes j and non-target classes
    k of max(0, 1 - (x[j] - x[k])), divided by C. The target holds class indices (same
    shape as input, (C,) or (N, C)), read up to the first -1.

        >>> F.multilabel_margin_loss(ember.randn(1, 4), ember.tensor([[3, 0, -1, 1]]))
    """
    from ...ops.index import gather

    reduction = _legacy(size_average, reduce, reduction)
    input = _t(input)
    target = _t(target, input, "target")
    unbatched = _margin_batch("multilabel_margin_loss", input, target)
    xd, td = input.array, target.array
    if td.shape != xd.shape:
        raise RuntimeError(f"inconsistent target size: {list(td.shape)} for input of size: "
                           f"{list(xd.shape)}")
    xp = B.namespace(xd)
    N, C = (1, xd.shape[0]) if unbatched else xd.shape
    t = td.reshape(N, C).astype(np.int64, copy=False)
    if t.size and bool(((t < -1) | (t >= C)).any()):
        raise RuntimeError(f"argument #2 'target' is out of range: multilabel_margin_loss expects "
                           f"class indices in [0, {C - 1}] (or -1 to end a sample's targets)")
    slot = xp.cumsum(t == -1, axis=1) == 0  # target slots before the first -1
    K = int(slot.sum(axis=1).max()) if N else 0
    is_target = xp.zeros((N, C), bool)
    rows = xp.broadcast_to(xp.arange(N)[:, None], (N, C))
    is_target[rows[slot], t[slot]] = True
    x = input.reshape(N, C)
    tk = xp.where(slot[:, :K], t[:, :K], 0)
    xj = gather(x, 1, wrap(tk))  # (N, K)
    pair = (x.unsqueeze(1) - xj.unsqueeze(2) + 1).clamp_min(0)  # (N, K, C)
    w = (slot[:, :K, None] & ~is_target[:, None, :]).astype(xd.dtype)
    loss = (pair * wrap(w)).sum((1, 2)) / C
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)
