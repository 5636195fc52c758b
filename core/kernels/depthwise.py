"""Depthwise 2-D convolution (``groups == C_in``): forward and both backward passes.

Shapes, as in ``torch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups=C)``:
``x`` (N, C, H, W), ``w`` (C*m, 1, KH, KW) (``m`` the channel multiplier), ``b`` (C*m,) or
None, output (N, C*m, OH, OW). Output channel ``co`` reads input channel ``co // m``.

The numpy reference makes one multiply and one add pass over the output per kernel tap
(what ember's conv does today). The compiled kernel makes one pass: per output row it
accumulates the taps into the row while it sits in L1, the inner loop over output columns
contiguous (vectorised) for stride 1. Planes are split over ember's threads.

    >>> import numpy as np
    >>> x = np.ones((1, 2, 4, 4), np.float32); w = np.ones((2, 1, 3, 3), np.float32)
    >>> depthwise_conv2d(x, w, None, 1, 1, 1)[0, 0, 0].tolist()
    [4.0, 6.0, 6.0, 4.0]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import compiled_dtype, contiguous, launch, pair

__all__ = ["depthwise_conv2d", "depthwise_conv2d_backward_input",
           "depthwise_conv2d_backward_weight"]


def _geometry(H, W, KH, KW, stride, padding, dilation, out_size=None):
    """``(sh, sw, ph, pw, dh, dw, OH, OW)``. ``padding`` pads the low side of each dim;
    the high side is as much again unless ``out_size`` is given (then the output size
    decides it: zeros beyond the input, or trailing input that no window reaches)."""
    sh, sw = pair(stride, "stride")
    ph, pw = pair(padding, "padding")
    dh, dw = pair(dilation, "dilation")
    if min(sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ValueError("depthwise_conv2d: stride and dilation must be >= 1, padding >= 0")
    if out_size is not None:
        OH, OW = pair(out_size, "out_size")
    else:
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    if OH <= 0 or OW <= 0:
        raise ValueError(f"depthwise_conv2d: output size ({OH}, {OW}) is too small")
    return sh, sw, ph, pw, dh, dw, OH, OW


def _check(x_shape, w_shape, what="depthwise_conv2d"):
    if len(x_shape) != 4 or len(w_shape) != 4 or w_shape[1] != 1 or w_shape[0] % x_shape[1]:
        raise ValueError(f"{what}: expected x (N, C, H, W) and w (C*m, 1, KH, KW), got "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")


def _check_g(g, N, Co, what):
    if g.ndim != 4 or g.shape[0] != N or g.shape[1] != Co:
        raise ValueError(f"{what}: g has shape {tuple(g.shape)}, expected ({N}, {Co}, OH, OW)")


# ----------------------------------------------------------------------------- reference

def _taps(H, W, KH, KW, geo):
    """Per tap (i, j): the output block that reads inside the unpadded input, and the
    input slices it reads."""
    sh, sw, ph, pw, dh, dw, OH, OW = geo
    for i in range(KH):
        for j in range(KW):
            oh0 = max(0, -(-(ph - i * dh) // sh))
            oh1 = min(OH, (H - 1 + ph - i * dh) // sh + 1)
            ow0 = max(0, -(-(pw - j * dw) // sw))
            ow1 = min(OW, (W - 1 + pw - j * dw) // sw + 1)
            if oh0 >= oh1 or ow0 >= ow1:
                continue
            ih0, iw0 = oh0 * sh - ph + i * dh, ow0 * sw - pw + j * dw
            xs = (slice(ih0, ih0 + (oh1 - oh0 - 1) * sh + 1, sh),
                  slice(iw0, iw0 + (ow1 - ow0 - 1) * sw + 1, sw))
            yield i, j, (slice(oh0, oh1), slice(ow0, ow1)), xs


def depthwise_conv2d_reference(x, w, b=None, stride=1, padding=0, dilation=1, out_size=None):
    """Depthwise conv2d forward (see the module doc): a multiply-add pass per tap."""
    _check(x.shape, w.shape)
    N, C, H, W = x.shape
    Co, _, KH, KW = w.shape
    m = Co // C
    geo = _geometry(H, W, KH, KW, stride, padding, dilation, out_size)
    OH, OW = geo[-2:]
    out = np.zeros((N, C, m, OH, OW), np.result_type(x, w))
    wr = w.reshape(C, m, KH, KW)
    x5 = x[:, :, None]
    for i, j, os_, xs in _taps(H, W, KH, KW, geo):
        out[(Ellipsis,) + os_] += x5[(Ellipsis,) + xs] * wr[:, :, i, j, None, None]
    out = out.reshape(N, Co, OH, OW)
    if b is not None:
        out += b.reshape(Co, 1, 1)
    return out


def depthwise_conv2d_backward_input_reference(g, w, input_shape, stride=1, padding=0,
                                              dilation=1):
    """Gradient in ``x``: ``g`` (N, C*m, OH, OW) -> (N, C, H, W), ``input_shape`` x's shape
    (the output size is ``g``'s: it sets the high-side padding)."""
    _check(input_shape, w.shape, "depthwise_conv2d_backward_input")
    N, C, H, W = input_shape
    Co, _, KH, KW = w.shape
    m = Co // C
    _check_g(g, N, Co, "depthwise_conv2d_backward_input")
    geo = _geometry(H, W, KH, KW, stride, padding, dilation, g.shape[2:])
    OH, OW = geo[-2:]
    gx = np.zeros((N, C, H, W), np.result_type(g, w))
    g5 = g.reshape(N, C, m, OH, OW)
    wr = w.reshape(C, m, KH, KW)
    for i, j, os_, xs in _taps(H, W, KH, KW, geo):
        gx[(Ellipsis,) + xs] += (g5[(Ellipsis,) + os_] * wr[:, :, i, j, None, None]).sum(2)
    return gx


def depthwise_conv2d_backward_weight_reference(x, g, kernel_size, stride=1, padding=0,
                                               dilation=1):
    """Gradient in ``w``: ``x`` (N, C, H, W), ``g`` (N, C*m, OH, OW) -> (C*m, 1, KH, KW)."""
    N, C, H, W = x.shape
    Co = g.shape[1]
    m = Co // C
    KH, KW = pair(kernel_size, "kernel_size")
    _check_g(g, N, Co, "depthwise_conv2d_backward_weight")
    geo = _geometry(H, W, KH, KW, stride, padding, dilation, g.shape[2:])
    gw = np.zeros((C, m, KH, KW), np.result_type(x, g))
    g5 = g.reshape(N, C, m, geo[-2], geo[-1])
    for i, j, os_, xs in _taps(H, W, KH, KW, geo):
        gw[:, :, i, j] = np.einsum("ncmhw,nchw->cm", g5[(Ellipsis,) + os_],
                                   x[(Ellipsis,) + xs])
    return gw.reshape(Co, 1, KH, KW)


# ----------------------------------------------------------------------------- compiled
#
# How these loops are written, measured on the 8x144x56x56 3x3 layer, one thread:
# - every inner loop runs over slices from index 0: indexing ``row[k + off]`` with a signed
#   offset makes numba emit a negative-index check that stops LLVM vectorising (19 ms
#   against 2.4 ms);
# - one kernel per stride kind: a function holding both a unit-stride and a strided slice
#   path ran 4x slower even when only the unit path ran (the slices' reference counting is
#   no longer pruned), so the wrapper picks ``_dw_unit`` or ``_dw_phased``;
# - at width stride > 1 the scratch plane keeps its column phases apart (``_fill_phased``):
#   the taps then read contiguous inputs too, 2-3.6x faster than strided loads (8x72x112^2
#   5x5 stride 2, one thread: 17 ms against 63 ms);
# - each input plane is copied once into a zero-bordered scratch plane, so every tap reads
#   a full output row's worth of inputs: no edge cases inside the loops; the copy is a
#   loop over rows (a 2-D slice assignment cost 2.6 s to compile and 0.8 ms per layer);
# - taps are fused three at a time: one load and store of the output row per three taps.


@jit
def _fill(pad, plane, ph, pw):
    """Copy ``plane`` into ``pad`` at offset (ph, pw) (negative: cropped); the border of
    ``pad`` is left as it is (zero)."""
    PH, PW = pad.shape
    H, W = plane.shape
    r0, r1 = max(ph, 0), min(ph + H, PH)
    c0, c1 = max(pw, 0), min(pw + W, PW)
    n = c1 - c0
    if n > 0:
        for r in range(r0, r1):
            dst = pad[r, c0:c1]
            src = plane[r - ph, c0 - pw:c1 - pw]
            for c in range(n):
                dst[c] = src[c]


@jit(inline="always")
def _row_unit(orow, prow, wrow, OW, dw):
    """``orow[k] += sum_j wrow[j] * prow[k + j*dw]``, taps fused three at a time."""
    KW = wrow.shape[0]
    j = 0
    while j + 3 <= KW:
        s0 = j * dw
        a = prow[s0:s0 + OW]
        b = prow[s0 + dw:s0 + dw + OW]
        c = prow[s0 + 2 * dw:s0 + 2 * dw + OW]
        w0, w1, w2 = wrow[j], wrow[j + 1], wrow[j + 2]
        for k in range(OW):
            orow[k] += w0 * a[k] + w1 * b[k] + w2 * c[k]
        j += 3
    while j < KW:
        a1 = prow[j * dw:j * dw + OW]
        wv = wrow[j]
        for k in range(OW):
            orow[k] += wv * a1[k]
        j += 1


@jit
def _dw_unit(x, w, b, out, sh, ph, pw, dh, dw, M, R, lo, hi):
    """Stride-1-along-width correlation, output planes ``lo..hi`` of (N * OC):
    ``out[n, oc] = b[oc] + sum_{t<R} x[n, (oc // M) * R + t] (*) w[oc * R + t]``.

    The forward pass is ``R = 1`` (``M`` the channel multiplier); the input gradient at
    stride 1 is ``M = 1, R = m`` with the flipped kernel over the output gradient."""
    XC = x.shape[1]
    OC, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    KH, KW = w.shape[2], w.shape[3]
    pad = np.zeros(((OH - 1) * sh + (KH - 1) * dh + 1, OW + (KW - 1) * dw), x.dtype)
    for pl in range(lo, hi):
        n, oc = pl // OC, pl % OC
        bv = b[oc]
        for oh in range(OH):
            orow = out[n, oc, oh]
            for k in range(OW):
                orow[k] = bv
        for t in range(R):
            ic = (oc // M) * R + t
            if ic >= XC:
                break
            _fill(pad, x[n, ic], ph, pw)
            wc = w[oc * R + t, 0]
            for oh in range(OH):
                orow = out[n, oc, oh]
                for i in range(KH):
                    _row_unit(orow, pad[oh * sh + i * dh], wc[i], OW, dw)


@jit
def _dw3_unit(x, w, b, out, sh, ph, pw, M, lo, hi):
    """``_dw_unit`` (with ``R = 1``) for the common 3x3 kernel without dilation: the nine
    taps in one loop, one store per output (2.3x faster than three fused rows)."""
    OC, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    pad = np.zeros(((OH - 1) * sh + 3, OW + 2), x.dtype)
    for pl in range(lo, hi):
        n, oc = pl // OC, pl % OC
        _fill(pad, x[n, oc // M], ph, pw)
        wc = w[oc, 0]
        w00, w01, w02 = wc[0, 0], wc[0, 1], wc[0, 2]
        w10, w11, w12 = wc[1, 0], wc[1, 1], wc[1, 2]
        w20, w21, w22 = wc[2, 0], wc[2, 1], wc[2, 2]
        bv = b[oc]
        op = out[n, oc]
        for oh in range(OH):
            orow = op[oh]
            r0, r1, r2 = pad[oh * sh], pad[oh * sh + 1], pad[oh * sh + 2]
            for k in range(OW):
                orow[k] = (bv + w00 * r0[k] + w01 * r0[k + 1] + w02 * r0[k + 2]
                           + w10 * r1[k] + w11 * r1[k + 1] + w12 * r1[k + 2]
                           + w20 * r2[k] + w21 * r2[k + 1] + w22 * r2[k + 2])


@jit
def _fill_phased(pad, plane, ph, pw, sw):
    """Copy ``plane`` into ``pad`` (PH, sw, PWs), column phases split: padded column
    ``c`` goes to ``pad[:, c % sw, c // sw]`` (the border is left zero). A tap then reads
    a contiguous run of one phase."""
    PH, PWs = pad.shape[0], pad.shape[2]
    H, W = plane.shape
    r0, r1 = max(ph, 0), min(ph + H, PH)
    for p in range(sw):
        c0 = (p - pw) % sw  # first input column landing in phase p
        if c0 >= W:
            continue
        d0 = (c0 + pw) // sw
        n = min((W - 1 - c0) // sw + 1, PWs - d0)
        if n <= 0:
            continue
        for r in range(r0, r1):
            dst = pad[r, p, d0:d0 + n]
            src = plane[r - ph, c0:c0 + (n - 1) * sw + 1:sw]
            for c in range(n):
                dst[c] = src[c]


@jit
def _dw_phased(x, w, b, out, sh, sw, ph, pw, dh, dw, M, lo, hi):
    """The forward pass for a width stride ``sw > 1``: each input plane is stored with its
    column phases split (``_fill_phased``), so every tap reads contiguous inputs and the
    loops vectorise as at stride 1; taps fused three at a time. Output planes ``lo..hi``."""
    OC, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    KH, KW = w.shape[2], w.shape[3]
    PW = (OW - 1) * sw + (KW - 1) * dw + 1
    pad = np.zeros(((OH - 1) * sh + (KH - 1) * dh + 1, sw, (PW + sw - 1) // sw), x.dtype)
    for pl in range(lo, hi):
        n, oc = pl // OC, pl % OC
        _fill_phased(pad, x[n, oc // M], ph, pw, sw)
        wc = w[oc, 0]
        bv = b[oc]
        for oh in range(OH):
            orow = out[n, oc, oh]
            for k in range(OW):
                orow[k] = bv
            for i in range(KH):
                prow = pad[oh * sh + i * dh]
                wrow = wc[i]
                j = 0
                while j + 3 <= KW:
                    q0, q1, q2 = j * dw, (j + 1) * dw, (j + 2) * dw
                    a = prow[q0 % sw, q0 // sw:q0 // sw + OW]
                    bb = prow[q1 % sw, q1 // sw:q1 // sw + OW]
                    c = prow[q2 % sw, q2 // sw:q2 // sw + OW]
                    w0, w1, w2 = wrow[j], wrow[j + 1], wrow[j + 2]
                    for k in range(OW):
                        orow[k] += w0 * a[k] + w1 * bb[k] + w2 * c[k]
                    j += 3
                while j < KW:
                    q0 = j * dw
                    a = prow[q0 % sw, q0 // sw:q0 // sw + OW]
                    wv = wrow[j]
                    for k in range(OW):
                        orow[k] += wv * a[k]
                    j += 1


@jit
def _dw_scatter(g, w, gx, sh, sw, ph, pw, dh, dw, m, lo, hi):
    """Input gradient for strides > 1: input planes ``lo..hi`` of (N * C); each tap of
    each output position adds into a zero-bordered scratch plane, cropped into ``gx``."""
    C, H, W = gx.shape[1], gx.shape[2], gx.shape[3]
    OH, OW = g.shape[2], g.shape[3]
    KH, KW = w.shape[2], w.shape[3]
    PH = max((OH - 1) * sh + (KH - 1) * dh + 1, ph + H)
    PW = max((OW - 1) * sw + (KW - 1) * dw + 1, pw + W)
    span = (OW - 1) * sw + 1
    acc = np.empty((PH, PW), gx.dtype)
    for pl in range(lo, hi):
        n, ci = pl // C, pl % C
        for r in range(PH):
            arow = acc[r]
            for c in range(PW):
                arow[c] = 0
        for co in range(ci * m, ci * m + m):
            wc = w[co, 0]
            for oh in range(OH):
                grow = g[n, co, oh]
                for i in range(KH):
                    prow = acc[oh * sh + i * dh]
                    for j in range(KW):
                        dst = prow[j * dw:j * dw + span:sw]
                        wv = wc[i, j]
                        for k in range(OW):
                            dst[k] += wv * grow[k]
        for r in range(H):
            dst, src = gx[n, ci, r], acc[ph + r, pw:pw + W]
            for c in range(W):
                dst[c] = src[c]


@jit
def _dw_wgrad_unit(x, g, gw, sh, ph, pw, dh, dw, m, lo, hi):
    """Weight gradient, width stride 1: output channels ``lo..hi``."""
    N = x.shape[0]
    OH, OW = g.shape[2], g.shape[3]
    KH, KW = gw.shape[2], gw.shape[3]
    pad = np.zeros(((OH - 1) * sh + (KH - 1) * dh + 1, OW + (KW - 1) * dw), x.dtype)
    zero = gw.dtype.type(0)
    for co in range(lo, hi):
        acc = np.zeros((KH, KW), gw.dtype)
        for n in range(N):
            _fill(pad, x[n, co // m], ph, pw)
            for oh in range(OH):
                grow = g[n, co, oh]
                for i in range(KH):
                    prow = pad[oh * sh + i * dh]
                    for j in range(KW):
                        xs = prow[j * dw:j * dw + OW]
                        s = zero
                        for k in range(OW):
                            s += grow[k] * xs[k]
                        acc[i, j] += s
        for i in range(KH):
            for j in range(KW):
                gw[co, 0, i, j] = acc[i, j]


@jit
def _dw_wgrad_strided(x, g, gw, sh, sw, ph, pw, dh, dw, m, lo, hi):
    """Weight gradient, width stride ``sw > 1``: output channels ``lo..hi``."""
    N = x.shape[0]
    OH, OW = g.shape[2], g.shape[3]
    KH, KW = gw.shape[2], gw.shape[3]
    span = (OW - 1) * sw + 1
    pad = np.zeros(((OH - 1) * sh + (KH - 1) * dh + 1, span + (KW - 1) * dw), x.dtype)
    zero = gw.dtype.type(0)
    for co in range(lo, hi):
        acc = np.zeros((KH, KW), gw.dtype)
        for n in range(N):
            _fill(pad, x[n, co // m], ph, pw)
            for oh in range(OH):
                grow = g[n, co, oh]
                for i in range(KH):
                    prow = pad[oh * sh + i * dh]
                    for j in range(KW):
                        xs = prow[j * dw:j * dw + span:sw]
                        s = zero
                        for k in range(OW):
                            s += grow[k] * xs[k]
                        acc[i, j] += s
        for i in range(KH):
            for j in range(KW):
                gw[co, 0, i, j] = acc[i, j]


def depthwise_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, out_size=None):
    """Depthwise conv2d forward, compiled: one pass over the output (see the module doc).
    ``padding`` pads the low side; ``out_size`` (OH, OW), if given, sets the high side."""
    if not compiled_dtype(x, w, *(() if b is None else (b,))):
        return depthwise_conv2d_reference(x, w, b, stride, padding, dilation, out_size)
    _check(x.shape, w.shape)
    N, C, H, W = x.shape
    Co, _, KH, KW = w.shape
    sh, sw, ph, pw, dh, dw, OH, OW = _geometry(H, W, KH, KW, stride, padding, dilation,
                                               out_size)
    x, w = contiguous(x), contiguous(w)
    b = np.zeros(Co, x.dtype) if b is None else contiguous(b)
    out = np.empty((N, Co, OH, OW), x.dtype)
    m = Co // C
    k3 = KH == 3 and KW == 3 and dh == 1 and dw == 1
    if sw == 1 and k3:
        kern, args = _dw3_unit, (x, w, b, out, sh, ph, pw, m)
    elif sw == 1:
        kern, args = _dw_unit, (x, w, b, out, sh, ph, pw, dh, dw, m, 1)
    else:  # width stride > 1: phase-split planes, contiguous taps (2-3.6x the strided loads)
        kern, args = _dw_phased, (x, w, b, out, sh, sw, ph, pw, dh, dw, m)
    launch(kern, args, N * Co, N * Co * OH * OW * KH * KW)
    return out


def depthwise_conv2d_backward_input(g, w, input_shape, stride=1, padding=0, dilation=1):
    """Gradient in ``x``, compiled: at stride 1 a correlation of ``g`` with the flipped
    kernel (the forward kernel), else a scatter per input plane."""
    if not compiled_dtype(g, w):
        return depthwise_conv2d_backward_input_reference(g, w, input_shape, stride, padding,
                                                         dilation)
    _check(input_shape, w.shape, "depthwise_conv2d_backward_input")
    N, C, H, W = (int(s) for s in input_shape)
    Co, _, KH, KW = w.shape
    _check_g(g, N, Co, "depthwise_conv2d_backward_input")
    sh, sw, ph, pw, dh, dw, OH, OW = _geometry(H, W, KH, KW, stride, padding, dilation,
                                               g.shape[2:])
    g, w = contiguous(g), contiguous(w)
    gx = np.empty((N, C, H, W), g.dtype)
    m = Co // C
    if sh == 1 and sw == 1:
        wf = np.ascontiguousarray(w[:, :, ::-1, ::-1])
        zb = np.zeros(C, g.dtype)
        qh, qw = (KH - 1) * dh - ph, (KW - 1) * dw - pw
        if KH == 3 and KW == 3 and dh == 1 and dw == 1 and m == 1:
            kern, args = _dw3_unit, (g, wf, zb, gx, 1, qh, qw, 1)
        else:
            kern, args = _dw_unit, (g, wf, zb, gx, 1, qh, qw, dh, dw, 1, m)
    else:
        kern, args = _dw_scatter, (g, w, gx, sh, sw, ph, pw, dh, dw, m)
    launch(kern, args, N * C, N * Co * OH * OW * KH * KW)
    return gx


def depthwise_conv2d_backward_weight(x, g, kernel_size, stride=1, padding=0, dilation=1):
    """Gradient in ``w``, compiled: output channels split over threads."""
    if not compiled_dtype(x, g):
        return depthwise_conv2d_backward_weight_reference(x, g, kernel_size, stride, padding,
                                                          dilation)
    N, C, H, W = x.shape
    Co = g.shape[1]
    KH, KW = pair(kernel_size, "kernel_size")
    _check(x.shape, (Co, 1, KH, KW), "depthwise_conv2d_backward_weight")
    _check_g(g, N, Co, "depthwise_conv2d_backward_weight")
    sh, sw, ph, pw, dh, dw, OH, OW = _geometry(H, W, KH, KW, stride, padding, dilation,
                                               g.shape[2:])
    x, g = contiguous(x), contiguous(g)
    gw = np.empty((Co, 1, KH, KW), x.dtype)
    m = Co // C
    if sw == 1:
        kern, args = _dw_wgrad_unit, (x, g, gw, sh, ph, pw, dh, dw, m)
    else:
        kern, args = _dw_wgrad_strided, (x, g, gw, sh, sw, ph, pw, dh, dw, m)
    launch(kern, args, Co, N * Co * OH * OW * KH * KW)
    return gw


register("depthwise_conv2d", reference=depthwise_conv2d_reference, cpu=depthwise_conv2d)
register("depthwise_conv2d_backward_input", reference=depthwise_conv2d_backward_input_reference,
         cpu=depthwise_conv2d_backward_input)
register("depthwise_conv2d_backward_weight",
         reference=depthwise_conv2d_backward_weight_reference,
         cpu=depthwise_conv2d_backward_weight)
