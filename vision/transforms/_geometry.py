"""Geometric image kernels: resize, crop, flip, pad, affine/rotate, perspective, elastic.

Each takes a PIL image or a (..., C, H, W) tensor and returns the same kind. PIL inputs go
through Pillow's own ``resize``/``transform``/``rotate``, so tensor resizes (antialiased, as
Pillow does) match them. Tensor warps build torchvision's sampling grid and go through
``grid_sample`` (zero padding, a sampled mask for ``fill``), so they match torchvision's.
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
    """The (H, W) after ``resize(size)``: an int (or 1-list) sets the shorter side; ``None``
    with ``max_size`` sets the longer one."""
    short, long_ = (w, h) if w <= h else (h, w)
    if size is None:
        if not isinstance(max_size, int):
            raise ValueError(f"max_size must be an integer when size is None, but got {max_size} "
                             "instead.")
        new_short, new_long = int(max_size * short / long_), max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)
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
#
# Conventions (torchvision's): ``affine`` turns by ``angle`` degrees clockwise on screen (y down),
# ``rotate`` counter-clockwise (it is ``affine`` with ``-angle``). Pixel (i, j) covers
# [j, j + 1) x [i, i + 1); the default centre is (w / 2, h / 2).

def _rss(angle, shear):
    """[[a, b], [c, d]] = R(angle) SHy(shear_y) SHx(shear_x) (determinant 1)."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    tan_sx = math.tan(sx)
    a = math.cos(rot - sy) / math.cos(sy)
    b = -(a * tan_sx + math.sin(rot))
    c = math.sin(rot - sy) / math.cos(sy)
    d = math.cos(rot) - c * tan_sx
    return a, b, c, d


def affine_matrix(center, angle, translate, scale, shear) -> np.ndarray:
    """The 3x3 forward map ``p -> T C RSS C^-1 p`` of ``affine``: about ``center`` (x, y), turn by
    ``angle`` degrees (clockwise on screen), ``scale``, shear by ``shear`` = (x, y) degrees, then
    shift by ``translate`` (x, y). RSS is R(angle) S(scale) SHy(shear_y) SHx(shear_x)."""
    a, b, c, d = _rss(angle, shear)
    cx, cy = center
    ctx, cty = cx + translate[0], cy + translate[1]
    m = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
    m[2] += ctx - m[0] * cx - m[1] * cy
    m[5] += cty - m[3] * cx - m[4] * cy
    return np.array([m[:3], m[3:], [0.0, 0.0, 1.0]])


def inverse_affine(center, angle, translate, scale, shear) -> list:
    """The 6 coefficients (output -> input) of the inverse of ``affine_matrix``, as Pillow's
    ``Image.transform(AFFINE)`` takes them."""
    a, b, c, d = _rss(angle, shear)
    cx, cy = center
    ctx, cty = cx + translate[0], cy + translate[1]
    m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    m[2] += cx - m[0] * ctx - m[1] * cty
    m[5] += cy - m[3] * ctx - m[4] * cty
    return m


def affine_output_size(inv, w, h):
    """(W, H) of the canvas that holds a ``w x h`` image warped by the inverse coefficients
    ``inv`` about its centre: ceil(max) - floor(min) of the corners, in float32 with the
    coordinates truncated to 1e-4 first (so 1e-15 of rounding does not add a pixel)."""
    f = np.float32
    hw, hh = f(0.5 * w), f(0.5 * h)
    pts = np.array([[-hw, -hh, 1], [-hw, hh, 1], [hw, hh, 1], [hw, -hh, 1]], dtype=f)
    new = pts @ np.asarray(inv, dtype=f).reshape(2, 3).T
    lo, hi = new.min(0) + np.array([hw, hh], f), new.max(0) + np.array([hw, hh], f)
    tol = f(1e-4)
    inv_tol = f(1.0) / tol
    cmax = np.ceil(np.trunc(hi * inv_tol) * tol)
    cmin = np.floor(np.trunc(lo * inv_tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def _fill_values(fill, c):
    if fill is None:
        return None
    if isinstance(fill, numbers.Number):
        return [float(fill)]
    fill = [float(v) for v in fill]
    if len(fill) not in (1, c):
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {c})")
    return fill


def _pil_fill(fill, img):
    """Pillow's ``fillcolor`` from ``fill`` (None -> 0; ints unless the image is float)."""
    c = len(img.getbands())
    fill = 0 if fill is None else fill
    if isinstance(fill, (list, tuple)):
        fill = list(fill)
        if len(fill) == 1:
            fill = fill * c
        elif len(fill) != c:
            raise ValueError(f"The number of elements in 'fill' does not match the number of "
                             f"channels of the image ({len(fill)} != {c})")
        fill = tuple(fill) if c > 1 else fill[0]
    elif c > 1:
        fill = (fill,) * c
    if img.mode != "F":
        fill = tuple(int(v) for v in fill) if isinstance(fill, tuple) else int(fill)
    return fill


def _pil_resample(mode):
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR,
                    InterpolationMode.BICUBIC):
        raise ValueError(f"interpolation {mode.value} is not supported for warps")
    return _pil_filter(mode)


