"""Functional transforms. Geometric ones dispatch on the input's kind: a PIL image or (..., C, H, W)
tensor, ``Image``, ``Video``, ``Mask`` (nearest resampling), ``BoundingBoxes`` and ``KeyPoints``
(coordinates moved, boxes clipped to the new canvas).

    >>> import ember
    >>> from ember.vision.transforms import functional as F
    >>> from ember.vision.transforms.parts import BoundingBoxes
    >>> F.hflip(BoundingBoxes([[0, 0, 10, 5]], format="XYXY", canvas_size=(20, 40))).tolist()
    [[30, 0, 40, 5]]
"""
from __future__ import annotations

import numpy as np

from ember._tensor import Tensor

from . import _geometry as G
from ._color import (adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue,  # noqa: F401
                     adjust_saturation, adjust_sharpness, autocontrast, convert_image_dtype,
                     equalize, erase, gaussian_blur, invert, normalize, posterize,
                     rgb_to_grayscale, solarize)
from ._image import (InterpolationMode, array_to_pil, get_dimensions,  # noqa: F401
                     get_size, is_pil, pil_to_array, wrap)
from .parts import (BoundingBoxes, Image, KeyPoints, Mask, Video, affine_points, map_boxes,
                    map_points)

__all__ = ["InterpolationMode", "get_dimensions", "get_size", "to_tensor", "pil_to_tensor",
           "to_pil_image", "convert_image_dtype", "normalize", "resize", "crop", "center_crop",
           "resized_crop", "hflip", "vflip", "pad", "affine", "rotate", "perspective",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "adjust_gamma", "adjust_sharpness", "rgb_to_grayscale", "to_grayscale", "posterize",
           "solarize", "autocontrast", "equalize", "invert", "gaussian_blur", "erase",
           "canvas_size"]


# ------------------------------------------------------------------------------- conversion

def to_tensor(pic):
    """PIL image or HWC ndarray (uint8 -> scaled to [0, 1]) -> float32 tensor (C, H, W)."""
    if is_pil(pic):
        a = pil_to_array(pic)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional, got {pic.ndim} dimensions")
        a = np.ascontiguousarray((pic[:, :, None] if pic.ndim == 2 else pic).transpose(2, 0, 1))
    else:
        raise TypeError(f"pic should be a PIL Image or ndarray, got {type(pic).__name__}")
    if a.dtype == np.uint8:
        return wrap(a.astype(np.float32) / np.float32(255))
    return wrap(a.astype(np.float32) if a.dtype.kind != "f" else a)


def pil_to_tensor(pic):
    """PIL image -> tensor (C, H, W) keeping the dtype (uint8 for L/RGB/RGBA)."""
    if not is_pil(pic):
        raise TypeError(f"pic should be a PIL Image, got {type(pic).__name__}")
    return wrap(pil_to_array(pic))


def to_pil_image(pic, mode=None):
    """Tensor (C, H, W) / (H, W) or ndarray (H, W, C) -> PIL image (floats scaled by 255)."""
    if isinstance(pic, Tensor):
        a = pic.detach().cpu().numpy() if hasattr(pic, "cpu") else pic.array
        a = np.asarray(a)
    elif isinstance(pic, np.ndarray):
        a = pic if pic.ndim == 2 else pic.transpose(2, 0, 1)
    else:
        raise TypeError(f"pic should be a Tensor or ndarray, got {type(pic).__name__}")
    return array_to_pil(a, mode)


def to_grayscale(img, num_output_channels=1):
    return rgb_to_grayscale(img, num_output_channels)


def canvas_size(inpt):
    """(H, W) of an image, video, mask, boxes or keypoints."""
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        return inpt.canvas_size
    if isinstance(inpt, Mask):
        return tuple(int(s) for s in inpt.shape[-2:])
    return tuple(get_size(inpt))


# ------------------------------------------------------------------------ dispatch helpers

def _rewrap(out, like):
    if isinstance(like, (Image, Video, Mask)) and isinstance(out, Tensor):
        return type(like)(out)
    return out


def _mask_op(m, fn):
    """Run an image kernel on a mask (..., H, W) with a channel axis added and removed."""
    t = wrap(m.array[..., None, :, :])
    out = fn(t)
    return Mask(wrap(out.array[..., 0, :, :]))


