"""Sampling: ``pad``, ``interpolate`` (+ the ``upsample*`` aliases), ``grid_sample``,
``affine_grid``, ``pixel_shuffle``/``pixel_unshuffle``.

``interpolate`` is separable: every mode resamples one spatial axis at a time with a linear
operator, either a weight matrix (out, in) applied with one GEMM (linear, cubic, area and the
antialiased filters) or an index gather (the nearest modes). The adjoint of a matrix is its
transpose and the adjoint of a gather is a segment sum, so the backward of each axis is the
same kind of op (``AxisOpBackward``), differentiable to any order.

``grid_sample`` computes, per output point, the interpolation taps along each spatial axis
(index, weight, d weight / d coordinate) and combines them as a product over the axes. The
input is laid out (C, N * pixels), so each tap is one gather for all channels; the backward
adds the weighted gradient back (numpy: one ``bincount`` per channel; cupy: scatter-add) and
contracts the gathered values with the gradient for the grid's gradient. PyTorch has no
second-order gradient for ``grid_sample``, and neither does this one.
"""
from __future__ import annotations

import functools
import itertools
import math
import numbers
import warnings

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ...ops._util import wrap
from ...ops.index import _add_at
from ...ops.shape import pad as _pad

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "grid_sample", "affine_grid", "pixel_shuffle", "pixel_unshuffle"]


def pad(input, pad, mode="constant", value=None):
    """Pad ``input``; ``pad`` lists (before, after) amounts from the LAST dim backwards.

    Modes: "constant" (``value``, default 0; negative amounts crop), "reflect", "replicate",
    "circular" (these pad the last 1, 2 or 3 dims of a batched or unbatched input).

    >>> F.pad(ember.ones(1, 2, 2), (1, 1), mode="replicate").shape
    (1, 2, 4)
    """
    return _pad(input, pad, mode, value)


# =========================================================================== axis operators

def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _matmul_axis(W, a, axis):
    """``W @ a`` along ``axis`` of ``a``: one or a few GEMMs, whichever layout is cheaper."""
    n_out, n_in = W.shape
    shape = a.shape
    p, q = _prod(shape[:axis]), _prod(shape[axis + 1:])
    xp = B.namespace(a)
    if q == 1:
        r = a.reshape(p, n_in) @ W.T
    elif q >= 32 or p == 1:
        r = W @ a.reshape(p, n_in, q)  # p GEMMs (n_out, n_in) @ (n_in, q)
    else:  # short rows: one GEMM over the axis moved to the front
        t = xp.ascontiguousarray(a.reshape(p, n_in, q).transpose(1, 0, 2))
        r = (W @ t.reshape(n_in, p * q)).reshape(n_out, p, q).transpose(1, 0, 2)
    return xp.ascontiguousarray(r).reshape(shape[:axis] + (n_out,) + shape[axis + 1:])


_BAND_ROWS = 64


def _bands(W):
    """Row blocks ``(o0, o1, lo, hi)`` of a banded matrix: rows o0:o1 are zero outside
    columns lo:hi. None when the matrix is small or not banded enough to gain from it."""
    n_out, n_in = W.shape
    if n_out * n_in < 128 * 128:
        return None
    nz = W != 0
    any_nz = nz.any(axis=1)
    first = np.where(any_nz, nz.argmax(axis=1), n_in)
    last = np.where(any_nz, n_in - nz[:, ::-1].argmax(axis=1), 0)
    blocks, area = [], 0
    for o0 in range(0, n_out, _BAND_ROWS):
        o1 = min(o0 + _BAND_ROWS, n_out)
        lo, hi = int(first[o0:o1].min()), int(last[o0:o1].max())
        blocks.append((o0, o1, lo, max(lo, hi)))
        area += (o1 - o0) * max(0, hi - lo)
    return blocks if 2 * area < n_out * n_in else None


