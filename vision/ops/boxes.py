"""Box arithmetic and suppression: conversions, areas, the IoU family (IoU, generalized,
distance, complete), masks to boxes, clipping, small-box removal and NMS.

Boxes are XYXY ``(x1, y1, x2, y2)``; pairwise functions take ``(..., N, 4)`` and
``(..., M, 4)`` and give ``(..., N, M)``. Everything but NMS and the index-returning helpers
is built from differentiable ember ops.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember._tensor import Tensor

from ._utils import _boxes, _const, _host, _upcast, _xp

__all__ = ["box_convert", "box_area", "box_iou", "generalized_box_iou", "distance_box_iou",
           "complete_box_iou", "masks_to_boxes", "clip_boxes_to_image", "remove_small_boxes",
           "nms", "batched_nms"]


def box_convert(boxes, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert (..., 4) boxes between "xyxy", "xywh" (corner + size) and "cxcywh"
    (centre + size)."""
    fmts = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in fmts or out_fmt not in fmts:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt!r} and "
                         f"out_fmt {out_fmt!r}; formats are {fmts}")
    if not isinstance(boxes, Tensor) or boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise ValueError("boxes should be a Tensor of shape (..., 4), got "
                         f"{getattr(boxes, 'shape', type(boxes).__name__)}")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return ember.stack([a, b, c, d], dim=-1)


def box_area(boxes) -> Tensor:
    """Areas (...,) of XYXY boxes (..., 4)."""
    if not isinstance(boxes, Tensor) or boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise ValueError("boxes should be a Tensor of shape (..., 4), got "
                         f"{getattr(boxes, 'shape', type(boxes).__name__)}")
    boxes = _upcast(boxes)
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _inter_union(b1, b2):
    a1, a2 = box_area(b1), box_area(b2)
    lt = ember.maximum(b1[..., None, :2], b2[..., None, :, :2])
    rb = ember.minimum(b1[..., None, 2:], b2[..., None, :, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, a1[..., None] + a2[..., None, :] - inter


def _hull_wh(b1, b2):
    """Width and height of the smallest box enclosing each pair, (..., N, M, 2)."""
    lt = ember.minimum(b1[..., None, :2], b2[..., None, :, :2])
    rb = ember.maximum(b1[..., None, 2:], b2[..., None, :, 2:])
    return _upcast(rb - lt).clamp(min=0)


def box_iou(boxes1, boxes2) -> Tensor:
    """Pairwise IoU (..., N, M) of XYXY boxes (..., N, 4) and (..., M, 4)."""
    inter, union = _inter_union(_boxes(boxes1, "boxes1", True), _boxes(boxes2, "boxes2", True))
    return inter / union


def generalized_box_iou(boxes1, boxes2) -> Tensor:
    """Pairwise generalized IoU (..., N, M): IoU minus the share of the enclosing box that
    neither box covers (in [-1, 1])."""
    inter, union = _inter_union(_boxes(boxes1, "boxes1", True), _boxes(boxes2, "boxes2", True))
    iou = inter / union
    wh = _hull_wh(boxes1, boxes2)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def _diou_iou(boxes1, boxes2, eps):
    """(distance IoU, IoU), both (..., N, M)."""
    iou = box_iou(boxes1, boxes2)
    wh = _hull_wh(boxes1, boxes2)
    diag2 = wh[..., 0] ** 2 + wh[..., 1] ** 2 + eps
    cx1 = (boxes1[..., 0] + boxes1[..., 2]) / 2
    cy1 = (boxes1[..., 1] + boxes1[..., 3]) / 2
    cx2 = (boxes2[..., 0] + boxes2[..., 2]) / 2
    cy2 = (boxes2[..., 1] + boxes2[..., 3]) / 2
    dist2 = _upcast(cx1[..., None] - cx2[..., None, :]) ** 2 + \
        _upcast(cy1[..., None] - cy2[..., None, :]) ** 2
    return iou - dist2 / diag2, iou


def distance_box_iou(boxes1, boxes2, eps: float = 1e-7) -> Tensor:
    """Pairwise distance IoU (DIoU, Zheng et al. 2020), (..., N, M): IoU minus the squared
    distance of the box centres over the squared diagonal of their enclosing box. ``eps``
    keeps the division finite for degenerate pairs."""
    b1 = _upcast(_boxes(boxes1, "boxes1", True))
    b2 = _upcast(_boxes(boxes2, "boxes2", True))
    return _diou_iou(b1, b2, eps)[0]


def _aspect_term(w1, h1, w2, h2):
    """CIoU's aspect-ratio consistency ``v = 4/pi^2 (atan(w1/h1) - atan(w2/h2))^2``."""
    return (4 / math.pi ** 2) * (ember.atan(w1 / h1) - ember.atan(w2 / h2)) ** 2


def complete_box_iou(boxes1, boxes2, eps: float = 1e-7) -> Tensor:
    """Pairwise complete IoU (CIoU), (..., N, M): distance IoU minus ``alpha * v``, where
    ``v`` measures how far the aspect ratios differ and ``alpha = v / (1 - IoU + v)`` is
    treated as a constant (no gradient flows through it), as in the paper."""
    b1 = _upcast(_boxes(boxes1, "boxes1", True))
    b2 = _upcast(_boxes(boxes2, "boxes2", True))
    diou, iou = _diou_iou(b1, b2, eps)
    v = _aspect_term(b1[..., None, 2] - b1[..., None, 0], b1[..., None, 3] - b1[..., None, 1],
                     b2[..., None, :, 2] - b2[..., None, :, 0],
                     b2[..., None, :, 3] - b2[..., None, :, 1])
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def masks_to_boxes(masks) -> Tensor:
    """The tightest XYXY box (float32, (N, 4)) around the non-zero pixels of each of the
    (N, H, W) ``masks``; pixel indices are inclusive, so a one-pixel mask at (y, x) gives
    ``[x, y, x, y]``. An empty mask gives ``[0, 0, 0, 0]``.

        >>> m = ember.zeros(1, 4, 5, dtype=ember.bool)
        >>> m[0, 1:3, 2] = True
        >>> masks_to_boxes(m).tolist()
        [[2.0, 1.0, 2.0, 2.0]]
    """
    if not isinstance(masks, Tensor):
        raise TypeError(f"masks should be a Tensor (N, H, W), got {type(masks).__name__}")
    xp = _xp(masks)
    if masks.numel() == 0:
        return _const(xp, xp.zeros((0, 4), np.float32))
    if masks.ndim != 3:
        raise ValueError(f"masks should have shape (N, H, W), got {tuple(masks.shape)}")
    m = masks.detach().array.astype(bool)
    h, w = m.shape[1:]
    rows, cols = m.any(axis=2), m.any(axis=1)           # (N, H), (N, W)
    y1, x1 = rows.argmax(axis=1), cols.argmax(axis=1)
    y2 = (h - 1) - rows[:, ::-1].argmax(axis=1)
    x2 = (w - 1) - cols[:, ::-1].argmax(axis=1)
    out = xp.stack([x1, y1, x2, y2], axis=1).astype(np.float32)
    out[~rows.any(axis=1)] = 0
    return _const(xp, out)


def clip_boxes_to_image(boxes, size) -> Tensor:
    """Clip XYXY boxes (..., 4) to an image of ``size`` (H, W)."""
    h, w = size
    x = boxes[..., 0::2].clamp(min=0, max=w)
    y = boxes[..., 1::2].clamp(min=0, max=h)
    return ember.stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], dim=-1)


