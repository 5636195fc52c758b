"""Transform classes: conversion, geometry (joint on images, boxes, masks, keypoints) and colour.

    >>> import ember
    >>> from ember.vision import transforms as T
    >>> t = T.Compose([T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ConvertImageDtype()])
    >>> t(ember.zeros(3, 16, 16, dtype=ember.uint8)).shape
    (3, 8, 8)
"""
from __future__ import annotations

import math
import numbers

import ember
from ember._tensor import Tensor

import numpy as np

from . import functional as F
from ._base import Transform, fill_for, first_image, is_image_like, query_size
from ._geometry import _pair, parse_padding
from ._image import InterpolationMode, as_mode, get_dimensions, is_pil, rng
from .parts import Image, Video


class Compose:
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, *inputs):
        x = inputs if len(inputs) > 1 else inputs[0]
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"Compose({body}\n)"


class Lambda(Transform):
    """Apply a user function to the image."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, *inputs):
        return self.lambd(inputs if len(inputs) > 1 else inputs[0])


class _ImageOnly(Transform):
    """A transform of images (and videos) only; boxes, masks and keypoints pass through."""

    def transform(self, inpt, params):
        if not is_image_like(inpt):
            return inpt
        out = self.image(inpt, params)
        if isinstance(inpt, (Image, Video)) and isinstance(out, Tensor) and type(out) is Tensor:
            out = type(inpt).wrap(out, like=inpt)
        return out

    def image(self, img, params):
        raise TypeError(f"{type(self).__name__} must define image()")


# ------------------------------------------------------------------------------ conversion

class ToTensor(_ImageOnly):
    """PIL image / HWC uint8 ndarray -> float32 tensor (C, H, W) in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)


class PILToTensor(_ImageOnly):
    """PIL image -> uint8 tensor (C, H, W)."""

    def image(self, img, params):
        return F.pil_to_tensor(img) if is_pil(img) else img


class ToPILImage(_ImageOnly):
    def __init__(self, mode=None):
        self.mode = mode

    def image(self, img, params):
        return img if is_pil(img) else F.to_pil_image(img, self.mode)


class ConvertImageDtype(_ImageOnly):
    """Convert a tensor image to ``dtype``, rescaling values."""

    def __init__(self, dtype=ember.float32):
        self.dtype = dtype

    def image(self, img, params):
        return F.convert_image_dtype(img, self.dtype) if isinstance(img, Tensor) else img


class Normalize(_ImageOnly):
    """``(x - mean) / std`` per channel of a float tensor."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def image(self, img, params):
        return F.normalize(img, self.mean, self.std, self.inplace)

    def extra_repr(self):
        return f"mean={self.mean}, std={self.std}"


# -------------------------------------------------------------------------------- geometry

class Resize(Transform):
    """Resize to ``size`` ((h, w) or the shorter side); antialiased like Pillow."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        self.size = size
        self.interpolation = as_mode(interpolation)
        self.max_size, self.antialias = max_size, antialias

    def transform(self, inpt, params):
        return F.resize(inpt, self.size, self.interpolation, self.max_size, self.antialias)

    def extra_repr(self):
        return f"size={self.size}, interpolation={self.interpolation.value}"


class CenterCrop(Transform):
    def __init__(self, size):
        self.size = _pair(size)

    def transform(self, inpt, params):
        return F.center_crop(inpt, self.size)


class Pad(Transform):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def transform(self, inpt, params):
        return F.pad(inpt, self.padding, fill_for(self.fill, inpt), self.padding_mode)


class RandomCrop(Transform):
    """A random ``size`` window, after optional ``padding`` (and ``pad_if_needed``)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random ``output_size`` window of ``img``."""
        _, h, w = get_dimensions(img)
        return _crop_window(rng(), h, w, _pair(output_size))

    def make_params(self, parts):
        h, w = query_size(parts)
        pad = list(parse_padding(self.padding)) if self.padding is not None else [0, 0, 0, 0]
        th, tw = self.size
        H, W = h + pad[1] + pad[3], w + pad[0] + pad[2]
        if self.pad_if_needed and W < tw:
            d = tw - W
            pad[0] += d
            pad[2] += d
            W += 2 * d
        if self.pad_if_needed and H < th:
            d = th - H
            pad[1] += d
            pad[3] += d
            H += 2 * d
        top, left, _, _ = _crop_window(self._rng(), H, W, self.size)
        return {"pad": pad, "top": top, "left": left}

    def transform(self, inpt, params):
        if any(params["pad"]):
            inpt = F.pad(inpt, params["pad"], fill_for(self.fill, inpt), self.padding_mode)
        return F.crop(inpt, params["top"], params["left"], *self.size)


