"""Region-of-interest pooling: RoIAlign and RoIPool (Fast/Mask R-CNN) and their
position-sensitive forms PSRoIAlign and PSRoIPool (R-FCN).

Boxes are a (K, 5) tensor of ``[batch_index, x1, y1, x2, y2]`` or a list of (Ki, 4) XYXY
tensors, one per image, in input-image coordinates (``spatial_scale`` maps them onto the
feature map). Every op is differentiable in ``input``: the sample positions and weights are
computed once on the host from the boxes, then the features are gathered with ember ops,
so the gradient is the gather's scatter-add (and works on any backend).
"""
from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember._tensor import Tensor

from ._utils import _const, _float_dtype, _host, _pair, _xp

__all__ = ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool", "RoIAlign", "RoIPool",
           "PSRoIAlign", "PSRoIPool"]


def _rois(boxes, dtype):
    """Host (K, 5) ``[batch, x1, y1, x2, y2]`` in ``dtype`` from a (K, 5) tensor or a list of
    (Ki, 4) tensors."""
    if isinstance(boxes, (list, tuple)):
        parts = []
        for i, b in enumerate(boxes):
            a = _host(b)
            if a.ndim != 2 or a.shape[1] != 4:
                raise ValueError("boxes given as a list should hold (L, 4) tensors, got shape "
                                 f"{a.shape} at position {i}")
            parts.append(np.concatenate([np.full((len(a), 1), i, dtype), a.astype(dtype)], 1))
        return np.concatenate(parts) if parts else np.zeros((0, 5), dtype)
    if not isinstance(boxes, Tensor):
        raise TypeError("boxes should be a Tensor (K, 5) or a list of (L, 4) Tensors, got "
                        f"{type(boxes).__name__}")
    r = _host(boxes).astype(dtype)
    if r.ndim != 2 or r.shape[1] != 5:
        raise ValueError(f"boxes should be (K, 5) [batch_index, x1, y1, x2, y2] or a list of "
                         f"(L, 4) tensors, got shape {r.shape}")
    return r


