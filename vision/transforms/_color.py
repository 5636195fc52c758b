"""Colour kernels: brightness, contrast, saturation, hue, gamma, grayscale, posterize, solarize,
autocontrast, equalize, sharpness, invert, channel permutation, gaussian blur, erase, normalize,
dtype conversion.

Tensors are (..., C, H, W) of uint8 (0..255) or float (0..1); RGB ops need C == 3 (C == 1 passes
through where Pillow does). Integer results are truncated as torchvision's ``.to(uint8)`` does,
except blur/sharpness taps, which round. PIL images go to Pillow's own ``ImageEnhance`` /
``ImageOps`` / ``convert("L")``, as torchvision hands them.
"""
from __future__ import annotations

import numbers

import numpy as np

import ember
from ember._tensor import Tensor

from ._image import (_PIL, as_float, back_to, is_pil, max_value, via_array, wrap, xp_of)

_F32 = np.float32


def _trunc_to(x, dtype):
    """A float working array back to ``dtype``: floats cast, integers truncated (the values
    are already inside the dtype's range)."""
    return x.astype(dtype, copy=False)


def _check_channels(a, name):
    c = a.shape[-3]
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")
    return c


def _gray(x):
    """(..., 3, H, W) -> (..., 1, H, W) luma 0.2989 R + 0.587 G + 0.114 B in float32 (or the
    input's float dtype)."""
    dt = x.dtype if x.dtype.kind == "f" else np.dtype(_F32)
    r, g, b = (x[..., k:k + 1, :, :].astype(dt, copy=False) for k in range(3))
    out = r * dt.type(0.2989)
    if dt != np.float32:
        return out + g * dt.type(0.587) + b * dt.type(0.114)
    # torch adds each weighted channel with a fused multiply-add (one rounding): emulated
    f64 = np.float64
    out = (out.astype(f64) + g.astype(f64) * f64(np.float32(0.587))).astype(dt)
    return (out.astype(f64) + b.astype(f64) * f64(np.float32(0.114))).astype(dt)


def _blend(a, b, ratio):
    """``ratio * a + (1 - ratio) * b`` clamped to the dtype's range, back in ``a``'s dtype."""
    xp = xp_of(a)
    dt = a.dtype if a.dtype.kind == "f" else np.dtype(_F32)
    r = dt.type(float(ratio))
    first = a.astype(dt, copy=False) * r
    if dt == np.float32:
        # torch adds ``alpha * b`` with one fused multiply-add: one rounding, emulated in float64
        out = (first.astype(np.float64) + b.astype(np.float64) * np.float64(
            np.float32(1.0 - float(ratio)))).astype(dt)
    else:
        out = first + b * dt.type(1.0 - float(ratio))
    return _trunc_to(xp.clip(out, 0, max_value(a.dtype)), a.dtype)


