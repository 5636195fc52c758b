"""Functional transforms (torchvision's ``transforms.functional`` and ``transforms.v2.functional``
in one module). Each dispatches on the input's kind: a PIL image or (..., C, H, W) tensor,
``Image``, ``Video``, ``Mask`` (nearest resampling), ``BoundingBoxes`` (moved, then clamped to the
new canvas) and ``KeyPoints`` (moved, never clamped). Geometry and arithmetic follow
torchvision 0.29: ``affine`` turns clockwise for positive angles, ``rotate`` counter-clockwise.

    >>> import ember
    >>> from ember.vision.transforms import functional as F
    >>> from ember.vision.transforms.parts import BoundingBoxes
    >>> F.hflip(BoundingBoxes([[0, 0, 10, 5]], format="XYXY", canvas_size=(20, 40))).tolist()
    [[30, 0, 40, 5]]
"""
from __future__ import annotations

import io
import numbers

import numpy as np

import ember
from ember._tensor import Tensor

from . import _boxes as K
from . import _geometry as G
from ._color import (adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue,  # noqa: F401
                     adjust_saturation, adjust_sharpness, autocontrast, convert_image_dtype,
                     equalize, erase, gaussian_blur, grayscale_to_rgb, invert, normalize,
                     permute_channels, posterize, rgb_to_grayscale, solarize, to_dtype_array)
from ._image import (_PIL, InterpolationMode, array_to_pil, as_mode, get_dimensions,  # noqa: F401
                     get_size, is_pil, pil_to_array, wrap)
from .parts import BoundingBoxes, Image, KeyPoints, Mask, TVTensor, Video, as_format

__all__ = ["InterpolationMode", "get_dimensions", "get_size", "get_num_channels",
           "get_num_frames", "get_image_size", "get_image_num_channels", "canvas_size",
           "to_tensor", "pil_to_tensor", "to_pil_image", "to_image", "to_dtype",
           "convert_image_dtype", "normalize", "resize", "crop", "center_crop", "resized_crop",
           "hflip", "vflip", "horizontal_flip", "vertical_flip", "pad", "affine", "rotate",
           "perspective", "elastic", "elastic_transform", "five_crop", "ten_crop",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "adjust_gamma", "adjust_sharpness", "rgb_to_grayscale", "to_grayscale",
           "grayscale_to_rgb", "permute_channels", "posterize", "solarize", "autocontrast",
           "equalize", "invert", "gaussian_blur", "gaussian_noise", "erase", "jpeg",
           "clamp_bounding_boxes", "convert_bounding_box_format", "sanitize_bounding_boxes",
           "uniform_temporal_subsample"]


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


def to_image(inpt):
    """A PIL image, HWC ndarray or (..., C, H, W) tensor -> ``Image`` (PIL keeps its dtype)."""
    if isinstance(inpt, np.ndarray):
        a = inpt[:, :, None] if inpt.ndim == 2 else inpt
        return Image(ember.as_tensor(np.ascontiguousarray(np.moveaxis(a, -1, -3))))
    if is_pil(inpt):
        return Image(pil_to_array(inpt))
    if isinstance(inpt, Tensor):
        return Image(inpt)
    raise TypeError(f"Input can either be a pure Tensor, a numpy array, or a PIL image, but got "
                    f"{type(inpt).__name__} instead.")


def to_grayscale(img, num_output_channels=1):
    return rgb_to_grayscale(img, num_output_channels)


def to_dtype(inpt, dtype=ember.float32, scale=False):
    """Cast to ``dtype``; with ``scale`` an image/video is rescaled between integer ranges and
    [0, 1] (float -> int multiplies by max + 1 - 1e-3 and truncates). Masks, boxes and
    keypoints are only cast."""
    if not isinstance(inpt, Tensor):
        raise TypeError(f"to_dtype needs a Tensor, got {type(inpt).__name__}")
    scalable = not isinstance(inpt, (Mask, BoundingBoxes, KeyPoints))
    out = wrap(to_dtype_array(inpt.array, dtype, scale and scalable))
    return type(inpt).wrap(out, like=inpt) if isinstance(inpt, TVTensor) else out


def canvas_size(inpt):
    """(H, W) of an image, video, mask, boxes or keypoints."""
    if isinstance(inpt, (BoundingBoxes, KeyPoints)):
        return inpt.canvas_size
    if isinstance(inpt, Mask):
        return tuple(int(s) for s in inpt.shape[-2:])
    return tuple(get_size(inpt))