class _Dense:
    """``out[..., i, ...] = sum_j W[i, j] * x[..., j, ...]`` along one axis. Interpolation
    matrices are banded: large ones are applied block by block on their band only."""

    __slots__ = ("W", "blocks", "blocks_t")

    def __init__(self, W, blocks=None, blocks_t=None):
        self.W, self.blocks, self.blocks_t = W, blocks, blocks_t

    def apply(self, a, axis):
        W = self.W
        if self.blocks is None:
            return _matmul_axis(W, a, axis)
        xp = B.namespace(a)
        n_out = W.shape[0]
        out = xp.empty(a.shape[:axis] + (n_out,) + a.shape[axis + 1:], a.dtype)
        pre = (slice(None),) * axis
        for o0, o1, lo, hi in self.blocks:
            if hi == lo:
                out[pre + (slice(o0, o1),)] = 0
            else:
                out[pre + (slice(o0, o1),)] = _matmul_axis(
                    W[o0:o1, lo:hi], a[pre + (slice(lo, hi),)], axis)
        return out

    def adjoint(self):
        return _Dense(self.W.T, self.blocks_t, self.blocks)


class _Gather:
    """``out[..., i, ...] = x[..., idx[i], ...]`` with ``idx`` non-decreasing."""

    __slots__ = ("idx", "n_in")

    def __init__(self, idx, n_in):
        self.idx, self.n_in = idx, n_in

    def apply(self, a, axis):
        return B.namespace(a).take(a, self.idx, axis=axis)

    def adjoint(self):
        return _SegmentSum(self.idx, self.n_in)


