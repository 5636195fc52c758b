"""The inference preset that classification weights return from ``weights.transforms()``.

    >>> import numpy as np, ember
    >>> from ember.vision.transforms._presets import ImageClassification
    >>> t = ImageClassification(crop_size=224, resize_size=232)
    >>> img = ember.from_numpy(np.zeros((3, 300, 400), np.uint8))   # CHW uint8
    >>> out = t(img)
    >>> out.shape, out.dtype == ember.float32
    ((3, 224, 224), True)
"""
from __future__ import annotations

import numpy as np

from ember import _backend as B

__all__ = ["ImageClassification"]

_PIL_RESAMPLE = {"nearest": 0, "bilinear": 2, "bicubic": 3, "lanczos": 1, "box": 4, "hamming": 5}


def _mode_name(interpolation):
    """'bilinear', InterpolationMode.BILINEAR (any enum whose value is the name) -> 'bilinear'."""
    name = getattr(interpolation, "value", interpolation)
    if not isinstance(name, str) or name.lower() not in _PIL_RESAMPLE:
        raise ValueError(f"interpolation must be one of {', '.join(_PIL_RESAMPLE)}, got "
                         f"{interpolation!r}")
    return name.lower()


def _resized_hw(h, w, size):
    """The shorter side becomes ``size``; the longer keeps the aspect ratio (truncated)."""
    if h <= w:
        return size, int(size * w / h)
    return int(size * h / w), size


def _center_crop(arr, crop):
    """Center-crop the last two dims of ``arr`` to ``crop`` (zero-padding a smaller image)."""
    xp = B.namespace(arr)
    ch, cw = crop
    h, w = arr.shape[-2:]
    if ch > h or cw > w:
        pads = [(0, 0)] * (arr.ndim - 2)
        pads += [((ch - h) // 2 if ch > h else 0, (ch - h + 1) // 2 if ch > h else 0),
                 ((cw - w) // 2 if cw > w else 0, (cw - w + 1) // 2 if cw > w else 0)]
        arr = xp.pad(arr, pads)
        h, w = arr.shape[-2:]
    top = int(round((h - ch) / 2.0))
    left = int(round((w - cw) / 2.0))
    return arr[..., top:top + ch, left:left + cw]


class ImageClassification:
    """Resize (shorter side to ``resize_size``), center-crop to ``crop_size``, scale to [0, 1]
    float32 and normalize with ``mean``/``std``.

    Input: a PIL image (resized with Pillow), or a CHW / NCHW uint8 or float Tensor (resized
    with ``ember.nn.functional.interpolate`` antialiased; uint8 results are rounded back to
    uint8 before scaling, as torchvision does). Output: a float32 Tensor (C, crop, crop) or
    (N, C, crop, crop).
    """

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225), interpolation="bilinear", antialias=True):
        self.crop_size = [int(crop_size)]
        self.resize_size = [int(resize_size)]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self._mode = _mode_name(interpolation)
        self.antialias = antialias

    def __call__(self, img):
        import ember

        if not isinstance(img, ember.Tensor) and hasattr(img, "getbands"):
            arr = self._resize_pil(img)
        elif isinstance(img, ember.Tensor):
            arr = self._resize_tensor(img)
        else:
            raise TypeError(f"img must be a PIL image or an ember Tensor (CHW or NCHW), got "
                            f"{type(img).__name__}")
        xp = B.namespace(arr)
        arr = _center_crop(arr, (self.crop_size[0], self.crop_size[0]))
        if arr.dtype == xp.uint8:
            arr = arr.astype(xp.float32) * xp.float32(1.0 / 255.0)
        else:
            arr = arr.astype(xp.float32, copy=True)
        c = arr.shape[-3]
        mean = xp.asarray(self.mean, dtype=xp.float32)
        std = xp.asarray(self.std, dtype=xp.float32)
        if mean.size != c or std.size != c:
            raise ValueError(f"mean and std have {mean.size} and {std.size} values but the "
                             f"image has {c} channels")
        arr -= mean.reshape(-1, 1, 1)
        arr /= std.reshape(-1, 1, 1)
        return ember.Tensor._make(arr)

    def _resize_pil(self, img):
        w, h = img.size
        nh, nw = _resized_hw(h, w, self.resize_size[0])
        img = img.resize((nw, nh), _PIL_RESAMPLE[self._mode])
        arr = np.asarray(img)
        return arr[None] if arr.ndim == 2 else np.ascontiguousarray(arr.transpose(2, 0, 1))

    def _resize_tensor(self, img):
        import ember
        from ember.nn import functional as F

        if img.ndim not in (3, 4):
            raise ValueError(f"img must be CHW or NCHW, got shape {tuple(img.shape)}")
        arr = img.array
        xp = B.namespace(arr)
        h, w = arr.shape[-2:]
        nh, nw = _resized_hw(h, w, self.resize_size[0])
        if (nh, nw) == (h, w):
            return arr
        is_uint8 = arr.dtype == xp.uint8
        x = arr.astype(xp.float32) if is_uint8 or arr.dtype.kind != "f" else arr
        x4 = x if x.ndim == 4 else x[None]
        kw = {}
        if self._mode in ("bilinear", "bicubic"):
            kw = {"antialias": bool(self.antialias), "align_corners": False}
        out = F.interpolate(ember.Tensor._make(x4), size=(nh, nw), mode=self._mode, **kw).array
        out = out if x.ndim == 4 else out[0]
        if is_uint8:
            out = xp.clip(xp.rint(out), 0, 255).astype(xp.uint8)
        return out

    def __repr__(self):
        interp = self.interpolation
        if isinstance(interp, str):
            interp = f"InterpolationMode.{interp.upper()}"
        return (f"{type(self).__name__}(\n    crop_size={self.crop_size}\n"
                f"    resize_size={self.resize_size}\n    mean={self.mean}\n    std={self.std}\n"
                f"    interpolation={interp}\n)")

    def describe(self):
        return (f"Accepts PIL images and batched (B, C, H, W) or single (C, H, W) tensors. They "
                f"are resized to resize_size={self.resize_size} with interpolation="
                f"{self._mode}, center-cropped to crop_size={self.crop_size}, rescaled to "
                f"[0.0, 1.0] and normalized with mean={self.mean} and std={self.std}.")


MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


class DigitClassification:
    """Inference transform of the digit models: a PIL image (or a path) -> a normalized
    (1, size, size) float32 tensor: grayscale, resized to ``size``, inverted when the digit is
    dark on a light background (MNIST digits are light on black), scaled and normalized.

        >>> from PIL import Image
        >>> DigitClassification()(Image.new("RGB", (40, 30), "white")).shape
        (1, 28, 28)
    """

    def __init__(self, size=28, mean=MNIST_MEAN, std=MNIST_STD, auto_invert=True):
        self.size, self.mean, self.std, self.auto_invert = int(size), mean, std, auto_invert

    def __call__(self, img):
        import os

        import ember
        from PIL import Image

        if isinstance(img, (str, os.PathLike)):
            img = Image.open(img)
        img = img.convert("L")
        if img.size != (self.size, self.size):
            img = img.resize((self.size, self.size), Image.BILINEAR)
        a = np.asarray(img, dtype=np.float32) * np.float32(1 / 255)
        if self.auto_invert and float(np.median(a)) > 0.5:
            a = np.float32(1) - a
        a = (a - np.float32(self.mean)) / np.float32(self.std)
        return ember.tensor(a[None])

    def __repr__(self):
        return (f"DigitClassification(size={self.size}, mean={self.mean}, std={self.std}, "
                f"auto_invert={self.auto_invert})")
