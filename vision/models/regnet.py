"""RegNetX and RegNetY, every published size (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import regnet_y_400mf
    >>> regnet_y_400mf(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import functools
import math
from collections import OrderedDict

import numpy as np

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import Conv2dNormActivation, SqueezeExcitation, make_divisible
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["RegNet", "BlockParams", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf",
           "regnet_y_3_2gf", "regnet_y_8gf", "regnet_y_16gf", "regnet_y_32gf",
           "regnet_y_128gf", "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf",
           "regnet_x_3_2gf", "regnet_x_8gf", "regnet_x_16gf", "regnet_x_32gf",
           "RegNet_Y_400MF_Weights", "RegNet_Y_800MF_Weights", "RegNet_Y_1_6GF_Weights",
           "RegNet_Y_3_2GF_Weights", "RegNet_Y_8GF_Weights", "RegNet_Y_16GF_Weights",
           "RegNet_Y_32GF_Weights", "RegNet_Y_128GF_Weights", "RegNet_X_400MF_Weights",
           "RegNet_X_800MF_Weights", "RegNet_X_1_6GF_Weights", "RegNet_X_3_2GF_Weights",
           "RegNet_X_8GF_Weights", "RegNet_X_16GF_Weights", "RegNet_X_32GF_Weights"]


class SimpleStemIN(Conv2dNormActivation):
    """3x3 stride-2 conv, BN, activation."""

    def __init__(self, width_in, width_out, norm_layer, activation_layer):
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """1x1 ``a`` -> grouped 3x3 ``b`` (stride) -> optional ``se`` -> 1x1 ``c`` (no activation)."""

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width,
                 bottleneck_multiplier, se_ratio):
        w_b = int(round(width_out * bottleneck_multiplier))
        layers = OrderedDict()
        layers["a"] = Conv2dNormActivation(width_in, w_b, 1, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, 3, stride=stride, groups=w_b // group_width,
                                           norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        if se_ratio:
            layers["se"] = SqueezeExcitation(w_b, int(round(se_ratio * width_in)),
                                             activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, 1, norm_layer=norm_layer,
                                           activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``act(proj(x) + f(x))``; ``proj`` (1x1 conv + BN) only when width or stride change."""

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width=1,
                 bottleneck_multiplier=1.0, se_ratio=None):
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(width_in, width_out, 1, stride=stride,
                                             norm_layer=norm_layer, activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer,
                                     group_width, bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x):
        shortcut = x if self.proj is None else self.proj(x)
        return self.activation(shortcut + self.f(x))


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block{stage}-{i}``; only the first strides/changes width."""

    def __init__(self, width_in, width_out, stride, depth, block_constructor, norm_layer,
                 activation_layer, group_width, bottleneck_multiplier, se_ratio=None,
                 stage_index=0):
        super().__init__()
        for i in range(depth):
            self.add_module(f"block{stage_index}-{i}", block_constructor(
                width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                norm_layer, activation_layer, group_width, bottleneck_multiplier, se_ratio))


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides."""

    def __init__(self, depths, widths, group_widths, bottleneck_multipliers, strides,
                 se_ratio=None):
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth, w_0, w_a, w_m, group_width, bottleneck_multiplier=1.0,
                         se_ratio=None, **kwargs):
        """The quantized-linear design space: block ``j`` has width
        ``w_0 * w_m ** round(log(1 + j * w_a / w_0) / log(w_m))`` rounded to a multiple of 8;
        consecutive blocks of equal width form a stage (computed in float32, as the reference
        implementation does)."""
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("invalid RegNet settings: need w_a >= 0, w_0 > 0 divisible by 8, "
                             "w_m > 1")
        f32 = np.float32
        widths_cont = np.arange(depth).astype(f32) * f32(w_a) + f32(w_0)
        capacity = np.rint(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m))).astype(f32)
        block_widths = (np.rint(f32(w_0) * np.power(f32(w_m), capacity) / f32(8)) * 8)
        block_widths = block_widths.astype(np.int64).tolist()
        stage_widths, stage_depths = [], []
        for w in block_widths:
            if stage_widths and stage_widths[-1] == w:
                stage_depths[-1] += 1
            else:
                stage_widths.append(w)
                stage_depths.append(1)
        n = len(stage_widths)
        bms = [bottleneck_multiplier] * n
        w_bot = [int(w * b) for w, b in zip(stage_widths, bms)]
        gws = [min(group_width, wb) for wb in w_bot]
        w_bot = [make_divisible(wb, g) for wb, g in zip(w_bot, gws)]
        stage_widths = [int(wb / b) for wb, b in zip(w_bot, bms)]
        return cls(stage_depths, stage_widths, gws, bms, [2] * n, se_ratio)

    def _get_expanded_params(self):
        return zip(self.widths, self.strides, self.depths, self.group_widths,
                   self.bottleneck_multipliers)


