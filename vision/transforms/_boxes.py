"""Kernels for bounding boxes (N, 4) and keypoints (..., 2): format conversion, clamping and
every geometric transform, on host numpy arrays.

They follow torchvision's arithmetic exactly, dtype by dtype: integer boxes are worked in
float32 and truncated back (``int(2.7) == 2``), float boxes keep their dtype; transforms that can
push boxes off the canvas (crop, pad, warps) clamp them to it unless ``clamping_mode`` is None;
keypoints are never clamped. Flips mirror boxes about the canvas edge (x -> W - x) and keypoints
about the last pixel centre (x -> W - 1 - x).
"""
from __future__ import annotations

import numpy as np

from ._geometry import affine_output_size, inverse_affine, affine_matrix, identity_grid

_XYXY, _XYWH, _CXCYWH = "XYXY", "XYWH", "CXCYWH"


def _f(a):
    """The float working dtype of an array: its own if float, else float32."""
    return a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)


# ------------------------------------------------------------------------------- formats

def convert(a, src, dst):
    """Convert (N, 4) boxes between XYXY, XYWH and CXCYWH (integer boxes stay integer)."""
    src, dst = str(getattr(src, "value", src)), str(getattr(dst, "value", dst))
    a = np.array(a, copy=True)
    if src == dst:
        return a
    is_int = a.dtype.kind != "f"
    if src == _XYWH and dst == _CXCYWH:
        half = a[:, 2:] // 2 if is_int else a[:, 2:] / 2
        a[:, :2] += half
        return a
    if src == _CXCYWH and dst == _XYWH:
        f = a.astype(np.float32) if is_int else a
        xy = f[:, :2] - f[:, 2:] / 2
        if is_int:
            x2y2 = (xy + f[:, 2:]).astype(a.dtype)
            xy = xy.astype(a.dtype)
            return np.concatenate([xy, x2y2 - xy], axis=1)
        return np.concatenate([xy, f[:, 2:]], axis=1)
    if src == _XYWH:
        a[:, 2:] += a[:, :2]
    elif src == _CXCYWH:
        f = a.astype(np.float32) if is_int else a
        xy = f[:, :2] - f[:, 2:] / 2
        a = np.concatenate([xy, xy + f[:, 2:]], axis=1).astype(a.dtype)
    if dst == _XYWH:
        a[:, 2:] -= a[:, :2]
    elif dst == _CXCYWH:
        a[:, 2:] -= a[:, :2]
        s = a[:, :2] * 2 + a[:, 2:]
        a[:, :2] = s // 2 if is_int else s / 2
    return a


def clamp(a, fmt, canvas_size, clamping_mode="soft"):
    """Clip boxes to the canvas (through XYXY, in float), back in their format and dtype."""
    if clamping_mode is None:
        return np.array(a, copy=True)
    dt = a.dtype
    f = a.astype(_f(a), copy=True)
    xyxy = convert(f, fmt, _XYXY)
    h, w = canvas_size
    xyxy[:, 0::2] = xyxy[:, 0::2].clip(0, w)
    xyxy[:, 1::2] = xyxy[:, 1::2].clip(0, h)
    return convert(xyxy, _XYXY, fmt).astype(dt)


def sanitize_mask(a, fmt, canvas_size, min_size=1.0, min_area=1.0):
    """Which boxes to keep: width and height >= ``min_size``, area >= ``min_area``, every
    coordinate >= 0 and inside the canvas."""
    xyxy = convert(a, fmt, _XYXY)
    h, w = canvas_size
    ws, hs = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
    valid = (ws >= min_size) & (hs >= min_size) & (xyxy >= 0).all(-1) & (ws * hs >= min_area)
    valid &= (xyxy[:, 0] <= w) & (xyxy[:, 2] <= w) & (xyxy[:, 1] <= h) & (xyxy[:, 3] <= h)
    return valid


# ------------------------------------------------------------------------ boxes: geometry

def hflip_boxes(a, fmt, canvas_size):
    w = canvas_size[1]
    out = np.array(a, copy=True)
    if fmt == _XYXY:
        out[:, 0], out[:, 2] = w - a[:, 2], w - a[:, 0]
    elif fmt == _XYWH:
        out[:, 0] = w - (a[:, 0] + a[:, 2])
    else:
        out[:, 0] = w - a[:, 0]
    return out


