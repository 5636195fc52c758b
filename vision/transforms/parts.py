"""Typed sample parts: ``Image``, ``Video``, ``Mask``, ``BoundingBoxes``, ``KeyPoints``, all
``TVTensor`` subclasses (also importable as ``ember.vision.tv_tensors``).

Each is an ember ``Tensor`` subclass that tells a transform how to move it with the image: a crop
shifts and clips the boxes, a flip mirrors the keypoints, masks are resampled with nearest.

    >>> boxes = BoundingBoxes([[10, 10, 20, 30]], format="XYXY", canvas_size=(64, 64))
    >>> boxes.format == BoundingBoxFormat.XYXY, boxes.canvas_size
    (True, (64, 64))

Shapes: Image (..., C, H, W); Video (..., T, C, H, W); Mask (..., H, W); BoundingBoxes (N, 4);
KeyPoints (..., 2) as [x, y]. Arithmetic on a part gives a plain ``Tensor`` (as torchvision's
default); ``clone``, ``to``, ``detach`` keep the type and metadata; ``wrap(t, like=part)``
puts a plain result back into the part's type.
"""
from __future__ import annotations

import enum

import ember
from ember._tensor import Tensor


def _array(data, dtype=None, device=None, copy=False):
    if isinstance(data, Tensor):
        a = data.array
        if device is not None or dtype is not None:
            a = data.to(device=device, dtype=dtype).array
        return a.copy() if copy and a is data.array else a
    return ember.as_tensor(data, dtype=dtype, device=device).array


def _bare(cls, array):
    """A ``cls`` instance over ``array`` (no copy, no checks), like ``Tensor._make``."""
    return Tensor._make_as(cls, array)


class TVTensor(Tensor):
    """Base class of the typed parts. ``wrap(tensor, like)`` builds one of this type over
    ``tensor``'s data with ``like``'s metadata (overridden by keyword arguments)."""

    _meta: tuple = ()

    @classmethod
    def wrap(cls, tensor, like=None, **kwargs):
        arr = tensor.array if isinstance(tensor, Tensor) else _array(tensor)
        out = _bare(cls, arr)
        if isinstance(tensor, Tensor) and tensor.requires_grad:
            out.requires_grad, out.grad_fn, out._out_nr = True, tensor.grad_fn, tensor._out_nr
        for name in cls._meta:
            setattr(out, name, kwargs[name] if name in kwargs else getattr(like, name))
        out._check()
        return out

    def _check(self):
        pass

    def _init(self, data, dtype, device, requires_grad):
        Tensor.__init__(self, _array(data, dtype, device))
        if requires_grad is None:
            requires_grad = isinstance(data, Tensor) and data.requires_grad
        if requires_grad:
            self.requires_grad_(True)

    def _same(self, out):
        return type(self).wrap(out, like=self) if isinstance(out, Tensor) else out

    def clone(self, *, memory_format=None):
        return self._same(Tensor.clone(self))

    def to(self, *args, **kwargs):
        out = Tensor.to(self, *args, **kwargs)
        return self if out is self else self._same(out)

    def detach(self):
        return self._same(Tensor.detach(self))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device or "cuda")

    def as_subclass(self, cls):
        """This data viewed as ``cls`` (``ember.Tensor`` gives the plain tensor)."""
        if cls is Tensor:
            t = Tensor._make(self.array)
            if self.requires_grad:
                t.requires_grad, t.grad_fn, t._out_nr = True, self.grad_fn, self._out_nr
            return t
        return cls.wrap(self, like=self)

    def _extra(self) -> str:
        return ""

    def __repr__(self):
        body = Tensor.__repr__(self)
        body = body[body.index("(") + 1:body.rindex(")")] if "(" in body else body
        extra = self._extra()
        return f"{type(self).__name__}({body}{', ' + extra if extra else ''})"


class Image(TVTensor):
    """An image tensor (..., C, H, W); a PIL image or an (H, W) array gains the channel axis."""

    def __init__(self, data, *, dtype=None, device=None, requires_grad=None):
        if hasattr(data, "getbands"):     # a PIL image
            from ._image import pil_to_array
            data = pil_to_array(data)
        self._init(data, dtype, device, requires_grad)
        if self.ndim < 2:
            raise ValueError(f"Image needs at least 2 dims, got shape {tuple(self.shape)}")
        if self.ndim == 2:
            self.array = self.array[None]


class Video(TVTensor):
    """A video tensor (..., T, C, H, W)."""

    def __init__(self, data, *, dtype=None, device=None, requires_grad=None):
        self._init(data, dtype, device, requires_grad)
        self._check()

    def _check(self):
        if self.ndim < 4:
            raise ValueError(f"Video needs shape (..., T, C, H, W), got {tuple(self.shape)}")


