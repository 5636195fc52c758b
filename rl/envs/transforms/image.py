"""Image observations: ``ToTensorImage`` (HWC integers -> CHW floats in [0, 1]), ``Resize``
(bilinear with antialiasing by default, as torchvision's ``resize`` on tensors) and ``GrayScale``
(ITU-R 601-2 luma, torchvision's weights). Default key: ``"pixels"``. Leading dims (env batch,
time) are kept.
"""
from __future__ import annotations

import numpy as np

from ember.nn import functional as F

from ..specs import Bounded, Unbounded
from ._base import Transform, as_np, to_tensor

__all__ = ["ToTensorImage", "Resize", "GrayScale"]

IMAGE_KEYS = ["pixels"]
_LUMA = np.array([0.2989, 0.587, 0.114])


def _check_image(arr, who, channels_last):
    if arr.ndim < 3:
        raise ValueError(f"{who}: expected an image with at least 3 dims "
                         f"({'H, W, C' if channels_last else 'C, H, W'}), got shape {arr.shape}")


def _scalar_bounds(spec):
    if isinstance(spec, Bounded):
        return float(spec.low.min()), float(spec.high.max())
    return None


class ToTensorImage(Transform):
    """``(..., H, W, C)`` -> ``(..., C, H, W)``; integer images are divided by 255 (``from_int``
    forces it either way); result dtype ``dtype`` (float32). ``unsqueeze`` adds a leading dim to an
    unbatched (3-D) image; ``shape_tolerant`` leaves images whose last dim is not 1 or 3 (already
    channels-first) unpermuted."""

    def __init__(self, from_int=None, unsqueeze=False, dtype=None, *, in_keys=None, out_keys=None,
                 shape_tolerant=False):
        super().__init__(IMAGE_KEYS if in_keys is None else in_keys, out_keys)
        self.from_int, self.unsqueeze = from_int, bool(unsqueeze)
        self.dtype = np.dtype(np.float32 if dtype is None else dtype)
        self.shape_tolerant = bool(shape_tolerant)

    def _permutes(self, shape):
        return not (self.shape_tolerant and shape[-1] not in (1, 3))

    def _divides(self, dtype):
        return self.from_int if self.from_int is not None else np.dtype(dtype).kind in "iub"

    def _new_shape(self, shape):
        shape = tuple(shape)
        if self._permutes(shape):
            shape = shape[:-3] + (shape[-1], shape[-3], shape[-2])
        if self.unsqueeze and len(shape) == 3:
            shape = (1,) + shape
        return shape

    def _apply_transform(self, value):
        arr = as_np(value)
        _check_image(arr, "ToTensorImage", True)
        out = arr.astype(self.dtype)
        if self._divides(arr.dtype):
            out = out / self.dtype.type(255)
        if self._permutes(arr.shape):
            out = np.moveaxis(out, -1, -3)
        if self.unsqueeze and out.ndim == 3:
            out = out[None]
        return to_tensor(np.ascontiguousarray(out, self.dtype))

    def _spec(self, spec):
        shape = self._new_shape(spec.shape)
        if self._divides(spec.dtype):
            return Bounded(0.0, 1.0, shape, self.dtype, spec.device)
        b = _scalar_bounds(spec)
        if b is None:
            return Unbounded(shape, self.dtype, spec.device)
        return Bounded(b[0], b[1], shape, self.dtype, spec.device)

    def transform_observation_spec(self, observation_spec):
        return self._map_spec(observation_spec, self._spec)


class Resize(Transform):
    """Resize ``(..., C, H, W)`` images to ``(..., C, w, h)`` (torchrl's order: ``w`` is the
    first output spatial dim). ``interpolation``: "bilinear" (antialiased), "bicubic"
    (antialiased), "nearest", "area". Integer images are rounded back to their dtype."""

    def __init__(self, w, h=None, interpolation="bilinear", in_keys=None, out_keys=None):
        super().__init__(IMAGE_KEYS if in_keys is None else in_keys, out_keys)
        self.w = int(w)
        self.h = int(w if h is None else h)
        if interpolation not in ("bilinear", "bicubic", "nearest", "area"):
            raise ValueError(f"Resize: interpolation must be bilinear, bicubic, nearest or area, "
                             f"got {interpolation!r}")
        self.interpolation = interpolation

    def _apply_transform(self, value):
        import ember
        arr = as_np(value)
        _check_image(arr, "Resize", False)
        if arr.shape[-2:] == (self.w, self.h):
            return to_tensor(arr)
        lead = arr.shape[:-3]
        x = ember.from_numpy(np.ascontiguousarray(arr.reshape((-1,) + arr.shape[-3:]),
                                                  np.float32 if arr.dtype.kind != "f" else arr.dtype))
        smooth = self.interpolation in ("bilinear", "bicubic")
        y = F.interpolate(x, size=(self.w, self.h), mode=self.interpolation,
                          align_corners=False if smooth else None, antialias=smooth)
        out = y.numpy(force=True)
        if arr.dtype.kind in "iub":
            info = np.iinfo(arr.dtype) if arr.dtype.kind != "b" else None
            out = np.round(out)
            if info is not None:
                out = np.clip(out, info.min, info.max)
            out = out.astype(arr.dtype)
        return to_tensor(out.reshape(lead + out.shape[-3:]))

    def _spec(self, spec):
        shape = tuple(spec.shape[:-2]) + (self.w, self.h)
        b = _scalar_bounds(spec)
        overshoots = self.interpolation == "bicubic" and spec.dtype.kind == "f"  # not clipped
        if b is None or overshoots:
            return Unbounded(shape, spec.dtype, spec.device)
        return Bounded(b[0], b[1], shape, spec.dtype, spec.device)

    def transform_observation_spec(self, observation_spec):
        return self._map_spec(observation_spec, self._spec)

    def __repr__(self):
        return f"Resize(w={self.w}, h={self.h}, interpolation={self.interpolation!r}, keys={self.in_keys})"


class GrayScale(Transform):
    """``(..., 3, H, W)`` RGB -> ``(..., 1, H, W)`` luma ``0.2989 R + 0.587 G + 0.114 B`` (same
    dtype; integers truncated, as ``torchvision.transforms.functional.rgb_to_grayscale``)."""

    def __init__(self, in_keys=None, out_keys=None):
        super().__init__(IMAGE_KEYS if in_keys is None else in_keys, out_keys)

    def _apply_transform(self, value):
        arr = as_np(value)
        _check_image(arr, "GrayScale", False)
        if arr.shape[-3] != 3:
            raise ValueError(f"GrayScale: expected 3 channels at dim -3, got shape {arr.shape}")
        work = np.float32 if arr.dtype.kind != "f" else arr.dtype
        w = _LUMA.astype(work)
        gray = arr[..., 0, :, :].astype(work) * w[0] + arr[..., 1, :, :].astype(work) * w[1] + \
            arr[..., 2, :, :].astype(work) * w[2]
        return to_tensor(gray[..., None, :, :].astype(arr.dtype))

    def _spec(self, spec):
        shape = tuple(spec.shape[:-3]) + (1,) + tuple(spec.shape[-2:])
        b = _scalar_bounds(spec)
        if b is None:
            return Unbounded(shape, spec.dtype, spec.device)
        return Bounded(b[0], b[1], shape, spec.dtype, spec.device)

    def transform_observation_spec(self, observation_spec):
        return self._map_spec(observation_spec, self._spec)