class RegNet(nn.Module):
    """RegNet on (N, 3, H, W) -> (N, num_classes): ``stem`` -> ``trunk_output`` stages ->
    average pool -> ``fc``."""

    def __init__(self, block_params, num_classes=1000, stem_width=32, stem_type=None,
                 block_type=None, norm_layer=None, activation=None):
        super().__init__()
        stem_type = stem_type or SimpleStemIN
        norm_layer = norm_layer or nn.BatchNorm2d
        block_type = block_type or ResBottleneckBlock
        activation = activation or nn.ReLU
        self.stem = stem_type(3, stem_width, norm_layer, activation)
        width = stem_width
        stages = []
        for i, (w_out, stride, depth, gw, bm) in enumerate(block_params._get_expanded_params()):
            stages.append((f"block{i + 1}", AnyStage(width, w_out, stride, depth, block_type,
                                                     norm_layer, activation, gw, bm,
                                                     block_params.se_ratio, stage_index=i + 1)))
            width = w_out
        self.trunk_output = nn.Sequential(OrderedDict(stages))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=width, out_features=num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.trunk_output(self.stem(x))).flatten(1)
        return self.fc(x)


def _regnet(design, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    params = BlockParams.from_init_params(**design, **{
        k: kwargs.pop(k) for k in ("bottleneck_multiplier",) if k in kwargs})
    norm_layer = kwargs.pop("norm_layer", functools.partial(nn.BatchNorm2d, eps=1e-05,
                                                            momentum=0.1))
    return _load(RegNet(params, norm_layer=norm_layer, **kwargs), weights, progress)


def _d(depth, w_0, w_a, w_m, group_width, se_ratio=None):
    return {"depth": depth, "w_0": w_0, "w_a": w_a, "w_m": w_m, "group_width": group_width,
            "se_ratio": se_ratio}


# published design-space points (depth, w_0, w_a, w_m, group width, SE ratio)
_DESIGNS = {
    "regnet_y_400mf": _d(16, 48, 27.89, 2.09, 8, 0.25),
    "regnet_y_800mf": _d(14, 56, 38.84, 2.4, 16, 0.25),
    "regnet_y_1_6gf": _d(27, 48, 20.71, 2.65, 24, 0.25),
    "regnet_y_3_2gf": _d(21, 80, 42.63, 2.66, 24, 0.25),
    "regnet_y_8gf": _d(17, 192, 76.82, 2.19, 56, 0.25),
    "regnet_y_16gf": _d(18, 200, 106.23, 2.48, 112, 0.25),
    "regnet_y_32gf": _d(20, 232, 115.89, 2.53, 232, 0.25),
    "regnet_y_128gf": _d(27, 456, 160.83, 2.52, 264, 0.25),
    "regnet_x_400mf": _d(22, 24, 24.48, 2.54, 16),
    "regnet_x_800mf": _d(16, 56, 35.73, 2.28, 16),
    "regnet_x_1_6gf": _d(18, 80, 34.01, 2.25, 24),
    "regnet_x_3_2gf": _d(25, 88, 26.31, 2.25, 48),
    "regnet_x_8gf": _d(23, 80, 49.56, 2.88, 120),
    "regnet_x_16gf": _d(22, 216, 55.59, 2.1, 128),
    "regnet_x_32gf": _d(23, 320, 69.86, 2.0, 168),
}


class RegNet_Y_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_400mf-c65dace8.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 4344144,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 74.046, 'acc@5': 91.716}},
            "_ops": 0.402,
            "_file_size": 16.806,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_400mf-e6988f5f.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 4344144,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 75.804, 'acc@5': 92.742}},
            "_ops": 0.402,
            "_file_size": 16.806,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_800mf-1b27b58c.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 6432512,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.42, 'acc@5': 93.136}},
            "_ops": 0.834,
            "_file_size": 24.774,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_800mf-58fc7688.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 6432512,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.828, 'acc@5': 94.502}},
            "_ops": 0.834,
            "_file_size": 24.774,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_1_6gf-b11a554e.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 11202430,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.95, 'acc@5': 93.966}},
            "_ops": 1.612,
            "_file_size": 43.152,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_1_6gf-0d7bc02a.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 11202430,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.876, 'acc@5': 95.444}},
            "_ops": 1.612,
            "_file_size": 43.152,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_3_2gf-b5a9779c.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 19436338,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#medium-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.948, 'acc@5': 94.576}},
            "_ops": 3.176,
            "_file_size": 74.567,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_3_2gf-9180c971.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 19436338,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.982, 'acc@5': 95.972}},
            "_ops": 3.176,
            "_file_size": 74.567,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_8gf-d0d0e4a8.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 39381472,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#medium-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.032, 'acc@5': 95.048}},
            "_ops": 8.473,
            "_file_size": 150.701,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_8gf-dc2b1b54.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 39381472,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.828, 'acc@5': 96.33}},
            "_ops": 8.473,
            "_file_size": 150.701,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_16gf-9e6ed7dd.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 83590140,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#large-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.424, 'acc@5': 95.24}},
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_16gf-3e4a00f9.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 83590140,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.886, 'acc@5': 96.328}},
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_16gf_swag-43afe44d.pth',
        transforms=_preset(crop_size=384, resize_size=384, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 83590140,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 86.012, 'acc@5': 98.054}},
            "_ops": 46.735,
            "_file_size": 319.49,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_16gf_lc_swag-f3ec0043.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 83590140,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.976, 'acc@5': 97.244}},
            "_ops": 15.912,
            "_file_size": 319.49,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_32gf-4dee3f7a.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 145046770,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#large-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.878, 'acc@5': 95.34}},
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_y_32gf-8db6d4b5.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 145046770,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.368, 'acc@5': 96.498}},
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_32gf_swag-04fdfa75.pth',
        transforms=_preset(crop_size=384, resize_size=384, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 145046770,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 86.838, 'acc@5': 98.362}},
            "_ops": 94.826,
            "_file_size": 554.076,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_32gf_lc_swag-e1583746.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 145046770,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.622, 'acc@5': 97.48}},
            "_ops": 32.28,
            "_file_size": 554.076,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_128GF_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_128gf_swag-c8ce3e52.pth',
        transforms=_preset(crop_size=384, resize_size=384, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 644812894,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 88.228, 'acc@5': 98.682}},
            "_ops": 374.57,
            "_file_size": 2461.564,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_y_128gf_lc_swag-cbe8ce12.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 644812894,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 86.068, 'acc@5': 97.844}},
            "_ops": 127.518,
            "_file_size": 2461.564,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


