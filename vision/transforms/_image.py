"""Image plumbing shared by the transform kernels: PIL <-> array, dtype bounds, interpolation modes.

Tensors are CHW or batched (..., C, H, W); PIL images are HWC by nature. Kernels work on the raw
array of a tensor (numpy or cupy through ``xp``) and wrap the result back.
"""
from __future__ import annotations

import enum

import numpy as np

import ember
from ember import _backend as B
from ember._tensor import Tensor

try:
    from PIL import Image as _PIL
except ImportError:  # pragma: no cover - pillow is a runtime dependency
    _PIL = None


class InterpolationMode(enum.Enum):
    """Resampling filters; the names and values match torchvision's."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _pil_filter(mode: InterpolationMode):
    R = _PIL.Resampling
    return {InterpolationMode.NEAREST: R.NEAREST, InterpolationMode.NEAREST_EXACT: R.NEAREST,
            InterpolationMode.BILINEAR: R.BILINEAR, InterpolationMode.BICUBIC: R.BICUBIC,
            InterpolationMode.BOX: R.BOX, InterpolationMode.HAMMING: R.HAMMING,
            InterpolationMode.LANCZOS: R.LANCZOS}[mode]


def as_mode(interpolation) -> InterpolationMode:
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, str):
        return InterpolationMode(interpolation.lower())
    if isinstance(interpolation, int) and _PIL is not None:   # a PIL filter constant
        back = {0: "nearest", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming", 1: "lanczos"}
        return InterpolationMode(back[interpolation])
    raise TypeError(f"interpolation must be an InterpolationMode, got {interpolation!r}")


def is_pil(x) -> bool:
    return _PIL is not None and isinstance(x, _PIL.Image)


def check_image(img, name="img"):
    if is_pil(img):
        return
    if not isinstance(img, Tensor):
        raise TypeError(f"{name} should be a PIL Image or a Tensor, got {type(img).__name__}")
    if img.ndim < 2:
        raise ValueError(f"{name} should have at least 2 dims (..., H, W), got shape "
                         f"{tuple(img.shape)}")


def get_dimensions(img) -> list[int]:
    """``[channels, height, width]`` of a PIL image or a (..., C, H, W) tensor."""
    check_image(img)
    if is_pil(img):
        return [len(img.getbands()), img.height, img.width]
    c = 1 if img.ndim == 2 else int(img.shape[-3])
    return [c, int(img.shape[-2]), int(img.shape[-1])]


def get_size(img) -> list[int]:
    """``[height, width]``."""
    return get_dimensions(img)[1:]


def max_value(dtype) -> float:
    """The value of full intensity: 1.0 for float images, the dtype's max for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return 1.0
    if dt.kind == "b":
        return 1
    return int(np.iinfo(dt).max)


def pil_to_array(pic) -> np.ndarray:
    """A PIL image -> uint8 (or int32/float32 for modes I/F) array (C, H, W)."""
    if pic.mode == "1":
        pic = pic.convert("L")
    if pic.mode == "P":
        pic = pic.convert("RGBA" if "transparency" in pic.info else "RGB")
    arr = np.asarray(pic)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.dtype == np.int32 or arr.dtype == np.float32 or arr.dtype == np.uint16:
        pass
    return np.ascontiguousarray(arr.transpose(2, 0, 1))


def array_to_pil(arr: np.ndarray, mode=None):
    """A (C, H, W) array -> PIL image; float arrays in [0, 1] are scaled to uint8."""
    arr = np.asarray(arr)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        arr = (arr * 255).round().clip(0, 255).astype(np.uint8)
    elif arr.dtype == np.bool_:
        arr = arr.astype(np.uint8) * 255
    c = arr.shape[0]
    if c > 4:
        raise ValueError(f"pic should have at most 4 channels, got {c}")
    hwc = np.ascontiguousarray(arr.transpose(1, 2, 0))
    if c == 1:
        hwc = hwc[:, :, 0]
        if mode is None:
            mode = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16",
                    np.dtype(np.int32): "I"}.get(hwc.dtype, "L")
            if mode == "L":
                hwc = hwc.astype(np.uint8)
    else:
        hwc = hwc.astype(np.uint8)
        mode = mode or {2: "LA", 3: "RGB", 4: "RGBA"}[c]
    img = _PIL.fromarray(hwc)
    return img if img.mode == mode else img.convert(mode)


def arr(t):
    """The raw array of a tensor, numpy arrays pass through."""
    return t.array if isinstance(t, Tensor) else t


def wrap(a) -> Tensor:
    return Tensor._make(a)


def xp_of(a):
    return B.namespace(a)


def as_float(a):
    """Array -> float32 (keeps float dtypes)."""
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def back_to(a, dtype):
    """Cast a float working array back to an image dtype, rounding and clamping integers."""
    if np.dtype(dtype).kind == "f":
        return a.astype(dtype, copy=False)
    xp = xp_of(a)
    hi = max_value(dtype)
    return xp.clip(xp.round(a), 0, hi).astype(dtype)


def via_array(img, fn):
    """Run ``fn(array (..., C, H, W)) -> array`` on a PIL image or tensor, returning the same
    kind (typed ``Image``/``Video`` parts keep their type)."""
    if is_pil(img):
        mode = img.mode
        out = fn(pil_to_array(img))
        return array_to_pil(out, mode if mode in ("L", "RGB", "RGBA", "LA") else None)
    check_image(img)
    a = img.array
    squeeze = a.ndim == 2
    if squeeze:
        a = a[None]
    out = fn(a)
    if squeeze:
        out = out[0]
    if type(img) is not Tensor and hasattr(type(img), "wrap") and not type(img)._meta:
        return type(img).wrap(wrap(out), like=img)     # an Image stays an Image, a Video a Video
    return wrap(out)


def rng(generator=None) -> np.random.Generator:
    """The numpy generator behind ``generator`` or ember's default one (seeded by ember.manual_seed)."""
    g = ember.default_generator if generator is None else generator
    return g.numpy_generator()
