"""EfficientNet B0-B7 and EfficientNetV2 S/M/L (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import efficientnet_b0
    >>> efficientnet_b0(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import copy
import functools
import math

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import Conv2dNormActivation, SqueezeExcitation, StochasticDepth, make_divisible
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["EfficientNet", "MBConvConfig", "FusedMBConvConfig", "MBConv", "FusedMBConv",
           "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
           "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7",
           "efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l",
           "EfficientNet_B0_Weights", "EfficientNet_B1_Weights", "EfficientNet_B2_Weights",
           "EfficientNet_B3_Weights", "EfficientNet_B4_Weights", "EfficientNet_B5_Weights",
           "EfficientNet_B6_Weights", "EfficientNet_B7_Weights", "EfficientNet_V2_S_Weights",
           "EfficientNet_V2_M_Weights", "EfficientNet_V2_L_Weights"]


class _StageConfig:
    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                 block):
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers
        self.block = block

    @staticmethod
    def adjust_channels(channels, width_mult, min_value=None):
        return make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_StageConfig):
    """A stage of MBConv blocks; channels scale by ``width_mult`` (rounded to multiples of 8),
    the block count by ``depth_mult`` (rounded up)."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                 width_mult=1.0, depth_mult=1.0, block=None):
        super().__init__(expand_ratio, kernel, stride,
                         self.adjust_channels(input_channels, width_mult),
                         self.adjust_channels(out_channels, width_mult),
                         int(math.ceil(num_layers * depth_mult)), block or MBConv)


