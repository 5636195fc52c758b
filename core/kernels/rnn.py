"""LSTM and GRU gate pointwise math, forward and backward, one pass over the gates per step.

The recurrent layers (``ember.nn._recurrence``) do the two GEMMs of a step themselves
(``x @ W_ih.T`` for all steps at once, ``h @ W_hh.T`` per step); what remains per step is a
dozen elementwise passes in numpy. These kernels do them in one pass over the rows of the
step (``n`` rows; ``H`` hidden units; gate order i, f, g, o for LSTM and r, z, n for GRU, as
PyTorch's weights)::

    lstm_cell(x, hp, c, act, cp, tc, h)        x, hp (n, 4H): the input and hidden projections
        a = x + hp;  i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g)
        cp[:] = c;  c[:] = f * c + i * g;  tc[:] = tanh(c);  h[:] = o * tc
        act[:] = (i, f, g, o)                  (what the backward needs: act, cp, tc)

    lstm_cell_backward(d, act, cp, tc, dc, da) d (n, H): dL/dh of the step, dc (n, H) in/out
        dcc = dc + d * o * (1 - tc^2);  dc[:] = dcc * f
        da[:] = (dcc * g * i(1-i), dcc * cp * f(1-f), dcc * i * (1-g^2), d * tc * o(1-o))

    gru_cell(x, hp, h, act)                    h (n, H) in/out; act (n, 4H) out
        r, z = sigmoid(x_r + hp_r, x_z + hp_z);  nn = tanh(x_n + r * hp_n)
        h[:] = (1 - z) * nn + z * h;  act[:] = (r, z, nn, hp_n)

    gru_cell_backward(d, act, hprev, dx, dhp, dh) d (n, H); dx, dhp (n, 3H) out; dh (n, H) out
        dn = d (1-z)(1-nn^2);  dz = d (hprev - nn) z(1-z);  dr = dn hp_n r(1-r)
        dx = (dr, dz, dn);  dhp = (dr, dz, dn * r);  dh = d * z   (+ dhp @ W_hh by the caller)

Every array is 2-D with unit-stride rows (``x`` may be a row block of a bigger array).
float32 ``exp`` uses ``activation``'s vectorisable approximation; ``tanh(u)`` is computed as
``1 - 2 / (exp(2u) + 1)``. The numpy references are the same formulas as ufuncs.
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import FLOATS, split
from .activation import _exp_block

__all__ = ["lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"]


def _sig(a):
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


# ----------------------------------------------------------------------------- reference

def lstm_cell_reference(x, hp, c, act, cp, tc, h):
    """One LSTM step's gates (see the module doc); writes ``c``, ``act``, ``cp``, ``tc``,
    ``h`` in place."""
    H = c.shape[1]
    a = x + hp
    i, f, g, o = _sig(a[:, :H]), _sig(a[:, H:2 * H]), np.tanh(a[:, 2 * H:3 * H]), _sig(a[:, 3 * H:])
    cp[...] = c
    c[...] = f * cp + i * g
    tc[...] = np.tanh(c)
    h[...] = o * tc
    act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:] = i, f, g, o


def lstm_cell_backward_reference(d, act, cp, tc, dc, da):
    """The LSTM step's backward (see the module doc): ``dc`` in/out, ``da`` out."""
    H = d.shape[1]
    i, f, g, o = act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:]
    dcc = dc + d * o * (1 - tc * tc)
    da[:, :H] = dcc * g * i * (1 - i)
    da[:, H:2 * H] = dcc * cp * f * (1 - f)
    da[:, 2 * H:3 * H] = dcc * i * (1 - g * g)
    da[:, 3 * H:] = d * tc * o * (1 - o)
    dc[...] = dcc * f


def gru_cell_reference(x, hp, h, act):
    """One GRU step's gates (see the module doc); ``h`` in/out, ``act`` out."""
    H = h.shape[1]
    r = _sig(x[:, :H] + hp[:, :H])
    z = _sig(x[:, H:2 * H] + hp[:, H:2 * H])
    hn = hp[:, 2 * H:]
    nn_ = np.tanh(x[:, 2 * H:] + r * hn)
    act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:] = r, z, nn_, hn
    h[...] = (1 - z) * nn_ + z * h


