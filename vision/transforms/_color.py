"""Colour kernels: brightness, contrast, saturation, hue, grayscale, posterize, solarize,
autocontrast, equalize, sharpness, invert, gaussian blur, erase, normalize, dtype conversion.

Images are PIL or (..., C, H, W) tensors of uint8 (0..255) or float (0..1); RGB ops need C == 3.
"""
from __future__ import annotations

import numbers

import numpy as np

import ember
from ember._tensor import Tensor

from ._image import (as_float, back_to, is_pil, max_value, via_array, wrap, xp_of)


def _blend(a, b, ratio, dtype):
    hi = max_value(dtype)
    xp = xp_of(a)
    out = xp.clip(ratio * a + (1.0 - ratio) * b, 0, hi).astype(np.float32)
    return back_to(out, dtype)


def _gray(x):
    """(..., 3, H, W) float -> (..., 1, H, W) luma (ITU-R 601-2, as Pillow's "L")."""
    r, g, b = x[..., 0:1, :, :], x[..., 1:2, :, :], x[..., 2:3, :, :]
    return 0.2989 * r + 0.587 * g + 0.114 * b


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """RGB -> gray with 1 or 3 channels; a 1-channel input passes through (copied)."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be 1 or 3, got {num_output_channels}")
    if is_pil(img):
        g = img.convert("L")
        return g if num_output_channels == 1 else g.convert("RGB")

    def run(a):
        xp = xp_of(a)
        if a.shape[-3] == 1:
            g = a
        elif a.shape[-3] == 3:
            g = back_to(_gray(as_float(a)), a.dtype)
        else:
            raise ValueError(f"img should have 1 or 3 channels, got {a.shape[-3]}")
        return xp.concatenate([g] * num_output_channels, axis=-3) if num_output_channels == 3 \
            else g.copy()
    return via_array(img, run)


def _check_factor(v, name):
    if v < 0:
        raise ValueError(f"{name} should be non-negative, got {v}")


def adjust_brightness(img, brightness_factor: float):
    """Multiply intensities by ``brightness_factor`` (0 gives black, 1 the original)."""
    _check_factor(brightness_factor, "brightness_factor")
    return via_array(img, lambda a: _blend(as_float(a), 0.0, brightness_factor, a.dtype))


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean gray level (0 gives a uniform gray image)."""
    _check_factor(contrast_factor, "contrast_factor")

    def run(a):
        x = as_float(a)
        g = _gray(x) if a.shape[-3] == 3 else x
        if a.dtype.kind != "f":
            g = xp_of(a).floor(g)
        mean = g.mean(axis=(-3, -2, -1), keepdims=True)
        return _blend(x, mean, contrast_factor, a.dtype)
    return via_array(img, run)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the grayscale image (0 gives gray, 1 the original)."""
    _check_factor(saturation_factor, "saturation_factor")

    def run(a):
        if a.shape[-3] == 1:
            return a.copy()
        x = as_float(a)
        g = _gray(x)
        if a.dtype.kind != "f":
            g = xp_of(a).floor(g)
        return _blend(x, g, saturation_factor, a.dtype)
    return via_array(img, run)


def _rgb_to_hsv(x):
    xp = xp_of(x)
    r, g, b = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    maxc, minc = x.max(axis=-3), x.min(axis=-3)
    delta = maxc - minc
    s = delta / xp.where(maxc == 0, 1, maxc)
    dz = xp.where(delta == 0, 1, delta)
    rc, gc, bc = (maxc - r) / dz, (maxc - g) / dz, (maxc - b) / dz
    h = xp.where(maxc == r, bc - gc, xp.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = xp.where(delta == 0, 0, (h / 6.0) % 1.0)
    return xp.stack([h, s, maxc], axis=-3).astype(x.dtype)


def _hsv_to_rgb(x):
    xp = xp_of(x)
    h, s, v = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    i = xp.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(np.int32) % 6
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    chans = []
    for c in range(3):
        out = xp.zeros_like(v)
        for k in range(6):
            out = xp.where(i == k, table[k][c], out)
        chans.append(out)
    return xp.stack(chans, axis=-3).astype(x.dtype)


def adjust_hue(img, hue_factor: float):
    """Rotate the hue by ``hue_factor`` turns, in [-0.5, 0.5]."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5]")

    def run(a):
        if a.shape[-3] == 1:
            return a.copy()
        hi = max_value(a.dtype)
        hsv = _rgb_to_hsv(as_float(a) / hi)
        hsv[..., 0, :, :] = (hsv[..., 0, :, :] + hue_factor) % 1.0
        return back_to(_hsv_to_rgb(hsv) * hi, a.dtype)
    return via_array(img, run)


