"""Detection transforms: the SSD-style crops and zooms (``RandomIoUCrop``, ``RandomZoomOut``), the
size jitters (``ScaleJitter``, ``RandomShortestSize``, ``RandomResize``) and the box
bookkeeping (``SanitizeBoundingBoxes``, ``ClampBoundingBoxes``, ``ConvertBoundingBoxFormat``).

    >>> import ember
    >>> from ember.vision.transforms.parts import BoundingBoxes
    >>> boxes = BoundingBoxes([[0, 0, 4, 4], [2, 2, 2.5, 9]], format="XYXY", canvas_size=(8, 8))
    >>> out = SanitizeBoundingBoxes()({"boxes": boxes, "labels": ember.tensor([1, 2])})
    >>> out["boxes"].tolist(), out["labels"].tolist()
    ([[0.0, 0.0, 4.0, 4.0]], [1])
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import ember
from ember._tensor import Tensor

from . import _boxes as K
from . import functional as F
from ._base import (Transform, fill_for, flatten, get_bounding_boxes, has_all, has_any,
                    is_pure_tensor, query_size)
from ._image import InterpolationMode, as_mode, is_pil
from .parts import BoundingBoxes, Image, Mask, as_format


class RandomIoUCrop(Transform):
    """The SSD crop: pick a minimum IoU from ``sampler_options`` (1.0 or more: keep the sample
    as is), then try ``trials`` random crops of ``min_scale``..``max_scale`` of each side with
    an aspect ratio in range, keeping the first whose window holds some box centres with an
    IoU above the minimum. Boxes whose centre falls outside become all zeros: follow with
    ``SanitizeBoundingBoxes``."""

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        self.min_scale, self.max_scale = min_scale, max_scale
        self.min_aspect_ratio, self.max_aspect_ratio = min_aspect_ratio, max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None \
            else list(sampler_options)
        self.trials = trials

    def check_inputs(self, flat_inputs):
        if not (has_all(flat_inputs, BoundingBoxes)
                and has_any(flat_inputs, is_pil, Image, is_pure_tensor)):
            raise TypeError(f"{type(self).__name__}() requires input sample to contain tensor or "
                            "PIL images and bounding boxes. Sample can also contain masks.")

    def make_params(self, parts):
        h, w = query_size(parts)
        boxes = get_bounding_boxes(parts)
        xyxy = K.convert(F._host(boxes), boxes.format.value, "XYXY").astype(np.float64)
        cx, cy = 0.5 * (xyxy[:, 0] + xyxy[:, 2]), 0.5 * (xyxy[:, 1] + xyxy[:, 3])
        g = self._rng()
        while True:
            min_iou = self.options[int(g.integers(len(self.options)))]
            if min_iou >= 1.0:
                return {}
            for _ in range(self.trials):
                r = self.min_scale + (self.max_scale - self.min_scale) * g.random(2)
                new_w, new_h = int(w * r[0]), int(h * r[1])
                if new_h == 0 or not self.min_aspect_ratio <= new_w / new_h \
                        <= self.max_aspect_ratio:
                    continue
                r = g.random(2)
                left, top = int((w - new_w) * r[0]), int((h - new_h) * r[1])
                right, bottom = left + new_w, top + new_h
                if left == right or top == bottom:
                    continue
                inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not inside.any():
                    continue
                if _iou(xyxy[inside], [left, top, right, bottom]).max() < min_iou:
                    continue
                return {"top": top, "left": left, "height": new_h, "width": new_w,
                        "inside": inside}

    def transform(self, inpt, params):
        if not params:
            return inpt
        out = F.crop(inpt, params["top"], params["left"], params["height"], params["width"])
        if isinstance(out, BoundingBoxes):
            xp = ember._backend.namespace(out.array)
            out.array[xp.asarray(~params["inside"])] = 0
        return out


def _iou(xyxy, box):
    x0 = np.maximum(xyxy[:, 0], box[0])
    y0 = np.maximum(xyxy[:, 1], box[1])
    x1 = np.minimum(xyxy[:, 2], box[2])
    y1 = np.minimum(xyxy[:, 3], box[3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1])
    union = area + (box[2] - box[0]) * (box[3] - box[1]) - inter
    return inter / union


class RandomZoomOut(Transform):
    """With probability ``p``, place the sample on a canvas ``side_range`` times larger (each
    side), at a random spot, filled with ``fill`` (a value, or a dict per part type)."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        if len(side_range) != 2:
            raise ValueError(f"side_range should be a sequence of length 2, got {side_range}")
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid side range provided {side_range}.")
        self.fill, self.side_range, self.p = fill, tuple(side_range), p

    def make_params(self, parts):
        g = self._rng()
        if g.random() >= self.p:
            return None
        h, w = query_size(parts)
        r = self.side_range[0] + g.random() * (self.side_range[1] - self.side_range[0])
        cw, ch = int(w * r), int(h * r)
        r = g.random(2)
        left, top = int((cw - w) * r[0]), int((ch - h) * r[1])
        return {"padding": [left, top, cw - (left + w), ch - (top + h)]}

    def transform(self, inpt, params):
        return F.pad(inpt, params["padding"], fill=fill_for(self.fill, inpt))