def _crop_window(g, h, w, size):
    th, tw = size
    if h < th or w < tw:
        raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
    if (h, w) == (th, tw):
        return 0, 0, h, w
    return int(g.integers(0, h - th + 1)), int(g.integers(0, w - tw + 1)), th, tw


class RandomResizedCrop(Transform):
    """A random area ``scale`` / aspect ``ratio`` window resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = _pair(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = scale, ratio
        self.interpolation, self.antialias = as_mode(interpolation), antialias

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, height, width) of a random window of ``img`` with area fraction in
        ``scale`` and aspect ratio in ``ratio``."""
        _, h, w = get_dimensions(img)
        return _resized_crop_window(rng(), h, w, scale, ratio)

    def make_params(self, parts):
        h, w = query_size(parts)
        return {"box": _resized_crop_window(self._rng(), h, w, self.scale, self.ratio)}

    def transform(self, inpt, params):
        return F.resized_crop(inpt, *params["box"], self.size, self.interpolation,
                              self.antialias)


def _u32(g, lo, hi):
    """A uniform draw rounded to float32, as torch's ``empty(1).uniform_(lo, hi)`` gives."""
    return float(np.float32(g.uniform(float(lo), float(hi))))


def _resized_crop_window(g, h, w, scale, ratio):
    area = h * w
    lr = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * g.uniform(scale[0], scale[1])
        ar = math.exp(g.uniform(lr[0], lr[1]))
        cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
        if 0 < cw <= w and 0 < ch <= h:
            return int(g.integers(0, h - ch + 1)), int(g.integers(0, w - cw + 1)), ch, cw
    in_ratio = w / h
    if in_ratio < min(ratio):
        cw, ch = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = h, int(round(h * max(ratio)))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


class _RandomApply(Transform):
    def __init__(self, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p should be a probability in [0, 1], got {p}")
        self.p = p

    def make_params(self, parts):
        return {} if self._rng().random() < self.p else None


class RandomHorizontalFlip(_RandomApply):
    """Flip left-right with probability ``p`` (boxes, masks and keypoints follow)."""

    def transform(self, inpt, params):
        return F.hflip(inpt)


class RandomVerticalFlip(_RandomApply):
    def transform(self, inpt, params):
        return F.vflip(inpt)


def _range(value, name, center=None, bound=(0, float("inf")), clip_first=True):
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)] if center is not None \
            else [-float(value), float(value)]
        if clip_first:
            value[0] = max(value[0], 0.0)
    value = [float(v) for v in value]
    if len(value) != 2:
        raise ValueError(f"{name} should be a number or a pair, got {value}")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, got {value}")
    return value