def gru_cell_backward_reference(d, act, hprev, dx, dhp, dh):
    """The GRU step's backward (see the module doc): ``dx``, ``dhp``, ``dh`` out."""
    H = d.shape[1]
    r, z, nn_, hn = act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:]
    dn = d * (1 - z) * (1 - nn_ * nn_)
    dz = d * (hprev - nn_) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    dx[:, :H], dx[:, H:2 * H], dx[:, 2 * H:] = dr, dz, dn
    dhp[:, :H], dhp[:, H:2 * H], dhp[:, 2 * H:] = dr, dz, dn * r
    dh[...] = d * z


# ----------------------------------------------------------------------------- compiled

@jit
def _lstm(x, hp, c, act, cp, tc, h, fast, lo, hi):
    H = c.shape[1]
    f = x.dtype.type
    one, two = f(1), f(2)
    z = np.empty(4 * H, x.dtype)
    e = np.empty(4 * H, x.dtype)
    ib = np.empty(4 * H, np.int32)
    for r in range(lo, hi):
        xr, hr, ar = x[r], hp[r], act[r]
        cr, cpr, tcr, hor = c[r], cp[r], tc[r], h[r]
        for k in range(4 * H):  # exp(-a) for the sigmoids, exp(2a) for tanh(g)
            z[k] = -(xr[k] + hr[k])
        for k in range(2 * H, 3 * H):
            z[k] = -two * z[k]
        _exp_block(z, e, ib, fast)
        for k in range(4 * H):
            ar[k] = one / (one + e[k])
        for k in range(2 * H, 3 * H):
            ar[k] = one - two / (e[k] + one)
        zh, eh = z[:H], e[:H]
        for k in range(H):
            cv = cr[k]
            cpr[k] = cv
            cn = ar[H + k] * cv + ar[k] * ar[2 * H + k]
            cr[k] = cn
            zh[k] = two * cn
        _exp_block(zh, eh, ib, fast)
        for k in range(H):
            t = one - two / (eh[k] + one)
            tcr[k] = t
            hor[k] = ar[3 * H + k] * t


@jit
def _lstm_bwd(d, act, cp, tc, dc, da, lo, hi):
    H = d.shape[1]
    one = d.dtype.type(1)
    for r in range(lo, hi):
        dr, ar, cpr, tcr, dcr, dar = d[r], act[r], cp[r], tc[r], dc[r], da[r]
        for k in range(H):
            i, fg, g, o = ar[k], ar[H + k], ar[2 * H + k], ar[3 * H + k]
            t = tcr[k]
            dv = dr[k]
            dcc = dcr[k] + dv * o * (one - t * t)
            dar[k] = dcc * g * i * (one - i)
            dar[H + k] = dcc * cpr[k] * fg * (one - fg)
            dar[2 * H + k] = dcc * i * (one - g * g)
            dar[3 * H + k] = dv * t * o * (one - o)
            dcr[k] = dcc * fg


@jit
def _gru(x, hp, h, act, fast, lo, hi):
    H = h.shape[1]
    f = x.dtype.type
    one, two = f(1), f(2)
    z = np.empty(2 * H, x.dtype)
    e = np.empty(2 * H, x.dtype)
    ib = np.empty(2 * H, np.int32)
    for r in range(lo, hi):
        xr, hr, ar, h_ = x[r], hp[r], act[r], h[r]
        for k in range(2 * H):
            z[k] = -(xr[k] + hr[k])
        _exp_block(z, e, ib, fast)
        for k in range(2 * H):
            ar[k] = one / (one + e[k])
        zh, eh = z[:H], e[:H]
        for k in range(H):
            hn = hr[2 * H + k]
            ar[3 * H + k] = hn
            zh[k] = two * (xr[2 * H + k] + ar[k] * hn)
        _exp_block(zh, eh, ib, fast)
        for k in range(H):
            nn_ = one - two / (eh[k] + one)
            ar[2 * H + k] = nn_
            zz = ar[H + k]
            h_[k] = (one - zz) * nn_ + zz * h_[k]