def _pil_enhance(img, kind, factor):
    from PIL import ImageEnhance
    return getattr(ImageEnhance, kind)(img).enhance(factor)


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """RGB -> gray with 1 or 3 channels (0.2989 R + 0.587 G + 0.114 B); a 1-channel input is
    copied (or repeated to 3). PIL images use Pillow's ``convert("L")``."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    if is_pil(img):
        g = img.convert("L")
        if num_output_channels == 1:
            return g
        a = np.asarray(g)
        return _PIL.fromarray(np.ascontiguousarray(np.dstack([a, a, a])), "RGB")

    def run(a):
        xp = xp_of(a)
        if a.shape[-3] == 1:
            g = a.copy()
        else:
            g = _trunc_to(_gray(a), a.dtype)
        if num_output_channels == 3:
            g = xp.concatenate([g] * 3, axis=-3)
        return g
    return via_array(img, run)


def grayscale_to_rgb(img):
    """A 1-channel image repeated to 3 channels (3+ channels pass through)."""
    if is_pil(img):
        return img.convert("RGB")
    if img.shape[-3] >= 3:
        return img
    return rgb_to_grayscale(img, 3)


def _check_factor(v, name):
    if v < 0:
        raise ValueError(f"{name} ({v}) is not non-negative.")


def adjust_brightness(img, brightness_factor: float):
    """Multiply intensities by ``brightness_factor`` (0 gives black, 1 the original)."""
    _check_factor(brightness_factor, "brightness_factor")
    if is_pil(img):
        return _pil_enhance(img, "Brightness", brightness_factor)

    def run(a):
        _check_channels(a, "img")
        dt = a.dtype if a.dtype.kind == "f" else np.dtype(_F32)
        out = a.astype(dt, copy=False) * dt.type(brightness_factor)
        return _trunc_to(xp_of(a).clip(out, 0, max_value(a.dtype)), a.dtype)
    return via_array(img, run)


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean gray level (0 gives a uniform gray image)."""
    _check_factor(contrast_factor, "contrast_factor")
    if is_pil(img):
        return _pil_enhance(img, "Contrast", contrast_factor)

    def run(a):
        xp = xp_of(a)
        c = _check_channels(a, "img")
        if c == 3:
            g = _gray(a)
            if a.dtype.kind != "f":
                g = xp.floor(g)
        else:
            g = a.astype(a.dtype if a.dtype.kind == "f" else _F32, copy=False)
        mean = g.mean(axis=(-3, -2, -1), keepdims=True, dtype=g.dtype)
        return _blend(a, mean, contrast_factor)
    return via_array(img, run)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the grayscale image (0 gives gray, 1 the original)."""
    _check_factor(saturation_factor, "saturation_factor")
    if is_pil(img):
        return _pil_enhance(img, "Color", saturation_factor)

    def run(a):
        if _check_channels(a, "img") == 1:
            return a.copy()
        g = _gray(a)
        if a.dtype.kind != "f":
            g = xp_of(a).floor(g)
        return _blend(a, g, saturation_factor)
    return via_array(img, run)


def _rgb_to_hsv(x):
    xp = xp_of(x)
    r, g = x[..., 0, :, :], x[..., 1, :, :]
    maxc, minc = x.max(axis=-3), x.min(axis=-3)
    eqc = maxc == minc
    crange = maxc - minc
    one = xp.ones_like(maxc)
    s = crange / xp.where(eqc, one, maxc)
    div = xp.where(eqc, one, crange)[..., None, :, :]
    rc, gc, bc = [v[..., 0, :, :] for v in xp.split((maxc[..., None, :, :] - x) / div, 3, -3)]
    neq_r = maxc != r
    eq_g = maxc == g
    hr = (bc - gc) * ~neq_r
    hg = (rc + 2.0 - bc) * (eq_g & neq_r)
    hb = (gc + 4.0 - rc) * (neq_r & ~eq_g)
    h = xp.fmod((hr + hg + hb) * x.dtype.type(1.0 / 6.0) + 1.0, 1.0)
    return xp.stack([h.astype(x.dtype), s, maxc], axis=-3)


def _hsv_to_rgb(x):
    xp = xp_of(x)
    h, s, v = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    h6 = h * x.dtype.type(6)
    i = xp.floor(h6)
    f = h6 - i
    i = i.astype(np.int32) % 6
    sxf = s * f
    q = xp.clip((1.0 - sxf) * v, 0.0, 1.0).astype(x.dtype)
    t = xp.clip((sxf + (1.0 - s)) * v, 0.0, 1.0).astype(x.dtype)
    p = xp.clip((1.0 - s) * v, 0.0, 1.0).astype(x.dtype)
    vpqt = xp.stack([v, p, q, t], axis=0)
    select = np.array([[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]])
    chans = []
    for c in range(3):
        idx = xp.asarray(select[c])[i]
        chans.append(xp.take_along_axis(vpqt, idx[None], axis=0)[0])
    return xp.stack(chans, axis=-3)


def _to_unit(a):
    """An image array -> float32 in [0, 1] (float images keep their dtype)."""
    if a.dtype.kind == "f":
        return a
    return a.astype(_F32) * _F32(1.0 / max_value(a.dtype))


def _from_unit(x, dtype):
    """Float [0, 1] -> ``dtype``: integers scale by (max + 1 - 1e-3) and truncate."""
    if np.dtype(dtype).kind == "f":
        return x.astype(dtype, copy=False)
    return (x * x.dtype.type(max_value(dtype) + 1.0 - 1e-3)).astype(dtype)


def adjust_hue(img, hue_factor: float):
    """Rotate the hue by ``hue_factor`` turns, in [-0.5, 0.5]."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if is_pil(img):
        if img.mode in ("L", "1", "I", "F"):
            return img
        h, s, v = img.convert("HSV").split()
        hh = np.array(h, dtype=np.uint8)
        hh += np.uint8(np.int32(hue_factor * 255) & 0xFF)     # wraps around, as intended
        return _PIL.merge("HSV", (_PIL.fromarray(hh, "L"), s, v)).convert(img.mode)

    def run(a):
        if _check_channels(a, "img") == 1 or a.size == 0:
            return a.copy()
        hsv = _rgb_to_hsv(_to_unit(a))
        xp = xp_of(a)
        h = xp.remainder(hsv[..., 0, :, :] + hsv.dtype.type(hue_factor), 1.0)
        hsv = xp.stack([h.astype(hsv.dtype), hsv[..., 1, :, :], hsv[..., 2, :, :]], axis=-3)
        return _from_unit(_hsv_to_rgb(hsv), a.dtype)
    return via_array(img, run)


