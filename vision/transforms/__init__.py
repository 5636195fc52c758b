"""ember.vision.transforms: image transforms on PIL images and (..., C, H, W) tensors, acting jointly
on a sample's typed parts (``parts.Image``, ``BoundingBoxes``, ``Mask``, ``KeyPoints``, ``Video``).

    >>> import ember
    >>> from ember.vision import transforms as T
    >>> from ember.vision.transforms.parts import BoundingBoxes
    >>> img = ember.zeros(3, 10, 20, dtype=ember.uint8)
    >>> boxes = BoundingBoxes([[0, 0, 5, 5]], format="XYXY", canvas_size=(10, 20))
    >>> img2, boxes2 = T.RandomHorizontalFlip(p=1.0)(img, boxes)
    >>> boxes2.tolist()
    [[15, 0, 20, 5]]
"""
from . import functional, parts  # noqa: F401
from ._autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide  # noqa: F401
from ._base import Transform  # noqa: F401
from ._image import InterpolationMode  # noqa: F401
from ._mix import CutMix, MixUp  # noqa: F401
from .transforms import (CenterCrop, ColorJitter, Compose, ConvertImageDtype, GaussianBlur,  # noqa: F401
                         Grayscale, Lambda, Normalize, Pad, PILToTensor, RandomAffine,
                         RandomCrop, RandomErasing, RandomGrayscale, RandomHorizontalFlip,
                         RandomPerspective, RandomResizedCrop, RandomRotation,
                         RandomVerticalFlip, Resize, ToPILImage, ToTensor)


__all__ = ['AugMix', 'AutoAugment', 'AutoAugmentPolicy', 'CenterCrop', 'ColorJitter', 'Compose',
           'ConvertImageDtype', 'CutMix', 'GaussianBlur', 'Grayscale', 'InterpolationMode',
           'Lambda', 'MixUp', 'Normalize', 'PILToTensor', 'Pad', 'RandAugment', 'RandomAffine',
           'RandomCrop', 'RandomErasing', 'RandomGrayscale', 'RandomHorizontalFlip',
           'RandomPerspective', 'RandomResizedCrop', 'RandomRotation', 'RandomVerticalFlip',
           'Resize', 'ToPILImage', 'ToTensor', 'Transform', 'TrivialAugmentWide', 'functional',
           'parts']

try:
    from ._presets import ImageClassification  # noqa: F401
    __all__.append("ImageClassification")
except ImportError:
    pass