class RegNet_X_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_400mf-adf1edd5.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 5495976,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 72.834, 'acc@5': 90.95}},
            "_ops": 0.414,
            "_file_size": 21.258,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_400mf-62229a5f.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 5495976,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres',
            "_metrics": {'ImageNet-1K': {'acc@1': 74.864, 'acc@5': 92.322}},
            "_ops": 0.414,
            "_file_size": 21.257,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_800mf-ad17e45c.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 7259656,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 75.212, 'acc@5': 92.348}},
            "_ops": 0.8,
            "_file_size": 27.945,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_800mf-94a99ebd.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 7259656,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.522, 'acc@5': 93.826}},
            "_ops": 0.8,
            "_file_size": 27.945,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_1_6gf-e3633e7f.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 9190136,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#small-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.04, 'acc@5': 93.44}},
            "_ops": 1.603,
            "_file_size": 35.339,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_1_6gf-a12f2b72.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 9190136,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres',
            "_metrics": {'ImageNet-1K': {'acc@1': 79.668, 'acc@5': 94.922}},
            "_ops": 1.603,
            "_file_size": 35.339,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_3_2gf-f342aeae.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 15296552,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#medium-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.364, 'acc@5': 93.992}},
            "_ops": 3.177,
            "_file_size": 58.756,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_3_2gf-7071aa85.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 15296552,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.196, 'acc@5': 95.43}},
            "_ops": 3.177,
            "_file_size": 58.756,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_8gf-03ceed89.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 39572648,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#medium-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 79.344, 'acc@5': 94.686}},
            "_ops": 7.995,
            "_file_size": 151.456,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_8gf-2b70d774.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 39572648,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.682, 'acc@5': 95.678}},
            "_ops": 7.995,
            "_file_size": 151.456,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_16gf-2007eb11.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 54278536,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#medium-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.058, 'acc@5': 94.944}},
            "_ops": 15.941,
            "_file_size": 207.627,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_16gf-ba3796d7.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 54278536,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.716, 'acc@5': 96.196}},
            "_ops": 15.941,
            "_file_size": 207.627,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class RegNet_X_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/regnet_x_32gf-9d47f8d0.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 107811560,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#large-models',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.622, 'acc@5': 95.248}},
            "_ops": 31.736,
            "_file_size": 412.039,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/regnet_x_32gf-6eb8fdc6.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 107811560,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.014, 'acc@5': 96.288}},
            "_ops": 31.736,
            "_file_size": 412.039,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