class Mask(TVTensor):
    """A segmentation mask (..., H, W) of labels or booleans; resampled with nearest. A PIL image
    becomes (C, H, W), as ``pil_to_tensor`` gives."""

    def __init__(self, data, *, dtype=None, device=None, requires_grad=None):
        if hasattr(data, "getbands"):
            from ._image import pil_to_array
            data = pil_to_array(data)
        self._init(data, dtype, device, requires_grad)


class BoundingBoxFormat(str, enum.Enum):
    """Box coordinate layouts: ``XYXY`` (corners), ``XYWH`` (top-left corner, size) and
    ``CXCYWH`` (centre, size). Members compare equal to their names as strings."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"

    def __str__(self):
        return f"BoundingBoxFormat.{self.name}"


_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")


def as_format(fmt) -> BoundingBoxFormat:
    """A ``BoundingBoxFormat`` from a member or its name (any case)."""
    if isinstance(fmt, BoundingBoxFormat):
        return fmt
    name = getattr(fmt, "name", fmt)
    if not isinstance(name, str):
        raise TypeError(f"format should be a str or BoundingBoxFormat, got {type(fmt).__name__}")
    if name.upper() in _ROTATED:
        raise ValueError(f"rotated box format {name!r} is not supported; use XYXY, XYWH or CXCYWH")
    try:
        return BoundingBoxFormat[name.upper()]
    except KeyError:
        raise ValueError(f"format must be one of XYXY, XYWH, CXCYWH, got {fmt!r}") from None


BOX_FORMATS = tuple(f.value for f in BoundingBoxFormat)


def is_rotated_bounding_format(fmt) -> bool:
    name = getattr(fmt, "name", fmt)
    return str(name).upper() in _ROTATED


class BoundingBoxes(TVTensor):
    """Boxes (N, 4) in ``format`` (XYXY, XYWH or CXCYWH) on an image of ``canvas_size`` (H, W).
    ``clamping_mode`` "soft" or "hard" (the same for axis-aligned boxes: transforms clamp to the
    canvas) or ``None`` (never clamped)."""

    __slots__ = ("format", "canvas_size", "clamping_mode")
    _meta = ("format", "canvas_size", "clamping_mode")

    def __init__(self, data, *, format, canvas_size, clamping_mode="soft", dtype=None,
                 device=None, requires_grad=None):
        self._init(data, dtype, device, requires_grad)
        self.format = format
        self.canvas_size = canvas_size
        self.clamping_mode = clamping_mode
        self._check()

    def _check(self):
        self.format = as_format(self.format)
        self.canvas_size = (int(self.canvas_size[0]), int(self.canvas_size[1]))
        if self.clamping_mode not in (None, "soft", "hard"):
            raise ValueError(f"clamping_mode must be None, hard or soft, got {self.clamping_mode}.")
        if self.ndim == 1:
            self.array = self.array[None]
        if self.ndim != 2 or self.shape[-1] != 4:
            raise ValueError(f"BoundingBoxes needs shape (N, 4), got {tuple(self.shape)}")

    def wrap_like(self, data, canvas_size=None):
        return BoundingBoxes.wrap(data, like=self, canvas_size=canvas_size or self.canvas_size)

    def _extra(self):
        return f"format={self.format}, canvas_size={self.canvas_size}, " \
               f"clamping_mode={self.clamping_mode}"


class KeyPoints(TVTensor):
    """Points (..., 2) as [x, y] on an image of ``canvas_size`` (H, W); a single [x, y] becomes
    (1, 2)."""

    __slots__ = ("canvas_size",)
    _meta = ("canvas_size",)

    def __init__(self, data, *, canvas_size, dtype=None, device=None, requires_grad=None):
        self._init(data, dtype, device, requires_grad)
        self.canvas_size = canvas_size
        self._check()

    def _check(self):
        self.canvas_size = (int(self.canvas_size[0]), int(self.canvas_size[1]))
        if self.ndim == 1:
            self.array = self.array[None]
        if self.shape[-1] != 2:
            raise ValueError(f"KeyPoints needs shape (..., 2), got {tuple(self.shape)}")

    def wrap_like(self, data, canvas_size=None):
        return KeyPoints.wrap(data, like=self, canvas_size=canvas_size or self.canvas_size)

    def _extra(self):
        return f"canvas_size={self.canvas_size}"


def wrap(wrappee, *, like, **kwargs):
    """``wrappee`` (a plain tensor) as the same typed part as ``like``, with ``like``'s
    metadata (``format``, ``canvas_size``, ...) unless given in ``kwargs``."""
    return type(like).wrap(wrappee, like=like, **kwargs)
