"""Detection ops and shared model blocks, one family per module:

* ``boxes``: conversions, areas, IoU / generalized / distance / complete IoU, masks to
  boxes, clipping, NMS;
* ``losses``: sigmoid focal loss and the generalized / distance / complete IoU losses;
* ``roi``: RoIAlign, RoIPool, PSRoIAlign, PSRoIPool (functions and modules);
* ``poolers``: MultiScaleRoIAlign;
* ``deform_conv``: deformable convolution v1/v2;
* ``feature_pyramid_network``: FPN and its extra blocks;
* ``misc``: FrozenBatchNorm2d, Conv2dNormActivation, SqueezeExcitation, MLP, StochasticDepth.

Boxes are (N, 4) tensors in XYXY unless said otherwise; everything that returns values (not
indices) is built from ember ops, so it is differentiable.

    >>> import ember
    >>> box_iou(ember.tensor([[0., 0., 2., 2.]]), ember.tensor([[1., 1., 3., 3.]])).tolist()
    [[0.1428571492433548]]
"""
from __future__ import annotations

from . import boxes, deform_conv, feature_pyramid_network, losses, misc, poolers, roi
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image,
                    complete_box_iou, distance_box_iou, generalized_box_iou, masks_to_boxes, nms,
                    remove_small_boxes)
from .deform_conv import DeformConv2d, deform_conv2d
from .feature_pyramid_network import (ExtraFPNBlock, FeaturePyramidNetwork, LastLevelMaxPool,
                                      LastLevelP6P7)
from .losses import (complete_box_iou_loss, distance_box_iou_loss, generalized_box_iou_loss,
                     sigmoid_focal_loss)
from .misc import (MLP, Conv2dNormActivation, FrozenBatchNorm2d, SqueezeExcitation,
                   StochasticDepth, stochastic_depth)
from .poolers import MultiScaleRoIAlign
from .roi import PSRoIAlign, PSRoIPool, RoIAlign, RoIPool, ps_roi_align, ps_roi_pool, roi_align, \
    roi_pool

__all__ = ["box_convert", "box_area", "box_iou", "generalized_box_iou", "distance_box_iou",
           "complete_box_iou", "masks_to_boxes", "nms", "batched_nms", "clip_boxes_to_image",
           "remove_small_boxes", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
           "RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "MultiScaleRoIAlign",
           "deform_conv2d", "DeformConv2d", "FeaturePyramidNetwork", "ExtraFPNBlock",
           "LastLevelMaxPool", "LastLevelP6P7", "sigmoid_focal_loss", "generalized_box_iou_loss",
           "distance_box_iou_loss", "complete_box_iou_loss", "FrozenBatchNorm2d",
           "StochasticDepth", "stochastic_depth", "Conv2dNormActivation", "SqueezeExcitation",
           "MLP"]