class RandomRotation(Transform):
    """Rotate by an angle drawn from ``degrees`` (number d -> (-d, d)), counter-clockwise."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        self.degrees = _range(degrees, "degrees", center=0.0, bound=(-1e9, 1e9),
                              clip_first=False)
        self.interpolation, self.expand = as_mode(interpolation), expand
        self.center, self.fill = center, fill

    @staticmethod
    def get_params(degrees):
        """An angle drawn uniformly from ``degrees`` (min, max)."""
        return _u32(rng(), degrees[0], degrees[1])

    def make_params(self, parts):
        return {"angle": _u32(self._rng(), *self.degrees)}

    def transform(self, inpt, params):
        return F.rotate(inpt, params["angle"], self.interpolation, self.expand, self.center,
                        fill_for(self.fill, inpt))


def _affine_params(g, degrees, translate, scale_ranges, shears, img_size):
    w, h = img_size
    angle = _u32(g, degrees[0], degrees[1])
    tx = ty = 0
    if translate is not None:
        mx, my = float(translate[0] * w), float(translate[1] * h)
        tx, ty = int(round(g.uniform(-mx, mx))), int(round(g.uniform(-my, my)))
    scale = _u32(g, scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
    shx = shy = 0.0
    if shears is not None:
        shx = _u32(g, shears[0], shears[1])
        if len(shears) == 4:
            shy = _u32(g, shears[2], shears[3])
    return angle, (tx, ty), scale, (shx, shy)


class RandomAffine(Transform):
    """Random turn (clockwise for positive angles, as ``F.affine``), translation (fractions of
    the size), scale and shear (a number s -> x in (-s, s); 2 values: x range; 4: x and y)."""

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        self.degrees = _range(degrees, "degrees", center=0.0, bound=(-1e9, 1e9),
                              clip_first=False)
        if translate is not None and not all(0.0 <= t <= 1.0 for t in translate):
            raise ValueError("translation values should be between 0 and 1")
        if scale is not None and not all(s > 0 for s in scale):
            raise ValueError("scale values should be positive")
        self.translate, self.scale = translate, scale
        if shear is not None:
            if isinstance(shear, numbers.Number):
                shear = [-float(shear), float(shear)]
            shear = [float(s) for s in shear]
            if len(shear) not in (2, 4):
                raise ValueError(f"shear should be a number or a sequence of 2 or 4 values, "
                                 f"got {shear}")
        self.shear = shear
        self.interpolation, self.fill, self.center = as_mode(interpolation), fill, center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)) drawn from the ranges; ``img_size`` is
        [width, height]."""
        return _affine_params(rng(), degrees, translate, scale_ranges, shears, img_size)

    def make_params(self, parts):
        h, w = query_size(parts)
        angle, translate, scale, shear = _affine_params(self._rng(), self.degrees,
                                                        self.translate, self.scale, self.shear,
                                                        [w, h])
        return {"angle": angle, "translate": translate, "scale": scale, "shear": shear}

    def transform(self, inpt, params):
        return F.affine(inpt, params["angle"], params["translate"], params["scale"],
                        params["shear"], self.interpolation, fill_for(self.fill, inpt),
                        self.center)