class FusedMBConvConfig(_StageConfig):
    """A stage of FusedMBConv blocks (EfficientNetV2's early stages); no scaling."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                 block=None):
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                         block or FusedMBConv)


class MBConv(nn.Module):
    """Expand 1x1 -> depthwise kxk -> SE (SiLU, squeeze = input/4) -> project 1x1, with a
    stochastic-depth residual when shapes allow. Keys under ``block.``."""

    def __init__(self, cnf, stochastic_depth_prob, norm_layer, se_layer=SqueezeExcitation):
        super().__init__()
        if cnf.stride not in (1, 2):
            raise ValueError(f"illegal stride value {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        layers = []
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, 1,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, cnf.kernel, stride=cnf.stride,
                                           groups=expanded, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        layers.append(se_layer(expanded, max(1, cnf.input_channels // 4),
                               activation=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, 1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, x):
        out = self.block(x)
        return self.stochastic_depth(out) + x if self.use_res_connect else out


class FusedMBConv(nn.Module):
    """Fused expand kxk (stride) -> project 1x1 (or one kxk conv when expand_ratio is 1)."""

    def __init__(self, cnf, stochastic_depth_prob, norm_layer):
        super().__init__()
        if cnf.stride not in (1, 2):
            raise ValueError(f"illegal stride value {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers = [Conv2dNormActivation(cnf.input_channels, expanded, cnf.kernel,
                                           stride=cnf.stride, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU),
                      Conv2dNormActivation(expanded, cnf.out_channels, 1, norm_layer=norm_layer,
                                           activation_layer=None)]
        else:
            layers = [Conv2dNormActivation(cnf.input_channels, cnf.out_channels, cnf.kernel,
                                           stride=cnf.stride, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, x):
        out = self.block(x)
        return self.stochastic_depth(out) + x if self.use_res_connect else out


class EfficientNet(nn.Module):
    """EfficientNet on (N, 3, H, W) -> (N, num_classes) from a list of stage configs.

    Stochastic depth grows linearly from 0 to ``stochastic_depth_prob`` over the blocks; the
    head is ``last_channel`` wide (default 4x the last stage's output).
    """

    def __init__(self, inverted_residual_setting, dropout, stochastic_depth_prob=0.2,
                 num_classes=1000, norm_layer=None, last_channel=None):
        super().__init__()
        if not inverted_residual_setting or not all(
                isinstance(s, _StageConfig) for s in inverted_residual_setting):
            raise TypeError("inverted_residual_setting should be a non-empty list of "
                            "MBConvConfig/FusedMBConvConfig")
        norm_layer = norm_layer or nn.BatchNorm2d
        layers = [Conv2dNormActivation(3, inverted_residual_setting[0].input_channels, 3,
                                       stride=2, norm_layer=norm_layer,
                                       activation_layer=nn.SiLU)]
        total = sum(c.num_layers for c in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                c = copy.copy(cnf)
                if stage:
                    c.input_channels = c.out_channels
                    c.stride = 1
                sd_prob = stochastic_depth_prob * float(block_id) / total
                stage.append(c.block(c, sd_prob, norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, 1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                r = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -r, r)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x)).flatten(1)
        return self.classifier(x)


_B_STAGES = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
             (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
             (6, 3, 1, 192, 320, 1)]
# (expand, kernel, stride, in, out, layers); the first ``fused`` stages are FusedMBConv
_V2_STAGES = {
    "s": (3, [(1, 3, 1, 24, 24, 2), (4, 3, 2, 24, 48, 4), (4, 3, 2, 48, 64, 4),
              (4, 3, 2, 64, 128, 6), (6, 3, 1, 128, 160, 9), (6, 3, 2, 160, 256, 15)]),
    "m": (3, [(1, 3, 1, 24, 24, 3), (4, 3, 2, 24, 48, 5), (4, 3, 2, 48, 80, 5),
              (4, 3, 2, 80, 160, 7), (6, 3, 1, 160, 176, 14), (6, 3, 2, 176, 304, 18),
              (6, 3, 1, 304, 512, 5)]),
    "l": (3, [(1, 3, 1, 32, 32, 4), (4, 3, 2, 32, 64, 7), (4, 3, 2, 64, 96, 7),
              (4, 3, 2, 96, 192, 10), (6, 3, 1, 192, 224, 19), (6, 3, 2, 224, 384, 25),
              (6, 3, 1, 384, 640, 7)]),
}
# (width_mult, depth_mult, dropout) of B0..B7
_B_SCALING = [(1.0, 1.0, 0.2), (1.0, 1.1, 0.2), (1.1, 1.2, 0.3), (1.2, 1.4, 0.3),
              (1.4, 1.8, 0.4), (1.6, 2.2, 0.4), (1.8, 2.6, 0.5), (2.0, 3.1, 0.5)]
_V2_DROPOUT = {"s": 0.2, "m": 0.3, "l": 0.4}


def _efficientnet_b(i, weights, progress, **kwargs):
    wm, dm, dropout = _B_SCALING[i]
    _weights_kwargs(weights, kwargs)
    if i >= 5:
        kwargs.setdefault("norm_layer", functools.partial(nn.BatchNorm2d, eps=0.001,
                                                          momentum=0.01))
    stages = [MBConvConfig(*row, width_mult=wm, depth_mult=dm) for row in _B_STAGES]
    model = EfficientNet(stages, kwargs.pop("dropout", dropout), **kwargs)
    return _load(model, weights, progress)


def _efficientnet_v2(size, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    kwargs.setdefault("norm_layer", functools.partial(nn.BatchNorm2d, eps=1e-03))
    fused, rows = _V2_STAGES[size]
    stages = [FusedMBConvConfig(*r) if i < fused else MBConvConfig(*r)
              for i, r in enumerate(rows)]
    model = EfficientNet(stages, kwargs.pop("dropout", _V2_DROPOUT[size]), last_channel=1280,
                         **kwargs)
    return _load(model, weights, progress)


class EfficientNet_B0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth',
        transforms=_preset(crop_size=224, resize_size=256, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 5288548,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.692, 'acc@5': 93.532}},
            "_ops": 0.386,
            "_file_size": 20.451,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B1_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b1_rwightman-bac287d4.pth',
        transforms=_preset(crop_size=240, resize_size=256, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 7794184,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.642, 'acc@5': 94.186}},
            "_ops": 0.687,
            "_file_size": 30.134,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b1-c27df63c.pth',
        transforms=_preset(crop_size=240, resize_size=255, interpolation='bilinear'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 7794184,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-lr-wd-crop-tuning',
            "_metrics": {'ImageNet-1K': {'acc@1': 79.838, 'acc@5': 94.934}},
            "_ops": 0.687,
            "_file_size": 30.136,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class EfficientNet_B2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b2_rwightman-c35c1473.pth',
        transforms=_preset(crop_size=288, resize_size=288, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 9109994,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.608, 'acc@5': 95.31}},
            "_ops": 1.088,
            "_file_size": 35.174,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B3_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b3_rwightman-b3899882.pth',
        transforms=_preset(crop_size=300, resize_size=320, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 12233232,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.008, 'acc@5': 96.054}},
            "_ops": 1.827,
            "_file_size": 47.184,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B4_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b4_rwightman-23ab8bcd.pth',
        transforms=_preset(crop_size=380, resize_size=384, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 19341616,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.384, 'acc@5': 96.594}},
            "_ops": 4.394,
            "_file_size": 74.489,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B5_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b5_lukemelas-1a07897c.pth',
        transforms=_preset(crop_size=456, resize_size=456, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 30389784,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.444, 'acc@5': 96.628}},
            "_ops": 10.266,
            "_file_size": 116.864,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B6_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b6_lukemelas-24a108a5.pth',
        transforms=_preset(crop_size=528, resize_size=528, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 43040704,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.008, 'acc@5': 96.916}},
            "_ops": 19.068,
            "_file_size": 165.362,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B7_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_b7_lukemelas-c5b4e57e.pth',
        transforms=_preset(crop_size=600, resize_size=600, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 66347960,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.122, 'acc@5': 96.908}},
            "_ops": 37.746,
            "_file_size": 254.675,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_v2_s-dd5fe13b.pth',
        transforms=_preset(crop_size=384, resize_size=384, interpolation='bilinear'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (33, 33),
            "num_params": 21458488,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.228, 'acc@5': 96.878}},
            "_ops": 8.366,
            "_file_size": 82.704,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_M_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_v2_m-dc08266a.pth',
        transforms=_preset(crop_size=480, resize_size=480, interpolation='bilinear'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (33, 33),
            "num_params": 54139356,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 85.112, 'acc@5': 97.156}},
            "_ops": 24.582,
            "_file_size": 208.01,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_L_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/efficientnet_v2_l-59c71312.pth',
        transforms=_preset(
            crop_size=480,
            resize_size=480,
            interpolation='bicubic',
            mean=(0.5, 0.5, 0.5),
            std=(0.5, 0.5, 0.5),
        ),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (33, 33),
            "num_params": 118515272,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 85.808, 'acc@5': 97.788}},
            "_ops": 56.08,
            "_file_size": 454.573,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=EfficientNet_B0_Weights)
def efficientnet_b0(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B0 ("EfficientNet: Rethinking Model Scaling for CNNs")."""
    return _efficientnet_b(0, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B1_Weights)
def efficientnet_b1(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B1."""
    return _efficientnet_b(1, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B2_Weights)
def efficientnet_b2(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B2."""
    return _efficientnet_b(2, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B3_Weights)
def efficientnet_b3(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B3."""
    return _efficientnet_b(3, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B4_Weights)
def efficientnet_b4(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B4."""
    return _efficientnet_b(4, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B5_Weights)
def efficientnet_b5(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B5 (BN eps 1e-3, momentum 0.01)."""
    return _efficientnet_b(5, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B6_Weights)
def efficientnet_b6(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B6 (BN eps 1e-3, momentum 0.01)."""
    return _efficientnet_b(6, weights, progress, **kwargs)


@register_model(weights=EfficientNet_B7_Weights)
def efficientnet_b7(*, weights=None, progress=True, **kwargs):
    """EfficientNet-B7 (BN eps 1e-3, momentum 0.01)."""
    return _efficientnet_b(7, weights, progress, **kwargs)


@register_model(weights=EfficientNet_V2_S_Weights)
def efficientnet_v2_s(*, weights=None, progress=True, **kwargs):
    """EfficientNetV2-S ("EfficientNetV2: Smaller Models and Faster Training")."""
    return _efficientnet_v2("s", weights, progress, **kwargs)


@register_model(weights=EfficientNet_V2_M_Weights)
def efficientnet_v2_m(*, weights=None, progress=True, **kwargs):
    """EfficientNetV2-M."""
    return _efficientnet_v2("m", weights, progress, **kwargs)


@register_model(weights=EfficientNet_V2_L_Weights)
def efficientnet_v2_l(*, weights=None, progress=True, **kwargs):
    """EfficientNetV2-L."""
    return _efficientnet_v2("l", weights, progress, **kwargs)