def get_num_channels(inpt):
    return get_dimensions(inpt)[0]


get_image_num_channels = get_num_channels


def get_image_size(inpt):
    """[width, height] (the deprecated v1 order)."""
    h, w = get_size(inpt)
    return [w, h]


def get_num_frames(inpt):
    if not isinstance(inpt, Tensor) or inpt.ndim < 4:
        raise TypeError("get_num_frames needs a video tensor (..., T, C, H, W)")
    return int(inpt.shape[-4])


# ------------------------------------------------------------------------ dispatch helpers

def _host(t):
    a = t.array
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _back(like, arr, **meta):
    """A box/point result (host array) on ``like``'s device, as ``like``'s type."""
    xp = ember._backend.namespace(like.array)
    return type(like).wrap(wrap(xp.asarray(arr)), like=like, **meta)


def _fmt(b):
    return b.format.value


def _rewrap(out, like):
    if isinstance(like, (Image, Video, Mask)) and isinstance(out, Tensor):
        return type(like).wrap(out, like=like)
    return out


def _mask_op(m, fn):
    """Run an image kernel on a mask (..., H, W) with a channel axis added and removed."""
    t = wrap(m.array[..., None, :, :])
    out = fn(t)
    return Mask.wrap(wrap(out.array[..., 0, :, :]), like=m)


def _is_geo_part(x):
    return isinstance(x, (BoundingBoxes, KeyPoints))


def _mask_fill(fill):
    """Masks take a scalar fill (a per-channel list of one value collapses); default 0."""
    if fill is None:
        return 0
    if isinstance(fill, (list, tuple)):
        if len(fill) != 1:
            raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the "
                             f"number of channels of the mask (1 != {len(fill)})")
        return fill[0]
    return fill


# --------------------------------------------------------------------------------- geometry

