"""Connectionist Temporal Classification loss (Graves et al. 2006), as ``torch.ctc_loss``.

The forward (alpha) and backward (beta) recursions run in log space over the extended
label sequence l' = (blank, l1, blank, l2, ..., blank) of length S = 2 L + 1, vectorised
over the batch and the label positions, with a Python loop over time only:

    alpha[t, s] = lp[t, l'_s] + logsumexp(alpha[t-1, s], alpha[t-1, s-1],
                                          alpha[t-1, s-2] if l'_s != blank and l'_s != l'_{s-2})
    beta[t, s]  = lp[t, l'_s] + logsumexp(beta[t+1, s], beta[t+1, s+1], beta[t+1, s+2] ...)
    nll         = -logsumexp(alpha[T-1, S-1], alpha[T-1, S-2])

Samples of different input lengths T_b share the loop: alpha is read at T_b - 1, beta is
started at T_b - 1 and stays -inf above it. The gradient w.r.t. ``log_probs`` is the one
PyTorch computes,

    grad[t, b, c] = exp(lp[t, b, c])
                    - exp(logsumexp_{s: l'_s = c}(alpha + beta)[t, b, s] + nll[b] - lp[t, b, c])

(the gradient through a log_softmax folded in, which leaves the gradient w.r.t. the logits
exact), zero for t >= T_b and, with ``zero_infinity``, for samples whose loss is infinite.
As in PyTorch, double backward through ``ctc_loss`` is not supported: differentiating its
gradient again raises a RuntimeError.
"""
from __future__ import annotations

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops import _util as U
from ...ops._util import wrap
from ...ops.index import _add_at

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf


def _lengths(v, name):
    """Lengths given as a tensor, array, sequence or int -> list of Python ints."""
    if isinstance(v, U.T()):
        d = v.array
        if d.dtype.kind not in "iu":
            raise RuntimeError(f"ctc_loss: {name} must hold integers, got {D.name(d.dtype)}")
        return [int(i) for i in (d.get() if B.is_cuda_array(d) else d).reshape(-1).tolist()]
    if isinstance(v, (int, np.integer)):
        return [int(v)]
    out = []
    for i in v:
        if isinstance(i, (float, bool)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"ctc_loss: {name} must be a tensor or a sequence of ints, got an "
                            f"element of type {type(i).__name__}")
        out.append(int(i))
    return out


def _padded_targets(td, tl, N, xp):
    """(N, Lmax) int64 targets from padded (N, S) or concatenated (sum(tl),) targets."""
    c = "(while checking arguments for ctc_loss)"
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value "
                               f"{v} {c}")
    lmax = max(tl) if tl else 0
    if td.ndim == 1:
        total = sum(tl)
        if td.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size "
                               f"{td.shape[0]} for argument #2 'targets' {c}")
        offsets = np.concatenate(([0], np.cumsum(tl)[:-1])).astype(np.int64)
        idx = offsets[:, None] + np.arange(lmax, dtype=np.int64)[None, :]
        idx = np.minimum(idx, max(total - 1, 0))
        out = td[xp.asarray(idx)] if total else xp.zeros((N, lmax), np.int64)
    else:
        if td.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size "
                               f"{td.shape[0]} for argument #2 'targets' {c}")
        if td.shape[1] < lmax:
            raise RuntimeError(f"Expected tensor to have size at least {lmax} at dimension 1, but "
                               f"got size {td.shape[1]} for argument #2 'targets' {c}")
        out = td[:, :lmax]
    return out.astype(np.int64)


class CtcLossBackward(Node):
    __slots__ = ("alpha", "emit", "lab", "il", "tl", "nll", "blank", "zero_infinity", "C")

    def backward(self, g):
        (lp,) = self.unpack()
        grad = _ctc_grad(self, lp.array, g.array)
        out = wrap(grad)
        if STATE.enabled:  # create_graph: the gradient is there, its own derivative is not
            n = new_node(CtcLossDoubleBackward)
            record(n, out, lp, g)
        return (out,)


class CtcLossDoubleBackward(Node):
    __slots__ = ()

    def backward(self, g):
        raise RuntimeError("derivative for ctc_loss's backward is not implemented: double "
                           "backward through ctc_loss is unsupported (as in PyTorch)")


