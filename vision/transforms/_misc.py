"""More transform classes of torchvision's v2 surface: type and dtype conversion (``ToImage``,
``ToDtype``, ``ToPureTensor``, ``RGB``), multi-crops (``FiveCrop``, ``TenCrop``), ``JPEG``,
``ElasticTransform``, channel shuffles (``RandomChannelPermutation``,
``RandomPhotometricDistort``), the probability-``p`` colour ops (``RandomInvert``,
``RandomPosterize``, ``RandomSolarize``, ``RandomAdjustSharpness``, ``RandomAutocontrast``,
``RandomEqualize``), ``GaussianNoise``, ``LinearTransformation``, ``UniformTemporalSubsample``
and ``Identity``.

    >>> import ember
    >>> x = ToDtype(ember.float32, scale=True)(ember.full((3, 2, 2), 255, dtype=ember.uint8))
    >>> x.dtype == ember.float32, x.max().item()
    (True, 1.0)
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

import ember
from ember._tensor import Tensor

from . import functional as F
from ._base import Transform, fill_for, has_any, is_pure_tensor, query_chw, query_size
from ._image import InterpolationMode, as_mode, is_pil, rng, wrap
from .parts import BoundingBoxes, Image, KeyPoints, Mask, TVTensor, Video
from .transforms import _ImageOnly, _u32


class Identity(Transform):
    """Return the input unchanged."""

    def __call__(self, *inputs):
        return inputs if len(inputs) > 1 else inputs[0]


class ToImage(Transform):
    """PIL images, HWC ndarrays and (the first) plain tensor -> ``Image``."""

    def accepts(self, inpt):
        return is_pil(inpt) or isinstance(inpt, np.ndarray) or is_pure_tensor(inpt)

    def transform(self, inpt, params):
        return F.to_image(inpt)


class ToPureTensor(Transform):
    """Typed parts -> plain ``Tensor`` (metadata dropped)."""

    def accepts(self, inpt):
        return isinstance(inpt, TVTensor)

    def transform(self, inpt, params):
        return inpt.as_subclass(Tensor)


class RGB(_ImageOnly):
    """Grayscale images -> 3 channels (RGB images pass through)."""

    def image(self, img, params):
        return F.grayscale_to_rgb(img)


def _same_type(key, inpt):
    if isinstance(key, type):
        if key is Tensor:
            return is_pure_tensor(inpt)
        return type(inpt) is key
    return False


class ToDtype(Transform):
    """Cast to ``dtype``: one dtype for images, videos and plain tensors, or a dict per part type
    (key "others" for the rest; a None value leaves that type alone). With ``scale`` images and
    videos are rescaled between integer ranges and [0, 1]."""

    def __init__(self, dtype, scale=False):
        if not isinstance(dtype, dict):
            try:
                dtype = ember.dtypes.to_dtype(dtype)
            except (TypeError, ValueError, KeyError):
                raise ValueError(f"dtype must be a dict or a dtype, got {type(dtype).__name__} "
                                 "instead") from None
        elif Tensor in dtype and any(k in dtype for k in (Image, Video)):
            warnings.warn("Got `dtype` values for `Tensor` and either `Image` or `Video`. Note "
                          "that a plain `Tensor` will *not* be transformed by this (or any other "
                          "transformation) in case an `Image` or `Video` is present in the "
                          "input.")
        self.dtype, self.scale = dtype, scale

    def accepts(self, inpt):
        return isinstance(inpt, Tensor)

    def transform(self, inpt, params):
        if not isinstance(self.dtype, dict):
            if not (is_pure_tensor(inpt) or isinstance(inpt, (Image, Video))):
                return inpt
            dtype = self.dtype
        else:
            for key, value in self.dtype.items():
                if _same_type(key, inpt):
                    dtype = value
                    break
            else:
                if "others" not in self.dtype:
                    raise ValueError(f"No dtype was specified for type {type(inpt).__name__}. "
                                     "If you only need to convert the dtype of images or videos, "
                                     "you can just pass e.g. dtype=ember.float32. If you're "
                                     "passing a dict as dtype, you can use \"others\" as a "
                                     "catch-all key.")
                dtype = self.dtype["others"]
        if dtype is None:
            return inpt
        return F.to_dtype(inpt, dtype, scale=self.scale)


class _MultiCrop(Transform):
    def accepts(self, inpt):
        return is_pil(inpt) or (isinstance(inpt, Tensor)
                                and not isinstance(inpt, (BoundingBoxes, KeyPoints, Mask)))

    def check_inputs(self, flat_inputs):
        if has_any(flat_inputs, BoundingBoxes, Mask):
            raise TypeError(f"BoundingBoxes'es and Mask's are not supported by "
                            f"{type(self).__name__}()")


class FiveCrop(_MultiCrop):
    """The four corner crops and the centre crop of ``size``, as a tuple."""

    def __init__(self, size):
        self.size = F._crop_size(size)

    def transform(self, inpt, params):
        return F.five_crop(inpt, self.size)


class TenCrop(_MultiCrop):
    """``FiveCrop`` of the image and of its mirror (left-right, or top-bottom with
    ``vertical_flip``), as a tuple of 10."""

    def __init__(self, size, vertical_flip=False):
        self.size, self.vertical_flip = F._crop_size(size), vertical_flip

    def transform(self, inpt, params):
        return F.ten_crop(inpt, self.size, vertical_flip=self.vertical_flip)


class JPEG(_ImageOnly):
    """JPEG-compress and decode each image at a quality drawn from ``quality`` (an int, or a
    (min, max) range in 1..100)."""

    def __init__(self, quality):
        if isinstance(quality, bool):
            raise TypeError("quality can't be bool")
        if isinstance(quality, numbers.Integral):
            quality = [int(quality), int(quality)]
        quality = list(quality)
        if len(quality) != 2 or not all(isinstance(q, numbers.Integral) for q in quality) or \
                not 1 <= quality[0] <= quality[1] <= 100:
            raise ValueError(f"quality must be an integer from 1 to 100, got {quality}")
        self.quality = quality

    def make_params(self, parts):
        return {"quality": int(self._rng().integers(self.quality[0], self.quality[1] + 1))}

    def image(self, img, params):
        return F.jpeg(img, params["quality"])


def _pair_of(v, name):
    if isinstance(v, numbers.Number):
        return [float(v), float(v)]
    v = [float(x) for x in v]
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError(f"{name} should be a number or a sequence of 2 numbers, got {v}")
    return v


def _elastic_field(g, alpha, sigma, size):
    h, w = size
    parts = []
    for k, extent in ((0, w), (1, h)):
        d = (g.random((1, 1, h, w)).astype(np.float32) * 2 - 1).astype(np.float32)
        if sigma[k] > 0.0:
            ks = int(8 * sigma[k] + 1)
            if ks % 2 == 0:
                ks += 1
            d = F.gaussian_blur(wrap(d), [ks, ks], list(sigma)).array
        parts.append(d * np.float32(alpha[k] / extent))
    return np.concatenate(parts, 1).transpose(0, 2, 3, 1).copy()


class ElasticTransform(Transform):
    """Displace pixels by a random field: uniform noise in [-1, 1] blurred with ``sigma``
    (x, y) and scaled by ``alpha`` (x, y) pixels. Boxes, masks and keypoints follow."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        self.alpha, self.sigma = _pair_of(alpha, "alpha"), _pair_of(sigma, "sigma")
        self.interpolation, self.fill = as_mode(interpolation), fill

    @staticmethod
    def get_params(alpha, sigma, size):
        """A displacement field (1, H, W, 2) for an image of ``size`` [H, W]."""
        return ember.tensor(_elastic_field(rng(), list(alpha), list(sigma), list(size)))

    def make_params(self, parts):
        size = query_size(parts)
        return {"displacement": _elastic_field(self._rng(), self.alpha, self.sigma, size)}

    def transform(self, inpt, params):
        return F.elastic(inpt, params["displacement"], self.interpolation,
                         fill_for(self.fill, inpt))