def remove_small_boxes(boxes, min_size: float) -> Tensor:
    """Indices (int64) of the boxes whose sides are both >= ``min_size``."""
    b = _host(_boxes(boxes))
    keep = np.nonzero(((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size))[0]
    return ember.tensor(keep.astype(np.int64), device=boxes.device)


def nms(boxes, scores, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: keep the best-scoring box, drop those overlapping it by
    IoU > ``iou_threshold``, repeat. Returns int64 indices sorted by decreasing score."""
    b = _host(_boxes(boxes)).astype(np.float64)
    s = _host(scores)
    if s.ndim != 1 or len(s) != len(b):
        raise ValueError(f"scores should have shape ({len(b)},), got {s.shape}")
    order = np.argsort(-s, kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = []
    alive = np.ones(len(b), dtype=bool)
    for pos, i in enumerate(order):
        if not alive[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        rest = rest[alive[rest]]
        if not len(rest):
            continue
        lt = np.maximum(b[i, :2], b[rest, :2])
        rb = np.minimum(b[i, 2:], b[rest, 2:])
        wh = np.clip(rb - lt, 0, None)
        inter = wh[:, 0] * wh[:, 1]
        iou = inter / (area[i] + area[rest] - inter)
        alive[rest[iou > iou_threshold]] = False
    return ember.tensor(np.asarray(keep, dtype=np.int64), device=boxes.device)


def batched_nms(boxes, scores, idxs, iou_threshold: float) -> Tensor:
    """NMS within each category ``idxs`` (N,) independently (boxes of different categories never
    suppress each other). Returns int64 indices sorted by decreasing score."""
    b = _host(_boxes(boxes)).astype(np.float64)
    if b.size == 0:
        return ember.tensor(np.zeros(0, np.int64), device=boxes.device)
    cats = _host(idxs).astype(np.float64)
    offset = cats[:, None] * (b.max() - b.min() + 1)
    shifted = ember.tensor(b - b.min() + offset)
    return nms(shifted, scores, iou_threshold).to(boxes.device)