def _check_input(input):
    if not isinstance(input, Tensor) or input.ndim != 4:
        raise ValueError("input should be a (N, C, H, W) Tensor, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    if not input.is_floating_point():
        raise TypeError(f"input should be a floating-point Tensor, got {input.dtype}")


# ----------------------------------------------------------------- sampling (host side)

def _taps(v, size):
    """Bilinear taps of coordinates ``v`` on an axis of ``size`` pixels, RoIAlign's way:
    a sample beyond [-1, size] reads nothing; below 0 it reads pixel 0, past the last
    pixel it reads the last one. Returns (lo, hi, weight_lo, weight_hi, dead)."""
    dead = ~((v >= -1.0) & (v <= size))                  # NaN coordinates are dead too
    v = np.where(dead | (v <= 0), 0, v).astype(v.dtype)
    lo = np.floor(v).astype(np.int64)
    top = lo >= size - 1
    lo = np.where(top, size - 1, lo)
    hi = np.where(top, size - 1, lo + 1)
    v = np.where(top, lo, v).astype(v.dtype)
    frac = (v - lo).astype(v.dtype)
    return lo, hi, (1 - frac).astype(v.dtype), frac, dead


def _align_samples(r, H, W, ph, pw, scale, sampling_ratio, aligned, min_one):
    """Sample positions of RoIAlign-style pooling for boxes ``r`` (K, 5).

    Each of the ph x pw bins of a box is sampled on a regular grid (``sampling_ratio`` per
    side, or ``ceil(bin size)`` when it is <= 0), each sample a bilinear blend of 4 pixels.
    Returns the pixel indices ``y * W + x`` (K, ph, pw, S) and their weights (K, ph, pw, S)
    (0 for padding, dead samples and grid slots a box does not use), plus the grid counts
    (K,) of each box. Arithmetic runs in ``r``'s dtype, in the reference kernel's order."""
    T = r.dtype.type
    K = len(r)
    off = T(0.5) if aligned else T(0)
    s = T(scale)
    x1, y1 = r[:, 1] * s - off, r[:, 2] * s - off
    rw, rh = r[:, 3] * s - off - x1, r[:, 4] * s - off - y1
    if min_one:
        rw, rh = np.maximum(rw, T(1)), np.maximum(rh, T(1))
    bh, bw = rh / T(ph), rw / T(pw)
    if sampling_ratio > 0:
        gh = gw = np.full(K, sampling_ratio, np.int64)
    else:
        gh, gw = np.ceil(bh).astype(np.int64), np.ceil(bw).astype(np.int64)
    Gh = max(int(gh.max()) if K else 1, 1)
    Gw = max(int(gw.max()) if K else 1, 1)

    def grid(start, b, g, n, G):          # (K, n, G) coordinates of the samples
        cell = start[:, None, None] + np.arange(n, dtype=T)[None, :, None] * b[:, None, None]
        step = (np.arange(G, dtype=T) + T(0.5))[None, None, :] * b[:, None, None]
        with np.errstate(divide="ignore", invalid="ignore"):   # empty grids: all slots dead
            return cell + step / g.astype(T)[:, None, None]

    ys, xs = grid(y1, bh, gh, ph, Gh), grid(x1, bw, gw, pw, Gw)
    yl, yh, wyl, wyh, dy = _taps(ys, H)
    xl, xh, wxl, wxh, dx = _taps(xs, W)
    dy |= np.arange(Gh)[None, None, :] >= gh[:, None, None]
    dx |= np.arange(Gw)[None, None, :] >= gw[:, None, None]
    idx, wts = [], []
    for yy, wy in ((yl, wyl), (yh, wyh)):
        for xx, wx in ((xl, wxl), (xh, wxh)):
            # (K, ph, 1, Gh, 1) with (K, 1, pw, 1, Gw) -> (K, ph, pw, Gh, Gw)
            idx.append(yy[:, :, None, :, None] * W + xx[:, None, :, None, :])
            w = wy[:, :, None, :, None] * wx[:, None, :, None, :]
            wts.append(np.where(dy[:, :, None, :, None] | dx[:, None, :, None, :], T(0), w))
    S = 4 * Gh * Gw
    idx = np.stack(idx, -1).reshape(K, ph, pw, S)
    wts = np.stack(wts, -1).astype(r.dtype).reshape(K, ph, pw, S)
    return idx, wts, gh * gw


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _pool_windows(r, H, W, ph, pw, scale, clip_end, inclusive):
    """Integer bins of RoIPool-style pooling: boxes rounded to pixels (``inclusive``: the end
    pixel counts, as RoIPool's), split into ph x pw bins (floor of the start, ceil of the
    end), clipped to ``[0, clip_end]`` per axis.
    Returns the pixel indices (K, ph, pw, S) of a window covering the largest bin, a mask of
    the pixels really in each bin (K, ph, pw, S) and the bin areas (K, ph, pw)."""
    T = r.dtype.type
    K = len(r)
    s = T(scale)
    start = _round_half_away(r[:, 1:3] * s).astype(np.int64)       # (K, 2) x, y
    end = _round_half_away(r[:, 3:5] * s).astype(np.int64)
    size = np.maximum(end - start + int(inclusive), 1).astype(r.dtype)               # (K, 2)

    def axis(n, length, origin, limit):
        b = length / T(n)
        i = np.arange(n, dtype=T)
        lo = np.floor(i[None, :] * b[:, None]).astype(np.int64) + origin[:, None]
        hi = np.ceil((i[None, :] + 1) * b[:, None]).astype(np.int64) + origin[:, None]
        return np.clip(lo, 0, limit), np.clip(hi, 0, limit)

    hs, he = axis(ph, size[:, 1], start[:, 1], clip_end[0])
    ws, we = axis(pw, size[:, 0], start[:, 0], clip_end[1])
    Bh = max(int((he - hs).max()) if K else 1, 1)
    Bw = max(int((we - ws).max()) if K else 1, 1)
    rows = hs[..., None] + np.arange(Bh)                            # (K, ph, Bh)
    cols = ws[..., None] + np.arange(Bw)                            # (K, pw, Bw)
    vr, vc = rows < he[..., None], cols < we[..., None]
    rows, cols = np.minimum(rows, H - 1), np.minimum(cols, W - 1)
    idx = rows[:, :, None, :, None] * W + cols[:, None, :, None, :]  # (K, ph, pw, Bh, Bw)
    valid = vr[:, :, None, :, None] & vc[:, None, :, None, :]
    area = np.maximum(he - hs, 0)[:, :, None] * np.maximum(we - ws, 0)[:, None, :]
    S = Bh * Bw
    return idx.reshape(K, ph, pw, S), valid.reshape(K, ph, pw, S), area


# ------------------------------------------------------------------ gathering (ember ops)

_CHUNK = 1 << 23   # elements of the largest gathered temporary; boxes are taken in chunks


def _chunks(K, per_box):
    step = max(1, _CHUNK // max(per_box, 1))
    return [slice(a, min(a + step, K)) for a in range(0, K, step)] or [slice(0, 0)]


def _cat(parts):
    return parts[0] if len(parts) == 1 else ember.cat(parts, 0)


def _ps_lin(r, idx, C, H, W, ph, pw):
    """Flat input indices of the position-sensitive samples: bin (i, j) of output channel c
    reads input channel ``(c * ph + i) * pw + j`` of the box's image -> (K, Cout, ph, pw, S)."""
    cout = C // (ph * pw)
    cin = np.arange(cout * ph * pw).reshape(cout, ph, pw)
    b = r[:, 0].astype(np.int64)
    return ((b[:, None, None, None] * C + cin[None]) * (H * W))[..., None] + idx[:, None]


def _ps_weighted_sum(input, r, idx, wts, ph, pw):
    """``sum_s wts * input[sample s]`` per box, output channel and bin: (K, Cout, ph, pw)."""
    N, C, H, W = input.shape
    K, S = len(r), idx.shape[-1]
    cout = C // (ph * pw)
    xp, dt = _xp(input), input.array.dtype
    flat = input.reshape(-1)
    parts = []
    for sl in _chunks(K, cout * ph * pw * S):
        lin = _ps_lin(r[sl], idx[sl], C, H, W, ph, pw)
        g = flat[_const(xp, lin.reshape(-1))].reshape(len(lin), cout, ph, pw, S)
        parts.append((g * _const(xp, wts[sl][:, None].astype(dt))).sum(-1))
    return _cat(parts)


def _check_ps_channels(C, ph, pw):
    if C % (ph * pw):
        raise ValueError(f"input channels ({C}) must be a multiple of output_size[0] * "
                         f"output_size[1] ({ph} * {pw})")


# -------------------------------------------------------------------------- public ops

def roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """RoIAlign (Mask R-CNN) -> (K, C, ph, pw): each of the ``output_size`` bins of a box is
    the mean of bilinear samples on a regular grid (``sampling_ratio`` per side; -1:
    ``ceil(bin size)``). ``aligned=True`` shifts boxes by -0.5 pixel so that pixel centres
    line up; ``aligned=False`` (the original) stretches boxes smaller than a pixel to one.

        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> roi_align(x, ember.tensor([[0, 0.0, 0.0, 2.0, 2.0]]), 1, aligned=True).tolist()
        [[[[2.5]]]]
    """
    _check_input(input)
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    r = _rois(boxes, _float_dtype(input))
    idx, wts, count = _align_samples(r, H, W, ph, pw, spatial_scale, sampling_ratio, aligned,
                                     min_one=not aligned)
    K, S = len(r), idx.shape[-1]
    xp, dt = _xp(input), input.array.dtype
    rows = input.permute(0, 2, 3, 1).reshape(N * H * W, C)          # one row per pixel
    b = r[:, 0].astype(np.int64)
    inv = (1 / np.maximum(count, 1).astype(r.dtype)).astype(dt)
    parts = []
    for sl in _chunks(K, ph * pw * S * C):
        lin = b[sl, None, None, None] * (H * W) + idx[sl]
        g = rows[_const(xp, lin.reshape(-1))].reshape(len(lin), ph, pw, S, C)
        w = _const(xp, wts[sl][..., None, :].astype(dt))            # (k, ph, pw, 1, S)
        parts.append((w @ g).squeeze(-2) * _const(xp, inv[sl, None, None, None]))
    return _cat(parts).permute(0, 3, 1, 2)


def ps_roi_align(input, boxes, output_size, spatial_scale: float = 1.0,
                 sampling_ratio: int = -1) -> Tensor:
    """Position-sensitive RoIAlign (R-FCN with RoIAlign sampling) -> (K, C / (ph * pw), ph, pw).

    Bin (i, j) of output channel c averages bilinear samples of input channel
    ``(c * ph + i) * pw + j`` only, so C must be a multiple of ph * pw. Boxes are shifted by
    -0.5 pixel as ``roi_align(aligned=True)``. As torchvision, a box whose adaptive sampling
    grid is empty (a side of zero length with ``sampling_ratio <= 0``) gives NaN."""
    _check_input(input)
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    _check_ps_channels(C, ph, pw)
    r = _rois(boxes, _float_dtype(input))
    idx, wts, count = _align_samples(r, H, W, ph, pw, spatial_scale, sampling_ratio,
                                     aligned=True, min_one=False)
    xp, dt = _xp(input), input.array.dtype
    inv = np.where(count == 0, 0, 1 / np.maximum(count, 1).astype(r.dtype)).astype(dt)
    out = _ps_weighted_sum(input, r, idx, wts, ph, pw) * _const(xp, inv[:, None, None, None])
    if (count == 0).any():   # 0 / 0 as the reference's mean, with no gradient through it
        out = out + _const(xp, np.where(count == 0, np.nan, 0).astype(dt)[:, None, None, None])
    return out


def ps_roi_pool(input, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """Position-sensitive RoIPool (R-FCN) -> (K, C / (ph * pw), ph, pw): boxes are rounded to
    pixels and split into bins; bin (i, j) of output channel c is the mean of input channel
    ``(c * ph + i) * pw + j`` over the bin (0 for an empty bin).

    As torchvision's forward, bins are clipped to ``[0, H - 1]`` x ``[0, W - 1]``, so the
    last row and column of the feature map are never pooled. The gradient is the exact
    gradient of this forward; torchvision's backward clips at H and W instead, so the two
    differ where a bin reaches the last row or column."""
    _check_input(input)
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    _check_ps_channels(C, ph, pw)
    r = _rois(boxes, _float_dtype(input))
    idx, valid, area = _pool_windows(r, H, W, ph, pw, spatial_scale, (H - 1, W - 1),
                                     inclusive=False)
    xp, dt = _xp(input), input.array.dtype
    inv = np.where(area > 0, 1 / np.maximum(area, 1).astype(r.dtype), 0).astype(dt)
    return _ps_weighted_sum(input, r, idx, valid, ph, pw) * _const(xp, inv[:, None])


def roi_pool(input, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """RoIPool (Fast R-CNN) -> (K, C, ph, pw): the max over each of the ``output_size`` bins
    of each box (rounded to pixels); empty bins give 0. The gradient goes to the first
    maximal pixel of each bin."""
    _check_input(input)
    ph, pw = _pair(output_size)
    N, C, H, W = input.shape
    r = _rois(boxes, _float_dtype(input))
    idx, valid, area = _pool_windows(r, H, W, ph, pw, spatial_scale, (H, W), inclusive=True)
    K, S = len(r), idx.shape[-1]
    xp, dt = _xp(input), input.array.dtype
    # each bin's first maximum, found on the raw arrays one window slot at a time (a running
    # max over S slots of (K, ph, pw, C)); then those pixels are gathered with ember ops
    rows = input.detach().array.transpose(0, 2, 3, 1).reshape(N * H * W, C)
    base = xp.asarray(r[:, 0].astype(np.int64))[:, None, None] * (H * W)
    pix, ok = xp.asarray(idx), xp.asarray(valid)
    best = xp.full((K, ph, pw, C), -np.inf, dt)
    at = xp.zeros((K, ph, pw, C), np.int64)
    for s in range(S):
        v = rows[(base + pix[..., s]).reshape(-1)].reshape(K, ph, pw, C)
        up = (v > best) & ok[..., s, None]
        best = xp.where(up, v, best)
        at = xp.where(up, pix[..., s, None], at)
    chan = xp.asarray(r[:, 0].astype(np.int64))[:, None] * C + xp.arange(C)      # (K, C)
    lin = (chan[:, :, None, None] * (H * W)) + at.transpose(0, 3, 1, 2)         # (K, C, ph, pw)
    out = input.reshape(-1)[_const(xp, lin.reshape(-1))].reshape(K, C, ph, pw)
    return out * _const(xp, (area > 0)[:, None].astype(dt))


# ---------------------------------------------------------------------------- modules

class RoIAlign(nn.Module):
    """Module form of :func:`roi_align`."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale,
                         self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{type(self).__name__}(output_size={self.output_size}, spatial_scale="
                f"{self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned})")


class RoIPool(nn.Module):
    """Module form of :func:`roi_pool`."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return (f"{type(self).__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")


class PSRoIAlign(nn.Module):
    """Module form of :func:`ps_roi_align`."""

    def __init__(self, output_size, spatial_scale, sampling_ratio):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio = sampling_ratio

    def forward(self, input, rois):
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale,
                            self.sampling_ratio)

    def __repr__(self):
        return (f"{type(self).__name__}(output_size={self.output_size}, spatial_scale="
                f"{self.spatial_scale}, sampling_ratio={self.sampling_ratio})")


class PSRoIPool(nn.Module):
    """Module form of :func:`ps_roi_pool`."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input, rois):
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return (f"{type(self).__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")
