"""The time loop of RNN / LSTM / GRU layers as one autograd op per layer and direction.

A recurrent layer over L steps would record ~10 small ops per step; here the loop runs on raw
arrays and records a single node whose backward is backpropagation through time on raw arrays.
The input projection ``x @ W_ih.T + b_ih`` of all steps is one GEMM done by the caller, and the
weight gradients are one GEMM each over all steps at the end of the backward pass.

Shapes (``G`` gates: 4 LSTM, 3 GRU, 1 RNN; ``P`` = proj_size or H)::

    x_proj (L, N, G*H)   h0 (N, P)   c0 (N, H) LSTM only
    w_hh   (G*H, P)      b_hh (G*H,) or None     w_hr (P, H) LSTM with projections, else None
    out    (L, N, P)     h_n (N, P)  c_n (N, H)

``batch_sizes`` (packed sequences, non-increasing): only the first ``batch_sizes[t]`` rows are
active at step ``t``; the others keep their state and output zeros. ``reverse`` runs from the
last step to the first (the backward direction of a bidirectional layer).

Double backward recomputes the layer with ``unrolled`` (the same math in ember ops, also the
reference the tests compare against) and differentiates that.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import _backend as B
from .. import _blas
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, enable_grad

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _sigmoid(xp, a):
    # 1 / (1 + exp(-a)) without overflow warnings for large |a|
    out = xp.exp(-xp.abs(a))
    pos = a >= 0
    return xp.where(pos, 1 / (1 + out), out / (1 + out)).astype(a.dtype, copy=False)


def _order(L, reverse):
    return range(L - 1, -1, -1) if reverse else range(L)


def _active(batch_sizes, t, n):
    return n if batch_sizes is None else int(batch_sizes[t])


class Recurrence(Function):
    """``(out, h_n, c_n) = Recurrence.apply(mode, x_proj, h0, c0, w_hh, b_hh, w_hr,
    batch_sizes, reverse)``; ``c0``/``c_n`` are None except for LSTM."""

    @staticmethod
    def forward(ctx, mode, x_proj, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
        from .._tensor import Tensor

        X, h = x_proj.array, h0.array.copy()
        xp = B.namespace(X)
        L, N, _ = X.shape
        Whh = w_hh.array
        bhh = None if b_hh is None else b_hh.array
        Whr = None if w_hr is None else w_hr.array
        P = h.shape[1]
        out = xp.zeros((L, N, P), X.dtype)
        hprev = xp.zeros((L, N, P), X.dtype)  # h entering each step (for dW_hh)
        cache = []
        c = c0.array.copy() if mode == "LSTM" else None
        cell = _cell_kernels(mode, X)
        if cell is not None:  # the step's gates in one pass (ember.kernels), into per-layer
            H = c.shape[1] if mode == "LSTM" else P   # buffers the backward reads
            act = xp.empty((L, N, 4 * H), X.dtype)
            if mode == "LSTM":
                cps, tcs = xp.empty((L, N, H), X.dtype), xp.empty((L, N, H), X.dtype)
                ms = out if Whr is None else xp.empty((L, N, H), X.dtype)
        with _step_gemms(xp):
            for t in _order(L, reverse):
                n = _active(batch_sizes, t, N)
                if n == 0:
                    cache.append(None)
                    continue
                hp = h[:n] @ Whh.T
                if bhh is not None:
                    hp += bhh
                hprev[t, :n] = h[:n]
                x = X[t, :n]
                if cell is not None:
                    if mode == "LSTM":
                        m = ms[t, :n]
                        cell(x, hp, c[:n], act[t, :n], cps[t, :n], tcs[t, :n], m)
                        hn = m @ Whr.T if Whr is not None else m
                        cache.append((act[t, :n], cps[t, :n], tcs[t, :n], m))
                    else:
                        cell(x, hp, h[:n], act[t, :n])
                        hn = h[:n]
                        cache.append(act[t, :n])
                elif mode == "LSTM":
                    H = c.shape[1]
                    gates = x + hp
                    i = _sigmoid(xp, gates[:, :H])
                    f = _sigmoid(xp, gates[:, H:2 * H])
                    g = xp.tanh(gates[:, 2 * H:3 * H])
                    o = _sigmoid(xp, gates[:, 3 * H:])
                    cp = c[:n].copy()
                    c[:n] = f * cp + i * g
                    tc = xp.tanh(c[:n])
                    m = o * tc
                    hn = m @ Whr.T if Whr is not None else m
                    cache.append((i, f, g, o, cp, tc, m))
                elif mode == "GRU":
                    H = hp.shape[1] // 3
                    r = _sigmoid(xp, x[:, :H] + hp[:, :H])
                    z = _sigmoid(xp, x[:, H:2 * H] + hp[:, H:2 * H])
                    hn_part = hp[:, 2 * H:]
                    nn_ = xp.tanh(x[:, 2 * H:] + r * hn_part)
                    hn = (1 - z) * nn_ + z * h[:n]
                    cache.append((r, z, nn_, hn_part))
                else:
                    a = x + hp
                    hn = xp.tanh(a) if mode == "RNN_TANH" else xp.maximum(a, 0)
                    cache.append(hn)
                h[:n] = hn
                out[t, :n] = hn
        ctx.mode, ctx.batch_sizes, ctx.reverse = mode, batch_sizes, reverse
        ctx.cache, ctx.hprev = cache, hprev
        ctx.has_bhh, ctx.has_whr = b_hh is not None, w_hr is not None
        ctx.save_for_backward(x_proj, h0, c0, w_hh, b_hh, w_hr)
        outs = (Tensor._make(out), Tensor._make(h))
        return outs + ((Tensor._make(c),) if mode == "LSTM" else (None,))

    @staticmethod
    def backward(ctx, g_out, g_hn, g_cn):
        x_proj, h0, c0, w_hh, b_hh, w_hr = ctx.saved_tensors
        if STATE.enabled:  # create_graph: differentiate a recomputation built from ember ops
            return (None,) + _recompute_grads(ctx, (x_proj, h0, c0, w_hh, b_hh, w_hr),
                                              (g_out, g_hn, g_cn)) + (None, None)
        from .._tensor import Tensor

        mode, bs, reverse = ctx.mode, ctx.batch_sizes, ctx.reverse
        G = g_out.array
        xp = B.namespace(G)
        L, N, P = G.shape
        Whh = w_hh.array
        Whr = None if w_hr is None else w_hr.array
        dh = g_hn.array.copy()
        dc = g_cn.array.copy() if mode == "LSTM" else None
        dX = xp.zeros(x_proj.array.shape, G.dtype)
        dHP = dX if mode != "GRU" else xp.zeros_like(dX)  # grads of h @ W_hh.T + b_hh
        dM = None
        if Whr is not None:
            H = c0.array.shape[1]
            dM_h, Ms = xp.zeros((L, N, P), G.dtype), xp.zeros((L, N, H), G.dtype)
        steps = list(_order(L, reverse))
        cell = _cell_kernels(mode + "_backward", G) if mode in ("LSTM", "GRU") else None
        dz = xp.empty_like(dh) if cell is not None and mode == "GRU" else None
        with _step_gemms(xp):
            for k in range(L - 1, -1, -1):
                t = steps[k]
                n = _active(bs, t, N)
                if n == 0:
                    continue
                d = dh[:n] + G[t, :n]
                if cell is not None and mode == "LSTM":
                    act, cp, tc, m = ctx.cache[k]
                    if Whr is not None:
                        dM_h[t, :n] = d
                        Ms[t, :n] = m
                        d = d @ Whr
                    cell(d, act, cp, tc, dc[:n], dX[t, :n])
                    dh[:n] = dX[t, :n] @ Whh
                elif cell is not None:
                    cell(d, ctx.cache[k], ctx.hprev[t, :n], dX[t, :n], dHP[t, :n], dz[:n])
                    dh[:n] = dz[:n] + dHP[t, :n] @ Whh
                elif mode == "LSTM":
                    i, f, g, o, cp, tc, m = ctx.cache[k]
                    if Whr is not None:
                        dM_h[t, :n] = d
                        Ms[t, :n] = m
                        d = d @ Whr
                    do = d * tc
                    dcc = dc[:n] + d * o * (1 - tc * tc)
                    di, df, dg = dcc * g, dcc * cp, dcc * i
                    dc[:n] = dcc * f
                    H = i.shape[1]
                    row = dX[t, :n]
                    row[:, :H] = di * i * (1 - i)
                    row[:, H:2 * H] = df * f * (1 - f)
                    row[:, 2 * H:3 * H] = dg * (1 - g * g)
                    row[:, 3 * H:] = do * o * (1 - o)
                    dh[:n] = row @ Whh
                elif mode == "GRU":
                    r, z, nn_, hn_part = ctx.cache[k]
                    H = r.shape[1]
                    hp_prev = ctx.hprev[t, :n]
                    dn = d * (1 - z) * (1 - nn_ * nn_)
                    dz = d * (hp_prev - nn_) * z * (1 - z)
                    dr = dn * hn_part * r * (1 - r)
                    row, hrow = dX[t, :n], dHP[t, :n]
                    row[:, :H] = dr
                    row[:, H:2 * H] = dz
                    row[:, 2 * H:] = dn
                    hrow[:, :2 * H] = row[:, :2 * H]
                    hrow[:, 2 * H:] = dn * r
                    dh[:n] = d * z + hrow @ Whh
                else:
                    hn = ctx.cache[k]
                    da = d * (1 - hn * hn) if mode == "RNN_TANH" else d * (hn > 0)
                    dX[t, :n] = da
                    dh[:n] = da @ Whh
        flat = dHP.reshape(L * N, -1)
        d_whh = flat.T @ ctx.hprev.reshape(L * N, P)
        d_bhh = flat.sum(0) if ctx.has_bhh else None
        if Whr is not None:
            dM = dM_h.reshape(L * N, P).T @ Ms.reshape(L * N, -1)
        wrap = Tensor._make
        return (None, wrap(dX), wrap(dh), None if dc is None else wrap(dc), wrap(d_whh),
                None if d_bhh is None else wrap(d_bhh), None if dM is None else wrap(dM),
                None, None)


def _step_gemms(xp):
    """The per-step GEMMs (``h @ W_hh.T``: batch x hidden x gates*hidden, a few MFLOP) run
    single-threaded on numpy: OpenBLAS waking and syncing its threads for each small GEMM
    costs more than the second core gives (see README of ``ember.kernels``); the big GEMMs
    over all steps, outside the loop, keep OpenBLAS's threads."""
    if xp is np and _blas.available():
        return _blas.single_threaded()
    return contextlib.nullcontext()