# --------------------------------------------------------------------------------- geometry

def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize images/videos (``antialias`` as Pillow), masks (nearest), boxes and keypoints."""
    h, w = canvas_size(inpt)
    oh, ow = G.output_size(h, w, size, max_size)
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        sx, sy = ow / w, oh / h
        fn = (lambda p: p * np.array([sx, sy]))
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(inpt, fn, (oh, ow))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.resize(t, [oh, ow], InterpolationMode.NEAREST))
    return _rewrap(G.resize(inpt, [oh, ow], interpolation, None, antialias), inpt)


def crop(inpt, top, left, height, width):
    """The ``height x width`` window at (top, left) (zero-filled outside the image)."""
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        fn = (lambda p: p - np.array([left, top]))
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(
            inpt, fn, (int(height), int(width)))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.crop(t, top, left, height, width))
    return _rewrap(G.crop(inpt, top, left, height, width), inpt)


def center_crop(inpt, output_size):
    h, w = canvas_size(inpt)
    return crop(inpt, *G.center_crop_params(h, w, output_size))


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    return resize(crop(inpt, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(inpt):
    """Mirror left-right (boxes and keypoints too)."""
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        h, w = inpt.canvas_size
        fn = (lambda p: np.stack([w - p[:, 0], p[:, 1]], 1))
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(inpt, fn, (h, w))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, G.hflip)
    return _rewrap(G.hflip(inpt), inpt)


def vflip(inpt):
    """Mirror top-bottom (boxes and keypoints too)."""
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        h, w = inpt.canvas_size
        fn = (lambda p: np.stack([p[:, 0], h - p[:, 1]], 1))
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(inpt, fn, (h, w))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, G.vflip)
    return _rewrap(G.vflip(inpt), inpt)


def pad(inpt, padding, fill=0, padding_mode="constant"):
    """Pad borders (boxes/keypoints shift by the left/top amounts; masks pad with 0)."""
    l, t, r, b = G.parse_padding(padding)
    h, w = canvas_size(inpt)
    new = (h + t + b, w + l + r)
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        fn = (lambda p: p + np.array([l, t]))
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(inpt, fn, new)
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda x: G.pad(x, padding, 0, padding_mode))
    return _rewrap(G.pad(inpt, padding, fill, padding_mode), inpt)


def _warp_any(inpt, matrix, out_hw, interpolation, fill):
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        fn = affine_points(matrix)
        return (map_boxes if isinstance(inpt, BoundingBoxes) else map_points)(inpt, fn, out_hw)
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.warp(t, matrix, out_hw, InterpolationMode.NEAREST, 0))
    return _rewrap(G.warp(inpt, matrix, out_hw, interpolation, fill), inpt)


def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotate (degrees counter-clockwise), translate (px), scale, shear (degrees) about the centre."""
    h, w = canvas_size(inpt)
    if isinstance(shear, (int, float)):
        shear = [shear, 0.0]
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    c = (w * 0.5, h * 0.5) if center is None else center
    m = G.affine_matrix(c, angle, translate, scale, list(shear) + [0.0] * (2 - len(shear)))
    return _warp_any(inpt, m, (h, w), interpolation, fill)


def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate counter-clockwise by ``angle`` degrees; ``expand`` grows the canvas to fit."""
    h, w = canvas_size(inpt)
    m, size = G.rotation_matrix_and_size(h, w, angle, expand, center)
    return _warp_any(inpt, m, size, interpolation, fill)


def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None):
    """Warp so that the corners ``startpoints`` land on ``endpoints`` ([x, y] each)."""
    m = G.perspective_matrix(startpoints, endpoints)
    return _warp_any(inpt, m, canvas_size(inpt), interpolation, fill)


def clamp_bounding_boxes(boxes: BoundingBoxes):
    """Clip boxes to their canvas."""
    return map_boxes(boxes, lambda p: p, boxes.canvas_size)


def convert_bounding_box_format(boxes: BoundingBoxes, new_format: str):
    """Boxes in ``new_format`` (XYXY, XYWH, CXCYWH)."""
    from .parts import convert_format
    fmt = str(new_format).upper()
    out = convert_format(boxes.array, boxes.format, fmt)
    return BoundingBoxes(wrap(out), format=fmt, canvas_size=boxes.canvas_size)

