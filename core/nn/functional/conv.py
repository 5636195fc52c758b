"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold/fold (im2col/col2im).

Layout: the public API is channels-first (``(N, C, *spatial)``), and so is the compute.
A dense conv copies each image's sliding windows into a reused scratch buffer ("im2col",
``(C*prod(k), L)`` with ``L`` output positions) and runs one GEMM per image, which writes
the ``(C_out, L)`` output in place; small maps (``L`` below ``_BATCH_L``) are gathered for
a chunk of images and run as one GEMM. 1x1 convs skip im2col (one GEMM per image on the
input itself, forward and both gradients); 3x3 stride-1 convs with many channels use
Winograd F(2x2, 3x3); depthwise convs (``groups == C_in``, ``_conv_depthwise.py``)
accumulate shifted multiply-adds over the kernel taps; other grouped convs run numpy's
stacked matmul over the groups. float16 computes in float32.

Threads: every GEMM path splits the images over ember's threads, each running
single-threaded OpenBLAS GEMMs (``_per_image``); OpenBLAS threads a GEMM itself only for a
single image. Measured (bench/conv.py; 2 vCPUs shared with other jobs): the split costs no
CPU (1x1 512->128 at 28², 8 images: 3.7 ms of CPU per thread against 7.4 ms serial), and a
GEMM threaded by OpenBLAS stalls for 10-200 ms whenever another process takes a core (each
GEMM waits for both threads): ResNet-50 training step 8.2-9.6 s -> 3.0-4.3 s under load.
A Python loop of per-group 2-D GEMMs took the same time as the stacked matmul (within 5%),
so grouped convs keep the stacked one. An implicit GEMM for 3x3 stride 1 (no im2col: nine
GEMMs accumulating over shifted views of the flat padded input, junk columns dropped after)
measured within 3% of im2col at 56² and 28² and 1.4-1.8x slower at 7², so im2col stays.
Helpers: ``_conv_util.py`` (scratch, padding, windows), ``_conv_depthwise.py``,
``_conv_fold.py`` (unfold/fold).

Autograd: three recorded ops express each other's gradients, so first-order backward runs
as raw GEMMs and double backward works:

- ``_conv(x, w)``: the convolution ``y = A_w x``;
- ``_conv_t(y, w)``: its adjoint in ``x`` (``A_w^T y``; grad_input, and conv_transpose;
  with stride 1 it is a conv with the flipped kernel, otherwise GEMM + col2im);
- ``_conv_w(x, g)``: its adjoint in ``w`` (grad_weight: a correlation of ``x`` with ``g``).

Geometry (``geo``) is ``(plo, stride, dilation, groups)``: ``plo`` pads the low side of each
spatial dim; the high side is implied by the sizes (it may be negative: trailing input that
no window reaches is ignored).
"""
from __future__ import annotations

import numpy as np

from ... import _backend as B
from ... import _blas
from ..._parallel import parallel_for, split_threads
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops import _util as U
from ...ops._util import wrap
from ._conv_depthwise import _dw_arr, _dw_t_arr, _dw_w_arr
from ._conv_fold import fold, unfold  # noqa: F401 - public, in __all__
from ._conv_util import (_as_strided, _col2im_add, _crop, _extent, _out_size, _pad_to, _prod,
                         _scratch, _strided_1x1, _tap_slices, _windows)
from ._conv_util import _taps  # noqa: F401 - pooling.py imports it from here

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]

# below this many output positions per image, im2col gathers the whole batch for one GEMM
_BATCH_L = 400
# 1x1 convs run on the input itself (no im2col) down to this many positions; smaller maps
# take the gathered path above. One thread, batch 4: (2048, 512) @ 512 x 49 per image took
# 7.9 ms against 3.8 ms gathered (copies included); at 196 positions both took 3.5-3.7 ms.
_DIRECT_1X1_L = 100
# per-chunk temporaries (batched im2col columns, Winograd tiles) hold about this many
# elements: the batch is processed in chunks of images that fit
_CHUNK = 1 << 22

_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char",
                "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
                "bool": "Bool", "bfloat16": "BFloat16"}


# =========================================================================== arguments

def _ntuple(v, n, what, op=None):
    """An int or a sequence of 1 or ``n`` ints -> a tuple of ``n`` ints."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v):
        if len(v) == n:
            return tuple(int(e) for e in v)
        if len(v) == 1:
            return (int(v[0]),) * n
        raise RuntimeError(
            f"expected {what} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {what}={list(v)}")
    where = f"{op}(): " if op else ""
    raise TypeError(f"{where}argument '{what}' must be an int or a tuple of ints, "
                    f"not {type(v).__name__}")


