"""ember.vision.transforms.v2: torchvision's ``transforms.v2`` import path. Code written as

    from torchvision.transforms import v2

runs with ``from ember.vision.transforms import v2`` and nothing else changed: the transform
classes (v1 names included, each with its ``get_params``), ``v2.functional`` and the helpers.

    >>> import ember
    >>> from ember.vision.transforms import v2
    >>> from ember.vision import tv_tensors
    >>> img = tv_tensors.Image(ember.zeros(3, 8, 8, dtype=ember.uint8))
    >>> out = v2.Compose([v2.RandomResizedCrop(4), v2.ToDtype(ember.float32, scale=True)])(img)
    >>> type(out).__name__, out.shape, out.dtype == ember.float32
    ('Image', (3, 4, 4), True)
"""
from .. import (JPEG, RGB, AugMix, AutoAugment, AutoAugmentPolicy, CenterCrop,  # noqa: F401
                ClampBoundingBoxes, ColorJitter, Compose, ConvertBoundingBoxFormat,
                ConvertImageDtype, CutMix, ElasticTransform, FiveCrop, GaussianBlur,
                GaussianNoise, Grayscale, Identity, InterpolationMode, Lambda,
                LinearTransformation, MixUp, Normalize, Pad, PILToTensor, RandAugment,
                RandomAdjustSharpness, RandomAffine, RandomApply, RandomAutocontrast,
                RandomChannelPermutation, RandomChoice, RandomCrop, RandomEqualize,
                RandomErasing, RandomGrayscale, RandomHorizontalFlip, RandomInvert,
                RandomIoUCrop, RandomOrder, RandomPerspective, RandomPhotometricDistort,
                RandomPosterize, RandomResize, RandomResizedCrop, RandomRotation,
                RandomShortestSize, RandomSolarize, RandomVerticalFlip, RandomZoomOut, Resize,
                SanitizeBoundingBoxes, ScaleJitter, TenCrop, ToDtype, ToImage, ToPILImage,
                ToPureTensor, ToTensor, Transform, TrivialAugmentWide, UniformTemporalSubsample,
                check_type, get_bounding_boxes, get_keypoints, has_all, has_any, query_chw,
                query_size)
import sys as _sys

from .. import functional  # noqa: F401

# ``v2.functional`` is the one functional module; this makes the dotted path importable too
# (``from ember.vision.transforms.v2.functional import resize``)
_sys.modules.setdefault(f"{__name__}.functional", functional)

__all__ = [name for name in dir() if not name.startswith("_")]