def _perspective_points(g, width, height, distortion_scale):
    bw = int(distortion_scale * (width // 2)) + 1
    bh = int(distortion_scale * (height // 2)) + 1

    def r(lo, hi):
        return int(g.integers(lo, hi))
    tl = [r(0, bw), r(0, bh)]
    tr = [r(width - bw, width), r(0, bh)]
    br = [r(width - bw, width), r(height - bh, height)]
    bl = [r(0, bw), r(height - bh, height)]
    start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
    return start, [tl, tr, br, bl]


class RandomPerspective(Transform):
    """With probability ``p``, move each corner inwards by up to ``distortion_scale`` times half
    the size."""

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        if not 0 <= distortion_scale <= 1:
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p should be a probability in [0, 1], got {p}")
        self.distortion_scale, self.p = distortion_scale, p
        self.interpolation, self.fill = as_mode(interpolation), fill

    @staticmethod
    def get_params(width, height, distortion_scale):
        """(startpoints, endpoints): the image corners and where they move."""
        return _perspective_points(rng(), width, height, distortion_scale)

    def make_params(self, parts):
        g = self._rng()
        if g.random() >= self.p:
            return None
        h, w = query_size(parts)
        start, end = _perspective_points(g, w, h, self.distortion_scale)
        return {"start": start, "end": end}

    def transform(self, inpt, params):
        return F.perspective(inpt, params["start"], params["end"], self.interpolation,
                             fill_for(self.fill, inpt))


# ---------------------------------------------------------------------------------- colour

def _jitter_params(g, ranges):
    order = [int(i) for i in g.permutation(4)]
    return order, [None if r is None else _u32(g, r[0], r[1]) for r in ranges]


class ColorJitter(_ImageOnly):
    """Random brightness, contrast, saturation (factors around 1) and hue (around 0), in a
    random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _range(brightness, "brightness", 1.0) if brightness else None
        self.contrast = _range(contrast, "contrast", 1.0) if contrast else None
        self.saturation = _range(saturation, "saturation", 1.0) if saturation else None
        self.hue = _range(hue, "hue", 0.0, bound=(-0.5, 0.5), clip_first=False) if hue else None

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order of the 4 adjustments as a tensor, brightness, contrast, saturation, hue
        factors; None where the range is None)."""
        order, vals = _jitter_params(rng(), (brightness, contrast, saturation, hue))
        return (ember.tensor(order), *vals)

    def make_params(self, parts):
        order, vals = _jitter_params(self._rng(), (self.brightness, self.contrast,
                                                   self.saturation, self.hue))
        return {"order": order, "vals": vals}

    def image(self, img, params):
        fns = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for i in params["order"]:
            v = params["vals"][i]
            if v is not None:
                img = fns[i](img, v)
        return img


class Grayscale(_ImageOnly):
    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels

    def image(self, img, params):
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(_ImageOnly):
    """Grayscale (keeping the channel count) with probability ``p``."""

    def __init__(self, p=0.1):
        self.p = p

    def make_params(self, parts):
        return {} if self._rng().random() < self.p else None

    def image(self, img, params):
        c = F.get_dimensions(img)[0]
        return F.rgb_to_grayscale(img, c)


class GaussianBlur(_ImageOnly):
    """Blur with a sigma drawn uniformly from ``sigma`` (min, max)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = _pair(kernel_size, "kernel_size")
        for k in self.kernel_size:
            if k <= 0 or k % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            sigma = (float(sigma), float(sigma))
        if not 0 < sigma[0] <= sigma[1]:
            raise ValueError("sigma values should be positive and of the form (min, max).")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        """A sigma drawn uniformly from [sigma_min, sigma_max]."""
        return _u32(rng(), sigma_min, sigma_max)

    def make_params(self, parts):
        return {"sigma": _u32(self._rng(), *self.sigma)}

    def image(self, img, params):
        return F.gaussian_blur(img, list(self.kernel_size), params["sigma"])


def _erase_params(g, c, h, w, scale, ratio, value):
    area = h * w
    lr = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        ea = area * g.uniform(scale[0], scale[1])
        ar = math.exp(g.uniform(lr[0], lr[1]))
        eh, ew = int(round(math.sqrt(ea * ar))), int(round(math.sqrt(ea / ar)))
        if eh < h and ew < w:
            if value is None:
                v = g.standard_normal((c, eh, ew)).astype(np.float32)
            else:
                v = np.asarray(value, dtype=np.float32).reshape(-1, 1, 1)
            return int(g.integers(0, h - eh + 1)), int(g.integers(0, w - ew + 1)), eh, ew, v
    return None


class RandomErasing(_ImageOnly):
    """With probability ``p`` erase a random rectangle of a tensor image (value: number, tuple
    per channel, or "random" for normal noise). Boxes, masks and keypoints pass through."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        if not 0 <= p <= 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        if not (isinstance(value, (numbers.Number, str, tuple, list))):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    def _value(self, c):
        if isinstance(self.value, str):
            return None
        v = [float(self.value)] if isinstance(self.value, numbers.Number) \
            else [float(x) for x in self.value]
        if len(v) not in (1, c):
            raise ValueError(f"If value is a sequence, it should have either a single value or "
                             f"{c} (number of input channels)")
        return v

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(top, left, height, width, values) of a random rectangle of ``img`` with area
        fraction in ``scale`` and aspect ratio in ``ratio``; ``value`` None gives normal noise.
        No fit in 10 tries gives (0, 0, H, W, img) (erasing with the image itself)."""
        c, h, w = get_dimensions(img)
        out = _erase_params(rng(), c, h, w, scale, ratio, value)
        if out is None:
            return 0, 0, h, w, img
        i, j, eh, ew, v = out
        return i, j, eh, ew, ember.tensor(v)

    def make_params(self, parts):
        g = self._rng()
        if g.random() >= self.p:
            return None
        c, h, w = get_dimensions(first_image(parts))
        out = _erase_params(g, c, h, w, self.scale, self.ratio, self._value(c))
        if out is None:
            return None
        return {"box": out[:4], "v": out[4]}

    def image(self, img, params):
        if is_pil(img):
            raise TypeError("RandomErasing needs a Tensor image, got a PIL image")
        i, j, h, w = params["box"]
        return F.erase(img, i, j, h, w, params["v"].astype(img.array.dtype), self.inplace)