def _ctc_forward(lpd, lab, il, tl, blank):
    """alpha (T, N, S), emissions (T, N, S) and nll (N,) of (T, N, C) log-probs."""
    xp = B.namespace(lpd)
    T, N, _ = lpd.shape
    S = lab.shape[1]
    emit = xp.take_along_axis(lpd, xp.broadcast_to(lab[None], (T, N, S)), axis=2)
    skip = _skip_penalty(lab, blank, lpd.dtype, xp)
    alpha = xp.full((max(T, 1), N, S), _NEG_INF, lpd.dtype)
    tla = xp.asarray(np.asarray(tl, np.int64))
    if T:
        alpha[0, :, 0] = emit[0, :, 0]
        if S > 1:
            alpha[0, :, 1] = xp.where(tla > 0, emit[0, :, 1], _NEG_INF)
    for t in range(1, T):
        prev, cur = alpha[t - 1], alpha[t]
        cur[:, 0] = prev[:, 0]
        xp.logaddexp(prev[:, 1:], prev[:, :-1], out=cur[:, 1:])
        if S > 2:
            xp.logaddexp(cur[:, 2:], prev[:, :-2] + skip, out=cur[:, 2:])
        cur += emit[t]
    ila = np.asarray(il, np.int64)
    rows = np.arange(N)
    last = alpha[xp.asarray(np.maximum(ila - 1, 0)), xp.asarray(rows)]  # (N, S)
    tl_np = np.asarray(tl, np.int64)
    end = xp.asarray(2 * tl_np)
    a1 = xp.take_along_axis(last, end[:, None], axis=1)[:, 0]
    a2 = xp.take_along_axis(last, xp.maximum(end - 1, 0)[:, None], axis=1)[:, 0]
    a2 = xp.where(end > 0, a2, _NEG_INF)
    nll = -xp.logaddexp(a1, a2)
    if (ila == 0).any():  # no frames: probability 1 for an empty target, else 0
        zero = xp.asarray(ila == 0)
        nll = xp.where(zero, xp.where(xp.asarray(tl_np == 0), 0.0, np.inf), nll)
    return alpha, emit, nll.astype(lpd.dtype, copy=False)


def _skip_penalty(lab, blank, dt, xp):
    """0 where the transition s-2 -> s is allowed (l'_s not blank, l'_s != l'_{s-2}), else -inf."""
    ok = (lab[:, 2:] != blank) & (lab[:, 2:] != lab[:, :-2])
    return xp.where(ok, 0.0, _NEG_INF).astype(dt)


