"""MobileNetV3 large and small (torchvision's architecture and state-dict keys).

    >>> import ember
    >>> from ember.vision.models import mobilenet_v3_small
    >>> mobilenet_v3_small(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import functools

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import Conv2dNormActivation, SqueezeExcitation, make_divisible
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["MobileNetV3", "InvertedResidualConfig", "mobilenet_v3_large", "mobilenet_v3_small",
           "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights"]


class InvertedResidualConfig:
    """One bneck row: input, kernel, expanded, output channels (scaled by ``width_mult``), SE,
    activation ("RE" ReLU or "HS" hardswish), stride, dilation."""

    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se,
                 activation, stride, dilation, width_mult):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        return make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """Expand -> depthwise -> (SE with hardsigmoid) -> project; keys under ``block.``."""

    def __init__(self, cnf, norm_layer):
        super().__init__()
        if cnf.stride not in (1, 2):
            raise ValueError(f"illegal stride value {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, 1,
                                               norm_layer=norm_layer, activation_layer=act))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels,
                                           cnf.kernel, stride=stride, dilation=cnf.dilation,
                                           groups=cnf.expanded_channels, norm_layer=norm_layer,
                                           activation_layer=act))
        if cnf.use_se:
            squeeze = make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(SqueezeExcitation(cnf.expanded_channels, squeeze,
                                            scale_activation=nn.Hardsigmoid))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, 1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, x):
        out = self.block(x)
        return out + x if self.use_res_connect else out


class MobileNetV3(nn.Module):
    """MobileNetV3 on (N, 3, H, W) -> (N, num_classes) from a list of
    :class:`InvertedResidualConfig` rows and the classifier width ``last_channel``."""

    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None,
                 norm_layer=None, dropout=0.2):
        super().__init__()
        if not inverted_residual_setting or not all(
                isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting):
            raise TypeError("inverted_residual_setting should be a non-empty list of "
                            "InvertedResidualConfig")
        block = block or InvertedResidual
        norm_layer = norm_layer or functools.partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(3, first, 3, stride=2, norm_layer=norm_layer,
                                       activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, 1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(last_out, last_channel),
                                        nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x)).flatten(1)
        return self.classifier(x)


_LARGE = [(16, 3, 16, 16, False, "RE", 1, 1), (16, 3, 64, 24, False, "RE", 2, 1),
          (24, 3, 72, 24, False, "RE", 1, 1), (24, 5, 72, 40, True, "RE", 2, 1),
          (40, 5, 120, 40, True, "RE", 1, 1), (40, 5, 120, 40, True, "RE", 1, 1),
          (40, 3, 240, 80, False, "HS", 2, 1), (80, 3, 200, 80, False, "HS", 1, 1),
          (80, 3, 184, 80, False, "HS", 1, 1), (80, 3, 184, 80, False, "HS", 1, 1),
          (80, 3, 480, 112, True, "HS", 1, 1), (112, 3, 672, 112, True, "HS", 1, 1),
          (112, 5, 672, 160, True, "HS", 2, "d"), (160, 5, 960, 160, True, "HS", 1, "d"),
          (160, 5, 960, 160, True, "HS", 1, "d")]
_SMALL = [(16, 3, 16, 16, True, "RE", 2, 1), (16, 3, 72, 24, False, "RE", 2, 1),
          (24, 3, 88, 24, False, "RE", 1, 1), (24, 5, 96, 40, True, "HS", 2, 1),
          (40, 5, 240, 40, True, "HS", 1, 1), (40, 5, 240, 40, True, "HS", 1, 1),
          (40, 5, 120, 48, True, "HS", 1, 1), (48, 5, 144, 48, True, "HS", 1, 1),
          (48, 5, 288, 96, True, "HS", 2, "d"), (96, 5, 576, 96, True, "HS", 1, "d"),
          (96, 5, 576, 96, True, "HS", 1, "d")]


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False):
    """The bneck rows and last_channel of ``arch``; ``reduced_tail`` halves the last stage
    (C4, as detection backbones do), ``dilated`` dilates it instead of striding."""
    div = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1
    table, last = (_LARGE, 1280) if arch == "mobilenet_v3_large" else (_SMALL, 1024)
    tail_start = len(table) - 3
    rows = []
    for i, (cin, k, exp, cout, se, act, s, d) in enumerate(table):
        if i >= tail_start:
            exp = exp // div if i > tail_start else exp
            cin = cin // div if i > tail_start else cin
            cout = cout // div
            d = dilation
        rows.append(InvertedResidualConfig(cin, k, exp, cout, se, act, s, d, width_mult))
    return rows, InvertedResidualConfig.adjust_channels(last // div, width_mult)


def _mobilenet_v3(arch, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    conf = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated") if k in kwargs}
    rows, last = _mobilenet_v3_conf(arch, **conf)
    return _load(MobileNetV3(rows, last, **kwargs), weights, progress)


class MobileNet_V3_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mobilenet_v3_large-8738ca79.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 5483032,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small',
            "_metrics": {'ImageNet-1K': {'acc@1': 74.042, 'acc@5': 91.34}},
            "_ops": 0.217,
            "_file_size": 21.114,
            "_docs": 'These weights were trained from scratch by using a simple training recipe.',
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/mobilenet_v3_large-5c1a4163.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 5483032,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning',
            "_metrics": {'ImageNet-1K': {'acc@1': 75.274, 'acc@5': 92.566}},
            "_ops": 0.217,
            "_file_size": 21.107,
            "_docs": (
                'These weights improve marginally upon the results of the original paper by '
                "using a modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 2542856,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small',
            "_metrics": {'ImageNet-1K': {'acc@1': 67.668, 'acc@5': 87.402}},
            "_ops": 0.057,
            "_file_size": 9.829,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                'simple training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=MobileNet_V3_Large_Weights)
def mobilenet_v3_large(*, weights=None, progress=True, **kwargs):
    """MobileNetV3-Large ("Searching for MobileNetV3")."""
    return _mobilenet_v3("mobilenet_v3_large", weights, progress, **kwargs)


@register_model(weights=MobileNet_V3_Small_Weights)
def mobilenet_v3_small(*, weights=None, progress=True, **kwargs):
    """MobileNetV3-Small."""
    return _mobilenet_v3("mobilenet_v3_small", weights, progress, **kwargs)