def adjust_gamma(img, gamma: float, gain: float = 1.0):
    """``gain * x ** gamma`` on intensities scaled to [0, 1]."""
    _check_factor(gamma, "gamma")

    def run(a):
        hi = max_value(a.dtype)
        x = xp_of(a).clip(gain * (as_float(a) / hi) ** gamma, 0, 1)
        return back_to(x * hi, a.dtype)
    return via_array(img, run)


def invert(img):
    """``max - x``."""
    return via_array(img, lambda a: (max_value(a.dtype) - a).astype(a.dtype))


def posterize(img, bits: int):
    """Keep the top ``bits`` bits of each uint8 value."""
    if not 0 <= bits <= 8:
        raise ValueError(f"bits should be in [0, 8], got {bits}")

    def run(a):
        if a.dtype != np.uint8:
            raise TypeError(f"posterize needs a uint8 image, got {a.dtype}")
        return a & np.uint8((0xFF << (8 - bits)) & 0xFF)
    return via_array(img, run)


def solarize(img, threshold: float):
    """Invert the pixels at or above ``threshold``."""
    def run(a):
        if threshold > max_value(a.dtype):
            raise ValueError(f"threshold {threshold} exceeds the image maximum")
        return xp_of(a).where(a >= threshold, max_value(a.dtype) - a, a).astype(a.dtype)
    return via_array(img, run)


def autocontrast(img):
    """Stretch each channel to the full range."""
    def run(a):
        xp = xp_of(a)
        hi = max_value(a.dtype)
        x = as_float(a)
        lo_, hi_ = x.min(axis=(-2, -1), keepdims=True), x.max(axis=(-2, -1), keepdims=True)
        flat = hi_ == lo_
        scale = xp.where(flat, 1.0, hi / xp.where(flat, 1.0, hi_ - lo_))
        lo_ = xp.where(flat, 0.0, lo_)
        return back_to(xp.clip((x - lo_) * scale, 0, hi), a.dtype)
    return via_array(img, run)


def _equalize_channel(ch):
    hist = np.bincount(ch.reshape(-1), minlength=256)
    nz = hist[hist > 0]
    step = (nz.sum() - nz[-1]) // 255 if len(nz) else 0
    if step == 0:
        return ch
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.concatenate([[0], lut[:-1]]).clip(0, 255).astype(np.uint8)
    return lut[ch]


def equalize(img):
    """Histogram equalisation of each uint8 channel (Pillow's ImageOps.equalize)."""
    def run(a):
        if a.dtype != np.uint8:
            raise TypeError(f"equalize needs a uint8 image, got {a.dtype}")
        xp = xp_of(a)
        host = np.asarray(a.get() if hasattr(a, "get") else a)
        flat = host.reshape((-1,) + host.shape[-2:])
        out = np.stack([_equalize_channel(c) for c in flat]).reshape(host.shape)
        return xp.asarray(out)
    return via_array(img, run)


def _conv2d_same(x, kernel):
    """Depthwise 'valid' conv of (N, C, H, W) float with a (kh, kw) kernel via shifted sums."""
    kh, kw = kernel.shape
    H, W = x.shape[-2] - kh + 1, x.shape[-1] - kw + 1
    out = 0
    for i in range(kh):
        for j in range(kw):
            if kernel[i, j] != 0:
                out = out + float(kernel[i, j]) * x[..., i:i + H, j:j + W]
    return out


def adjust_sharpness(img, sharpness_factor: float):
    """Blend with a smoothed image (Pillow's SMOOTH kernel); borders are kept."""
    _check_factor(sharpness_factor, "sharpness_factor")

    def run(a):
        if a.shape[-1] <= 2 or a.shape[-2] <= 2:
            return a.copy()
        x = as_float(a)
        k = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13.0
        blur = _conv2d_same(x, k)
        if a.dtype.kind != "f":
            blur = xp_of(a).round(blur)
        deg = x.copy()
        deg[..., 1:-1, 1:-1] = blur
        return _blend(x, deg, sharpness_factor, a.dtype)
    return via_array(img, run)


def _gauss_1d(k, sigma):
    half = (k - 1) * 0.5
    x = np.linspace(-half, half, k)
    p = np.exp(-0.5 * (x / sigma) ** 2)
    return (p / p.sum()).astype(np.float32)