def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize images/videos (antialiased like Pillow), masks (nearest), boxes and keypoints
    (scaled, not clamped). ``size``: (h, w), or an int / [int] for the shorter side, or None
    with ``max_size`` for the longer side."""
    h, w = canvas_size(inpt)
    oh, ow = G.output_size(h, w, size, max_size)
    if isinstance(inpt, BoundingBoxes):
        return _back(inpt, K.resize_boxes(_host(inpt), (h, w), (oh, ow)), canvas_size=(oh, ow))
    if isinstance(inpt, KeyPoints):
        return _back(inpt, K.resize_points(_host(inpt), (h, w), (oh, ow)), canvas_size=(oh, ow))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.resize(t, [oh, ow], InterpolationMode.NEAREST))
    return _rewrap(G.resize(inpt, [oh, ow], interpolation, None, antialias), inpt)


def crop(inpt, top, left, height, width):
    """The ``height x width`` window at (top, left) (zero-filled outside the image)."""
    top, left, height, width = int(top), int(left), int(height), int(width)
    if isinstance(inpt, BoundingBoxes):
        out = K.crop_boxes(_host(inpt), _fmt(inpt), top, left, height, width,
                           inpt.clamping_mode)
        return _back(inpt, out, canvas_size=(height, width))
    if isinstance(inpt, KeyPoints):
        return _back(inpt, K.shift_points(_host(inpt), -left, -top), canvas_size=(height, width))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.crop(t, top, left, height, width))
    return _rewrap(G.crop(inpt, top, left, height, width), inpt)


def center_crop(inpt, output_size):
    """The central ``output_size`` (int or (h, w)) window, zero-padded if the input is smaller."""
    h, w = canvas_size(inpt)
    return crop(inpt, *G.center_crop_params(h, w, output_size))


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    """``crop`` then ``resize`` to ``size``."""
    return resize(crop(inpt, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(inpt):
    """Mirror left-right: boxes x -> W - x, keypoints x -> W - 1 - x (pixel centres)."""
    if isinstance(inpt, BoundingBoxes):
        return _back(inpt, K.hflip_boxes(_host(inpt), _fmt(inpt), inpt.canvas_size))
    if isinstance(inpt, KeyPoints):
        return _back(inpt, K.hflip_points(_host(inpt), inpt.canvas_size))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, G.hflip)
    return _rewrap(G.hflip(inpt), inpt)


def vflip(inpt):
    """Mirror top-bottom: boxes y -> H - y, keypoints y -> H - 1 - y."""
    if isinstance(inpt, BoundingBoxes):
        return _back(inpt, K.vflip_boxes(_host(inpt), _fmt(inpt), inpt.canvas_size))
    if isinstance(inpt, KeyPoints):
        return _back(inpt, K.vflip_points(_host(inpt), inpt.canvas_size))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, G.vflip)
    return _rewrap(G.vflip(inpt), inpt)


horizontal_flip = hflip
vertical_flip = vflip


def pad(inpt, padding, fill=0, padding_mode="constant"):
    """Pad borders: ``padding`` int, (left/right, top/bottom) or (left, top, right, bottom);
    boxes and keypoints shift by the left/top amounts (constant mode only)."""
    l, t, r, b = G.parse_padding(padding)
    if _is_geo_part(inpt):
        if padding_mode != "constant":
            raise ValueError(f"Padding mode '{padding_mode}' is not supported with "
                             f"{type(inpt).__name__}")
        h, w = inpt.canvas_size
        new = (h + t + b, w + l + r)
        if isinstance(inpt, BoundingBoxes):
            out, new = K.pad_boxes(_host(inpt), _fmt(inpt), (h, w), (l, t, r, b),
                                   inpt.clamping_mode)
            return _back(inpt, out, canvas_size=new)
        return _back(inpt, K.shift_points(_host(inpt), l, t), canvas_size=new)
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda x: G.pad(x, padding, _mask_fill(fill), padding_mode))
    return _rewrap(G.pad(inpt, padding, 0 if fill is None else fill, padding_mode), inpt)


def _affine_args(angle, translate, scale, shear, center):
    if not isinstance(angle, numbers.Number):
        raise TypeError("Argument angle should be int or float")
    translate = list(translate) if isinstance(translate, (list, tuple)) else [translate] * 2
    if len(translate) != 2:
        raise ValueError(f"translate should be a sequence of length 2, got {translate}")
    if scale <= 0:
        raise ValueError("Argument scale should be positive")
    if center is not None:
        center = [float(c) for c in center]
        if len(center) != 2:
            raise ValueError(f"center should be a sequence of length 2, got {center}")
    return float(angle), [float(v) for v in translate], float(scale), G.parse_shear(shear), center


def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Turn by ``angle`` degrees clockwise (torchvision's convention for ``affine``), shift by
    ``translate`` (px), ``scale``, shear by ``shear`` (degrees, x and y) about ``center``
    (default: the canvas centre). Boxes become the hull of their warped corners, clamped."""
    angle, translate, scale, shear, center = _affine_args(angle, translate, scale, shear, center)
    if isinstance(inpt, BoundingBoxes):
        out, _ = K.affine_boxes(_host(inpt), _fmt(inpt), inpt.canvas_size, angle, translate,
                                scale, shear, center, False, inpt.clamping_mode)
        return _back(inpt, out)
    if isinstance(inpt, KeyPoints):
        out, _ = K.affine_points(_host(inpt), inpt.canvas_size, angle, translate, scale, shear,
                                 center)
        return _back(inpt, out)
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.affine(t, angle, translate, scale, shear,
                                                 InterpolationMode.NEAREST, fill, center))
    return _rewrap(G.affine(inpt, angle, translate, scale, shear, interpolation, fill, center),
                   inpt)


def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Rotate counter-clockwise by ``angle`` degrees; ``expand`` grows the canvas to hold the
    whole image (Pillow's size rule). Boxes and keypoints follow (with ``expand`` they shift by
    the turned canvas's top-left corner, as torchvision does)."""
    angle = float(angle)
    if center is not None:
        center = [float(c) for c in center]
    if isinstance(inpt, BoundingBoxes):
        out, size = K.affine_boxes(_host(inpt), _fmt(inpt), inpt.canvas_size, -angle, [0.0, 0.0],
                                   1.0, [0.0, 0.0], center, expand, inpt.clamping_mode)
        return _back(inpt, out, canvas_size=size)
    if isinstance(inpt, KeyPoints):
        out, size = K.affine_points(_host(inpt), inpt.canvas_size, -angle, [0.0, 0.0], 1.0,
                                    [0.0, 0.0], center, expand)
        return _back(inpt, out, canvas_size=size)
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.rotate(t, angle, InterpolationMode.NEAREST, expand,
                                                 center, fill))
    return _rewrap(G.rotate(inpt, angle, interpolation, expand, center, fill), inpt)