def _torch_name(dt):
    n = D.name(dt)
    return _TORCH_NAMES.get(n, n)


def _check_inputs(op, nd, input, weight, bias, groups, transposed=False):
    """PyTorch's shape and dtype checks for a convolution; returns whether ``input`` is
    unbatched."""
    if not isinstance(input, U.Tensor) or not isinstance(weight, U.Tensor):
        raise TypeError(f"{op}(): input and weight must be Tensors, got "
                        f"{type(input).__name__} and {type(weight).__name__}")
    ish, wsh = tuple(input.shape), tuple(weight.shape)
    if len(ish) not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got "
            f"input of size: {list(ish)}")
    if len(wsh) != nd + 2:
        raise RuntimeError(
            f"{op}: expected a {nd + 2}D weight (out_channels, in_channels/groups, "
            f"*kernel_size), but got weight of size {list(wsh)}")
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    idt, wdt = input.array.dtype, weight.array.dtype
    if idt.kind == "b" or idt.kind == "c":
        raise RuntimeError(f"\"{op}\" not implemented for '{_torch_name(idt)}'")
    if idt != wdt:
        raise RuntimeError(f"Input type ({_torch_name(idt)}) and weight type "
                           f"({_torch_name(wdt)}) should be the same")
    if type(input.array) is not type(weight.array):
        raise RuntimeError(f"{op}: expected input and weight to be on the same device, but got "
                           f"{input.device} and {weight.device}")
    batch_sh = ish if len(ish) == nd + 2 else (1,) + ish
    if wsh[0] < groups or wsh[0] % groups:
        if wsh[0] < groups:
            raise RuntimeError(
                f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                f"but got weight of size {list(wsh)} instead")
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size {list(wsh)} instead")
    if transposed:
        if batch_sh[1] != wsh[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(wsh)}, expected input"
                f"{list(batch_sh)} to have {wsh[0]} channels, but got {batch_sh[1]} channels "
                "instead")
        out_ch = wsh[1] * groups
    else:
        if batch_sh[1] != wsh[1] * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(wsh)}, expected input"
                f"{list(batch_sh)} to have {wsh[1] * groups} channels, but got {batch_sh[1]} "
                "channels instead")
        out_ch = wsh[0]
    if bias is not None:
        if not isinstance(bias, U.Tensor):
            raise TypeError(f"{op}(): bias must be a Tensor or None, got {type(bias).__name__}")
        bsh = tuple(bias.shape)
        if len(bsh) != 1 or bsh[0] != out_ch:
            raise RuntimeError(
                f"Given weight of size {list(wsh)}, expected bias to be 1-dimensional with "
                f"{out_ch} elements, but got bias of size {list(bsh)} instead")
        if bias.array.dtype != idt:
            raise RuntimeError(f"Input type ({_torch_name(idt)}) and bias type "
                               f"({_torch_name(bias.array.dtype)}) should be the same")
    return len(ish) == nd + 1


def _check_positive(stride, dilation, padding=None):
    if any(p < 0 for p in padding or ()):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")