def vflip_boxes(a, fmt, canvas_size):
    h = canvas_size[0]
    out = np.array(a, copy=True)
    if fmt == _XYXY:
        out[:, 1], out[:, 3] = h - a[:, 3], h - a[:, 1]
    elif fmt == _XYWH:
        out[:, 1] = h - (a[:, 1] + a[:, 3])
    else:
        out[:, 1] = h - a[:, 1]
    return out


def _ratios(new, old):
    """(w ratio, h ratio) rounded to float32, as a default-dtype tensor holds them."""
    return np.array([new[1] / old[1], new[0] / old[0]], np.float32)


def resize_boxes(a, canvas_size, new_size):
    if tuple(new_size) == tuple(canvas_size):
        return np.array(a, copy=True)
    r = np.tile(_ratios(new_size, canvas_size), 2)
    f = a if a.dtype.kind == "f" else a.astype(np.float32)
    return (f * r.astype(np.result_type(f.dtype, np.float32))).astype(a.dtype)


def crop_boxes(a, fmt, top, left, height, width, clamping_mode="soft"):
    sub = np.array([left, top, left, top] if fmt == _XYXY else [left, top, 0, 0]).astype(a.dtype)
    return clamp(a - sub, fmt, (height, width), clamping_mode)


def pad_boxes(a, fmt, canvas_size, padding, clamping_mode="soft"):
    left, top, right, bottom = padding
    add = np.array([left, top, left, top] if fmt == _XYXY else [left, top, 0, 0]).astype(a.dtype)
    new = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return clamp(a + add, fmt, new, clamping_mode), new


def _corners(xyxy):
    return xyxy[:, [[0, 1], [2, 1], [2, 3], [0, 3]]].reshape(-1, 2)


def _enclose(points):
    p = points.reshape(-1, 4, 2)
    return np.concatenate([p.min(1), p.max(1)], axis=1)


def _affine_setup(canvas_size, angle, translate, scale, shear, center, dt):
    h, w = canvas_size
    c = [w * 0.5, h * 0.5] if center is None else [float(v) for v in center]
    m = affine_matrix(c, angle, translate, scale, shear)[:2]
    return c, m.astype(dt)


def _apply_affine(points, m):
    dt = m.dtype
    p = np.concatenate([points.astype(dt), np.ones((len(points), 1), dt)], axis=1)
    return p @ m.T


def _expand_shift(canvas_size, m, c, angle, translate, scale, shear):
    """The offset that moves the warped canvas's top-left corner to the origin (torchvision's
    shift for boxes and keypoints) and the expanded canvas size. The size is the image's
    (computed about the image centre, as ``rotate`` does for the pixels), so parts and image
    keep one canvas; torchvision computes it about the pixel centre instead, which can come
    out one pixel smaller (30 degrees on 160x128: (191, 203) for its boxes, (192, 204) for its
    image)."""
    h, w = canvas_size
    dt = m.dtype
    pts = np.array([[0, 0, 1], [0, h, 1], [w, h, 1], [w, 0, 1]], dt)
    tr = (pts @ m.T).min(0)
    rel = [c[0] - w * 0.5, c[1] - h * 0.5]
    nw, nh = affine_output_size(inverse_affine(rel, angle, translate, scale, shear), w, h)
    return tr, (nh, nw)


def affine_boxes(a, fmt, canvas_size, angle, translate, scale, shear, center=None,
                 expand=False, clamping_mode="soft"):
    """-> (boxes, canvas_size): the axis-aligned hull of each warped box."""
    if a.size == 0:
        return np.array(a, copy=True), tuple(canvas_size)
    dt = _f(a)
    xyxy = convert(a.astype(dt), fmt, _XYXY)
    c, m = _affine_setup(canvas_size, angle, translate, scale, shear, center, dt)
    out = _enclose(_apply_affine(_corners(xyxy), m))
    if expand:
        tr, canvas_size = _expand_shift(canvas_size, m, c, angle, translate, scale, shear)
        out = out - np.tile(tr, 2)
    out = clamp(out, _XYXY, canvas_size, clamping_mode)
    return convert(out, _XYXY, fmt).astype(a.dtype), tuple(canvas_size)