def gaussian_blur(img, kernel_size, sigma=None):
    """Separable Gaussian blur with reflect padding; ``kernel_size`` odd int or (kx, ky),
    ``sigma`` float or (sx, sy) (default ``0.3 * ((k - 1) * 0.5 - 1) + 0.8``)."""
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(ks) == 1:
        ks = ks * 2
    for k in ks:
        if k <= 0 or k % 2 == 0:
            raise ValueError(f"kernel_size should have odd positive values, got {kernel_size}")
    if sigma is None:
        sg = [k * 0.15 + 0.35 for k in ks]
    elif isinstance(sigma, numbers.Number):
        sg = [float(sigma)] * 2
    else:
        sg = [float(s) for s in sigma] * (2 if len(sigma) == 1 else 1)
    for s in sg:
        if s <= 0:
            raise ValueError(f"sigma should have positive values, got {sigma}")

    def run(a):
        xp = xp_of(a)
        x = as_float(a)
        kx, ky = _gauss_1d(ks[0], sg[0]), _gauss_1d(ks[1], sg[1])
        px, py = ks[0] // 2, ks[1] // 2
        widths = [(0, 0)] * (x.ndim - 2) + [(py, py), (px, px)]
        mode = "reflect" if min(x.shape[-2:]) > max(px, py) else "edge"
        x = xp.pad(x, widths, mode=mode)
        x = _conv2d_same(x, kx[None, :])
        x = _conv2d_same(x, ky[:, None])
        return back_to(x, a.dtype)
    return via_array(img, run)


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """Set the ``h x w`` window at (i, j) of a tensor to ``v`` (scalar or broadcastable tensor)."""
    if not isinstance(img, Tensor):
        raise TypeError(f"erase needs a Tensor image, got {type(img).__name__}")
    out = img if inplace else img.clone()
    val = v.array if isinstance(v, Tensor) else v
    if isinstance(val, np.ndarray):
        val = xp_of(out.array).asarray(val)
    out.array[..., i:i + h, j:j + w] = val
    return out


def normalize(tensor, mean, std, inplace: bool = False):
    """``(x - mean) / std`` per channel of a float (..., C, H, W) tensor (differentiable).

        >>> normalize(ember.ones(3, 2, 2), [0.5] * 3, [0.5] * 3)[0, 0, 0].item()
        1.0
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"normalize needs a Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"normalize needs a float tensor, got {tensor.dtype}")
    if tensor.ndim < 3:
        raise ValueError(f"expected a tensor of shape (..., C, H, W), got {tuple(tensor.shape)}")
    m = np.asarray(mean, dtype=np.float64).reshape(-1, 1, 1)
    s = np.asarray(std, dtype=np.float64).reshape(-1, 1, 1)
    if (s == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading "
                         "to division by zero")
    xp = xp_of(tensor.array)
    mt = wrap(xp.asarray(m.astype(tensor.array.dtype)))
    st = wrap(xp.asarray(s.astype(tensor.array.dtype)))
    if inplace:
        tensor.sub_(mt).div_(st)
        return tensor
    return (tensor - mt) / st


def convert_image_dtype(image, dtype=ember.float32):
    """Convert between uint8/int and float images, rescaling values (float in [0, 1])."""
    if not isinstance(image, Tensor):
        raise TypeError(f"convert_image_dtype needs a Tensor, got {type(image).__name__}")
    src = image.array.dtype
    dst = np.dtype(ember.dtypes.to_dtype(dtype))
    a = image.array
    if src == dst:
        return image
    if src.kind == "f" and dst.kind == "f":
        return wrap(a.astype(dst))
    if src.kind == "f":
        if src == np.float32 and dst in (np.int32, np.int64) or src == np.float64 and \
                dst == np.int64:
            raise RuntimeError(f"The cast from {src} to {dst} cannot be performed safely.")
        eps = 1e-3
        hi = max_value(dst)
        return wrap((a * (hi + 1.0 - eps)).astype(dst))
    if dst.kind == "f":
        return wrap(a.astype(dst) / dst.type(max_value(src)))
    si, di = max_value(src), max_value(dst)
    if si > di:
        factor = (si + 1) // (di + 1)
        return wrap((a // factor).astype(dst))
    factor = (di + 1) // (si + 1)
    return wrap(a.astype(dst) * dst.type(factor))

