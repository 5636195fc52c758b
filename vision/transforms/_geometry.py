"""Geometric image kernels: resize, crop, flip, pad, affine/rotate, perspective.

Each takes a PIL image or a (..., C, H, W) tensor and returns the same kind. PIL inputs go
through Pillow's own filters, so tensor resizes (antialiased, as Pillow does) match them.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ember.nn import functional as F

from ._image import (InterpolationMode, _pil_filter, _PIL, as_float, as_mode, back_to,
                     check_image, get_size, is_pil, via_array, wrap, xp_of)


# ----------------------------------------------------------------------------------- resize

def output_size(h, w, size, max_size=None):
    """The (H, W) after ``resize(size)``: an int (or 1-list) sets the shorter side."""
    if isinstance(size, numbers.Number):
        size = [int(size)]
    size = list(size)
    if len(size) == 2:
        if max_size is not None:
            raise ValueError("max_size is only allowed when size is a single int, got "
                             f"size={size}")
        return int(size[0]), int(size[1])
    if len(size) != 1:
        raise ValueError(f"size must be an int or a sequence of 1 or 2 ints, got {size}")
    short, long_ = (w, h) if w <= h else (h, w)
    new_short = int(size[0])
    new_long = int(new_short * long_ / short)
    if max_size is not None:
        if max_size <= new_short:
            raise ValueError(f"max_size={max_size} must be greater than the requested size "
                             f"{new_short}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` ((h, w), or an int for the shorter side).

    Tensors (..., C, H, W) of uint8 or float; bilinear/bicubic downsampling is antialiased like
    Pillow (``antialias=True``), so the result matches ``PIL.Image.resize`` to within rounding.

        >>> resize(ember.zeros(3, 40, 60), 20).shape
        (3, 20, 30)
    """
    check_image(img)
    mode = as_mode(interpolation)
    h, w = get_size(img)
    oh, ow = output_size(h, w, size, max_size)
    if is_pil(img):
        if (oh, ow) == (h, w):
            return img.copy()
        return img.resize((ow, oh), _pil_filter(mode))
    if (oh, ow) == (h, w):
        return img.clone()
    if img.requires_grad and img.is_floating_point() and mode in (
            InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        # keep the graph: a float tensor that needs grad resizes through ember ops
        lead = tuple(img.shape[:-3])
        x = img.reshape((-1,) + tuple(img.shape[-3:])) if img.ndim >= 3 else img[None, None]
        out = F.interpolate(x, size=(oh, ow), mode=mode.value, align_corners=False,
                            antialias=bool(antialias))
        return out.reshape(lead + tuple(out.shape[1:])) if img.ndim >= 3 else out[0, 0]

    def run(a):
        lead = a.shape[:-3]
        x = as_float(a).reshape((-1,) + a.shape[-3:])
        t = wrap(x)
        if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
            out = F.interpolate(t, size=(oh, ow), mode=mode.value).array
        elif mode in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
            out = F.interpolate(t, size=(oh, ow), mode=mode.value, align_corners=False,
                                antialias=bool(antialias)).array
        elif mode == InterpolationMode.LANCZOS:
            out = F.interpolate(t, size=(oh, ow), mode="lanczos", antialias=True).array
        else:
            raise ValueError(f"interpolation {mode.value} is supported for PIL images only")
        return back_to(out.reshape(lead + out.shape[1:]), a.dtype)
    return via_array(img, run)


# ------------------------------------------------------------------------------ crop / flip

def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` window at (top, left); parts outside the image are zero-filled."""
    check_image(img)
    top, left, height, width = int(top), int(left), int(height), int(width)
    if height <= 0 or width <= 0:
        raise ValueError(f"crop size must be positive, got height={height}, width={width}")
    if is_pil(img):
        return img.crop((left, top, left + width, top + height))

    def run(a):
        H, W = a.shape[-2:]
        xp = xp_of(a)
        out = xp.zeros(a.shape[:-2] + (height, width), dtype=a.dtype)
        y0, y1 = max(top, 0), min(top + height, H)
        x0, x1 = max(left, 0), min(left + width, W)
        if y1 > y0 and x1 > x0:
            out[..., y0 - top:y1 - top, x0 - left:x1 - left] = a[..., y0:y1, x0:x1]
        return out
    return via_array(img, run)


def _pair(size, name="size"):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(f"{name} should be an int or a sequence of 1 or 2 ints, got {size}")
    return int(size[0]), int(size[1])


def center_crop_params(h, w, output_size):
    ch, cw = _pair(output_size, "output_size")
    return int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0)), ch, cw


def center_crop(img, output_size):
    """The central ``output_size`` (int or (h, w)) window, zero-padded if the image is smaller."""
    h, w = get_size(img)
    return crop(img, *center_crop_params(h, w, output_size))


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    """``crop`` then ``resize`` to ``size``."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    """Mirror left-right."""
    check_image(img)
    if is_pil(img):
        return img.transpose(_PIL.Transpose.FLIP_LEFT_RIGHT)
    return via_array(img, lambda a: a[..., ::-1].copy())


def vflip(img):
    """Mirror top-bottom."""
    check_image(img)
    if is_pil(img):
        return img.transpose(_PIL.Transpose.FLIP_TOP_BOTTOM)
    return via_array(img, lambda a: a[..., ::-1, :].copy())


# ---------------------------------------------------------------------------------------- pad

def parse_padding(padding):
    """-> (left, top, right, bottom) from an int, (lr, tb) or (l, t, r, b)."""
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return p, p, p, p
    p = [int(v) for v in padding]
    if len(p) == 1:
        return p[0], p[0], p[0], p[0]
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    if len(p) == 4:
        return tuple(p)
    raise ValueError(f"padding must be an int or a sequence of 1, 2 or 4 ints, got {padding}")


_NP_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the borders: ``padding`` int, (left/right, top/bottom) or (left, top, right, bottom);
    modes constant (``fill``), edge, reflect, symmetric. Negative amounts crop.

        >>> pad(ember.zeros(1, 2, 2), [1, 2]).shape
        (1, 6, 4)
    """
    check_image(img)
    if padding_mode not in _NP_MODES:
        raise ValueError(f"padding_mode must be constant, edge, reflect or symmetric, got "
                         f"{padding_mode!r}")
    l, t, r, b = parse_padding(padding)

    def run(a):
        xp = xp_of(a)
        H, W = a.shape[-2:]
        a = a[..., max(-t, 0):H - max(-b, 0), max(-l, 0):W - max(-r, 0)]
        widths = [(0, 0)] * (a.ndim - 2) + [(max(t, 0), max(b, 0)), (max(l, 0), max(r, 0))]
        if padding_mode != "constant":
            return xp.pad(a, widths, mode=_NP_MODES[padding_mode])
        if isinstance(fill, (list, tuple)):
            out = xp.pad(a, widths, mode="constant")
            fv = xp.asarray(np.asarray(fill, dtype=np.float64).reshape(-1, 1, 1)).astype(a.dtype)
            mask = xp.ones(a.shape[-2:], dtype=bool)
            mask = xp.pad(mask, widths[-2:], mode="constant")
            return xp.where(mask, out, fv)
        return xp.pad(a, widths, mode="constant", constant_values=fill)
    return via_array(img, run)


# ------------------------------------------------------------------------------ affine warps

def affine_matrix(center, angle, translate, scale, shear) -> np.ndarray:
    """The 3x3 forward map (pixel coords, y down) of a rotation by ``angle`` degrees
    counter-clockwise about ``center``, then ``scale``, ``shear`` (x, y degrees) and ``translate``."""
    cx, cy = center
    a = math.radians(angle)
    sx, sy = (math.radians(s) for s in shear)
    rot = np.array([[math.cos(a), math.sin(a), 0], [-math.sin(a), math.cos(a), 0], [0, 0, 1]])
    sh = np.array([[1, -math.tan(sx), 0], [-math.tan(sy), 1, 0], [0, 0, 1]])
    sc = np.diag([scale, scale, 1.0])
    to_c = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]], dtype=np.float64)
    back = np.array([[1, 0, cx + translate[0]], [0, 1, cy + translate[1]], [0, 0, 1]],
                    dtype=np.float64)
    return back @ rot @ sh @ sc @ to_c


def _fill_values(fill, c):
    if fill is None:
        return [0.0] * c
    if isinstance(fill, numbers.Number):
        return [float(fill)] * c
    fill = [float(v) for v in fill]
    if len(fill) == 1:
        return fill * c
    if len(fill) != c:
        raise ValueError(f"fill should have 1 or {c} values for a {c}-channel image, got {fill}")
    return fill


def warp(img, matrix, out_hw=None, interpolation=InterpolationMode.NEAREST, fill=None):
    """Warp by the 3x3 forward map ``matrix`` (projective): output pixel p samples the input at
    ``inv(matrix) @ p`` (pixel centres at +0.5, as Pillow does). Nearest or bilinear."""
    check_image(img)
    mode = as_mode(interpolation)
    h, w = get_size(img)
    oh, ow = out_hw or (h, w)
    inv = np.linalg.inv(np.asarray(matrix, dtype=np.float64))
    inv = inv / inv[2, 2]
    if is_pil(img):
        if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR,
                        InterpolationMode.BICUBIC):
            raise ValueError(f"interpolation {mode.value} is not supported for warps")
        c = len(img.getbands())
        fv = _fill_values(fill, c)
        fillcolor = tuple(int(v) for v in fv) if c > 1 else int(fv[0])
        proj = not np.allclose(inv[2, :2], 0)
        kind = _PIL.Transform.PERSPECTIVE if proj else _PIL.Transform.AFFINE
        coeffs = inv.reshape(-1)[:8] if proj else inv[:2].reshape(-1)
        return img.transform((ow, oh), kind, tuple(float(v) for v in coeffs),
                             _pil_filter(mode), fillcolor=fillcolor)

    def run(a):
        xp = xp_of(a)
        c = a.shape[-3]
        ys, xs = np.meshgrid(np.arange(oh, dtype=np.float64) + 0.5,
                             np.arange(ow, dtype=np.float64) + 0.5, indexing="ij")
        den = inv[2, 0] * xs + inv[2, 1] * ys + inv[2, 2]
        sx = (inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]) / den
        sy = (inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]) / den
        fv = xp.asarray(np.asarray(_fill_values(fill, c), dtype=np.float32).reshape(-1, 1, 1))
        x = as_float(a)
        if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
            ix, iy = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
            ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
            ix, iy = np.clip(ix, 0, w - 1), np.clip(iy, 0, h - 1)
            out = x[..., xp.asarray(iy), xp.asarray(ix)]
            out = xp.where(xp.asarray(ok), out, fv.astype(out.dtype))
        elif mode == InterpolationMode.BILINEAR:
            fx, fy = sx - 0.5, sy - 0.5
            x0, y0 = np.floor(fx).astype(np.int64), np.floor(fy).astype(np.int64)
            wx, wy = (fx - x0).astype(np.float32), (fy - y0).astype(np.float32)
            # pad one pixel of fill so taps outside blend towards the fill colour, as Pillow does
            pad_ = xp.broadcast_to(fv.astype(x.dtype), x.shape[:-2] + (1, 1))
            big = xp.concatenate([xp.broadcast_to(pad_, x.shape[:-2] + (1, w)), x,
                                  xp.broadcast_to(pad_, x.shape[:-2] + (1, w))], axis=-2)
            col = xp.broadcast_to(pad_, big.shape[:-1] + (1,))
            big = xp.concatenate([col, big, col], axis=-1)
            out = 0
            for dy, wy_ in ((0, 1 - wy), (1, wy)):
                for dx, wx_ in ((0, 1 - wx), (1, wx)):
                    iy = np.clip(y0 + dy + 1, 0, h + 1)
                    ix = np.clip(x0 + dx + 1, 0, w + 1)
                    out = out + big[..., xp.asarray(iy), xp.asarray(ix)] * xp.asarray(wy_ * wx_)
            inside = (fx > -1) & (fx < w) & (fy > -1) & (fy < h)
            out = xp.where(xp.asarray(inside), out, fv.astype(out.dtype))
        else:
            raise ValueError(f"tensor warps support nearest and bilinear, got {mode.value}")
        return back_to(out, a.dtype)
    return via_array(img, run)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotate (degrees, counter-clockwise), translate (px), scale and shear (degrees) about
    ``center`` (default: the image centre); the output keeps the input size."""
    h, w = get_size(img)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear) + [0.0] * (2 - len(list(shear)))
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    c = (w * 0.5, h * 0.5) if center is None else center
    m = affine_matrix(c, angle, translate, scale, shear)
    return warp(img, m, None, interpolation, fill)


def rotation_matrix_and_size(h, w, angle, expand=False, center=None):
    c = (w * 0.5, h * 0.5) if center is None else center
    m = affine_matrix(c, angle, (0, 0), 1.0, (0, 0))
    if not expand:
        return m, (h, w)
    pts = np.array([[0, 0, 1], [w, 0, 1], [0, h, 1], [w, h, 1]], dtype=np.float64).T
    q = m @ pts
    nw = int(math.ceil(q[0].max() - q[0].min() - 1e-4))
    nh = int(math.ceil(q[1].max() - q[1].min() - 1e-4))
    shift = np.array([[1, 0, (nw - w) * 0.5], [0, 1, (nh - h) * 0.5], [0, 0, 1]])
    return shift @ m, (nh, nw)


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate by ``angle`` degrees counter-clockwise; ``expand`` grows the canvas to fit.

        >>> rotate(ember.zeros(1, 4, 6), 90, expand=True).shape
        (1, 6, 4)
    """
    h, w = get_size(img)
    m, size = rotation_matrix_and_size(h, w, angle, expand, center)
    return warp(img, m, size, interpolation, fill)


def perspective_matrix(startpoints, endpoints) -> np.ndarray:
    """The 3x3 homography mapping the 4 ``startpoints`` [x, y] onto ``endpoints``."""
    a, b = [], []
    for (x, y), (u, v) in zip(startpoints, endpoints):
        a.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        a.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        b += [u, v]
    sol = np.linalg.solve(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return np.append(sol, 1.0).reshape(3, 3)


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp so that the 4 corners ``startpoints`` land on ``endpoints`` ([x, y] each)."""
    return warp(img, perspective_matrix(startpoints, endpoints), None, interpolation, fill)