def apply_grid(img, grid, interpolation, fill):
    """Sample a tensor image (..., C, H, W) at ``grid`` (oh, ow, 2) of normalised [-1, 1]
    (x, y) coordinates (``grid_sample`` with zero padding, align_corners=False). With a
    ``fill`` the outside is marked by a sampled ones-channel: nearest takes ``fill`` where that
    mask is below 0.5, bilinear blends ``(out - fill) * mask + fill``. Integer images are
    rounded back."""
    mode = as_mode(interpolation)
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{mode.value}' is unsupported with Tensor input")
    name = "nearest" if mode == InterpolationMode.NEAREST else "bilinear"

    def run(a):
        xp = xp_of(a)
        c, h, w = a.shape[-3:]
        oh, ow = grid.shape[:2]
        x = a.reshape((-1, c, h, w))
        dt = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
        fv = _fill_values(fill, c)
        xf = x.astype(dt, copy=False)
        n = xf.shape[0]
        if fv is not None:
            xf = xp.concatenate([xf, xp.ones((n, 1, h, w), dt)], axis=1)
        if n == 0:
            return xp.zeros(a.shape[:-2] + (oh, ow), a.dtype)
        g = xp.broadcast_to(xp.asarray(grid.astype(dt, copy=False)), (n, oh, ow, 2))
        out = F.grid_sample(wrap(xp.ascontiguousarray(xf)), wrap(xp.ascontiguousarray(g)),
                            mode=name, padding_mode="zeros", align_corners=False).array
        if fv is not None:
            out, m = out[:, :-1], out[:, -1:]
            fa = xp.asarray(np.asarray(fv, dtype=dt).reshape(1, -1, 1, 1))
            if name == "nearest":
                out = xp.where(m < 0.5, fa, out)
            else:
                out = (out - fa) * m + fa
        if a.dtype.kind != "f":
            out = xp.round(out)
        return out.astype(a.dtype, copy=False).reshape(a.shape[:-2] + (oh, ow))
    return via_array(img, run)


def _affine_grid(inv, w, h, ow, oh, dtype=np.float32):
    """torchvision's affine grid: output pixel centres about the output centre, mapped by the
    inverse coefficients ``inv`` and normalised by the input half-size."""
    dt = np.dtype(dtype)
    xs = np.linspace((1.0 - ow) * 0.5, (ow - 1.0) * 0.5, ow).astype(dt)
    ys = np.linspace((1.0 - oh) * 0.5, (oh - 1.0) * 0.5, oh).astype(dt)
    base = np.empty((oh, ow, 3), dt)
    base[..., 0] = xs[None, :]
    base[..., 1] = ys[:, None]
    base[..., 2] = 1
    theta = np.asarray(inv, dtype=dt).reshape(2, 3).T / np.array([0.5 * w, 0.5 * h], dt)
    return base.reshape(-1, 3) @ theta.astype(dt)


def _work_dtype(img):
    if is_pil(img):
        return np.float32
    dt = img.array.dtype
    return dt if dt.kind == "f" else np.float32