@register_model(weights=RegNet_Y_400MF_Weights)
def regnet_y_400mf(*, weights=None, progress=True, **kwargs):
    """RegNetY-400MF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_400mf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_800MF_Weights)
def regnet_y_800mf(*, weights=None, progress=True, **kwargs):
    """RegNetY-800MF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_800mf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_1_6GF_Weights)
def regnet_y_1_6gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-1.6GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_1_6gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_3_2GF_Weights)
def regnet_y_3_2gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-3.2GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_3_2gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_8GF_Weights)
def regnet_y_8gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-8GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_8gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_16GF_Weights)
def regnet_y_16gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-16GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_16gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_32GF_Weights)
def regnet_y_32gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-32GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_32gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_Y_128GF_Weights)
def regnet_y_128gf(*, weights=None, progress=True, **kwargs):
    """RegNetY-128GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_y_128gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_400MF_Weights)
def regnet_x_400mf(*, weights=None, progress=True, **kwargs):
    """RegNetX-400MF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_400mf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_800MF_Weights)
def regnet_x_800mf(*, weights=None, progress=True, **kwargs):
    """RegNetX-800MF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_800mf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_1_6GF_Weights)
def regnet_x_1_6gf(*, weights=None, progress=True, **kwargs):
    """RegNetX-1.6GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_1_6gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_3_2GF_Weights)
def regnet_x_3_2gf(*, weights=None, progress=True, **kwargs):
    """RegNetX-3.2GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_3_2gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_8GF_Weights)
def regnet_x_8gf(*, weights=None, progress=True, **kwargs):
    """RegNetX-8GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_8gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_16GF_Weights)
def regnet_x_16gf(*, weights=None, progress=True, **kwargs):
    """RegNetX-16GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_16gf"], weights, progress, **kwargs)


@register_model(weights=RegNet_X_32GF_Weights)
def regnet_x_32gf(*, weights=None, progress=True, **kwargs):
    """RegNetX-32GF ("Designing Network Design Spaces")."""
    return _regnet(_DESIGNS["regnet_x_32gf"], weights, progress, **kwargs)
