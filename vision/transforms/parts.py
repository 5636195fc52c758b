"""Typed sample parts: ``Image``, ``Video``, ``Mask``, ``BoundingBoxes``, ``KeyPoints``.

Each is an ember ``Tensor`` subclass that tells a transform how to move it with the image: a crop
shifts and clips the boxes, a flip mirrors the keypoints, masks are resampled with nearest.

    >>> boxes = BoundingBoxes([[10, 10, 20, 30]], format="XYXY", canvas_size=(64, 64))
    >>> boxes.format, boxes.canvas_size
    ('XYXY', (64, 64))

Shapes: Image (..., C, H, W); Video (..., T, C, H, W); Mask (..., H, W); BoundingBoxes (N, 4);
KeyPoints (..., 2) as [x, y].
"""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor


def _array(data, dtype=None):
    if isinstance(data, Tensor):
        a = data.array
        return a if dtype is None else a.astype(dtype)
    return ember.as_tensor(data, dtype=dtype).array


class Image(Tensor):
    """An image tensor (..., C, H, W)."""

    def __init__(self, data, *, dtype=None):
        if hasattr(data, "getbands"):     # a PIL image
            from ._image import pil_to_array
            data = pil_to_array(data)
        super().__init__(_array(data, dtype))
        if self.ndim < 2:
            raise ValueError(f"Image needs at least 2 dims, got shape {tuple(self.shape)}")
        if self.ndim == 2:
            self.array = self.array[None]


class Video(Tensor):
    """A video tensor (..., T, C, H, W)."""

    def __init__(self, data, *, dtype=None):
        super().__init__(_array(data, dtype))
        if self.ndim < 4:
            raise ValueError(f"Video needs shape (..., T, C, H, W), got {tuple(self.shape)}")


class Mask(Tensor):
    """A segmentation mask (..., H, W) of labels or booleans; resampled with nearest."""

    def __init__(self, data, *, dtype=None):
        if hasattr(data, "getbands"):
            data = np.asarray(data)
        super().__init__(_array(data, dtype))


BOX_FORMATS = ("XYXY", "XYWH", "CXCYWH")


class BoundingBoxes(Tensor):
    """Boxes (N, 4) in ``format`` XYXY, XYWH or CXCYWH on an image of ``canvas_size`` (H, W)."""

    __slots__ = ("format", "canvas_size")

    def __init__(self, data, *, format, canvas_size, dtype=None):
        super().__init__(_array(data, dtype))
        fmt = format.name if hasattr(format, "name") else str(format).upper()
        if fmt not in BOX_FORMATS:
            raise ValueError(f"format must be one of {BOX_FORMATS}, got {format!r}")
        if self.ndim == 1 and self.shape[0] == 4:
            self.array = self.array[None]
        if self.ndim != 2 or self.shape[-1] != 4:
            raise ValueError(f"BoundingBoxes needs shape (N, 4), got {tuple(self.shape)}")
        self.format = fmt
        self.canvas_size = (int(canvas_size[0]), int(canvas_size[1]))

    def wrap_like(self, data, canvas_size=None):
        return BoundingBoxes(data, format=self.format,
                             canvas_size=canvas_size or self.canvas_size)


class KeyPoints(Tensor):
    """Points (..., 2) as [x, y] on an image of ``canvas_size`` (H, W)."""

    __slots__ = ("canvas_size",)

    def __init__(self, data, *, canvas_size, dtype=None):
        super().__init__(_array(data, dtype))
        if self.shape[-1] != 2:
            raise ValueError(f"KeyPoints needs shape (..., 2), got {tuple(self.shape)}")
        self.canvas_size = (int(canvas_size[0]), int(canvas_size[1]))

    def wrap_like(self, data, canvas_size=None):
        return KeyPoints(data, canvas_size=canvas_size or self.canvas_size)


# ------------------------------------------------------------------------ box/point kernels

def convert_format(a, src: str, dst: str):
    """Convert an (N, 4) array between XYXY, XYWH and CXCYWH."""
    if src == dst:
        return a.copy()
    xp = ember._backend.namespace(a)
    if src == "XYWH":
        a = xp.concatenate([a[:, :2], a[:, :2] + a[:, 2:]], axis=1)
    elif src == "CXCYWH":
        a = xp.concatenate([a[:, :2] - a[:, 2:] / 2, a[:, :2] + a[:, 2:] / 2], axis=1)
    if dst == "XYWH":
        a = xp.concatenate([a[:, :2], a[:, 2:] - a[:, :2]], axis=1)
    elif dst == "CXCYWH":
        a = xp.concatenate([(a[:, :2] + a[:, 2:]) / 2, a[:, 2:] - a[:, :2]], axis=1)
    return a


def map_boxes(boxes: BoundingBoxes, fn, canvas_size, clamp=True):
    """Apply ``fn(points (M, 2) float64) -> (M, 2)`` to the corners of XYXY boxes, take the
    enclosing axis-aligned box, clamp to the new canvas and restore the format and dtype."""
    a = np.asarray(boxes.array.get() if hasattr(boxes.array, "get") else boxes.array)
    xyxy = convert_format(a.astype(np.float64), boxes.format, "XYXY")
    x0, y0, x1, y1 = xyxy.T
    corners = np.stack([np.stack([x0, y0], -1), np.stack([x1, y0], -1),
                        np.stack([x0, y1], -1), np.stack([x1, y1], -1)], 1)   # (N, 4, 2)
    moved = fn(corners.reshape(-1, 2)).reshape(-1, 4, 2)
    out = np.concatenate([moved.min(1), moved.max(1)], axis=1) if len(a) else xyxy
    if clamp:
        h, w = canvas_size
        out[:, 0::2] = out[:, 0::2].clip(0, w)
        out[:, 1::2] = out[:, 1::2].clip(0, h)
    out = convert_format(out, "XYXY", boxes.format)
    if a.dtype.kind != "f":
        out = np.round(out)
    xp = ember._backend.namespace(boxes.array)
    return boxes.wrap_like(xp.asarray(out.astype(a.dtype)), canvas_size=canvas_size)


def map_points(points: KeyPoints, fn, canvas_size):
    a = np.asarray(points.array.get() if hasattr(points.array, "get") else points.array)
    out = fn(a.reshape(-1, 2).astype(np.float64)).reshape(a.shape)
    if a.dtype.kind != "f":
        out = np.round(out)
    xp = ember._backend.namespace(points.array)
    return points.wrap_like(xp.asarray(out.astype(a.dtype)), canvas_size=canvas_size)


def affine_points(matrix):
    """A point map from a 3x3 (projective) matrix."""
    m = np.asarray(matrix, dtype=np.float64)

    def fn(p):
        q = np.concatenate([p, np.ones((len(p), 1))], axis=1) @ m.T
        return q[:, :2] / q[:, 2:3]
    return fn