class RandomChannelPermutation(_ImageOnly):
    """Shuffle the channels of images and videos."""

    def make_params(self, parts):
        c = query_chw(parts)[0]
        return {"perm": [int(i) for i in self._rng().permutation(c)]}

    def image(self, img, params):
        return F.permute_channels(img, params["perm"])


class RandomPhotometricDistort(_ImageOnly):
    """The SSD photometric distortion: each of brightness, contrast, saturation and hue is
    applied with probability ``p`` (factor drawn from its range), contrast before or after the
    others at random, and the channels shuffled with probability ``p``."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
                 hue=(-0.05, 0.05), p=0.5):
        self.brightness, self.contrast = tuple(brightness), tuple(contrast)
        self.saturation, self.hue, self.p = tuple(saturation), tuple(hue), p

    def make_params(self, parts):
        c = query_chw(parts)[0]
        g = self._rng()
        params = {}
        for key, r in (("brightness", self.brightness), ("contrast", self.contrast),
                       ("saturation", self.saturation), ("hue", self.hue)):
            params[key] = _u32(g, r[0], r[1]) if g.random() < self.p else None
        params["contrast_before"] = bool(g.random() < 0.5)
        params["perm"] = [int(i) for i in g.permutation(c)] if g.random() < self.p else None
        return params

    def image(self, img, params):
        if params["brightness"] is not None:
            img = F.adjust_brightness(img, params["brightness"])
        if params["contrast"] is not None and params["contrast_before"]:
            img = F.adjust_contrast(img, params["contrast"])
        if params["saturation"] is not None:
            img = F.adjust_saturation(img, params["saturation"])
        if params["hue"] is not None:
            img = F.adjust_hue(img, params["hue"])
        if params["contrast"] is not None and not params["contrast_before"]:
            img = F.adjust_contrast(img, params["contrast"])
        if params["perm"] is not None:
            img = F.permute_channels(img, params["perm"])
        return img


class _RandomColor(_ImageOnly):
    """An image op applied with probability ``p``."""

    def __init__(self, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def make_params(self, parts):
        return {} if self._rng().random() < self.p else None


class RandomInvert(_RandomColor):
    def image(self, img, params):
        return F.invert(img)


class RandomAutocontrast(_RandomColor):
    def image(self, img, params):
        return F.autocontrast(img)


class RandomEqualize(_RandomColor):
    def image(self, img, params):
        return F.equalize(img)


class RandomPosterize(_RandomColor):
    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def image(self, img, params):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomColor):
    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def image(self, img, params):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomColor):
    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        if sharpness_factor < 0:
            raise ValueError("sharpness_factor should be non-negative")
        self.sharpness_factor = sharpness_factor

    def image(self, img, params):
        return F.adjust_sharpness(img, self.sharpness_factor)


class GaussianNoise(_ImageOnly):
    """Add N(``mean``, ``sigma``) noise to float images (clipped to [0, 1] with ``clip``)."""

    def __init__(self, mean=0.0, sigma=0.1, clip=True):
        if sigma < 0:
            raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
        self.mean, self.sigma, self.clip = float(mean), float(sigma), clip

    def make_params(self, parts):
        return {"g": self._rng()}

    def image(self, img, params):
        if is_pil(img) or not img.is_floating_point():
            raise ValueError("GaussianNoise needs a float image tensor")
        a = img.array
        xp = ember._backend.namespace(a)
        noise = xp.asarray(params["g"].standard_normal(a.shape).astype(a.dtype))
        out = a + noise * a.dtype.type(self.sigma) + a.dtype.type(self.mean)
        return wrap(xp.clip(out, 0, 1) if self.clip else out)


class LinearTransformation(_ImageOnly):
    """Flatten each image (C * H * W), subtract ``mean_vector`` and multiply by
    ``transformation_matrix`` (D, D) (e.g. ZCA whitening)."""

    def __init__(self, transformation_matrix, mean_vector):
        m = F._host(transformation_matrix) if isinstance(transformation_matrix, Tensor) \
            else np.asarray(transformation_matrix)
        v = F._host(mean_vector) if isinstance(mean_vector, Tensor) else np.asarray(mean_vector)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"transformation_matrix should be square, got {m.shape}")
        if v.shape != (m.shape[0],):
            raise ValueError(f"mean_vector should have shape ({m.shape[0]},), got {v.shape}")
        self.transformation_matrix, self.mean_vector = m, v

    def image(self, img, params):
        if is_pil(img):
            raise TypeError("LinearTransformation does not support PIL images")
        shape = tuple(img.shape)
        d = int(np.prod(shape[-3:]))
        if d != self.transformation_matrix.shape[0]:
            raise ValueError(f"Input tensor and transformation matrix have incompatible shape: "
                             f"{shape[-3:]} != {self.transformation_matrix.shape[0]}")
        a = img.array
        xp = ember._backend.namespace(a)
        dt = a.dtype if a.dtype.kind == "f" else np.float32
        flat = a.reshape(-1, d).astype(dt) - xp.asarray(self.mean_vector.astype(dt))
        return wrap((flat @ xp.asarray(self.transformation_matrix.astype(dt))).reshape(shape))


class UniformTemporalSubsample(Transform):
    """``num_samples`` evenly spaced frames of a video (..., T, C, H, W)."""

    def __init__(self, num_samples):
        self.num_samples = int(num_samples)

    def accepts(self, inpt):
        return isinstance(inpt, Video) or is_pure_tensor(inpt)

    def transform(self, inpt, params):
        return F.uniform_temporal_subsample(inpt, self.num_samples)
