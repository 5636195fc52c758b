"""SqueezeNet 1.0 and 1.1 (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import squeezenet1_1
    >>> squeezenet1_1(num_classes=10).eval()(ember.randn(1, 3, 64, 64)).shape
    (1, 10)
"""
from __future__ import annotations

import ember
from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["SqueezeNet", "Fire", "squeezenet1_0", "squeezenet1_1", "SqueezeNet1_0_Weights",
           "SqueezeNet1_1_Weights"]


class Fire(nn.Module):
    """1x1 squeeze, then 1x1 and 3x3 expands concatenated on channels:
    (N, inplanes, H, W) -> (N, e1 + e3, H, W)."""

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """SqueezeNet ``version`` "1_0" or "1_1": (N, 3, H, W) -> (N, num_classes)."""

    def __init__(self, version="1_0", num_classes=1000, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        pool = lambda: nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)  # noqa: E731
        if version == "1_0":
            layers = [nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), pool(),
                      Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128),
                      pool(), Fire(256, 32, 128, 128), Fire(256, 48, 192, 192),
                      Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), pool(),
                      Fire(512, 64, 256, 256)]
        elif version == "1_1":
            layers = [nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
                      Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                      Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                      Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                      Fire(512, 64, 256, 256)]
        else:
            raise ValueError(f"unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        self.features = nn.Sequential(*layers)
        final_conv = nn.Conv2d(512, num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(self.features(x)).flatten(1)


def _squeezenet(version, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    return _load(SqueezeNet(version, **kwargs), weights, progress)


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (21, 21),
            "num_params": 1248424,
            "recipe": 'https://github.com/pytorch/vision/pull/49#issuecomment-277560717',
            "_metrics": {'ImageNet-1K': {'acc@1': 58.092, 'acc@5': 80.42}},
            "_ops": 0.819,
            "_file_size": 4.778,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (17, 17),
            "num_params": 1235496,
            "recipe": 'https://github.com/pytorch/vision/pull/49#issuecomment-277560717',
            "_metrics": {'ImageNet-1K': {'acc@1': 58.178, 'acc@5': 80.624}},
            "_ops": 0.349,
            "_file_size": 4.729,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=SqueezeNet1_0_Weights)
def squeezenet1_0(*, weights=None, progress=True, **kwargs):
    """SqueezeNet 1.0 ("AlexNet-level accuracy with 50x fewer parameters")."""
    return _squeezenet("1_0", weights, progress, **kwargs)


@register_model(weights=SqueezeNet1_1_Weights)
def squeezenet1_1(*, weights=None, progress=True, **kwargs):
    """SqueezeNet 1.1 (2.4x less computation than 1.0, same accuracy)."""
    return _squeezenet("1_1", weights, progress, **kwargs)