def _perspective_thetas(co, dt):
    denom = co[0] * co[4] - co[1] * co[3]
    if denom == 0:
        raise RuntimeError(f"Provided perspective_coeffs {co} can not be inverted. "
                           f"Denominator is zero, denom={denom}")
    inv = [(co[4] - co[5] * co[7]) / denom, (-co[1] + co[2] * co[7]) / denom,
           (co[1] * co[5] - co[2] * co[4]) / denom, (-co[3] + co[5] * co[6]) / denom,
           (co[0] - co[2] * co[6]) / denom, (-co[0] * co[5] + co[2] * co[3]) / denom,
           (-co[4] * co[6] + co[3] * co[7]) / denom, (-co[0] * co[7] + co[1] * co[6]) / denom]
    t1 = np.array([inv[0:3], inv[3:6]], dt)
    t2 = np.array([[inv[6], inv[7], 1.0], [inv[6], inv[7], 1.0]], dt)
    return t1, t2


def _perspective_points(points, co, dt):
    t1, t2 = _perspective_thetas(co, dt)
    pd = _f(points)
    p = np.concatenate([points.astype(pd), np.ones((len(points), 1), pd)], axis=1)
    return (p @ t1.T) / (p @ t2.T)


def perspective_boxes(a, fmt, canvas_size, coefficients, clamping_mode="soft"):
    if a.size == 0:
        return np.array(a, copy=True)
    xyxy = convert(a, fmt, _XYXY)
    dt = _f(xyxy)
    out = _enclose(_perspective_points(_corners(xyxy), coefficients, dt))
    out = clamp(out, _XYXY, canvas_size, clamping_mode)
    return convert(out, _XYXY, fmt).astype(a.dtype)


def _inverse_grid_lookup(points, canvas_size, displacement, dt):
    """Move points by the approximate inverse of an elastic field: look up
    ``identity - displacement`` at the (truncated) pixel and map it back to pixels."""
    h, w = canvas_size
    inv = identity_grid(h, w, dt) - displacement.astype(dt)
    idx = points.astype(np.int64)
    ix, iy = idx[:, 0].clip(0, w - 1), idx[:, 1].clip(0, h - 1)
    size = np.array([w, h], dt)
    return (inv[0, iy, ix, :] + 1) * (dt.type(0.5) * size) - dt.type(0.5)


def elastic_boxes(a, fmt, canvas_size, displacement, clamping_mode="soft"):
    if a.size == 0:
        return np.array(a, copy=True)
    dt = _f(a)
    xyxy = convert(a, fmt, _XYXY)
    pts = _corners(xyxy)
    if pts.dtype.kind == "f":
        pts = np.ceil(pts)
    out = _enclose(_inverse_grid_lookup(pts, canvas_size, displacement, np.dtype(dt)))
    out = clamp(out.astype(xyxy.dtype), _XYXY, canvas_size, clamping_mode)
    return convert(out, _XYXY, fmt).astype(a.dtype)


# -------------------------------------------------------------------------------- keypoints

def _flat(a):
    return a.reshape(-1, 2)


def hflip_points(a, canvas_size):
    out = np.array(a, copy=True)
    out[..., 0] = (canvas_size[1] - 1) - a[..., 0]
    return out


def vflip_points(a, canvas_size):
    out = np.array(a, copy=True)
    out[..., 1] = (canvas_size[0] - 1) - a[..., 1]
    return out


def resize_points(a, canvas_size, new_size):
    if tuple(new_size) == tuple(canvas_size):
        return np.array(a, copy=True)
    r = _ratios(new_size, canvas_size)
    f = a if a.dtype.kind == "f" else a.astype(np.float32)
    return (f * r.astype(np.result_type(f.dtype, np.float32))).astype(a.dtype)


def shift_points(a, dx, dy):
    return a + np.array([dx, dy]).astype(a.dtype)


def affine_points(a, canvas_size, angle, translate, scale, shear, center=None, expand=False):
    if a.size == 0:
        return np.array(a, copy=True), tuple(canvas_size)
    dt = _f(a)
    c, m = _affine_setup(canvas_size, angle, translate, scale, shear, center, dt)
    out = _apply_affine(_flat(a), m)
    if expand:
        tr, canvas_size = _expand_shift(canvas_size, m, c, angle, translate, scale, shear)
        out = out - tr
    return out.reshape(a.shape).astype(a.dtype), tuple(canvas_size)


def perspective_points(a, coefficients):
    if a.size == 0:
        return np.array(a, copy=True)
    out = _perspective_points(_flat(a), coefficients, _f(a))
    return out.reshape(a.shape).astype(a.dtype)


def elastic_points(a, canvas_size, displacement):
    if a.size == 0:
        return np.array(a, copy=True)
    out = _inverse_grid_lookup(_flat(a), canvas_size, displacement, np.dtype(_f(a)))
    return out.reshape(a.shape).astype(a.dtype)