def adjust_gamma(img, gamma: float, gain: float = 1.0):
    """``gain * x ** gamma`` on intensities scaled to [0, 1]."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    if is_pil(img):
        mode = img.mode
        lut = [int((255 + 1 - 1e-3) * gain * pow(v / 255.0, gamma)) for v in range(256)] * 3
        return img.convert("RGB").point(lut).convert(mode)

    def run(a):
        x = _to_unit(a)
        out = x ** x.dtype.type(gamma)
        if gain != 1.0:
            out = xp_of(a).clip(out * x.dtype.type(gain), 0.0, 1.0)
        return _from_unit(out.astype(x.dtype, copy=False), a.dtype)
    return via_array(img, run)


def invert(img):
    """``max - x`` (``1 - x`` for floats)."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.invert(img)

    def run(a):
        if a.dtype.kind == "f":
            return (a.dtype.type(1.0) - a).astype(a.dtype)
        return (max_value(a.dtype) - a).astype(a.dtype)
    return via_array(img, run)


def posterize(img, bits: int):
    """Keep the top ``bits`` bits of each value (floats: ``floor(x * 2**bits) / 2**bits``)."""
    if not isinstance(bits, (int, np.integer)) or not 0 <= bits <= 8:
        raise TypeError(f"bits must be a positive integer in the range [0, 8], got {bits} "
                        "instead.")
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.posterize(img, int(bits))

    def run(a):
        xp = xp_of(a)
        if a.dtype.kind == "f":
            levels = 1 << bits
            return (xp.clip(xp.floor(a * levels), 0, levels - 1) * (1.0 / levels)).astype(a.dtype)
        nbits = 8 if a.dtype == np.uint8 else int(np.iinfo(a.dtype).bits) - \
            (1 if np.dtype(a.dtype).kind == "i" else 0)
        if bits >= nbits:
            return a.copy()
        mask = ((1 << bits) - 1) << (nbits - bits)
        return a & a.dtype.type(mask)
    return via_array(img, run)


def solarize(img, threshold: float):
    """Invert the pixels at or above ``threshold``."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.solarize(img, threshold)

    def run(a):
        if threshold > max_value(a.dtype):
            raise TypeError(f"Threshold should be less or equal the maximum value of the dtype, "
                            f"but got {threshold}")
        inv = (a.dtype.type(1.0) - a) if a.dtype.kind == "f" else (max_value(a.dtype) - a)
        return xp_of(a).where(a >= threshold, inv, a).astype(a.dtype)
    return via_array(img, run)


def autocontrast(img):
    """Stretch each channel to the full range (flat channels are left alone)."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.autocontrast(img)

    def run(a):
        _check_channels(a, "img")
        if a.size == 0:
            return a.copy()
        xp = xp_of(a)
        bound = max_value(a.dtype)
        x = a if a.dtype.kind == "f" else a.astype(_F32)
        lo = x.min(axis=(-2, -1), keepdims=True)
        hi = x.max(axis=(-2, -1), keepdims=True)
        eq = hi == lo
        inv_scale = (hi - lo) * x.dtype.type(1.0 / bound)
        lo = xp.where(eq, x.dtype.type(0), lo)
        inv_scale = xp.where(eq, x.dtype.type(1), inv_scale)
        return _trunc_to(xp.clip((x - lo) / inv_scale, 0, bound), a.dtype)
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
    """Histogram equalisation of each channel, Pillow's ``ImageOps.equalize`` rule (float
    images go through uint8 and back)."""
    if is_pil(img):
        from PIL import ImageOps
        return ImageOps.equalize(img)

    def run(a):
        if a.size == 0:
            return a.copy()
        xp = xp_of(a)
        u = a if a.dtype == np.uint8 else _convert_dtype_array(a, np.dtype(np.uint8))
        host = np.asarray(u.get() if hasattr(u, "get") else u)
        flat = host.reshape((-1,) + host.shape[-2:])
        out = np.stack([_equalize_channel(c) for c in flat]).reshape(host.shape)
        out = xp.asarray(out)
        return out if a.dtype == np.uint8 else _convert_dtype_array(out, a.dtype)
    return via_array(img, run)


