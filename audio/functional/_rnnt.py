"""RNN Transducer loss (Graves 2012), as ``torchaudio.functional.rnnt_loss``.

For a sample with T frames and U target tokens the joiner gives log-probabilities on a
(T, U + 1) lattice; from cell (t, u) a path either emits blank (to (t + 1, u)) or the next
target y_u (to (t, u + 1)):

    alpha[t, u] = logaddexp(alpha[t - 1, u] + blank[t - 1, u], alpha[t, u - 1] + emit[t, u - 1])
    beta[t, u]  = logaddexp(beta[t + 1, u] + blank[t, u],     beta[t, u + 1] + emit[t, u])
    loss        = -(alpha[T - 1, U] + blank[T - 1, U]) = -beta[0, 0]

A cell depends only on cells of the previous anti-diagonal n - 1 = t + u - 1, so both
recursions run one anti-diagonal at a time, vectorised over the batch and the cells of the
diagonal: the lattice is stored skewed, ``S[b, n, t] = X[b, t, n - t]``, where diagonal n is
one row, its blank predecessor is ``S[n - 1, t - 1]`` and its emit predecessor
``S[n - 1, t]``. Cells outside a sample's lattice carry -inf log-probabilities, so samples of
different lengths share the loop. beta starts from a virtual cell (T, U) holding 0 that the
final blank leads to, which makes the last blank an ordinary transition.

The gradient is torchaudio's. With ``fused_log_softmax`` (log_softmax over the classes done
here, the gradient taken w.r.t. the logits):

    grad[t, u, d] = softmax[t, u, d] * exp(alpha + beta + loss)[t, u]
                    - [d == blank]  exp(alpha[t, u] + blank[t, u] + beta[t + 1, u] + loss)
                    - [d == y_u]    exp(alpha[t, u] + emit[t, u] + beta[t, u + 1] + loss)

and without it (the logits are log-probabilities already) only the two subtracted terms.
``clamp > 0`` clips it to [-clamp, clamp] before the upstream gradient is applied. As for
``ctc_loss``, double backward is not supported.
"""
from __future__ import annotations

import numpy as np

from ember import _backend as B
from ember import dtypes as D
from ember.autograd.grad_mode import STATE
from ember.autograd.graph import Node, new_node, record
from ember.ops import _util as U
from ember.ops._util import wrap

__all__ = ["rnnt_loss"]

_NEG_INF = -np.inf


def _int_vector(v, name, n=None):
    """A 1-D integer tensor/array/sequence -> int64 numpy array (host side)."""
    if isinstance(v, U.T()):
        a = v.array
        a = a.get() if B.is_cuda_array(a) else a
    else:
        a = np.asarray(v)
    if a.dtype.kind not in "iu":
        raise TypeError(f"rnnt_loss: {name} must hold integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"rnnt_loss: {name} must be 1-D (batch,), got shape {tuple(a.shape)}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"rnnt_loss: {name} must have one entry per batch element ({n}), got "
                         f"{a.shape[0]}")
    return a.astype(np.int64)


def _skew_index(T, U1):
    """Index arrays (N, T) mapping skewed cell (n, t) to lattice cell (t, n - t), and their
    validity mask (0 <= n - t < U1); N = T + U1 - 1 anti-diagonals."""
    N = T + U1 - 1
    n = np.arange(N)[:, None]
    t = np.arange(T)[None, :]
    u = n - t
    valid = (u >= 0) & (u < U1)
    return np.broadcast_to(t, (N, T)), np.clip(u, 0, U1 - 1), valid


def _skew(x, ti, ui, valid, xp):
    """(B, T, U1) -> skewed (B, N, T), -inf off the lattice."""
    s = x[:, xp.asarray(ti), xp.asarray(ui)]
    return xp.where(xp.asarray(valid)[None], s, _NEG_INF)