def _batches(N, per_image):
    """Image ranges whose temporaries stay under ``_CHUNK`` elements."""
    nb = max(1, min(N, _CHUNK // max(per_image, 1)))
    return [(n, min(N, n + nb)) for n in range(0, N, nb)]


def _batch_last(nd):
    """Axes taking a window view (N, C, *k, *O) to (C, *k, N, *O)."""
    return (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))


def _per_image(N, body, xp, work):
    """``body(lo, hi)`` over the images ``range(N)``. On numpy with OpenBLAS and several
    threads, the images are split over threads that each run single-threaded GEMMs (see
    core/_blas.py); ``body`` takes its scratch buffers per call (they are per thread)."""
    nt = split_threads(work) if xp is np and N > 1 and _blas.available() else 1
    if nt <= 1:
        body(0, N)
        return
    with _blas.single_threaded():
        parallel_for(body, N, work=work)


def _chunked(per_image, fn):
    """``body(lo, hi)`` calling ``fn(n0, n1)`` on chunks of images that fit ``_CHUNK``."""
    def body(lo, hi):
        for a, b in _batches(hi - lo, per_image):
            fn(lo + a, lo + b)
    return body


def _is_depthwise(C, w, groups):
    return groups > 1 and groups == C and w.shape[1] == 1


def _conv_arr(x, w, O, geo):
    """Convolution (cross-correlation) of x (N, C, *S) with w (Co, C/groups, *k) -> (N, Co, *O)."""
    plo, s, d, G = geo
    xp = B.namespace(x)
    N, C = x.shape[:2]
    Co, Cg = w.shape[:2]
    k = w.shape[2:]
    nd = len(k)
    if _is_depthwise(C, w, G):
        return _dw_arr(x, w, O, geo)
    if _use_winograd(x, w, O, s, d, G):
        return _winograd_arr(x, w, O, plo)
    xpad = _pad_to(x, plo, _extent(O, k, s, d))
    Kk, L, Cog = _prod(k), _prod(O), Co // G
    W2 = w.reshape(G, Cog, Cg * Kk)
    out = xp.empty((N, Co) + tuple(O), x.dtype)
    if Kk == 1 and (L >= _DIRECT_1X1_L or N == 1):
        return _conv1x1_arr(_strided_1x1(xpad, s, O), W2, out)
    win = _windows(xpad, k, s, d, O)
    work = N * C * Kk * L
    if L >= _BATCH_L or N == 1:
        o4 = out.reshape(N, G, Cog, L)

        def images(lo, hi):
            cols = _scratch("cols", (C,) + tuple(k) + tuple(O), x.dtype, xp)
            for n in range(lo, hi):
                xp.copyto(cols, win[n])
                if G == 1:
                    xp.matmul(W2[0], cols.reshape(Cg * Kk, L), out=o4[n, 0])
                else:
                    xp.matmul(W2, cols.reshape(G, Cg * Kk, L), out=o4[n])
        _per_image(N, images, xp, work)
        return out

    # small maps: one GEMM per chunk of images, on cols laid out (C, *k, n, *O)
    def chunk(n0, n1):
        nb = n1 - n0
        cols = _scratch("cols", (C,) + tuple(k) + (nb,) + tuple(O), x.dtype, xp)
        xp.copyto(cols, win[n0:n1].transpose(_batch_last(nd)))
        r = _scratch("gemm", (G, Cog, nb * L), x.dtype, xp)
        xp.matmul(W2, cols.reshape(G, Cg * Kk, nb * L), out=r)
        xp.copyto(out[n0:n1].reshape(nb, Co, L), r.reshape(Co, nb, L).transpose(1, 0, 2))
    _per_image(N, _chunked(C * Kk * L, chunk), xp, work)
    return out


def _image_2d(v, n, G, key):
    """Image ``n`` of v (N, C, *O) as (G, C/G, L): a view when its positions are contiguous,
    else a copy into a per-thread scratch buffer (strided 1x1 convs)."""
    vn = v[n]
    if vn.flags.c_contiguous:
        return vn.reshape(G, vn.shape[0] // G, -1)
    cols = _scratch(key, vn.shape, vn.dtype, B.namespace(vn))
    B.namespace(vn).copyto(cols, vn)
    return cols.reshape(G, vn.shape[0] // G, -1)


def _conv1x1_arr(v, W2, out):
    """1x1 conv as one GEMM per image, no im2col: v (N, C, *O) (a view, possibly strided),
    W2 (G, Co/G, C/G) -> out (N, Co, *O). The images are split over threads running
    single-threaded GEMMs, as for the other kernels (see bench/conv.py for the figures)."""
    xp = B.namespace(v)
    N, C = v.shape[:2]
    G, Cog = W2.shape[:2]
    L = _prod(out.shape[2:])
    o4 = out.reshape(N, G, Cog, L)

    def images(lo, hi):
        for n in range(lo, hi):
            vn = _image_2d(v, n, G, "cols1")
            if G == 1:
                xp.matmul(W2[0], vn[0], out=o4[n, 0])
            else:
                xp.matmul(W2, vn, out=o4[n])
    _per_image(N, images, xp, N * L * (C + G * Cog))
    return out


def _conv_t_arr(y, w, S, geo):
    """Adjoint of ``_conv_arr`` in x: y (N, Co, *O), w (Co, C/groups, *k) -> (N, C, *S)."""
    plo, s, d, G = geo
    xp = B.namespace(y)
    N, Co = y.shape[:2]
    O = y.shape[2:]
    Cg = w.shape[1]
    k = w.shape[2:]
    nd = len(k)
    C, Cog, Kk, L = Cg * G, Co // G, _prod(k), _prod(O)
    E = _extent(O, k, s, d)
    Eb = tuple(max(e, a + n) for e, a, n in zip(E, plo, S))
    if _is_depthwise(C, w, G):
        return _dw_t_arr(y, w, S, geo)
    if Kk > 1 and all(ss == 1 for ss in s) and all(
            a <= dd * (kk - 1) for a, dd, kk in zip(plo, d, k)):
        # stride 1: the adjoint is a conv with the flipped kernel (im2col or Winograd)
        wf = w.reshape((G, Cog, Cg) + tuple(k)).swapaxes(1, 2)
        wf = wf[(Ellipsis,) + (slice(None, None, -1),) * nd].reshape((C, Cog) + tuple(k))
        pf = tuple(dd * (kk - 1) - a for a, dd, kk in zip(plo, d, k))
        return _conv_arr(y, wf, tuple(S), (pf, s, d, G))
    W2T = w.reshape(G, Cog, Cg * Kk).transpose(0, 2, 1)  # (G, Cg*Kk, Cog)
    if Kk == 1 and (L >= _DIRECT_1X1_L or N == 1):  # one GEMM per image (scattered if strided)
        y4 = y.reshape(N, G, Cog, L)
        direct = all(ss == 1 for ss in s) and Eb == tuple(O)
        res = xp.empty((N, C) + tuple(O), y.dtype) if direct else xp.zeros((N, C) + Eb, y.dtype)
        at = (slice(None),) + _tap_slices((0,) * nd, s, d, O)

        def images(lo, hi):
            for n in range(lo, hi):
                r = res[n].reshape(G, Cg, L) if direct else _scratch(
                    "cols1", (G, Cg, L), y.dtype, xp)
                if G == 1:
                    xp.matmul(W2T[0], y4[n, 0], out=r[0])
                else:
                    xp.matmul(W2T, y4[n], out=r)
                if not direct:
                    res[n][at] = r.reshape((C,) + tuple(O))
        _per_image(N, images, xp, N * L * (C + Co))
        return _crop(res, plo, S)
    buf = xp.zeros((N, C) + Eb, y.dtype)
    work = N * C * Kk * L
    if L >= _BATCH_L or N == 1:
        y4 = y.reshape(N, G, Cog, L)

        def images(lo, hi):
            cols = _scratch("cols", (G, Cg * Kk, L), y.dtype, xp)
            for n in range(lo, hi):
                if G == 1:
                    xp.matmul(W2T[0], y4[n, 0], out=cols[0])
                else:
                    xp.matmul(W2T, y4[n], out=cols)
                _col2im_add(buf[n], cols.reshape((C,) + tuple(k) + tuple(O)), k, s, d, O)
        _per_image(N, images, xp, work)
        return _crop(buf, plo, S)

    def chunk(n0, n1):
        nb = n1 - n0
        yt = _scratch("gT", (G, Cog, nb, L), y.dtype, xp)
        xp.copyto(yt, y[n0:n1].reshape(nb, G, Cog, L).transpose(1, 2, 0, 3))
        cols = _scratch("gemm", (G, Cg * Kk, nb * L), y.dtype, xp)
        xp.matmul(W2T, yt.reshape(G, Cog, nb * L), out=cols)  # = (C, *k, nb, *O)
        cv = cols.reshape((C,) + tuple(k) + (nb,) + tuple(O))
        cv = cv.transpose((1 + nd, 0) + tuple(range(1, 1 + nd))
                          + tuple(range(2 + nd, 2 + 2 * nd)))
        _col2im_add(buf[n0:n1], cv, k, s, d, O)
    _per_image(N, _chunked(C * Kk * L, chunk), xp, work)
    return _crop(buf, plo, S)


def _conv_w_arr(x, g, k, geo):
    """Adjoint of ``_conv_arr`` in w: x (N, C, *S), g (N, Co, *O) -> (Co, C/groups, *k)."""
    plo, s, d, G = geo
    xp = B.namespace(x)
    N, C = x.shape[:2]
    Co = g.shape[1]
    O = g.shape[2:]
    nd = len(k)
    Cg, Cog, Kk, L = C // G, Co // G, _prod(k), _prod(O)
    if N == 0:
        return xp.zeros((Co, Cg) + tuple(k), g.dtype)
    if G > 1 and G == C:
        return _dw_w_arr(x, g, k, geo)
    xpad = _pad_to(x, plo, _extent(O, k, s, d))
    parts = {}  # first image of a range or chunk -> its partial sum (summed in order)
    if Kk == 1 and (L >= _DIRECT_1X1_L or N == 1):  # one GEMM per image, accumulated
        v = _strided_1x1(xpad, s, O)
        g4 = g.reshape(N, G, Cog, L)

        def images1(lo, hi):
            acc = xp.empty((G, Cog, Cg), g.dtype)
            tmp = _scratch("gw1", (G, Cog, Cg), g.dtype, xp)
            for n in range(lo, hi):
                xp.matmul(g4[n], _image_2d(v, n, G, "cols1").transpose(0, 2, 1),
                          out=acc if n == lo else tmp)
                if n > lo:
                    acc += tmp
            parts[lo] = acc
        _per_image(N, images1, xp, N * L * (C + Co))
        return _sum_parts(parts).reshape((Co, Cg) + tuple(k))
    win = _windows(xpad, k, s, d, O)

    def add(lo, r):
        if lo in parts:
            parts[lo] += r
        else:
            parts[lo] = r

    work = N * C * Kk * L
    if L >= _BATCH_L or N == 1:
        g4 = g.reshape(N, G, Cog, L)

        def images(lo, hi):
            cols = _scratch("cols", (C,) + tuple(k) + tuple(O), x.dtype, xp)
            acc = xp.empty((G, Cog, Cg * Kk), x.dtype)
            tmp = _scratch("gwk", (G, Cog, Cg * Kk), x.dtype, xp)
            for n in range(lo, hi):
                xp.copyto(cols, win[n])
                xp.matmul(g4[n], cols.reshape(G, Cg * Kk, L).transpose(0, 2, 1),
                          out=acc if n == lo else tmp)
                if n > lo:
                    acc += tmp
            add(lo, acc)
        _per_image(N, images, xp, work)
        return _sum_parts(parts).reshape((Co, Cg) + tuple(k))

    def chunk(n0, n1):
        nb = n1 - n0
        cols = _scratch("cols", (C,) + tuple(k) + (nb,) + tuple(O), x.dtype, xp)
        xp.copyto(cols, win[n0:n1].transpose(_batch_last(nd)))
        gt = _scratch("gT", (G, Cog, nb, L), g.dtype, xp)
        xp.copyto(gt, g[n0:n1].reshape(nb, G, Cog, L).transpose(1, 2, 0, 3))
        add(n0, xp.matmul(gt.reshape(G, Cog, nb * L),
                          cols.reshape(G, Cg * Kk, nb * L).transpose(0, 2, 1)))
    _per_image(N, _chunked(C * Kk * L, chunk), xp, work)
    return _sum_parts(parts).reshape((Co, Cg) + tuple(k))


def _sum_parts(parts):
    keys = sorted(parts)
    acc = parts[keys[0]]
    for key in keys[1:]:
        acc += parts[key]
    return acc


# --------------------------------------------------------------------------- Winograd
#
# 3x3 stride-1 convs with many channels run as Winograd F(2x2, 3x3) (Lavin & Gray, 2015):
# each 4x4 input tile d and each filter g are transformed (V = B^T d B, U = G g G^T), the 16
# tile positions become 16 GEMMs (Co, C) @ (C, tiles) with 2.25x fewer multiplies than
# im2col, and each 2x2 output tile is A^T M A. All three transforms are small GEMMs with
# Kronecker products of the 1-D matrices (entries 0, +-1, +-1/2), so float32 results stay
# within a few ulps of the direct sum.

# thinner GEMMs gain less than the transforms cost (batch 8, 2 threads: 128 channels at 28x28
# took 12.0 ms with Winograd and 10.6 ms direct; 256 at 14x14 7.7 against 9.3 ms)
_WINO_MIN_C = 256
_WINO_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
_WINO_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_WINO_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])


def _use_winograd(x, w, O, s, d, G):
    if not (G == 1 and w.shape[2:] == (3, 3) and s == (1, 1) and d == (1, 1)
            and min(w.shape[:2]) >= _WINO_MIN_C and x.dtype.kind == "f"
            and x.dtype.itemsize >= 4):
        return False
    tiles = -(-O[0] // 2) * -(-O[1] // 2)
    # odd maps compute a padded row and column of tiles: worth it only on larger maps
    return x.shape[0] * tiles >= 128 and 4 * tiles <= 1.15 * O[0] * O[1]


def _winograd_arr(x, w, O, plo):
    xp = B.namespace(x)
    dt = x.dtype
    N, C = x.shape[:2]
    Co = w.shape[0]
    T = -(-O[0] // 2) * -(-O[1] // 2)
    mats = [xp.asarray(np.kron(a, a).astype(dt)) for a in (_WINO_BT, _WINO_G, _WINO_AT)]
    U = xp.matmul(mats[1], w.reshape(Co * C, 9).T).reshape(16, Co, C)  # G g G^T per filter
    out = xp.empty((N, Co) + tuple(O), dt)
    _per_image(N, _chunked(16 * max(C, Co) * T, lambda n0, n1: _winograd_into(
        x[n0:n1], U, mats[0], mats[2], O, plo, out[n0:n1])), xp, N * 16 * max(C, Co) * T)
    return out


def _winograd_into(x, U, BB, AA, O, plo, out):
    xp = B.namespace(x)
    dt = x.dtype
    N, C = x.shape[:2]
    Co = U.shape[1]
    OH, OW = O
    TH, TW = -(-OH // 2), -(-OW // 2)
    L = N * TH * TW
    xpad = _pad_to(x, plo, (2 * TH + 2, 2 * TW + 2))
    sN, sC, sH, sW = xpad.strides
    tiles = _as_strided(xp, xpad, (4, 4, C, N, TH, TW), (sH, sW, sC, sN, 2 * sH, 2 * sW))
    D = _scratch("wD", (4, 4, C, N, TH, TW), dt, xp)
    xp.copyto(D, tiles)
    V = _scratch("wV", (16, C, L), dt, xp)
    xp.matmul(BB, D.reshape(16, C * L), out=V.reshape(16, C * L))  # B^T d B
    M = _scratch("wM", (16, Co, L), dt, xp)
    xp.matmul(U, V, out=M)
    Y = _scratch("wY", (4, Co * L), dt, xp)
    xp.matmul(AA, M.reshape(16, Co * L), out=Y)  # A^T M A
    Y = Y.reshape(2, 2, Co, N, TH, TW)
    for i in range(2):
        nh = (OH - i + 1) // 2  # output rows i, i+2, ... (odd maps drop the last tile row)
        for j in range(2):
            nw = (OW - j + 1) // 2
            xp.copyto(out[:, :, i::2, j::2], Y[i, j, :, :, :nh, :nw].transpose(1, 0, 2, 3))


# =========================================================================== recorded ops

def _compute_dtype(dt):
    """float16 convs accumulate in float32 (as PyTorch's CPU kernels do)."""
    return np.float32 if dt == np.float16 else None


def _run(fn, a, b, *args):
    up = _compute_dtype(a.dtype)
    if up is None:
        return fn(a, b, *args)
    return fn(a.astype(up), b.astype(up), *args).astype(a.dtype)


def _bias_grad(g, nd):
    dims = (0,) + tuple(range(2, 2 + nd))
    if STATE.enabled:
        return g.sum(dims)
    d = g.array
    if d.dtype == np.float16:  # accumulate in float32, as for the conv itself
        return wrap(d.sum(axis=dims, dtype=np.float32).astype(d.dtype))
    return wrap(d.sum(axis=dims))


def _add_bias(out, b, nd):
    if b is not None:
        out += b.array.reshape((-1,) + (1,) * nd)
    return out


class ConvolutionBackward(Node):
    __slots__ = ("geo",)

    def backward(self, g):
        x, w = self.unpack()
        nx = self.next
        gx = _conv_t(g, w, None, x.array.shape[2:], self.geo) if nx[0] is not None else None
        gw = _conv_w(x, g, w.array.shape[2:], self.geo) if nx[1] is not None else None
        gb = _bias_grad(g, w.array.ndim - 2) if len(nx) > 2 and nx[2] is not None else None
        return gx, gw, gb


class ConvolutionTransposeBackward(Node):
    __slots__ = ("geo",)

    def backward(self, g):
        y, w = self.unpack()
        nx = self.next
        gy = _conv(g, w, None, y.array.shape[2:], self.geo) if nx[0] is not None else None
        gw = _conv_w(g, y, w.array.shape[2:], self.geo) if nx[1] is not None else None
        gb = _bias_grad(g, w.array.ndim - 2) if len(nx) > 2 and nx[2] is not None else None
        return gy, gw, gb


class ConvolutionWeightBackward(Node):
    __slots__ = ("geo",)

    def backward(self, gw):
        x, g = self.unpack()
        nx = self.next
        gx = _conv_t(g, gw, None, x.array.shape[2:], self.geo) if nx[0] is not None else None
        gg = _conv(x, gw, None, g.array.shape[2:], self.geo) if nx[1] is not None else None
        return gx, gg


def _record(cls, out, geo, a, b, bias=None):
    if STATE.enabled and (a.requires_grad or b.requires_grad
                          or (bias is not None and bias.requires_grad)):
        n = new_node(cls)
        n.geo = geo
        n.save(a, b)
        if bias is None:
            record(n, out, a, b)
        else:
            record(n, out, a, b, bias)
    return out


def _conv(x, w, b, O, geo):
    """Recorded op: conv of x (N, C, *S) with w, plus bias b, to output size ``O``."""
    out = _add_bias(_run(_conv_arr, x.array, w.array, tuple(O), geo), b, len(O))
    return _record(ConvolutionBackward, wrap(out), geo, x, w, b)


def _conv_t(y, w, b, S, geo):
    """Recorded op: adjoint conv of y (N, Co, *O) with w, to input size ``S``, plus bias."""
    out = _add_bias(_run(_conv_t_arr, y.array, w.array, tuple(S), geo), b, len(S))
    return _record(ConvolutionTransposeBackward, wrap(out), geo, y, w, b)


def _conv_w(x, g, k, geo):
    """Recorded op: the weight gradient (Co, C/groups, *k) of a conv of x given grad g."""
    out = wrap(_run(_conv_w_arr, x.array, g.array, tuple(k), geo))
    return _record(ConvolutionWeightBackward, out, geo, x, g)


# =========================================================================== public: conv

def _convnd(nd, op, input, weight, bias, stride, padding, dilation, groups):
    unbatched = _check_inputs(op, nd, input, weight, bias, groups)
    s = _ntuple(stride, nd, "stride", op)
    d = _ntuple(dilation, nd, "dilation", op)
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * nd
        elif padding == "same":
            if any(ss != 1 for ss in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = [dd * (kk - 1) for dd, kk in zip(d, k)]
            lo = tuple(t // 2 for t in tot)
            hi = tuple(t - a for t, a in zip(tot, lo))  # the odd one goes to the high side
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        lo = hi = _ntuple(padding, nd, "padding", op)
    _check_positive(s, d, lo)
    x = input.unsqueeze(0) if unbatched else input
    S = tuple(x.shape[2:])
    padded = tuple(a + b + n for a, b, n in zip(lo, hi, S))
    ext = tuple(dd * (kk - 1) + 1 for dd, kk in zip(d, k))
    if any(p < e for p, e in zip(padded, ext)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, ext))}). Kernel size can't be greater than "
            "actual input size")
    O = _out_size(S, lo, hi, k, s, d)
    out = _conv(x, weight, bias, O, (lo, s, d, groups))
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) over ``input`` (N, C_in, L) or (C_in, L).

    ``weight``: (C_out, C_in/groups, k); ``bias``: (C_out,). ``padding``: int, tuple,
    ``'valid'`` or ``'same'`` (stride 1 only; an odd total goes to the right). Returns
    (N, C_out, L_out) with ``L_out = (L + 2p - dilation*(k-1) - 1) // stride + 1``.

    >>> conv1d(ember.randn(2, 4, 10), ember.randn(6, 4, 3), padding=1).shape
    (2, 6, 10)
    """
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over ``input`` (N, C_in, H, W) or (C_in, H, W).

    ``weight``: (C_out, C_in/groups, kH, kW); ``bias``: (C_out,). ``stride``, ``padding``,
    ``dilation``: an int or a pair; ``padding`` may also be ``'valid'`` or ``'same'``.
    ``groups == C_in`` is a depthwise conv (C_out a multiple of C_in). Returns
    (N, C_out, H_out, W_out).

    >>> conv2d(ember.randn(1, 3, 8, 8), ember.randn(4, 3, 3, 3), stride=2, padding=1).shape
    (1, 4, 4, 4)
    """
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over ``input`` (N, C_in, D, H, W) or (C_in, D, H, W).

    ``weight``: (C_out, C_in/groups, kD, kH, kW). Returns (N, C_out, D_out, H_out, W_out).

    >>> conv3d(ember.randn(1, 2, 4, 4, 4), ember.randn(3, 2, 3, 3, 3), padding='same').shape
    (1, 3, 4, 4, 4)
    """
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


# =========================================================================== public: transposed

_AXIS_NAMES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _conv_transposend(nd, op, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    unbatched = _check_inputs(op, nd, input, weight, bias, groups, transposed=True)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    s = _ntuple(stride, nd, "stride", op)
    d = _ntuple(dilation, nd, "dilation", op)
    p = _ntuple(padding, nd, "padding", op)
    op_ = _ntuple(output_padding, nd, "output_padding", op)
    _check_positive(s, d, p)
    if any(o < 0 for o in op_):
        raise RuntimeError("negative output_padding is not supported")
    if any(o >= ss and o >= dd for o, ss, dd in zip(op_, s, d)):
        names = _AXIS_NAMES[nd]
        parts = ([f"output_padding_{n}: {v}" for n, v in zip(names, op_)]
                 + [f"stride_{n}: {v}" for n, v in zip(names, s)]
                 + [f"dilation_{n}: {v}" for n, v in zip(names, d)])
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    x = input.unsqueeze(0) if unbatched else input
    k = tuple(weight.shape[2:])
    I = tuple(x.shape[2:])
    S = tuple((i - 1) * ss - 2 * pp + dd * (kk - 1) + o + 1
              for i, ss, pp, dd, kk, o in zip(I, s, p, d, k, op_))
    if any(n < 0 for n in S):
        raise RuntimeError(
            f"{op}: the output size {list(S)} computed from input size {list(I)}, stride, "
            "padding, dilation, kernel size and output_padding is negative: reduce the padding")
    out = _conv_t(x, weight, bias, S, (p, s, d, groups))
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution (the gradient of conv1d with respect to its input).

    ``input``: (N, C_in, L) or (C_in, L); ``weight``: (C_in, C_out/groups, k). Returns
    (N, C_out, L_out), ``L_out = (L-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.

    >>> conv_transpose1d(ember.randn(2, 4, 5), ember.randn(4, 3, 3), stride=2).shape
    (2, 3, 11)
    """
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution ("deconvolution").

    ``input``: (N, C_in, H, W) or (C_in, H, W); ``weight``: (C_in, C_out/groups, kH, kW).
    Returns (N, C_out, H_out, W_out), each ``(in-1)*stride - 2*padding + dilation*(k-1) +
    output_padding + 1``.

    >>> conv_transpose2d(ember.randn(1, 4, 5, 5), ember.randn(4, 2, 2, 2), stride=2).shape
    (1, 2, 10, 10)
    """
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution; ``weight``: (C_in, C_out/groups, kD, kH, kW).

    >>> conv_transpose3d(ember.randn(1, 2, 3, 3, 3), ember.randn(2, 2, 3, 3, 3)).shape
    (1, 2, 5, 5, 5)
    """
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)