class _RandomSize(Transform):
    def __init__(self, interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.interpolation, self.antialias = as_mode(interpolation), antialias

    def transform(self, inpt, params):
        return F.resize(inpt, params["size"], self.interpolation, antialias=self.antialias)


class ScaleJitter(_RandomSize):
    """Resize so the sample fits ``target_size`` (h, w), times a scale drawn from
    ``scale_range`` (aspect ratio kept)."""

    def __init__(self, target_size, scale_range=(0.1, 2.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__(interpolation, antialias)
        self.target_size, self.scale_range = tuple(target_size), tuple(scale_range)

    def make_params(self, parts):
        h, w = query_size(parts)
        scale = self.scale_range[0] + self._rng().random() * (self.scale_range[1] -
                                                             self.scale_range[0])
        r = min(self.target_size[1] / h, self.target_size[0] / w) * scale
        return {"size": (int(h * r), int(w * r))}


class RandomShortestSize(_RandomSize):
    """Resize so the shorter side is one of ``min_size`` (chosen at random), the longer side at
    most ``max_size``."""

    def __init__(self, min_size, max_size=None, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__(interpolation, antialias)
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size

    def make_params(self, parts):
        h, w = query_size(parts)
        m = self.min_size[int(self._rng().integers(len(self.min_size)))]
        r = m / min(h, w)
        if self.max_size is not None:
            r = min(r, self.max_size / max(h, w))
        return {"size": (int(h * r), int(w * r))}


class RandomResize(_RandomSize):
    """Resize the shorter side to a size drawn from [min_size, max_size)."""

    def __init__(self, min_size, max_size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__(interpolation, antialias)
        self.min_size, self.max_size = int(min_size), int(max_size)

    def make_params(self, parts):
        return {"size": [int(self._rng().integers(self.min_size, self.max_size))]}


def _default_labels(sample):
    """The labels of a sample: a (images, labels) pair's second item, or the "labels"-like key
    of a dict (also as the second item of a pair)."""
    if isinstance(sample, (tuple, list)):
        sample = sample[1]
    if is_pure_tensor(sample):
        return sample
    if not isinstance(sample, Mapping):
        raise ValueError("When using the default labels_getter, the input passed to forward must "
                         "be a dictionary or a two-tuple whose second item is a dictionary or a "
                         f"tensor, but got {type(sample).__name__} instead.")
    keys = [k for k in sample if isinstance(k, str)]
    key = next((k for k in keys if k.lower() == "labels"), None)
    if key is None:
        key = next((k for k in keys if "label" in k.lower()), None)
    if key is None:
        raise ValueError("Could not infer where the labels are in the sample. Try passing a "
                         "callable as the labels_getter parameter? If there are no labels in "
                         "the sample by design, pass labels_getter=None.")
    return sample[key]


class SanitizeBoundingBoxes(Transform):
    """Drop degenerate boxes (a side below ``min_size``, area below ``min_area``, a corner off
    the canvas) with their labels (found by ``labels_getter``: "default", a callable, or None)
    and masks."""

    def __init__(self, min_size=1.0, min_area=1.0, labels_getter="default"):
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        if min_area < 1:
            raise ValueError(f"min_area must be >= 1, got {min_area}.")
        if not (labels_getter in ("default", None) or callable(labels_getter)):
            raise ValueError(f"labels_getter should either be 'default', a callable, or None, "
                             f"but got {labels_getter}.")
        self.min_size, self.min_area, self.labels_getter = min_size, min_area, labels_getter

    def _labels(self, sample):
        if self.labels_getter is None:
            return ()
        labels = _default_labels(sample) if self.labels_getter == "default" \
            else self.labels_getter(sample)
        if labels is None:
            return ()
        labels = (labels,) if isinstance(labels, Tensor) else labels
        if not all(isinstance(x, Tensor) for x in labels):
            raise ValueError("The labels in the input to forward() must be a tensor or None, got "
                             f"{type(labels).__name__} instead.")
        return tuple(labels)

    def __call__(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        labels = self._labels(sample)
        leaves, rebuild = flatten(sample)
        boxes = get_bounding_boxes(leaves)
        for lab in labels:
            if lab.shape[0] != boxes.shape[0]:
                raise ValueError(f"Number of boxes (shape={tuple(boxes.shape)}) must match the "
                                 f"number of labels. Found labels with shape="
                                 f"{tuple(lab.shape)}).")
        valid = K.sanitize_mask(F._host(boxes), boxes.format.value, boxes.canvas_size,
                                self.min_size, self.min_area)
        out = []
        for x in leaves:
            is_label = any(x is lab for lab in labels)
            if not (is_label or isinstance(x, (BoundingBoxes, Mask))):
                out.append(x)
                continue
            if x.ndim == 0 or x.shape[0] != len(valid):
                out.append(x)
                continue
            kept = Tensor._make(x.array[ember._backend.namespace(x.array).asarray(valid)])
            out.append(type(x).wrap(kept, like=x) if isinstance(x, (BoundingBoxes, Mask))
                       else kept)
        return rebuild(out)


class ClampBoundingBoxes(Transform):
    """Clip the boxes to their canvas (``clamping_mode``: "auto" takes the boxes' own)."""

    def __init__(self, clamping_mode="auto"):
        self.clamping_mode = clamping_mode

    def accepts(self, inpt):
        return isinstance(inpt, BoundingBoxes)

    def transform(self, inpt, params):
        return F.clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


class ConvertBoundingBoxFormat(Transform):
    """Boxes to ``format`` (XYXY, XYWH or CXCYWH)."""

    def __init__(self, format):
        self.format = as_format(format)

    def accepts(self, inpt):
        return isinstance(inpt, BoundingBoxes)

    def transform(self, inpt, params):
        return F.convert_bounding_box_format(inpt, new_format=self.format)