def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None, coefficients=None):
    """Warp so that the corners ``startpoints`` land on ``endpoints`` ([x, y] each), or by the
    8 output -> input ``coefficients``."""
    if _is_geo_part(inpt):
        co = G._perspective_coeffs(startpoints, endpoints, coefficients)
        if isinstance(inpt, BoundingBoxes):
            return _back(inpt, K.perspective_boxes(_host(inpt), _fmt(inpt), inpt.canvas_size, co,
                                                   inpt.clamping_mode))
        return _back(inpt, K.perspective_points(_host(inpt), co))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.perspective(t, startpoints, endpoints,
                                                      InterpolationMode.NEAREST, fill,
                                                      coefficients))
    return _rewrap(G.perspective(inpt, startpoints, endpoints, interpolation, fill,
                                 coefficients), inpt)


def elastic(inpt, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Displace every pixel by ``displacement`` (1, H, W, 2), in normalised [-1, 1] units.
    Boxes and keypoints move by the field's approximate inverse at their (corner) pixels."""
    d = displacement.array if isinstance(displacement, Tensor) else np.asarray(displacement)
    d = np.asarray(d.get() if hasattr(d, "get") else d)
    if _is_geo_part(inpt):
        h, w = inpt.canvas_size
        if tuple(d.shape) != (1, h, w, 2):
            raise ValueError(f"Argument displacement shape should be {(1, h, w, 2)}, but given "
                             f"{tuple(d.shape)}")
        if isinstance(inpt, BoundingBoxes):
            return _back(inpt, K.elastic_boxes(_host(inpt), _fmt(inpt), (h, w), d,
                                               inpt.clamping_mode))
        return _back(inpt, K.elastic_points(_host(inpt), (h, w), d))
    if isinstance(inpt, Mask):
        return _mask_op(inpt, lambda t: G.elastic(t, d, InterpolationMode.NEAREST, fill))
    return _rewrap(G.elastic(inpt, d, interpolation, fill), inpt)


elastic_transform = elastic


def _crop_size(size):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    return int(size[0]), int(size[1])


def five_crop(inpt, size):
    """The four corner crops and the central crop of ``size``: (tl, tr, bl, br, center)."""
    ch, cw = _crop_size(size)
    h, w = canvas_size(inpt)
    if ch > h or cw > w:
        raise ValueError(f"Requested crop size {(ch, cw)} is bigger than input size {(h, w)}")
    return (crop(inpt, 0, 0, ch, cw), crop(inpt, 0, w - cw, ch, cw),
            crop(inpt, h - ch, 0, ch, cw), crop(inpt, h - ch, w - cw, ch, cw),
            center_crop(inpt, [ch, cw]))


def ten_crop(inpt, size, vertical_flip=False):
    """``five_crop`` of the input and of its mirror image (left-right, or top-bottom with
    ``vertical_flip``)."""
    flipped = vflip(inpt) if vertical_flip else hflip(inpt)
    return five_crop(inpt, size) + five_crop(flipped, size)


# ------------------------------------------------------------------------------ boxes, misc

def clamp_bounding_boxes(inpt, format=None, canvas_size=None, clamping_mode="auto"):
    """Clip boxes to their canvas (a plain tensor needs ``format``, ``canvas_size`` and a
    ``clamping_mode``)."""
    if clamping_mode not in (None, "soft", "hard", "auto"):
        raise ValueError(f"clamping_mode must be soft, hard, auto or None, got {clamping_mode}")
    if isinstance(inpt, BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("For bounding box tv_tensor inputs, `format` and `canvas_size` must "
                             "not be passed.")
        mode = inpt.clamping_mode if clamping_mode == "auto" else clamping_mode
        return _back(inpt, K.clamp(_host(inpt), _fmt(inpt), inpt.canvas_size, mode))
    if isinstance(inpt, Tensor):
        if format is None or canvas_size is None or clamping_mode == "auto":
            raise ValueError("For pure tensor inputs, `format`, `canvas_size` and "
                             "`clamping_mode` have to be passed.")
        out = K.clamp(_host(inpt), as_format(format).value, canvas_size, clamping_mode)
        return wrap(ember._backend.namespace(inpt.array).asarray(out))
    raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got "
                    f"{type(inpt).__name__} instead.")


def convert_bounding_box_format(inpt, old_format=None, new_format=None, inplace=False):
    """Boxes in ``new_format`` (XYXY, XYWH, CXCYWH); a plain tensor needs ``old_format``.
    ``convert_bounding_box_format(boxes, "XYWH")`` (one format, for typed boxes) also works."""
    if new_format is None and isinstance(inpt, BoundingBoxes) and old_format is not None:
        old_format, new_format = None, old_format
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    new = as_format(new_format)
    if isinstance(inpt, BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        out = K.convert(_host(inpt), _fmt(inpt), new.value)
        res = _back(inpt, out, format=new)
    elif isinstance(inpt, Tensor):
        if old_format is None:
            raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
        out = K.convert(_host(inpt), as_format(old_format).value, new.value)
        res = wrap(ember._backend.namespace(inpt.array).asarray(out))
    else:
        raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but "
                        f"got {type(inpt).__name__} instead.")
    if inplace:
        inpt.array[...] = res.array
        if isinstance(inpt, BoundingBoxes):
            inpt.format = new
        return inpt
    return res


def sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None, min_size=1.0,
                            min_area=1.0):
    """-> (kept boxes, bool mask of the kept ones): drops boxes narrower or shorter than
    ``min_size``, smaller than ``min_area``, or reaching outside the canvas."""
    if isinstance(bounding_boxes, BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("format and canvas_size must be None when bounding_boxes is a "
                             "tv_tensors.BoundingBoxes instance.")
        valid = K.sanitize_mask(_host(bounding_boxes), _fmt(bounding_boxes),
                                bounding_boxes.canvas_size, min_size, min_area)
        xp = ember._backend.namespace(bounding_boxes.array)
        v = xp.asarray(valid)
        return (BoundingBoxes.wrap(wrap(bounding_boxes.array[v]), like=bounding_boxes),
                wrap(v))
    if format is None or canvas_size is None:
        raise ValueError("format and canvas_size cannot be None if bounding_boxes is a pure "
                         "tensor.")
    valid = K.sanitize_mask(_host(bounding_boxes), as_format(format).value, canvas_size,
                            min_size, min_area)
    v = ember._backend.namespace(bounding_boxes.array).asarray(valid)
    return wrap(bounding_boxes.array[v]), wrap(v)


def gaussian_noise(inpt, mean=0.0, sigma=0.1, clip=True):
    """Add N(mean, sigma) noise to a float image (clipped to [0, 1] with ``clip``)."""
    if not isinstance(inpt, Tensor) or not inpt.is_floating_point():
        raise ValueError(f"Input tensor is expected to be in float dtype, got "
                         f"{getattr(inpt, 'dtype', type(inpt).__name__)} instead.")
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    noise = ember.randn(*inpt.shape, dtype=inpt.dtype, device=inpt.device)
    out = inpt + noise * sigma + mean
    if clip:
        out = out.clamp(0, 1)
    return _rewrap(out, inpt)


def _jpeg_pil(img, quality):
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=int(quality))
    buf.seek(0)
    return _PIL.open(buf).copy()