class _SegmentSum:
    """The adjoint of ``_Gather``: ``out[..., j, ...] = sum_{i: idx[i] = j} x[..., i, ...]``."""

    __slots__ = ("idx", "n_in")

    def __init__(self, idx, n_in):
        self.idx, self.n_in = idx, n_in

    def apply(self, a, axis):
        xp = B.namespace(a)
        idx, n_in = self.idx, self.n_in
        n_out = idx.shape[0]
        shape = a.shape[:axis] + (n_in,) + a.shape[axis + 1:]
        k = n_out // n_in
        if k * n_in == n_out and k <= 8 and bool((idx == xp.arange(n_out) // k).all()):
            # integer upscale: each input got k neighbours, add the k strided slices
            v = a.reshape(a.shape[:axis] + (n_in, k) + a.shape[axis + 1:])
            sl = (slice(None),) * (axis + 1)
            out = v[sl + (0,)].copy()
            for j in range(1, k):
                out += v[sl + (j,)]
            return out
        if xp is not np or n_in <= 256:
            # the 0/1 matrix of the gather, transposed: one GEMM (numpy's reduceat along an
            # inner axis is slow; cupy has none)
            W = xp.zeros((n_in, n_out), a.dtype)
            W[idx, xp.arange(n_out)] = 1
            return _Dense(W).apply(a, axis)
        first = np.empty(n_out, bool)  # idx is sorted: equal indices form contiguous runs
        first[0] = True
        np.not_equal(idx[1:], idx[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        out = np.zeros(shape, a.dtype)
        out[(slice(None),) * axis + (idx[starts],)] = np.add.reduceat(a, starts, axis=axis)
        return out

    def adjoint(self):
        return _Gather(self.idx, self.n_in)


class AxisOpBackward(Node):
    __slots__ = ("op", "axis")

    def backward(self, g):
        return (_axis_op(g, self.op.adjoint(), self.axis),)


def _axis_op(x, op, axis):
    """Apply a linear per-axis operator to tensor ``x`` (differentiably)."""
    out = wrap(op.apply(x.array, axis))
    if STATE.enabled and x.requires_grad:
        n = new_node(AxisOpBackward)
        n.op, n.axis = op, axis
        record(n, out, x)
    return out


# =========================================================================== weights

def _area_scale(n_in, n_out, align_corners, scale, dt):
    """PyTorch's ``area_pixel_compute_scale`` in the compute dtype ``dt``."""
    if align_corners:
        return dt.type(n_in - 1) / dt.type(n_out - 1) if n_out > 1 else dt.type(0)
    if scale is not None and scale > 0:
        return dt.type(1.0 / scale)
    return dt.type(n_in) / dt.type(n_out)


def _source(n_in, n_out, align_corners, scale, dt, cubic):
    s = _area_scale(n_in, n_out, align_corners, scale, dt)
    i = np.arange(n_out, dtype=dt)
    if align_corners:
        return s * i
    src = s * (i + dt.type(0.5)) - dt.type(0.5)
    return src if cubic else np.maximum(src, dt.type(0))


def _cubic_coeffs(t, a):
    """The four cubic-convolution weights for taps at offsets -1, 0, 1, 2 from floor(x)."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _linear_matrix(n_in, n_out, align_corners, scale, dt):
    src = _source(n_in, n_out, align_corners, scale, dt, False)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(dt), 0, 1)
    i1 = i0 + (i0 < n_in - 1)
    W = np.zeros((n_out, n_in), dt)
    rows = np.arange(n_out)
    np.add.at(W, (rows, i0), 1 - lam)  # small matrices: add.at is fine off the hot path
    np.add.at(W, (rows, i1), lam)
    return W


def _cubic_matrix(n_in, n_out, align_corners, scale, dt):
    src = _source(n_in, n_out, align_corners, scale, dt, True)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - i0.astype(dt), 0, 1)
    W = np.zeros((n_out, n_in), dt)
    rows = np.arange(n_out)
    for k, c in enumerate(_cubic_coeffs(t, dt.type(-0.75))):
        np.add.at(W, (rows, np.clip(i0 - 1 + k, 0, n_in - 1)), c)
    return W


def _area_matrix(n_in, n_out):
    i = np.arange(n_out)
    start = (i * n_in) // n_out
    end = ((i + 1) * n_in + n_out - 1) // n_out
    j = np.arange(n_in)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return inside / (end - start)[:, None]


def _aa_linear(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0.0)


def _aa_cubic(x, a=-0.5):  # PIL's bicubic filter
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _aa_lanczos(x):  # Lanczos-3 windowed sinc
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)


_AA = {"bilinear": (_aa_linear, 2), "bicubic": (_aa_cubic, 4), "lanczos": (_aa_lanczos, 6)}


def _aa_matrix(n_in, n_out, align_corners, scale, mode):
    """Antialiased resampling (PIL's): the filter is stretched by the downscale factor and
    each output's weights are normalised to sum to one."""
    filt, size = _AA[mode]
    s = float(_area_scale(n_in, n_out, align_corners, scale, np.dtype(np.float64)))
    support = size * 0.5 * s if s >= 1.0 else size * 0.5
    inv = 1.0 / s if s >= 1.0 else 1.0
    center = s * (np.arange(n_out) + 0.5)
    xmin = np.maximum((center - support + 0.5).astype(np.int64), 0)  # C-style truncation
    xmax = np.minimum((center + support + 0.5).astype(np.int64), n_in)
    j = np.arange(n_in)
    inside = (j >= xmin[:, None]) & (j < xmax[:, None])
    w = np.where(inside, filt((j[None, :] - center[:, None] + 0.5) * inv), 0.0)
    tot = w.sum(axis=1, keepdims=True)
    return np.divide(w, tot, out=np.zeros_like(w), where=tot != 0)


def _nearest_index(n_in, n_out, scale, exact, shortcuts):
    """PyTorch's nearest / nearest-exact source indices (float32 arithmetic, as it does).
    ``shortcuts``: PyTorch's 2-D kernel maps n -> n and n -> 2n exactly, whatever the scale."""
    i = np.arange(n_out)
    if shortcuts and not exact:
        if n_out == n_in:
            return i
        if n_out == 2 * n_in:
            return i >> 1
    f32 = np.float32
    s = f32(1.0 / scale) if scale is not None and scale > 0 else f32(n_in) / f32(n_out)
    if exact:
        src = np.floor(((i + 0.5) * np.float64(s)).astype(f32))
    else:
        src = np.floor(i.astype(f32) * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


@functools.lru_cache(maxsize=256)
def _axis_weights(mode, n_in, n_out, align_corners, scale, antialias, dtname, nd):
    """The (read-only, numpy) operator data of one axis: an index array or a matrix."""
    dt = np.dtype(dtname)
    if mode in ("nearest", "nearest-exact"):
        r = _nearest_index(n_in, n_out, scale, mode == "nearest-exact", nd == 4)
    elif antialias or mode == "lanczos":
        r = _aa_matrix(n_in, n_out, align_corners, scale, mode).astype(dt)
    elif mode == "area":
        r = _area_matrix(n_in, n_out).astype(dt)
    elif mode == "bicubic":
        r = _cubic_matrix(n_in, n_out, align_corners, scale, dt)
    else:
        r = _linear_matrix(n_in, n_out, align_corners, scale, dt)
    r.flags.writeable = False
    if r.ndim == 1:
        return r, None, None
    return r, _bands(r), _bands(r.T)


_DEVICE_CACHE: dict = {}


def _axis_operator(mode, n_in, n_out, align_corners, scale, antialias, dt, like, nd):
    key = (mode, n_in, n_out, align_corners, scale, antialias, np.dtype(dt).str, nd)
    r, blocks, blocks_t = _axis_weights(*key)
    if not isinstance(like, np.ndarray):  # keep a copy on the device
        dkey = key + (str(B.device_of(like)),)
        a = _DEVICE_CACHE.get(dkey)
        if a is None:
            if len(_DEVICE_CACHE) > 256:
                _DEVICE_CACHE.clear()
            a = _DEVICE_CACHE[dkey] = B.namespace(like).asarray(r)
        r = a
    if mode in ("nearest", "nearest-exact"):
        return _Gather(r, n_in)
    return _Dense(r, blocks, blocks_t)


# =========================================================================== interpolate

_MODES_MSG = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) or (
        hasattr(v, "ndim") and getattr(v, "ndim", 1) == 0 and np.dtype(v.dtype).kind in "iu")


def _output_plan(input, size, scale_factor, mode, recompute_scale_factor):
    """(output sizes, scale factors or None per axis) exactly as F.interpolate decides."""
    dim = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(v) for v in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}")
            out = [int(v) for v in size]
        else:
            if not _is_int(size):
                raise TypeError(f"expected size to be an int or a tuple of ints, got "
                                f"{type(size).__name__}")
            out = [int(size)] * dim
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {spatial} and scale_factor of "
                    f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, "
                    "...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [int(math.floor(n * s)) if math.isfinite(n * s) else -1
               for n, s in zip(spatial, scales)]
        if recompute_scale_factor or mode == "area":
            scales = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    return out, scales


def _check_sizes(spatial, out):
    if min(spatial + out) <= 0:
        names = ["D", "H", "W"][3 - len(spatial):]
        ins = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        outs = ", ".join(f"{n}: {s}" for n, s in zip(names, out))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}) output ({outs})")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of (N, C, W), (N, C, H, W) or (N, C, D, H, W) inputs.

    Modes: "nearest", "nearest-exact", "linear" (3-D), "bilinear"/"bicubic" (4-D),
    "trilinear" (5-D), "area" (adaptive average), "lanczos" (4-D, needs antialias).
    Give ``size`` or ``scale_factor`` (int/float or one per spatial dim). ``align_corners``
    maps corner pixels onto corner pixels (interpolating modes only); ``antialias`` low-pass
    filters when downsampling (bilinear/bicubic/lanczos), as PIL does.

    >>> x = ember.arange(4.).reshape(1, 1, 4)
    >>> F.interpolate(x, scale_factor=2, mode="linear")
    tensor([[[0.0000, 0.2500, 0.7500, 1.2500, 1.7500, 2.2500, 2.7500, 3.0000]]])
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.ndim
    out, scales = _output_plan(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode in ("nearest", "nearest-exact", "area"):
        ok = nd in (3, 4, 5)
    else:
        ok = mode in _SPATIAL and nd - 2 == _SPATIAL[mode]
    if not ok:
        want = {"linear": 3, "bilinear": 4, "trilinear": 5}
        if mode in want and nd in (3, 4, 5):
            raise NotImplementedError(
                f"Got {nd}D input, but {mode} mode needs {want[mode]}D input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the "
            f"modes: {_MODES_MSG} (got {mode})")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    spatial = list(input.shape[2:])
    _check_sizes(spatial, out)
    return _resample(input, spatial, out, scales, mode, bool(align_corners), bool(antialias))


def _resample(x, spatial, out, scales, mode, align_corners, antialias):
    dt = x.dtype
    nearest = mode in ("nearest", "nearest-exact")
    cast_back = None
    if not nearest and dt.kind != "f":
        if mode == "area" or dt != np.uint8:
            raise RuntimeError(f"interpolate: mode '{mode}' is not implemented for "
                               f"{D.name(dt)} input")
        cast_back = dt
        x = x.to(D.get_default_dtype())
    cdt = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    # resample the axis that shrinks most first: later GEMMs then run on smaller arrays;
    # uint8 goes last axis first, rounded to uint8 after each pass, as PyTorch's kernels do
    order = sorted(range(len(spatial)), key=lambda k: out[k] / spatial[k])
    if cast_back is not None:
        order = list(range(len(spatial)))[::-1]
    nd = x.ndim
    # PyTorch treats an unchanged size as the identity for the linear family, antialiased
    # and 2-D nearest resampling; for the other modes (bicubic, nearest-exact, nearest 1-D
    # and 3-D) a given scale_factor still moves the samples
    keep = antialias or mode in ("linear", "bilinear", "trilinear", "lanczos") or (
        mode == "nearest" and nd == 4)
    applied = False
    for k in order:
        if out[k] == spatial[k] and (keep or scales[k] in (None, 1.0)):
            continue  # the identity along this axis
        op = _axis_operator(mode, spatial[k], out[k], align_corners, scales[k], antialias,
                            cdt, x.array, nd)
        x = _axis_op(x, op, k + 2)
        if cast_back is not None:
            xp = B.namespace(x.array)
            x = wrap(xp.clip(xp.floor(x.array + 0.5), 0, 255))
        applied = True
    if not applied:
        x = x.clone()
    return x if cast_back is None else x.to(cast_back)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# =========================================================================== grid_sample

def _unnormalize(c, size, align_corners):
    """Grid coordinate in [-1, 1] -> pixel coordinate, and d pixel / d grid."""
    if align_corners:
        return (c + 1) * ((size - 1) / 2), (size - 1) / 2
    return ((c + 1) * size - 1) / 2, size / 2


def _clip(c, size):
    """Clamp to [0, size - 1]; the gradient mask treats the borders as outside."""
    xp = B.namespace(c)
    return xp.clip(c, 0, size - 1), (c > 0) & (c < size - 1)


def _reflect(c, twice_low, twice_high):
    """Reflect ``c`` into [low, high]; also returns the sign of d out / d c."""
    xp = B.namespace(c)
    if twice_low == twice_high:
        return xp.zeros_like(c), xp.zeros_like(c)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = c - lo
    sign = xp.where(c < 0, -1, 1).astype(c.dtype)
    c = xp.abs(c)
    extra = xp.fmod(c, span)
    even = xp.fmod(xp.floor(c / span), 2) == 0
    out = xp.where(even, extra + lo, span - extra + lo)
    return out, xp.where(even, sign, -sign)


def _pad_coord(c, size, padding_mode, align_corners):
    """Apply the padding mode to pixel coordinates; returns (coord, d coord / d input)."""
    if padding_mode == "border":
        c, m = _clip(c, size)
        return c, m.astype(c.dtype)
    if padding_mode == "reflection":
        if align_corners:
            c, s = _reflect(c, 0, 2 * (size - 1))
        else:
            c, s = _reflect(c, -1, 2 * size - 1)
        c, m = _clip(c, size)
        return c, s * m
    return c, None


def _axis_taps(c, size, mode, padding_mode, align_corners):
    """Taps of one spatial axis: lists of (index, weight, d weight / d grid coordinate),
    invalid taps (outside the input with zero padding) given weight 0 and index 0."""
    xp = B.namespace(c)
    one = c.dtype.type(1)
    if mode == "bicubic":
        p, scale = _unnormalize(c, size, align_corners)
        i0 = xp.floor(p)
        t = p - i0
        a = c.dtype.type(-0.75)
        near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731
        far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731
        dnear = lambda x: (3 * (a + 2) * x - 2 * (a + 3)) * x  # noqa: E731
        dfar = lambda x: (3 * a * x - 10 * a) * x + 8 * a  # noqa: E731
        ws = [far(t + 1), near(t), near(1 - t), far(2 - t)]
        dws = [dfar(t + 1), dnear(t), -dnear(1 - t), -dfar(2 - t)]
        taps = []
        for k in range(4):
            pos = i0 + (k - 1)
            if padding_mode != "zeros":
                pos, _ = _pad_coord(pos, size, padding_mode, align_corners)
            idx = pos.astype(np.int64)  # C-style truncation, as PyTorch
            ok = (idx >= 0) & (idx < size)
            taps.append(_masked(idx, ws[k], dws[k] * scale, ok))
        return taps
    p, scale = _unnormalize(c, size, align_corners)
    p, m = _pad_coord(p, size, padding_mode, align_corners)
    dscale = scale if m is None else m * scale
    if mode == "nearest":
        idx = xp.rint(p).astype(np.int64)  # round half to even, as nearbyint
        ok = (idx >= 0) & (idx < size)
        return [_masked(idx, xp.ones_like(p), xp.zeros_like(p), ok)]
    f = xp.floor(p)
    i0 = f.astype(np.int64)
    w1 = p - f
    ok0 = (i0 >= 0) & (i0 < size)
    ok1 = (i0 >= -1) & (i0 < size - 1)
    return [_masked(i0, one - w1, -dscale * xp.ones_like(p), ok0),
            _masked(i0 + 1, w1, dscale * xp.ones_like(p), ok1)]


def _masked(idx, w, dw, ok):
    xp = B.namespace(w)
    return (xp.where(ok, idx, 0), xp.where(ok, w, 0).astype(w.dtype, copy=False),
            xp.where(ok, dw, 0).astype(w.dtype, copy=False))


def _grid_taps(grid, spatial, mode, padding_mode, align_corners):
    """All taps of all points: (rows (T, M) into the (C, N * prod(spatial)) input,
    weights (T, M), d weight / d grid (T, M, d)) with M = N * number of grid points."""
    xp = B.namespace(grid)
    d = len(spatial)
    n = grid.shape[0]
    g2 = grid.reshape(n, -1, d)
    per_axis = []
    for k in range(d):  # spatial axis k (D, H, W order) reads grid component d - 1 - k
        per_axis.append(_axis_taps(g2[..., d - 1 - k], spatial[k], mode, padding_mode,
                                   align_corners))
    strides = [_prod(spatial[k + 1:]) for k in range(d)]
    base = (xp.arange(n, dtype=np.int64) * _prod(spatial))[:, None]
    rows, ws, dws = [], [], []
    for combo in itertools.product(*per_axis):
        r = base
        w = None
        for k, (idx, wk, _) in enumerate(combo):
            r = r + idx * strides[k]
            w = wk if w is None else w * wk
        dw = []
        for j in range(d):  # grid component j moves spatial axis d - 1 - j
            kj = d - 1 - j
            t = combo[kj][2]
            for k, (_, wk, _) in enumerate(combo):
                if k != kj:
                    t = t * wk
            dw.append(t)
        rows.append(r.reshape(-1))
        ws.append(w.reshape(-1))
        dws.append(xp.stack([v.reshape(-1) for v in dw], axis=-1))
    return rows, ws, dws


def _channels_first(x):
    """(N, C, *S) -> (C, N * prod(S)) contiguous: each channel one row of samples."""
    xp = B.namespace(x)
    n, c = x.shape[:2]
    if n == 1:
        return xp.ascontiguousarray(x).reshape(c, -1)
    return xp.ascontiguousarray(x.reshape(n, c, -1).transpose(1, 0, 2)).reshape(c, -1)


def _from_channels_first(a, n, pts):
    """(C, N * prod(pts)) -> (N, C, *pts)."""
    xp = B.namespace(a)
    c = a.shape[0]
    if n == 1:
        return a.reshape((1, c) + tuple(pts))
    return xp.ascontiguousarray(a.reshape(c, n, -1).transpose(1, 0, 2)).reshape(
        (n, c) + tuple(pts))


def _scatter_rows(rows, ws, gc, n_rows):
    """sum over taps t of ``gc * ws[t]`` added at columns ``rows[t]`` of a (C, n_rows) zero
    array: the adjoint of the forward's gathers."""
    xp = B.namespace(gc)
    c = gc.shape[0]
    if xp is np:  # one bincount per channel over all taps: a tight loop, no sort
        r = np.concatenate(rows)
        w = np.stack(ws)
        out = np.empty((c, n_rows), gc.dtype)
        for ch in range(c):
            out[ch] = np.bincount(r, (w * gc[ch]).ravel(), n_rows)
        return out
    out = xp.zeros((c, n_rows), gc.dtype)
    for r, w in zip(rows, ws):
        _add_at(out, 1, r, gc * w)
    return out


class GridSampleBackward(Node):
    __slots__ = ("mode", "taps")

    def backward(self, g):
        x, grid = self.unpack()
        xd, gd, go = x.array, grid.array, g.array
        n = xd.shape[0]
        spatial = xd.shape[2:]
        rows, ws, dws = self.taps  # computed by the forward (grid is version-checked)
        gc = _channels_first(go)  # (C, M)
        gx = ggrid = None
        if self.next[0] is not None:
            gx = _from_channels_first(_scatter_rows(rows, ws, gc, n * _prod(spatial)), n,
                                      spatial)
        if self.next[1] is not None:
            xp = B.namespace(gd)
            ggrid = xp.zeros((gc.shape[1], gd.shape[-1]), gd.dtype)
            if self.mode != "nearest":
                xc = _channels_first(xd)
                for r, dw in zip(rows, dws):
                    s = (xc.take(r, axis=1) * gc).sum(axis=0)
                    ggrid += dw * s[:, None]
            ggrid = ggrid.reshape(gd.shape)
        grads = (None if gx is None else wrap(gx), None if ggrid is None else wrap(ggrid))
        if STATE.enabled:  # create_graph: first-order grads are fine, a second order is not
            for t in grads:
                if t is not None:
                    record(new_node(GridSampleDoubleBackward), t, g, x, grid)
        return grads


class GridSampleDoubleBackward(Node):
    __slots__ = ()

    def backward(self, g):
        raise RuntimeError("grid_sample: double backward (the gradient of grid_sample's "
                           "gradient) is not supported, as in PyTorch")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H_in, W_in) at the points ``grid`` (N, H_out, W_out, 2) (or
    5-D input with a (N, D, H, W, 3) grid); grid values are (x, y[, z]) in [-1, 1], -1 the
    left/top edge. Modes "bilinear", "nearest", "bicubic" (4-D only); ``padding_mode``
    "zeros", "border" or "reflection" decides what lies outside. Gradients flow to input and
    grid (second-order gradients are not supported, as in PyTorch).

    >>> x = ember.arange(4.).reshape(1, 1, 2, 2)
    >>> F.grid_sample(x, ember.zeros(1, 1, 1, 2), align_corners=False)
    tensor([[[[1.5000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=2)
        align_corners = False
    xs, gs = list(input.shape), list(grid.shape)
    nd = input.ndim
    if grid.ndim != nd or nd not in (4, 5):
        raise RuntimeError(
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {xs} and grid with sizes {gs}")
    if gs[-1] != nd - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd - 2} in last "
                           f"dimension, but got grid with sizes {gs}")
    if xs[0] != gs[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {xs} and grid with sizes {gs}")
    if input.dtype != grid.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{D.name(input.dtype)} and grid has {D.name(grid.dtype)}")
    if input.dtype.kind != "f":
        raise RuntimeError(f"grid_sampler(): expected floating point input, got "
                           f"{D.name(input.dtype)}")
    for i in range(2, nd):
        if xs[i] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {xs} with dimension {i} being empty")
    if mode == "bicubic" and nd != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return _grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def _grid_sample(input, grid, mode, padding_mode, align_corners):
    xd, gd = input.array, grid.array
    n = xd.shape[0]
    taps = _grid_taps(gd, xd.shape[2:], mode, padding_mode, align_corners)
    rows, ws, _ = taps
    xc = _channels_first(xd)  # (C, N * P): one gather per tap takes all channels at once
    acc = None
    for r, w in zip(rows, ws):
        v = xc.take(r, axis=1)
        v *= w
        if acc is None:
            acc = v
        else:
            acc += v
    res = wrap(_from_channels_first(acc, n, gd.shape[1:-1]))
    if STATE.enabled and (input.requires_grad or grid.requires_grad):
        node = new_node(GridSampleBackward)
        node.mode, node.taps = mode, taps
        node.save(input, grid)
        record(node, res, input, grid)
    return res


# =========================================================================== affine_grid

def _base_coords(steps, align_corners, dt):
    if steps <= 1:
        return np.zeros(max(steps, 1), dt)[:steps] if steps == 0 else np.zeros(1, dt)
    r = np.linspace(-1, 1, steps, dtype=np.float64)
    if not align_corners:
        r = r * (steps - 1) / steps
    return r.astype(dt)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of affine maps ``theta`` (N, 2, 3) for an output of ``size``
    (N, C, H, W) -> grid (N, H, W, 2); or theta (N, 3, 4), size (N, C, D, H, W) -> grid
    (N, D, H, W, 3). Feed it to ``grid_sample``. Differentiable in ``theta``.

    >>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> F.affine_grid(theta, (1, 1, 2, 2), align_corners=True).shape
    (1, 2, 2, 2)
    """
    from ...factories import tensor

    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{D.name(theta.dtype)}")
    size = [int(s) for s in size]
    ts = tuple(theta.shape)
    if len(size) == 4:
        if theta.ndim != 3 or ts[-2:] != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{tuple(size)}. Got {ts}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or ts[-2:] != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{tuple(size)}. Got {ts}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {tuple(size)}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    if ts[0] != size[0]:
        raise RuntimeError(f"affine_grid: theta holds {ts[0]} matrices but size asks for a "
                           f"batch of {size[0]}")
    dt = theta.dtype
    axes = [_base_coords(s, align_corners, dt) for s in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    d = len(spatial)
    # columns x, y[, z], 1: x runs along the last spatial dim
    base = np.stack([mesh[d - 1 - j] for j in range(d)] + [np.ones_like(mesh[0])], axis=-1)
    base = tensor(base.reshape(-1, d + 1), device=theta.device)
    grid = base @ theta.transpose(1, 2)  # (N, points, d)
    return grid.reshape([size[0]] + list(spatial) + [d])


# =========================================================================== pixel shuffle

def _factor(name, r, what):
    if not isinstance(r, numbers.Integral) or r <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {r}")
    return int(r)


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r) with r = ``upscale_factor``.

    >>> F.pixel_shuffle(ember.randn(1, 8, 3, 3), 2).shape
    (1, 2, 6, 6)
    """
    r = _factor("pixel_shuffle", upscale_factor, "upscale_factor")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    oc = c // (r * r)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W) with r = ``downscale_factor``.

    >>> F.pixel_unshuffle(ember.randn(1, 2, 6, 6), 2).shape
    (1, 8, 3, 3)
    """
    r = _factor("pixel_unshuffle", downscale_factor, "downscale_factor")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor,"
                           f" but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