def permute_channels(img, permutation):
    """Reorder the channels: output channel i is input channel ``permutation[i]``."""
    perm = [int(p) for p in (permutation.tolist() if hasattr(permutation, "tolist")
                             else permutation)]

    def run(a):
        if len(perm) != a.shape[-3]:
            raise ValueError(f"Length of permutation does not match number of channels: "
                             f"{len(perm)} != {a.shape[-3]}")
        return xp_of(a).ascontiguousarray(a[..., perm, :, :])
    if is_pil(img):
        from ._image import array_to_pil, pil_to_array
        return array_to_pil(permute_channels(wrap(pil_to_array(img)), perm).array)
    return via_array(img, run)


def _conv2d_same(x, kernel):
    """Depthwise 'valid' conv of (N, C, H, W) float with a (kh, kw) kernel via shifted sums."""
    kh, kw = kernel.shape
    H, W = x.shape[-2] - kh + 1, x.shape[-1] - kw + 1
    out = 0
    for i in range(kh):
        for j in range(kw):
            if kernel[i, j] != 0:
                out = out + kernel.dtype.type(kernel[i, j]) * x[..., i:i + H, j:j + W]
    return out


def adjust_sharpness(img, sharpness_factor: float):
    """Blend with a smoothed image (Pillow's SMOOTH kernel, rounded for integers); the border
    pixels are kept."""
    _check_factor(sharpness_factor, "sharpness_factor")
    if is_pil(img):
        return _pil_enhance(img, "Sharpness", sharpness_factor)

    def run(a):
        _check_channels(a, "img")
        if a.size == 0 or a.shape[-1] <= 2 or a.shape[-2] <= 2:
            return a.copy()
        xp = xp_of(a)
        dt = a.dtype if a.dtype.kind == "f" else np.dtype(_F32)
        x = a.astype(dt, copy=True)
        k = np.full((3, 3), 1.0 / 13.0, dt)
        k[1, 1] = 5.0 / 13.0
        blur = _conv2d_same(x, k)
        if a.dtype.kind != "f":
            blur = xp.round(blur)
        view = x[..., 1:-1, 1:-1]
        view += (blur - view) * dt.type(1.0 - sharpness_factor)
        return _trunc_to(xp.clip(x, 0, max_value(a.dtype)), a.dtype)
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


def _num_value_bits(dt) -> int:
    dt = np.dtype(dt)
    if dt.kind == "u":
        return dt.itemsize * 8
    if dt.kind == "i":
        return dt.itemsize * 8 - 1
    raise TypeError(f"Number of value bits is only defined for integer dtypes, but got {dt}.")


def _convert_dtype_array(a, dst):
    """Rescale an image array to ``dst``: float in [0, 1], integers over their full range."""
    src, dst = a.dtype, np.dtype(dst)
    if src == dst:
        return a
    if src.kind == "f" and dst.kind == "f":
        return a.astype(dst)
    if src.kind == "f":
        if src == np.float32 and dst in (np.int32, np.int64) or src == np.float64 and \
                dst == np.int64:
            raise RuntimeError(f"The conversion from {src} to {dst} cannot be performed safely.")
        return (a * src.type(max_value(dst) + 1.0 - 1e-3)).astype(dst)
    if dst.kind == "f":
        return a.astype(dst) * dst.type(1.0 / max_value(src))
    sb, db = _num_value_bits(src), _num_value_bits(dst)
    if sb > db:
        return (a >> (sb - db)).astype(dst)
    return a.astype(dst) << (db - sb)


def convert_image_dtype(image, dtype=ember.float32):
    """Convert between integer and float images, rescaling values (float in [0, 1]).

        >>> convert_image_dtype(ember.tensor([[[255, 0]]], dtype=ember.uint8)).tolist()
        [[[1.0, 0.0]]]
    """
    if not isinstance(image, Tensor):
        raise TypeError(f"convert_image_dtype needs a Tensor, got {type(image).__name__}")
    dst = np.dtype(ember.dtypes.to_dtype(dtype))
    if image.array.dtype == dst:
        return image
    return wrap(_convert_dtype_array(image.array, dst))


def to_dtype_array(a, dtype, scale=False):
    dst = np.dtype(ember.dtypes.to_dtype(dtype))
    if a.dtype == dst:
        return a
    return _convert_dtype_array(a, dst) if scale else a.astype(dst)
