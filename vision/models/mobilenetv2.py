"""MobileNetV2 (torchvision's architecture and state-dict keys).

    >>> import ember
    >>> from ember.vision.models import mobilenet_v2
    >>> mobilenet_v2(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import Conv2dNormActivation, make_divisible
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["MobileNetV2", "InvertedResidual", "mobilenet_v2", "MobileNet_V2_Weights"]


class InvertedResidual(nn.Module):
    """1x1 expand (ReLU6) -> 3x3 depthwise (ReLU6) -> 1x1 linear projection (+ residual when
    shapes allow). Keys under ``conv.``."""

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2, got {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, 1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden,
                                        norm_layer=norm_layer, activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 on (N, 3, H, W) -> (N, num_classes). ``width_mult`` scales every width
    (rounded to multiples of ``round_nearest``)."""

    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, block=None, norm_layer=None, dropout=0.2):
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        if inverted_residual_setting is None:
            inverted_residual_setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2],
                                         [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                                         [6, 320, 1, 1]]
        if len(inverted_residual_setting) == 0 or any(len(r) != 4
                                                      for r in inverted_residual_setting):
            raise ValueError("inverted_residual_setting should be a non-empty list of 4-element "
                             f"lists (t, c, n, s), got {inverted_residual_setting}")
        input_channel = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                         activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            out = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, out, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = out
        features.append(Conv2dNormActivation(input_channel, self.last_channel, 1,
                                             norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                        nn.Linear(self.last_channel, num_classes))
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
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1)).flatten(1)
        return self.classifier(x)


class MobileNet_V2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mobilenet_v2-b0353104.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 3504872,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv2',
            "_metrics": {'ImageNet-1K': {'acc@1': 71.878, 'acc@5': 90.286}},
            "_ops": 0.301,
            "_file_size": 13.555,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 3504872,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning',
            "_metrics": {'ImageNet-1K': {'acc@1': 72.154, 'acc@5': 90.822}},
            "_ops": 0.301,
            "_file_size": 13.598,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


@register_model(weights=MobileNet_V2_Weights)
def mobilenet_v2(*, weights=None, progress=True, **kwargs):
    """MobileNetV2 ("MobileNetV2: Inverted Residuals and Linear Bottlenecks")."""
    _weights_kwargs(weights, kwargs)
    return _load(MobileNetV2(**kwargs), weights, progress)
