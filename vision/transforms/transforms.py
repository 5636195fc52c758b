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

from . import functional as F
from ._base import Transform, first_image, is_image_like
from ._geometry import _pair
from ._image import InterpolationMode, as_mode, is_pil
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
            out = type(inpt)(out)
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
        return F.pad(inpt, self.padding, self.fill, self.padding_mode)


class RandomCrop(Transform):
    """A random ``size`` window, after optional ``padding`` (and ``pad_if_needed``)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        pad = [0, 0, 0, 0]
        if self.padding is not None:
            from ._geometry import parse_padding
            pad = list(parse_padding(self.padding))
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
        if H < th or W < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(H, W)}")
        g = self._rng()
        return {"pad": pad, "top": int(g.integers(0, H - th + 1)),
                "left": int(g.integers(0, W - tw + 1))}

    def transform(self, inpt, params):
        if any(params["pad"]):
            inpt = F.pad(inpt, params["pad"], self.fill, self.padding_mode)
        return F.crop(inpt, params["top"], params["left"], *self.size)


class RandomResizedCrop(Transform):
    """A random area ``scale`` / aspect ``ratio`` window resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = _pair(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = scale, ratio
        self.interpolation, self.antialias = as_mode(interpolation), antialias

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        area = h * w
        lr = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = area * g.uniform(self.scale[0], self.scale[1])
            ar = math.exp(g.uniform(lr[0], lr[1]))
            cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
            if 0 < cw <= w and 0 < ch <= h:
                return {"box": (int(g.integers(0, h - ch + 1)), int(g.integers(0, w - cw + 1)),
                                ch, cw)}
        in_ratio = w / h
        if in_ratio < self.ratio[0]:
            cw, ch = w, int(round(w / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            ch, cw = h, int(round(h * self.ratio[1]))
        else:
            cw, ch = w, h
        return {"box": ((h - ch) // 2, (w - cw) // 2, ch, cw)}

    def transform(self, inpt, params):
        return F.resized_crop(inpt, *params["box"], self.size, self.interpolation,
                              self.antialias)


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
    """Rotate by an angle drawn from ``degrees`` (number d -> (-d, d))."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        self.degrees = _range(degrees, "degrees", center=0.0, bound=(-1e9, 1e9),
                              clip_first=False)
        self.interpolation, self.expand = as_mode(interpolation), expand
        self.center, self.fill = center, fill

    def make_params(self, parts):
        return {"angle": float(self._rng().uniform(*self.degrees))}

    def transform(self, inpt, params):
        return F.rotate(inpt, params["angle"], self.interpolation, self.expand, self.center,
                        self.fill)


class RandomAffine(Transform):
    """Random rotation, translation (fractions of the size), scale and shear."""

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
        self.shear = shear
        self.interpolation, self.fill, self.center = as_mode(interpolation), fill, center

    def make_params(self, parts):
        h, w = F.canvas_size(first_image(parts))
        g = self._rng()
        angle = float(g.uniform(*self.degrees))
        tx = ty = 0
        if self.translate is not None:
            mx, my = self.translate[0] * w, self.translate[1] * h
            tx, ty = int(round(g.uniform(-mx, mx))), int(round(g.uniform(-my, my)))
        scale = float(g.uniform(*self.scale)) if self.scale is not None else 1.0
        shx = shy = 0.0
        if self.shear is not None:
            shx = float(g.uniform(self.shear[0], self.shear[1]))
            if len(self.shear) == 4:
                shy = float(g.uniform(self.shear[2], self.shear[3]))
        return {"angle": angle, "translate": (tx, ty), "scale": scale, "shear": (shx, shy)}

    def transform(self, inpt, params):
        return F.affine(inpt, params["angle"], params["translate"], params["scale"],
                        params["shear"], self.interpolation, self.fill, self.center)


class RandomPerspective(Transform):
    """With probability ``p``, move each corner inwards by up to ``distortion_scale`` / 2."""

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        if not 0 <= distortion_scale <= 1:
            raise ValueError("distortion_scale should be between 0 and 1")
        self.distortion_scale, self.p = distortion_scale, p
        self.interpolation, self.fill = as_mode(interpolation), fill

    def make_params(self, parts):
        g = self._rng()
        if g.random() >= self.p:
            return None
        h, w = F.canvas_size(first_image(parts))
        dw, dh = int(self.distortion_scale * w / 2), int(self.distortion_scale * h / 2)

        def r(n):
            return int(g.integers(0, n + 1))
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        end = [[r(dw), r(dh)], [w - 1 - r(dw), r(dh)], [w - 1 - r(dw), h - 1 - r(dh)],
               [r(dw), h - 1 - r(dh)]]
        return {"start": start, "end": end}

    def transform(self, inpt, params):
        return F.perspective(inpt, params["start"], params["end"], self.interpolation,
                             self.fill)


# ---------------------------------------------------------------------------------- colour

class ColorJitter(_ImageOnly):
    """Random brightness, contrast, saturation (factors around 1) and hue (around 0), in a
    random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _range(brightness, "brightness", 1.0) if brightness else None
        self.contrast = _range(contrast, "contrast", 1.0) if contrast else None
        self.saturation = _range(saturation, "saturation", 1.0) if saturation else None
        self.hue = _range(hue, "hue", 0.0, bound=(-0.5, 0.5), clip_first=False) if hue else None

    def make_params(self, parts):
        g = self._rng()
        order = [int(i) for i in g.permutation(4)]
        vals = [None if r is None else float(g.uniform(r[0], r[1]))
                for r in (self.brightness, self.contrast, self.saturation, self.hue)]
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

    def make_params(self, parts):
        return {"sigma": float(self._rng().uniform(*self.sigma))}

    def image(self, img, params):
        return F.gaussian_blur(img, list(self.kernel_size), params["sigma"])


class RandomErasing(_ImageOnly):
    """With probability ``p`` erase a random rectangle of a tensor image (value: number, tuple
    per channel, or "random" for normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        if not 0 <= p <= 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    def make_params(self, parts):
        g = self._rng()
        if g.random() >= self.p:
            return None
        img = first_image(parts)
        c, h, w = F.get_dimensions(img)
        area = h * w
        lr = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            ea = area * g.uniform(*self.scale)
            ar = math.exp(g.uniform(*lr))
            eh, ew = int(round(math.sqrt(ea * ar))), int(round(math.sqrt(ea / ar)))
            if eh < h and ew < w:
                i, j = int(g.integers(0, h - eh + 1)), int(g.integers(0, w - ew + 1))
                if self.value == "random":
                    v = g.standard_normal((c, eh, ew)).astype("float32")
                else:
                    import numpy as np
                    v = np.asarray(self.value, dtype="float32").reshape(-1, 1, 1)
                return {"box": (i, j, eh, ew), "v": v}
        return None

    def image(self, img, params):
        if is_pil(img):
            raise TypeError("RandomErasing needs a Tensor image, got a PIL image")
        i, j, h, w = params["box"]
        return F.erase(img, i, j, h, w, params["v"].astype(img.array.dtype), self.inplace)