_CELL_OPS = {"LSTM": "lstm_cell", "GRU": "gru_cell", "LSTM_backward": "lstm_cell_backward",
             "GRU_backward": "gru_cell_backward"}


def _cell_kernels(mode, a):
    """The gate kernel of ``mode`` for numpy arrays (compiled, or its numpy reference under
    ``EMBER_KERNELS=numpy``); None for RNN modes and cupy, which run the ufunc code here."""
    name = _CELL_OPS.get(mode)
    if name is None or type(a) is not np.ndarray:
        return None
    from .. import kernels

    return kernels.get(name, a)


def _recompute_grads(ctx, inputs, grads):
    """Gradients w.r.t. ``inputs`` as differentiable tensors, through ``unrolled``."""
    from ..autograd import grad as autograd_grad

    with enable_grad():
        outs = unrolled(ctx.mode, *inputs, ctx.batch_sizes, ctx.reverse)
        pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
        wanted = [t for t in inputs if t is not None and t.requires_grad]
        res = autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                            create_graph=True, allow_unused=True)
    it = iter(res)
    return tuple(next(it) if (t is not None and t.requires_grad) else None for t in inputs)


def unrolled(mode, x_proj, h0, c0, w_hh, b_hh, w_hr, batch_sizes=None, reverse=False):
    """The same recurrence written step by step with ember ops (differentiable to any order).
    Returns ``(out, h_n, c_n)`` like ``Recurrence``."""
    import ember

    L, N, _ = x_proj.shape
    h, c = h0, c0
    outs = [None] * L
    zeros_p = ember.zeros((N, h0.shape[1]), dtype=x_proj.dtype)
    for t in _order(L, reverse):
        n = _active(batch_sizes, t, N)
        hp = h[:n] @ w_hh.mT
        if b_hh is not None:
            hp = hp + b_hh
        x = x_proj[t, :n]
        if mode == "LSTM":
            H = c.shape[1]
            gates = x + hp
            i, f = gates[:, :H].sigmoid(), gates[:, H:2 * H].sigmoid()
            g, o = gates[:, 2 * H:3 * H].tanh(), gates[:, 3 * H:].sigmoid()
            cn = f * c[:n] + i * g
            m = o * cn.tanh()
            hn = m @ w_hr.mT if w_hr is not None else m
            c = ember.cat([cn, c[n:]]) if n < N else cn
        elif mode == "GRU":
            H = hp.shape[1] // 3
            r = (x[:, :H] + hp[:, :H]).sigmoid()
            z = (x[:, H:2 * H] + hp[:, H:2 * H]).sigmoid()
            nn_ = (x[:, 2 * H:] + r * hp[:, 2 * H:]).tanh()
            hn = (1 - z) * nn_ + z * h[:n]
        else:
            a = x + hp
            hn = a.tanh() if mode == "RNN_TANH" else a.relu()
        h = ember.cat([hn, h[n:]]) if n < N else hn
        outs[t] = ember.cat([hn, zeros_p[n:]]) if n < N else hn
    return ember.stack(outs), h, (c if mode == "LSTM" else None)


def run(mode, x_proj, h0, c0, w_hh, b_hh, w_hr, batch_sizes=None, reverse=False):
    """One layer-direction: the fused op (see the module docstring)."""
    if mode not in GATES:
        raise ValueError(f"unknown recurrent mode {mode!r}: expected one of {sorted(GATES)}")
    bs = None if batch_sizes is None else np.asarray(batch_sizes, dtype=np.int64)
    return Recurrence.apply(mode, x_proj, h0, c0, w_hh, b_hh, w_hr, bs, reverse)