def jpeg(inpt, quality):
    """Encode as JPEG at ``quality`` (1..100) and decode back (Pillow's codec), per image."""
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be an integer from 1 to 100, got {quality}")
    if is_pil(inpt):
        return _jpeg_pil(inpt, quality)
    if not isinstance(inpt, Tensor) or inpt.array.dtype != np.uint8:
        raise TypeError(f"jpeg needs a uint8 image tensor, got "
                        f"{getattr(inpt, 'dtype', type(inpt).__name__)}")
    a = _host(inpt)
    flat = a.reshape((-1,) + a.shape[-3:])
    outs = [pil_to_array(_jpeg_pil(array_to_pil(x), quality)) for x in flat]
    out = np.stack(outs).reshape(a.shape) if outs else a.copy()
    return _rewrap(wrap(ember._backend.namespace(inpt.array).asarray(out)), inpt)


def uniform_temporal_subsample(inpt, num_samples):
    """``num_samples`` frames evenly spaced over a video's T axis (..., T, C, H, W)."""
    t = int(inpt.shape[-4])
    idx = np.linspace(0, t - 1, num_samples).astype(np.float32).astype(np.int64)
    xp = ember._backend.namespace(inpt.array)
    return _rewrap(wrap(xp.take(inpt.array, xp.asarray(idx), axis=-4)), inpt)