def _alpha(sk, em, xp):
    """Forward variables, skewed (B, N, T): alpha[b, n, t] = alpha[b, t, n - t]."""
    Bn, N, T = sk.shape
    a = xp.full((Bn, N, T), _NEG_INF, sk.dtype)
    a[:, 0, 0] = 0
    tmp = xp.empty((Bn, T), sk.dtype)
    for n in range(1, N):
        prev, cur = a[:, n - 1], a[:, n]
        xp.add(prev, em[:, n - 1], out=tmp)                   # from (t, u - 1)
        cur[:, 0] = tmp[:, 0]
        if T > 1:
            xp.logaddexp(prev[:, :-1] + sk[:, n - 1, :-1], tmp[:, 1:], out=cur[:, 1:])
    return a


def _beta(sk, em, tl, ul, xp):
    """Backward variables, skewed over an extended lattice (B, N + 1, T + 1) whose virtual
    cell (T_b, U_b) holds 0: beta[b, n, t] = beta[b, t, n - t]."""
    Bn, N, T = sk.shape
    b = xp.full((Bn, N + 2, T + 1), _NEG_INF, sk.dtype)  # row N + 1: all -inf
    ends = {}
    for i, (t_, u_) in enumerate(zip(tl.tolist(), ul.tolist())):
        ends.setdefault(t_ + u_, []).append((i, t_))
    tmp = xp.empty((Bn, T), sk.dtype)
    for n in range(N, -1, -1):
        cur = b[:, n]
        if n < N:
            nxt = b[:, n + 1]
            xp.add(nxt[:, :T], em[:, n], out=tmp)             # to (t, u + 1)
            xp.logaddexp(nxt[:, 1:] + sk[:, n], tmp, out=cur[:, :T])
        for i, t_ in ends.get(n, ()):
            cur[i, t_] = 0
    return b


def _unskew(s, T, U1, xp):
    """Skewed (B, N', T') -> (B, T, U1) lattice values (t < T, u < U1)."""
    t = np.arange(T)[:, None]
    u = np.arange(U1)[None, :]
    return s[:, xp.asarray(t + u), xp.asarray(np.broadcast_to(t, (T, U1)))]


class _Lattice:
    """What the forward computes and the backward reuses."""

    __slots__ = ("x", "lse", "blank_lp", "emit_lp", "tg", "alpha_s", "tl", "ul", "blank",
                 "fused", "clamp", "cost", "dtype")


