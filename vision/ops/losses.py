"""Detection losses: sigmoid focal loss and the IoU-family box regression losses.

The box losses compare matched pairs: ``boxes1[i]`` with ``boxes2[i]`` over (..., 4) XYXY
boxes, giving (...,) losses before ``reduction``. Integer boxes are computed in float32.
"""
from __future__ import annotations

import ember
from ember.nn import functional as F
from ember._tensor import Tensor

from ._utils import _check_reduction, _reduce, _upcast_float
from .boxes import _aspect_term

__all__ = ["sigmoid_focal_loss", "generalized_box_iou_loss", "distance_box_iou_loss",
           "complete_box_iou_loss"]


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2.0,
                       reduction: str = "none") -> Tensor:
    """Focal loss (RetinaNet) on logits: ``BCE * (1 - p_t) ** gamma``, weighted by ``alpha`` for
    positives and ``1 - alpha`` for negatives (``alpha < 0`` disables it)."""
    _check_reduction(reduction)
    p = ember.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _pair_inter_union(b1, b2):
    """Intersection and union of matched boxes (...,); the intersection of disjoint boxes is
    0 with no gradient."""
    x1, y1, x2, y2 = b1.unbind(-1)
    u1, v1, u2, v2 = b2.unbind(-1)
    ix1, iy1 = ember.maximum(x1, u1), ember.maximum(y1, v1)
    ix2, iy2 = ember.minimum(x2, u2), ember.minimum(y2, v2)
    overlap = (iy2 > iy1) & (ix2 > ix1)
    inter = ember.where(overlap, (ix2 - ix1) * (iy2 - iy1), ember.zeros_like(x1))
    union = (x2 - x1) * (y2 - y1) + (u2 - u1) * (v2 - v1) - inter
    return inter, union


def _hull(b1, b2):
    x1, y1, x2, y2 = b1.unbind(-1)
    u1, v1, u2, v2 = b2.unbind(-1)
    return ember.minimum(x1, u1), ember.minimum(y1, v1), ember.maximum(x2, u2), \
        ember.maximum(y2, v2)


def _prep(boxes1, boxes2, reduction):
    _check_reduction(reduction)
    for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
        if not isinstance(b, Tensor) or b.ndim < 1 or b.shape[-1] != 4:
            raise ValueError(f"{name} should be a Tensor of shape (..., 4), got "
                             f"{getattr(b, 'shape', type(b).__name__)}")
    return _upcast_float(boxes1), _upcast_float(boxes2)


def generalized_box_iou_loss(boxes1, boxes2, reduction: str = "none",
                             eps: float = 1e-7) -> Tensor:
    """``1 - GIoU`` of matched boxes (Rezatofighi et al. 2019): unlike ``1 - IoU`` it still
    has a gradient when the boxes do not overlap. ``eps`` guards the divisions.

        >>> a = ember.tensor([[0.0, 0.0, 2.0, 2.0]])
        >>> round(generalized_box_iou_loss(a, a + 1.0).item(), 4)
        1.0794
    """
    b1, b2 = _prep(boxes1, boxes2, reduction)
    inter, union = _pair_inter_union(b1, b2)
    iou = inter / (union + eps)
    cx1, cy1, cx2, cy2 = _hull(b1, b2)
    hull = (cx2 - cx1) * (cy2 - cy1)
    return _reduce(1 - (iou - (hull - union) / (hull + eps)), reduction)


def _diou_loss(b1, b2, eps):
    """(``1 - DIoU``, IoU) of matched boxes."""
    inter, union = _pair_inter_union(b1, b2)
    iou = inter / (union + eps)
    cx1, cy1, cx2, cy2 = _hull(b1, b2)
    diag2 = (cx2 - cx1) ** 2 + (cy2 - cy1) ** 2 + eps
    x1, y1, x2, y2 = b1.unbind(-1)
    u1, v1, u2, v2 = b2.unbind(-1)
    dist2 = ((x1 + x2) / 2 - (u1 + u2) / 2) ** 2 + ((y1 + y2) / 2 - (v1 + v2) / 2) ** 2
    return 1 - iou + dist2 / diag2, iou


def distance_box_iou_loss(boxes1, boxes2, reduction: str = "none",
                          eps: float = 1e-7) -> Tensor:
    """``1 - DIoU`` of matched boxes (Zheng et al. 2020): ``1 - IoU`` plus the squared centre
    distance over the squared diagonal of the enclosing box."""
    b1, b2 = _prep(boxes1, boxes2, reduction)
    return _reduce(_diou_loss(b1, b2, eps)[0], reduction)


def complete_box_iou_loss(boxes1, boxes2, reduction: str = "none",
                          eps: float = 1e-7) -> Tensor:
    """``1 - CIoU`` of matched boxes: the distance-IoU loss plus ``alpha * v`` for the
    aspect-ratio mismatch ``v``, with ``alpha = v / (1 - IoU + v + eps)`` held constant.
    As torchvision does, the distance-IoU part uses the default ``eps`` (1e-7) and ``eps``
    enters only ``alpha``."""
    b1, b2 = _prep(boxes1, boxes2, reduction)
    diou, iou = _diou_loss(b1, b2, 1e-7)
    x1, y1, x2, y2 = b1.unbind(-1)
    u1, v1, u2, v2 = b2.unbind(-1)
    v = _aspect_term(u2 - u1, v2 - v1, x2 - x1, y2 - y1)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(diou + alpha * v, reduction)