def _ctc_grad(n, lpd, gd):
    xp = B.namespace(lpd)
    T, N, C = lpd.shape
    lab, emit, alpha, blank = n.lab, n.emit, n.alpha, n.blank
    S = lab.shape[1]
    il = np.asarray(n.il, np.int64)
    tl = np.asarray(n.tl, np.int64)
    skip = _skip_penalty(lab, blank, lpd.dtype, xp)
    # beta, started per sample at T_b - 1 on the last two label positions
    endmask = xp.zeros((N, S), bool)
    rows = xp.arange(N)
    endmask[rows, xp.asarray(2 * tl)] = True
    endmask[rows, xp.asarray(np.maximum(2 * tl - 1, 0))] |= xp.asarray(tl > 0)
    starts = {}
    for b, v in enumerate(il.tolist()):
        if v > 0:
            starts.setdefault(v - 1, []).append(b)
    ab = xp.empty((T, N, S), lpd.dtype)  # alpha + beta
    nxt = xp.full((N, S), _NEG_INF, lpd.dtype)
    cur = xp.empty((N, S), lpd.dtype)
    for t in range(T - 1, -1, -1):
        cur[:, -1] = nxt[:, -1]
        if S > 1:
            xp.logaddexp(nxt[:, :-1], nxt[:, 1:], out=cur[:, :-1])
        if S > 2:
            xp.logaddexp(cur[:, :-2], nxt[:, 2:] + skip, out=cur[:, :-2])
        cur += emit[t]
        bs = starts.get(t)
        if bs is not None:
            bi = xp.asarray(np.asarray(bs, np.int64))
            cur[bi] = xp.where(endmask[bi], emit[t, bi], _NEG_INF)
        xp.add(cur, alpha[t], out=ab[t])
        nxt, cur = cur, nxt
    # logsumexp of alpha + beta over the label positions of each class
    m = ab.max(axis=2, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    e = xp.exp(ab - m, out=ab)
    acc = xp.zeros((T, N, C), lpd.dtype)
    acc[:, rows, blank] = e[:, :, 0::2].sum(axis=2)
    if S > 1:
        lin = (xp.asarray(np.arange(N, dtype=np.int64))[:, None] * C + lab[:, 1::2]).ravel()
        odd = xp.ascontiguousarray(e[:, :, 1::2]).reshape(T, -1)
        _add_at(acc.reshape(T, N * C), 1, lin, odd)
    nll = n.nll
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        res = xp.log(acc)
        res += m
        res += nll[None, :, None]
        res -= lpd
        grad = xp.exp(lpd) - xp.exp(res, out=res)
    grad *= gd.astype(lpd.dtype, copy=False)[None, :, None]
    keep = xp.asarray(np.arange(T)[:, None] < il[None, :])  # (T, N)
    if n.zero_infinity:
        keep = keep & ~xp.isinf(nll)[None, :]
    return xp.where(keep[:, :, None], grad, 0)  # 0 * nan stays 0


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against label sequences.

    ``targets``: padded (N, S) or concatenated (sum(target_lengths),) class indices (never
    ``blank``); ``input_lengths``, ``target_lengths``: (N,) tensors or sequences of ints (a
    0-d tensor or an int when unbatched). ``reduction='mean'`` divides each sample's loss by
    its target length (at least 1) and averages over the batch; ``'none'`` gives (N,) (or
    a 0-d loss unbatched). ``zero_infinity`` zeroes infinite losses (impossible alignments,
    e.g. targets longer than the input) and their gradients.

        >>> lp = ember.randn(50, 2, 20).log_softmax(2).requires_grad_()
        >>> tg = ember.randint(1, 20, (2, 10))
        >>> F.ctc_loss(lp, tg, [50, 45], [10, 8]).backward()
    """
    from ...ops.index import where

    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    log_probs = U.to_tensor(log_probs, name="log_probs")
    lpd = log_probs.array
    if lpd.ndim not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lpd.ndim}-dimensional tensor "
                           "for argument #1 'log_probs' (while checking arguments for ctc_loss)")
    if not D.is_floating(lpd.dtype):
        raise RuntimeError(f"ctc_loss: expected floating point log_probs, got {D.name(lpd.dtype)}")
    batched = lpd.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    T, N, C = lp.array.shape
    xp = B.namespace(lpd)
    targets = U.to_tensor(targets, lp, "targets")
    td = targets.array
    if B.namespace(td) is not xp:  # targets follow log_probs, as in PyTorch
        td = xp.asarray(td) if xp is not np else td.get()
    if td.dtype.kind not in "iu":
        raise RuntimeError(f"ctc_loss: expected targets of an integer dtype, got "
                           f"{D.name(td.dtype)}")
    if td.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {td.ndim}-dimensional tensor for "
                           "argument #2 'targets' (while checking arguments for ctc_loss)")
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(il) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    tp = _padded_targets(td, tl, N, xp)
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{v} (while checking arguments for ctc_loss)")
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{v} (while checking arguments for ctc_loss)")
    L = tp.shape[1]
    valid = xp.asarray(np.arange(L)[None, :] < np.asarray(tl, np.int64)[:, None])
    if tp.size and bool((valid & ((tp < 0) | (tp >= C))).any()):
        bad = int(tp[valid & ((tp < 0) | (tp >= C))][0])
        raise IndexError(f"ctc_loss: targets must be class indices in [0, {C - 1}], got {bad}")
    lab = xp.full((N, 2 * L + 1), blank, np.int64)
    lab[:, 1::2] = xp.where(valid, tp, blank)
    alpha, emit, nll = _ctc_forward(lp.array, lab, il, tl, blank)
    res = wrap(nll)
    if STATE.enabled and lp.requires_grad:
        n = new_node(CtcLossBackward)
        n.alpha, n.emit, n.lab, n.il, n.tl, n.nll = alpha, emit, lab, il, tl, nll
        n.blank, n.zero_infinity, n.C = blank, zero_infinity, C
        n.save(lp)
        record(n, res, lp)
    if zero_infinity:
        res = where(res == np.inf, 0.0, res)
    if reduction == "mean":
        denom = wrap(xp.asarray(np.maximum(np.asarray(tl, np.int64), 1), dtype=lpd.dtype))
        return (res / denom).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.reshape(())