def _prepare(x, tgt, tl, ul, blank, fused, xp):
    Bn, T, U1, C = x.shape
    lse = None
    if fused:
        m = x.max(axis=3, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
        lse = xp.log(xp.exp(x - m).sum(axis=3)) + m[..., 0]
    tg = xp.zeros((Bn, U1), np.int64)
    w = min(tgt.shape[1], U1)
    tg[:, :w] = xp.asarray(tgt[:, :w])
    tgc = xp.clip(tg, 0, C - 1)
    blank_lp = x[..., blank]
    emit_lp = xp.take_along_axis(x, xp.broadcast_to(tgc[:, None, :, None], (Bn, T, U1, 1)),
                                 axis=3)[..., 0]
    if fused:
        blank_lp = blank_lp - lse
        emit_lp = emit_lp - lse
    tt = np.arange(T)[None, :, None]
    uu = np.arange(U1)[None, None, :]
    in_t = tt < tl[:, None, None]
    blank_ok = xp.asarray(in_t & (uu <= ul[:, None, None]))
    emit_ok = xp.asarray(in_t & (uu < ul[:, None, None]))
    blank_lp = xp.where(blank_ok, blank_lp, _NEG_INF)
    emit_lp = xp.where(emit_ok, emit_lp, _NEG_INF)
    return lse, tgc, blank_lp, emit_lp


def _forward(x, tgt, tl, ul, blank, fused, xp):
    """Costs (B,) and the lattice state for the backward."""
    Bn, T, U1, C = x.shape
    lse, tgc, blank_lp, emit_lp = _prepare(x, tgt, tl, ul, blank, fused, xp)
    ti, ui, valid = _skew_index(T, U1)
    sk = _skew(blank_lp, ti, ui, valid, xp)
    em = _skew(emit_lp, ti, ui, valid, xp)
    a = _alpha(sk, em, xp)
    rows = np.arange(Bn)
    last = xp.asarray(tl - 1 + ul), xp.asarray(tl - 1)
    fin = a[xp.asarray(rows), last[0], last[1]] + blank_lp[xp.asarray(rows), last[1],
                                                           xp.asarray(ul)]
    st = _Lattice()
    st.x, st.lse, st.blank_lp, st.emit_lp, st.tg = x, lse, blank_lp, emit_lp, tgc
    st.alpha_s, st.tl, st.ul, st.blank, st.fused = a, tl, ul, blank, fused
    st.cost = -fin
    return -fin, st, (sk, em)


def _gradient(st, skew_lp, xp):
    """d cost_b / d logits, (B, T, U1, C), zero off each sample's lattice."""
    x = st.x
    Bn, T, U1, C = x.shape
    sk, em = skew_lp
    bs = _beta(sk, em, st.tl, st.ul, xp)
    alpha = _unskew(st.alpha_s, T, U1, xp)
    beta_ext = _unskew(bs, T + 1, U1 + 1, xp)                 # (B, T + 1, U1 + 1)
    # the virtual end cell (T_b, U_b) lies inside the padded lattice when T_b < T: only
    # transitions into it count, never an occupancy of it
    in_t = xp.asarray(np.arange(T)[None, :, None] < st.tl[:, None, None])
    beta = xp.where(in_t, beta_ext[:, :T, :U1], _NEG_INF)
    cost = st.cost[:, None, None]
    with np.errstate(over="ignore", invalid="ignore"):
        base = alpha + cost
        g_blank = xp.exp(base + st.blank_lp + beta_ext[:, 1:, :U1])
        g_emit = xp.exp(base + st.emit_lp + beta_ext[:, :T, 1:])
        if st.fused:
            grad = x - st.lse[..., None]                     # log_softmax, a fresh array
            xp.exp(grad, out=grad)
            grad *= xp.exp(base + beta)[..., None]           # occupancy of the cell
        else:
            grad = xp.zeros_like(x)
    grad[..., st.blank] -= g_blank
    tgi = st.tg[:, None, :, None]
    cur = xp.take_along_axis(grad, xp.broadcast_to(tgi, (Bn, T, U1, 1)), axis=3)
    xp.put_along_axis(grad, xp.broadcast_to(tgi, (Bn, T, U1, 1)), cur - g_emit[..., None],
                      axis=3)
    # cells off the lattice: alpha may be finite there but beta is -inf, so every term is 0;
    # an impossible sample (infinite cost) gives nan, set to 0 as torchaudio's zeroed memory
    grad = xp.where(xp.isfinite(grad), grad, 0)
    return grad


class RnntLossBackward(Node):
    __slots__ = ("st", "skew_lp")

    def backward(self, g):
        st = self.st
        xp = B.namespace(st.x)
        grad = _gradient(st, self.skew_lp, xp)
        if st.clamp > 0:
            xp.clip(grad, -st.clamp, st.clamp, out=grad)
        grad *= g.array.astype(grad.dtype, copy=False).reshape(-1, 1, 1, 1)
        out = wrap(grad.astype(st.dtype, copy=False))
        if STATE.enabled:  # create_graph: the gradient is there, its own derivative is not
            n = new_node(RnntLossDoubleBackward)
            record(n, out, g)
        return (out,)


class RnntLossDoubleBackward(Node):
    __slots__ = ()

    def backward(self, g):
        raise RuntimeError("derivative for rnnt_loss's backward is not implemented: double "
                           "backward through rnnt_loss is unsupported (as in torchaudio)")


def rnnt_loss(logits, targets, logit_lengths, target_lengths, blank=-1, clamp=-1,
              reduction="mean", fused_log_softmax=True):
    """RNN Transducer loss of joiner outputs against target sequences, as torchaudio's.

    Args:
        logits: (batch, max_T, max_U + 1, classes) joiner output (float32/float64; float16
            is computed in float32).
        targets: (batch, max_U) integer targets, zero padded.
        logit_lengths: (batch,) valid frames per sample (at least 1).
        target_lengths: (batch,) valid targets per sample.
        blank: blank class index (negative counts from the end; default the last class).
        clamp: if > 0, the gradient w.r.t. the logits is clipped to [-clamp, clamp].
        reduction: ``"none"`` (batch,), ``"mean"`` (over the batch) or ``"sum"``.
        fused_log_softmax: apply log_softmax over the classes inside the loss (``False``
            when the caller passes log-probabilities).

        >>> logits = ember.randn(2, 10, 4, 5, requires_grad=True)
        >>> loss = rnnt_loss(logits, ember.tensor([[1, 2, 3], [2, 1, 0]], dtype=ember.int32),
        ...                  ember.tensor([10, 8]), ember.tensor([3, 2]))
        >>> loss.backward()
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"rnnt_loss: reduction must be 'none', 'mean' or 'sum', got "
                         f"{reduction!r}")
    logits = U.to_tensor(logits, name="logits")
    x = logits.array
    if x.ndim != 4:
        raise ValueError(f"rnnt_loss: logits must be 4-D (batch, max_T, max_U + 1, classes), "
                         f"got shape {tuple(x.shape)}")
    if not D.is_floating(x.dtype):
        raise TypeError(f"rnnt_loss: logits must be floating point, got {D.name(x.dtype)}")
    Bn, T, U1, C = x.shape
    xp = B.namespace(x)
    tgt = targets.array if isinstance(targets, U.T()) else np.asarray(targets)
    if tgt.dtype.kind not in "iu":
        raise TypeError(f"rnnt_loss: targets must hold integers, got dtype {tgt.dtype}")
    if tgt.ndim != 2 or tgt.shape[0] != Bn:
        raise ValueError(f"rnnt_loss: targets must be (batch={Bn}, max_U), got shape "
                         f"{tuple(tgt.shape)}")
    tl = _int_vector(logit_lengths, "logit_lengths", Bn)
    ul = _int_vector(target_lengths, "target_lengths", Bn)
    if Bn and (tl.min() < 1 or tl.max() > T):
        raise ValueError(f"rnnt_loss: logit_lengths must be in [1, {T}] (logits dim 1), got "
                         f"{tl.tolist()}")
    if Bn and (ul.min() < 0 or ul.max() + 1 > U1):
        raise ValueError(f"rnnt_loss: target_lengths must be in [0, {U1 - 1}] (logits dim 2 "
                         f"minus 1), got {ul.tolist()}")
    if Bn and ul.max() > tgt.shape[1]:
        raise ValueError(f"rnnt_loss: targets has {tgt.shape[1]} columns, fewer than the "
                         f"longest target_length {int(ul.max())}")
    b = blank + C if blank < 0 else blank
    if not 0 <= b < C:
        raise ValueError(f"rnnt_loss: blank {blank} out of range for {C} classes")
    tg_host = tgt.get() if B.is_cuda_array(tgt) else np.asarray(tgt)
    mask = np.arange(tg_host.shape[1])[None, :] < ul[:, None]
    if mask.any():
        used = tg_host[mask]
        if used.min() < 0 or used.max() >= C:
            raise ValueError(f"rnnt_loss: targets must be class indices in [0, {C - 1}], got "
                             f"values in [{int(used.min())}, {int(used.max())}]")
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    cost, st, skew_lp = _forward(work, tg_host.astype(np.int64), tl, ul, b,
                                 bool(fused_log_softmax), xp)
    st.clamp, st.dtype = float(clamp), x.dtype
    res = wrap(cost.astype(x.dtype, copy=False))
    if STATE.enabled and logits.requires_grad:
        n = new_node(RnntLossBackward)
        n.st, n.skew_lp = st, skew_lp
        record(n, res, logits)
    if reduction == "mean":
        return res.mean()
    if reduction == "sum":
        return res.sum()
    return res