@jit
def _gru_bwd(d, act, hprev, dx, dhp, dh, lo, hi):
    H = d.shape[1]
    one = d.dtype.type(1)
    for r in range(lo, hi):
        dr_, ar, hpr, dxr, dhr, dhh = d[r], act[r], hprev[r], dx[r], dhp[r], dh[r]
        for k in range(H):
            rr, zz, nn_, hn = ar[k], ar[H + k], ar[2 * H + k], ar[3 * H + k]
            dv = dr_[k]
            dn = dv * (one - zz) * (one - nn_ * nn_)
            dz = dv * (hpr[k] - nn_) * zz * (one - zz)
            dr = dn * hn * rr * (one - rr)
            dxr[k] = dr
            dxr[H + k] = dz
            dxr[2 * H + k] = dn
            dhr[k] = dr
            dhr[H + k] = dz
            dhr[2 * H + k] = dn * rr
            dhh[k] = dv * zz


def _ok(*arrays):
    dt = arrays[0].dtype
    return dt in FLOATS and all(type(a) is np.ndarray and a.dtype == dt and a.ndim == 2
                                and a.strides[1] == a.itemsize for a in arrays)


def _check(what, n, H, **shapes):
    for name, (a, cols) in shapes.items():
        if a.shape != (n, cols * H):
            raise ValueError(f"{what}: {name} must have shape {(n, cols * H)}, got {a.shape}")


def lstm_cell(x, hp, c, act, cp, tc, h):
    """``lstm_cell_reference``, compiled: one pass over the step's gates."""
    n, H = c.shape
    _check("lstm_cell", n, H, x=(x, 4), hp=(hp, 4), act=(act, 4), cp=(cp, 1), tc=(tc, 1),
           h=(h, 1))
    if not _ok(x, hp, c, act, cp, tc, h):
        return lstm_cell_reference(x, hp, c, act, cp, tc, h)
    fast = x.dtype == np.float32
    split(lambda lo, hi: _lstm(x, hp, c, act, cp, tc, h, fast, lo, hi), n, 12 * n * H)


def lstm_cell_backward(d, act, cp, tc, dc, da):
    """``lstm_cell_backward_reference``, compiled."""
    n, H = d.shape
    _check("lstm_cell_backward", n, H, act=(act, 4), cp=(cp, 1), tc=(tc, 1), dc=(dc, 1),
           da=(da, 4))
    if not _ok(d, act, cp, tc, dc, da):
        return lstm_cell_backward_reference(d, act, cp, tc, dc, da)
    split(lambda lo, hi: _lstm_bwd(d, act, cp, tc, dc, da, lo, hi), n, 13 * n * H)


def gru_cell(x, hp, h, act):
    """``gru_cell_reference``, compiled."""
    n, H = h.shape
    _check("gru_cell", n, H, x=(x, 3), hp=(hp, 3), act=(act, 4))
    if not _ok(x, hp, h, act):
        return gru_cell_reference(x, hp, h, act)
    fast = x.dtype == np.float32
    split(lambda lo, hi: _gru(x, hp, h, act, fast, lo, hi), n, 12 * n * H)


def gru_cell_backward(d, act, hprev, dx, dhp, dh):
    """``gru_cell_backward_reference``, compiled."""
    n, H = d.shape
    _check("gru_cell_backward", n, H, act=(act, 4), hprev=(hprev, 1), dx=(dx, 3),
           dhp=(dhp, 3), dh=(dh, 1))
    if not _ok(d, act, hprev, dx, dhp, dh):
        return gru_cell_backward_reference(d, act, hprev, dx, dhp, dh)
    split(lambda lo, hi: _gru_bwd(d, act, hprev, dx, dhp, dh, lo, hi), n, 14 * n * H)


register("lstm_cell", reference=lstm_cell_reference, cpu=lstm_cell)
register("lstm_cell_backward", reference=lstm_cell_backward_reference, cpu=lstm_cell_backward)
register("gru_cell", reference=gru_cell_reference, cpu=gru_cell)
register("gru_cell_backward", reference=gru_cell_backward_reference, cpu=gru_cell_backward)