def _centre_offset(center, w, h):
    """A user centre in pixels -> relative to the image centre (tensor kernels work there)."""
    return [0.0, 0.0] if center is None else [float(c) - s * 0.5 for c, s in zip(center, (w, h))]


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Turn by ``angle`` degrees (clockwise, as torchvision's ``affine``), shift by
    ``translate`` (px), ``scale`` and shear by ``shear`` (degrees, x and y) about ``center``
    (default: the image centre); the output keeps the input size."""
    check_image(img)
    mode = as_mode(interpolation)
    h, w = get_size(img)
    shear = parse_shear(shear)
    translate = [float(t) for t in translate]
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if is_pil(img):
        c = [w * 0.5, h * 0.5] if center is None else list(center)
        inv = inverse_affine(c, angle, translate, scale, shear)
        return img.transform((w, h), _PIL.Transform.AFFINE, inv, _pil_resample(mode),
                             fillcolor=_pil_fill(fill, img))
    inv = inverse_affine(_centre_offset(center, w, h), angle, translate, scale, shear)
    dt = _work_dtype(img)
    grid = _affine_grid(inv, w, h, w, h, dt).reshape(h, w, 2)
    return apply_grid(img, grid, mode, fill)


def parse_shear(shear):
    if isinstance(shear, numbers.Number):
        return [float(shear), 0.0]
    shear = [float(s) for s in shear]
    if len(shear) == 1:
        return [shear[0], 0.0]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values, got {shear}")
    return shear


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate by ``angle`` degrees counter-clockwise; ``expand`` grows the canvas to hold the
    whole result (Pillow's rule: ceil(max) - floor(min) of the turned corners).

        >>> rotate(ember.zeros(1, 4, 6), 90, expand=True).shape
        (1, 6, 4)
    """
    check_image(img)
    mode = as_mode(interpolation)
    if is_pil(img):
        return img.rotate(angle, _pil_resample(mode), expand, center,
                          fillcolor=_pil_fill(fill, img))
    h, w = get_size(img)
    a = angle % 360
    if center is None:      # exact quarter turns are index shuffles
        if a == 0:
            return via_array(img, lambda x: x.copy())
        if a == 180:
            return via_array(img, lambda x: x[..., ::-1, ::-1].copy())
        if expand or h == w:
            if a == 90:
                return via_array(img, lambda x: xp_of(x).ascontiguousarray(
                    xp_of(x).rot90(x, 1, axes=(-2, -1))))
            if a == 270:
                return via_array(img, lambda x: xp_of(x).ascontiguousarray(
                    xp_of(x).rot90(x, 3, axes=(-2, -1))))
    inv = inverse_affine(_centre_offset(center, w, h), -a, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = affine_output_size(inv, w, h) if expand else (w, h)
    grid = _affine_grid(inv, w, h, ow, oh, _work_dtype(img)).reshape(oh, ow, 2)
    return apply_grid(img, grid, mode, fill)


def perspective_coefficients(startpoints, endpoints) -> list:
    """The 8 coefficients (output -> input, Pillow's PERSPECTIVE) that move the 4 corners
    ``startpoints`` [x, y] onto ``endpoints``: a least-squares solve in float64."""
    a = np.zeros((8, 8), np.float64)
    b = np.zeros(8, np.float64)
    for i, ((sx, sy), (ex, ey)) in enumerate(zip(startpoints, endpoints)):
        a[2 * i] = [ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey]
        a[2 * i + 1] = [0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey]
        b[2 * i], b[2 * i + 1] = sx, sy
    sol = np.linalg.lstsq(a, b, rcond=None)[0]
    return [float(v) for v in sol.astype(np.float32)]


def _perspective_coeffs(startpoints, endpoints, coefficients):
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be "
                             "defined concurrently.")
        if len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        return [float(c) for c in coefficients]
    if startpoints is None or endpoints is None:
        raise ValueError("Either the startpoints/endpoints or the coefficients must have non "
                         "`None` values.")
    return perspective_coefficients(startpoints, endpoints)


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                coefficients=None):
    """Warp so that the 4 corners ``startpoints`` land on ``endpoints`` ([x, y] each), or by
    the 8 output -> input ``coefficients``."""
    check_image(img)
    mode = as_mode(interpolation)
    co = _perspective_coeffs(startpoints, endpoints, coefficients)
    h, w = get_size(img)
    if is_pil(img):
        return img.transform((w, h), _PIL.Transform.PERSPECTIVE, co, _pil_resample(mode),
                             fillcolor=_pil_fill(fill, img))
    dt = np.dtype(_work_dtype(img))
    xs = np.linspace(0.5, w - 0.5, w).astype(dt)
    ys = np.linspace(0.5, h - 0.5, h).astype(dt)
    base = np.empty((h, w, 3), dt)
    base[..., 0], base[..., 1], base[..., 2] = xs[None, :], ys[:, None], 1
    base = base.reshape(-1, 3)
    t1 = (np.array([co[0:3], co[3:6]], dt).T / np.array([0.5 * w, 0.5 * h], dt)).astype(dt)
    t2 = np.array([[co[6], co[7], 1.0], [co[6], co[7], 1.0]], dt).T
    grid = (base @ t1) / (base @ t2) - dt.type(1.0)
    return apply_grid(img, grid.reshape(h, w, 2), mode, fill)


def identity_grid(h, w, dtype=np.float32):
    """(1, h, w, 2) normalised coordinates of the pixel centres (align_corners=False)."""
    dt = np.dtype(dtype)
    g = np.empty((1, h, w, 2), dt)
    g[..., 0] = np.linspace((-w + 1) / w, (w - 1) / w, w).astype(dt)[None, :]
    g[..., 1] = np.linspace((-h + 1) / h, (h - 1) / h, h).astype(dt)[:, None]
    return g


def elastic(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Sample each output pixel at its own position plus ``displacement`` (1, H, W, 2) in
    normalised [-1, 1] units (x, y)."""
    check_image(img)
    h, w = get_size(img)
    d = displacement.array if hasattr(displacement, "array") else np.asarray(displacement)
    d = np.asarray(d.get() if hasattr(d, "get") else d)
    if tuple(d.shape) != (1, h, w, 2):
        raise ValueError(f"Argument displacement shape should be {(1, h, w, 2)}, but given "
                         f"{tuple(d.shape)}")
    if is_pil(img):
        mode_ = img.mode
        from ._image import array_to_pil, pil_to_array
        out = elastic(wrap(pil_to_array(img)), displacement, interpolation, fill)
        return array_to_pil(np.asarray(out.array), mode_)
    dt = np.dtype(_work_dtype(img))
    grid = identity_grid(h, w, dt) + d.astype(dt)
    return apply_grid(img, grid[0], interpolation, fill)
