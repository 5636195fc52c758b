"""Depthwise convolutions (``groups == C_in``): the numpy reference passes and the dispatch
to the compiled kernels of ``ember.kernels`` (core/kernels/depthwise.py)."""
from __future__ import annotations

import itertools

import numpy as np

from ... import _backend as B
from ... import kernels as _kernels
from ..._parallel import parallel_for
from ._conv_util import _extent, _prod, _scratch, _taps

# --------------------------------------------------------------------------- depthwise
#
# A depthwise conv has no channel reduction, so it is a sum over kernel taps of shifted
# inputs times per-channel weights. To make each shifted input one contiguous slice, the
# zero-padded input is stored flat and split into stride phases (element ``p`` of padded
# dim ``i`` goes to phase ``p % s_i``, position ``p // s_i``): every tap then reads its phase
# at a fixed flat offset, and the outputs form a grid with the phase's row pitch (a few junk
# columns per row, dropped at the end). Work runs in blocks that stay in cache.

_DW_BLOCK = 49152  # elements per multiply-add in the depthwise loops


class _Phases:
    """Flat polyphase layout of the padded input of one conv (see above)."""

    def __init__(self, S, plo, k, s, d, O):
        nd = len(k)
        E = _extent(O, k, s, d)
        E = tuple(max(e, a + n) for e, a, n in zip(E, plo, S))  # cover every input position
        self.S, self.plo, self.s, self.O = S, plo, s, O
        self.Ph = Ph = tuple(-(-e // ss) for e, ss in zip(E, s))
        self.P = P = tuple(_prod(Ph[i + 1:]) for i in range(nd))
        self.size = _prod(Ph)
        self.G = O[0] * P[0]  # output grid: full rows of the phase pitch
        self.offs = []
        for tap in _taps(k):
            r = [t * dd % ss for t, dd, ss in zip(tap, d, s)]
            q = [t * dd // ss for t, dd, ss in zip(tap, d, s)]
            base = sum(ri * _prod(s[i + 1:]) for i, ri in enumerate(r)) * self.size
            self.offs.append(base + sum(qi * pi for qi, pi in zip(q, P)))
        self.F = max(_prod(s) * self.size, max(self.offs) + self.G)

    def _phase_slices(self):
        """(flat start, per-dim (phase slice, input slice)) for each stride phase."""
        out = []
        for j, r in enumerate(itertools.product(*(range(ss) for ss in self.s))):
            dst, src = [], []
            for ri, ss, a, n, ph in zip(r, self.s, self.plo, self.S, self.Ph):
                lo = max(0, -(-(a - ri) // ss))
                hi = min(ph, -(-(a + n - ri) // ss))
                hi = max(hi, lo)
                st = ri + ss * lo - a
                dst.append(slice(lo, hi))
                src.append(slice(st, st + ss * (hi - lo), ss) if hi > lo else slice(0, 0))
            out.append((j * self.size, tuple(dst), tuple(src)))
        return out

    def fill(self, x, key="pad"):
        """x (N, C, *S) -> zero-padded flat phases (N, C, F) (a scratch buffer)."""
        xp = B.namespace(x)
        N, C = x.shape[:2]
        buf = _scratch(key, (N, C, self.F), x.dtype, xp)
        slices = self._phase_slices()

        def part(b, xs):
            b.fill(0)
            for start, dst, src in slices:
                view = b[..., start:start + self.size].reshape(b.shape[:2] + self.Ph)
                view[(Ellipsis,) + dst] = xs[(Ellipsis,) + src]

        if xp is not np:
            part(buf, x)
        elif N > 1:
            parallel_for(lambda lo, hi: part(buf[lo:hi], x[lo:hi]), N, work=buf.size)
        else:
            parallel_for(lambda lo, hi: part(buf[:, lo:hi], x[:, lo:hi]), C, work=buf.size)
        return buf

    def unfill(self, buf, out):
        """The adjoint gather: out (N, C, *S) = the input positions of ``buf``."""
        lead = buf.shape[:2]
        for start, dst, src in self._phase_slices():
            view = buf[..., start:start + self.size].reshape(lead + self.Ph)
            out[(Ellipsis,) + src] = view[(Ellipsis,) + dst]
        return out

    def grid_view(self, a):
        """(..., G) grid -> (..., *O) view of its valid outputs."""
        nd = len(self.O)
        v = a.reshape(a.shape[:-1] + (self.O[0],) + self.Ph[1:])
        return v[(Ellipsis,) + tuple(slice(0, o) for o in self.O[1:])] if nd > 1 else v

    def to_grid(self, g, key="dwg"):
        """g (..., *O) -> (..., G) grid with zeros at the junk positions (a scratch buffer)."""
        xp = B.namespace(g)
        nd = len(self.O)
        buf = _scratch(key, g.shape[:-nd] + (self.G,), g.dtype, xp)
        if nd > 1:
            buf.fill(0)
        self.grid_view(buf)[...] = g
        return buf


def _dw_blocks(N, C, inner):
    """(n0, n1, c0, c1) blocks of about ``_DW_BLOCK`` elements of ``inner`` each."""
    cb = max(1, _DW_BLOCK // max(inner, 1))
    if cb < C:
        return [(n, n + 1, c, min(C, c + cb)) for n in range(N) for c in range(0, C, cb)]
    nb = max(1, cb // C)
    return [(n, min(N, n + nb), 0, C) for n in range(0, N, nb)]


def _dw_kernel(name, *arrays):
    """The compiled depthwise kernel ``name`` (``ember.kernels``) for 2-D float CPU arrays, or
    None: the numpy passes below then run (they are its reference)."""
    a0 = arrays[0]
    if (a0.ndim == 4 and a0.dtype in (np.float32, np.float64) and _kernels.available()
            and all(type(a) is np.ndarray and a.dtype == a0.dtype for a in arrays)):
        return _kernels.lookup(name).cpu
    return None


def _dw_arr(x, w, O, geo):
    """Depthwise conv: out[n, c*m + j] = sum over taps of x[n, c] shifted * w[c*m + j, tap]."""
    plo, s, d, _ = geo
    k = _dw_kernel("depthwise_conv2d", x, w)
    if k is not None:
        return k(x, w, None, s, plo, d, out_size=tuple(O))
    xp = B.namespace(x)
    N, C = x.shape[:2]
    k = w.shape[2:]
    m = w.shape[0] // C
    ph = _Phases(x.shape[2:], plo, k, s, d, O)
    buf = ph.fill(x)
    wr = w.reshape(C, m, _prod(k), 1)
    out = xp.empty((N, C, m) + tuple(O), x.dtype)
    G = ph.G
    blocks = _dw_blocks(N, C, m * G)

    def run(lo, hi):
        for n0, n1, c0, c1 in blocks[lo:hi]:
            acc = _scratch("dwacc", (n1 - n0, c1 - c0, m, G), x.dtype, xp)
            tmp = _scratch("dwtmp", (n1 - n0, c1 - c0, m, G), x.dtype, xp)
            for t, off in enumerate(ph.offs):
                xs = buf[n0:n1, c0:c1, None, off:off + G]
                if t == 0:
                    xp.multiply(xs, wr[c0:c1, :, t], out=acc)
                else:
                    xp.multiply(xs, wr[c0:c1, :, t], out=tmp)
                    acc += tmp
            out[n0:n1, c0:c1] = ph.grid_view(acc)

    _blocks_for(run, blocks, xp, N * C * m * G * len(ph.offs))
    return out.reshape((N, C * m) + tuple(O))


def _blocks_for(run, blocks, xp, work):
    """``run(lo, hi)`` over the index range of ``blocks``: split over threads on numpy (each
    block writes its own part of the output)."""
    if xp is np:
        parallel_for(run, len(blocks), work=work)
    else:
        run(0, len(blocks))


def _dw_t_arr(y, w, S, geo):
    """Adjoint of the depthwise conv in x: y (N, C*m, *O) -> (N, C, *S)."""
    plo, s, d, C = geo
    k = _dw_kernel("depthwise_conv2d_backward_input", y, w)
    if k is not None:
        return k(y, w, (y.shape[0], C) + tuple(S), s, plo, d)
    xp = B.namespace(y)
    N = y.shape[0]
    O = y.shape[2:]
    k = w.shape[2:]
    m = y.shape[1] // C
    ph = _Phases(tuple(S), plo, k, s, d, O)
    G = ph.G
    gg = ph.to_grid(y.reshape((N, C, m) + tuple(O)))
    buf = _scratch("pad", (N, C, ph.F), y.dtype, xp)
    buf.fill(0)
    wr = w.reshape(C, m, _prod(k), 1)
    blocks = _dw_blocks(N, C, m * G)

    def run(lo, hi):
        for n0, n1, c0, c1 in blocks[lo:hi]:
            tmp = _scratch("dwtmp", (n1 - n0, c1 - c0, m, G), y.dtype, xp)
            for t, off in enumerate(ph.offs):
                xp.multiply(gg[n0:n1, c0:c1], wr[c0:c1, :, t], out=tmp)
                dst = buf[n0:n1, c0:c1, off:off + G]
                dst += tmp[:, :, 0] if m == 1 else tmp.sum(2)

    _blocks_for(run, blocks, xp, N * C * m * G * len(ph.offs))
    return ph.unfill(buf, xp.empty((N, C) + tuple(S), y.dtype))


def _dw_w_arr(x, g, k, geo):
    """Adjoint of the depthwise conv in w: (C*m, 1, *k)."""
    plo, s, d, _ = geo
    kern = _dw_kernel("depthwise_conv2d_backward_weight", x, g)
    if kern is not None:
        return kern(x, g, tuple(k), s, plo, d)
    xp = B.namespace(x)
    N, C = x.shape[:2]
    O = g.shape[2:]
    m = g.shape[1] // C
    ph = _Phases(x.shape[2:], plo, k, s, d, O)
    G = ph.G
    buf = ph.fill(x)
    gg = ph.to_grid(g.reshape((N, C, m) + tuple(O)))
    gw = xp.empty((C, m, _prod(k)), g.dtype)
    for t, off in enumerate(ph.offs):
        gw[:, :, t] = xp.einsum("ncmp,ncp->cm", gg, buf[:, :, off:off + G])
    return gw.reshape((C * m, 1) + tuple(k))
