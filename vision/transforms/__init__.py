"""ember.vision.transforms: image transforms on PIL images and (..., C, H, W) tensors, acting jointly
on a sample's typed parts (``Image``, ``BoundingBoxes``, ``Mask``, ``KeyPoints``, ``Video`` from
``ember.vision.tv_tensors``). ``ember.vision.transforms.v2`` is the same surface under torchvision's
v2 path.

    >>> import ember
    >>> from ember.vision import transforms as T
    >>> from ember.vision.tv_tensors import BoundingBoxes
    >>> img = ember.zeros(3, 10, 20, dtype=ember.uint8)
    >>> boxes = BoundingBoxes([[0, 0, 5, 5]], format="XYXY", canvas_size=(10, 20))
    >>> img2, boxes2 = T.RandomHorizontalFlip(p=1.0)(img, boxes)
    >>> boxes2.tolist()
    [[15, 0, 20, 5]]
"""
from . import functional, parts  # noqa: F401
from ._autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide  # noqa: F401
from ._base import (Transform, check_type, get_bounding_boxes, get_keypoints,  # noqa: F401
                    has_all, has_any, query_chw, query_size)
from ._container import RandomApply, RandomChoice, RandomOrder  # noqa: F401
from ._detection import (ClampBoundingBoxes, ConvertBoundingBoxFormat, RandomIoUCrop,  # noqa: F401
                         RandomResize, RandomShortestSize, RandomZoomOut, SanitizeBoundingBoxes,
                         ScaleJitter)
from ._image import InterpolationMode  # noqa: F401
from ._misc import (JPEG, RGB, ElasticTransform, FiveCrop, GaussianNoise, Identity,  # noqa: F401
                    LinearTransformation, RandomAdjustSharpness, RandomAutocontrast,
                    RandomChannelPermutation, RandomEqualize, RandomInvert,
                    RandomPhotometricDistort, RandomPosterize, RandomSolarize, TenCrop, ToDtype,
                    ToImage, ToPureTensor, UniformTemporalSubsample)
from ._mix import CutMix, MixUp  # noqa: F401
from .transforms import (CenterCrop, ColorJitter, Compose, ConvertImageDtype, GaussianBlur,  # noqa: F401
                         Grayscale, Lambda, Normalize, Pad, PILToTensor, RandomAffine,
                         RandomCrop, RandomErasing, RandomGrayscale, RandomHorizontalFlip,
                         RandomPerspective, RandomResizedCrop, RandomRotation,
                         RandomVerticalFlip, Resize, ToPILImage, ToTensor)

__all__ = ['AugMix', 'AutoAugment', 'AutoAugmentPolicy', 'CenterCrop', 'ClampBoundingBoxes',
           'ColorJitter', 'Compose', 'ConvertBoundingBoxFormat', 'ConvertImageDtype', 'CutMix',
           'ElasticTransform', 'FiveCrop', 'GaussianBlur', 'GaussianNoise', 'Grayscale',
           'Identity', 'InterpolationMode', 'JPEG', 'Lambda', 'LinearTransformation', 'MixUp',
           'Normalize', 'PILToTensor', 'Pad', 'RGB', 'RandAugment', 'RandomAdjustSharpness',
           'RandomAffine', 'RandomApply', 'RandomAutocontrast', 'RandomChannelPermutation',
           'RandomChoice', 'RandomCrop', 'RandomEqualize', 'RandomErasing', 'RandomGrayscale',
           'RandomHorizontalFlip', 'RandomInvert', 'RandomIoUCrop', 'RandomOrder',
           'RandomPerspective', 'RandomPhotometricDistort', 'RandomPosterize', 'RandomResize',
           'RandomResizedCrop', 'RandomRotation', 'RandomShortestSize', 'RandomSolarize',
           'RandomVerticalFlip', 'RandomZoomOut', 'Resize', 'SanitizeBoundingBoxes',
           'ScaleJitter', 'TenCrop', 'ToDtype', 'ToImage', 'ToPILImage', 'ToPureTensor',
           'ToTensor', 'Transform', 'TrivialAugmentWide', 'UniformTemporalSubsample',
           'check_type', 'functional', 'get_bounding_boxes', 'get_keypoints', 'has_all',
           'has_any', 'parts', 'query_chw', 'query_size']

try:
    from ._presets import ImageClassification  # noqa: F401
    __all__.append("ImageClassification")
except ImportError:
    pass


def __getattr__(name):
    if name == "v2":        # ember.vision.transforms.v2 without an explicit import
        import importlib
        mod = importlib.import_module(f"{__name__}.v2")
        globals()["v2"] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
