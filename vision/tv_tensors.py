"""ember.vision.tv_tensors: torchvision's ``tv_tensors`` import path for the typed sample parts.

``Image`` (..., C, H, W), ``Video`` (..., T, C, H, W), ``Mask`` (..., H, W),
``BoundingBoxes(data, format=..., canvas_size=(H, W), clamping_mode="soft")`` with
``BoundingBoxFormat`` (XYXY, XYWH, CXCYWH), ``KeyPoints(data, canvas_size=(H, W))`` (..., 2), their
base ``TVTensor`` and ``wrap(tensor, like=part)``. The transforms move each part with the image.

    >>> import ember
    >>> from ember.vision import tv_tensors
    >>> b = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(8, 8))
    >>> b.format == tv_tensors.BoundingBoxFormat.XYXY, b.canvas_size, b.clamping_mode
    (True, (8, 8), 'soft')
    >>> type(tv_tensors.wrap(b + 1, like=b)).__name__
    'BoundingBoxes'
"""
from .transforms.parts import (BoundingBoxes, BoundingBoxFormat, Image, KeyPoints, Mask,  # noqa: F401
                               TVTensor, Video, is_rotated_bounding_format, wrap)

__all__ = ["BoundingBoxes", "BoundingBoxFormat", "Image", "KeyPoints", "Mask", "TVTensor",
           "Video", "is_rotated_bounding_format", "wrap"]
