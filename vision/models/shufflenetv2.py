"""ShuffleNetV2 x0.5/x1.0/x1.5/x2.0 (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import shufflenet_v2_x0_5
    >>> shufflenet_v2_x0_5(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import ember
from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["ShuffleNetV2", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
           "shufflenet_v2_x2_0", "ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights",
           "ShuffleNet_V2_X1_5_Weights", "ShuffleNet_V2_X2_0_Weights"]


def channel_shuffle(x, groups):
    """(N, g*c, H, W) -> interleave the ``groups`` channel groups."""
    n, ch, h, w = x.shape
    x = x.reshape(n, groups, ch // groups, h, w).transpose(1, 2)
    return x.reshape(n, ch, h, w)


def _dw(i, o, stride):
    return nn.Conv2d(i, o, 3, stride, 1, bias=False, groups=i)


class InvertedResidual(nn.Module):
    """Stride 1: split channels, transform one half. Stride > 1: both branches see the whole
    input (``branch1`` downsamples). Then concatenate and shuffle."""

    def __init__(self, inp, oup, stride):
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError(f"illegal stride value {stride}")
        self.stride = stride
        bf = oup // 2
        if stride == 1 and inp != bf << 1:
            raise ValueError(f"invalid combination of stride {stride}, inp {inp} and oup {oup}: "
                             "with stride 1, inp must equal oup // 2 * 2")
        if stride > 1:
            self.branch1 = nn.Sequential(_dw(inp, inp, stride), nn.BatchNorm2d(inp),
                                         nn.Conv2d(inp, bf, 1, 1, 0, bias=False),
                                         nn.BatchNorm2d(bf), nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if stride > 1 else bf, bf, 1, 1, 0, bias=False), nn.BatchNorm2d(bf),
            nn.ReLU(inplace=True), _dw(bf, bf, stride), nn.BatchNorm2d(bf),
            nn.Conv2d(bf, bf, 1, 1, 0, bias=False), nn.BatchNorm2d(bf), nn.ReLU(inplace=True))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat([x1, self.branch2(x2)], dim=1)
        else:
            out = ember.cat([self.branch1(x), self.branch2(x)], dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNetV2 on (N, 3, H, W) -> (N, num_classes); ``stages_repeats`` (3 ints) and
    ``stages_out_channels`` (5 ints: conv1, stage2-4, conv5)."""

    def __init__(self, stages_repeats, stages_out_channels, num_classes=1000,
                 inverted_residual=InvertedResidual):
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        cin = stages_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for i, (repeats, cout) in enumerate(zip(stages_repeats, stages_out_channels[1:4])):
            seq = [inverted_residual(cin, cout, 2)]
            seq += [inverted_residual(cout, cout, 1) for _ in range(repeats - 1)]
            setattr(self, f"stage{i + 2}", nn.Sequential(*seq))
            cin = cout
        cout = stages_out_channels[-1]
        self.conv5 = nn.Sequential(nn.Conv2d(cin, cout, 1, 1, 0, bias=False),
                                   nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.fc = nn.Linear(cout, num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))


def _shufflenetv2(channels, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    return _load(ShuffleNetV2([4, 8, 4], channels, **kwargs), weights, progress)


class ShuffleNet_V2_X0_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/shufflenetv2_x0.5-f707e7126e.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 1366792,
            "recipe": 'https://github.com/ericsun99/Shufflenet-v2-Pytorch',
            "_metrics": {'ImageNet-1K': {'acc@1': 60.552, 'acc@5': 81.746}},
            "_ops": 0.04,
            "_file_size": 5.282,
            "_docs": (
                'These weights were trained from scratch to reproduce closely the results of '
                'the paper.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/shufflenetv2_x1-5666bf0f80.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 2278604,
            "recipe": 'https://github.com/ericsun99/Shufflenet-v2-Pytorch',
            "_metrics": {'ImageNet-1K': {'acc@1': 69.362, 'acc@5': 88.316}},
            "_ops": 0.145,
            "_file_size": 8.791,
            "_docs": (
                'These weights were trained from scratch to reproduce closely the results of '
                'the paper.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/shufflenetv2_x1_5-3c479a10.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 3503624,
            "recipe": 'https://github.com/pytorch/vision/pull/5906',
            "_metrics": {'ImageNet-1K': {'acc@1': 72.996, 'acc@5': 91.086}},
            "_ops": 0.296,
            "_file_size": 13.557,
            "_docs": (
                "These weights were trained from scratch by using TorchVision's `new training "
                'recipe '
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X2_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/shufflenetv2_x2_0-8be3c8ee.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 7393996,
            "recipe": 'https://github.com/pytorch/vision/pull/5906',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.23, 'acc@5': 93.006}},
            "_ops": 0.583,
            "_file_size": 28.433,
            "_docs": (
                "These weights were trained from scratch by using TorchVision's `new training "
                'recipe '
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=ShuffleNet_V2_X0_5_Weights)
def shufflenet_v2_x0_5(*, weights=None, progress=True, **kwargs):
    """ShuffleNetV2 with 0.5x output channels ("ShuffleNet V2: Practical Guidelines")."""
    return _shufflenetv2([24, 48, 96, 192, 1024], weights, progress, **kwargs)


@register_model(weights=ShuffleNet_V2_X1_0_Weights)
def shufflenet_v2_x1_0(*, weights=None, progress=True, **kwargs):
    """ShuffleNetV2 with 1.0x output channels."""
    return _shufflenetv2([24, 116, 232, 464, 1024], weights, progress, **kwargs)


@register_model(weights=ShuffleNet_V2_X1_5_Weights)
def shufflenet_v2_x1_5(*, weights=None, progress=True, **kwargs):
    """ShuffleNetV2 with 1.5x output channels."""
    return _shufflenetv2([24, 176, 352, 704, 1024], weights, progress, **kwargs)


@register_model(weights=ShuffleNet_V2_X2_0_Weights)
def shufflenet_v2_x2_0(*, weights=None, progress=True, **kwargs):
    """ShuffleNetV2 with 2.0x output channels."""
    return _shufflenetv2([24, 244, 488, 976, 2048], weights, progress, **kwargs)
