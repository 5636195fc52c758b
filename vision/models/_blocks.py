"""Building blocks the model families share (state-dict keys as torchvision's): the layers
live in ``ember.vision.ops``; ``make_divisible`` is the models' channel rounding.

    >>> from ember.vision.models._blocks import Conv2dNormActivation
    >>> block = Conv2dNormActivation(3, 16, stride=2)  # conv (no bias) -> BatchNorm2d -> ReLU
    >>> [type(m).__name__ for m in block], block[0].bias is None
    (['Conv2d', 'BatchNorm2d', 'ReLU'], True)
"""
from __future__ import annotations

from ..ops import MLP, Conv2dNormActivation, SqueezeExcitation, StochasticDepth

__all__ = ["Conv2dNormActivation", "SqueezeExcitation", "StochasticDepth", "MLP",
           "make_divisible"]


def make_divisible(v, divisor, min_value=None):
    """Round ``v`` to the nearest multiple of ``divisor`` (>= ``min_value``), never going down by
    more than 10% (the channel rounding MobileNet and EfficientNet use)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v
