"""VGG 11/13/16/19, with and without batch norm (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import vgg11
    >>> vgg11(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
           "vgg19_bn", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights",
           "VGG16_Weights", "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights"]

# conv widths per stage; "M" is a 2x2 max pool
_CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512,
          512, 512, "M"],
}


def make_layers(cfg, batch_norm=False):
    """The ``features`` Sequential for a width list (3x3 convs, ReLU, optional BN, max pools)."""
    layers = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(cin, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        cin = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    """``features`` -> adaptive 7x7 average pool -> 3-layer classifier; (N, 3, H, W) -> (N, C)."""

    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x)).flatten(1)
        return self.classifier(x)


def _vgg(cfg, batch_norm, weights, progress, **kwargs):
    if weights is not None:
        kwargs.setdefault("init_weights", False)
    _weights_kwargs(weights, kwargs)
    return _load(VGG(make_layers(_CFGS[cfg], batch_norm=batch_norm), **kwargs), weights,
                 progress)


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg11-8a719046.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 132863336,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 69.02, 'acc@5': 88.628}},
            "_ops": 7.609,
            "_file_size": 506.84,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg11_bn-6002323d.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 132868840,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 70.37, 'acc@5': 89.81}},
            "_ops": 7.609,
            "_file_size": 506.881,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg13-19584684.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 133047848,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 69.928, 'acc@5': 89.246}},
            "_ops": 11.308,
            "_file_size": 507.545,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg13_bn-abd245e5.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 133053736,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 71.586, 'acc@5': 90.374}},
            "_ops": 11.308,
            "_file_size": 507.59,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg16-397923af.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 138357544,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 71.592, 'acc@5': 90.382}},
            "_ops": 15.47,
            "_file_size": 527.796,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    IMAGENET1K_FEATURES = Weights(
        url='https://download.pytorch.org/models/vgg16_features-amdegroot-88682ab5.pth',
        transforms=_preset(
            crop_size=224,
            mean=(0.48235, 0.45882, 0.40784),
            std=(0.00392156862745098, 0.00392156862745098, 0.00392156862745098),
        ),
        meta={
            "categories": None,
            "min_size": (32, 32),
            "num_params": 138357544,
            "recipe": 'https://github.com/amdegroot/ssd.pytorch#training-ssd',
            "_metrics": {'ImageNet-1K': {'acc@1': float("nan"), 'acc@5': float("nan")}},
            "_ops": 15.47,
            "_file_size": 527.802,
            "_docs": (
                "These weights can't be used for classification because they are missing "
                'values in the `classifier` module. Only the `features` module has valid '
                'values and can be used for feature extraction. The weights were trained '
                'using the original input standardization method as described in the paper.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg16_bn-6c64b313.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 138365992,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 73.36, 'acc@5': 91.516}},
            "_ops": 15.47,
            "_file_size": 527.866,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg19-dcbb9e9d.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 143667240,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 72.376, 'acc@5': 90.876}},
            "_ops": 19.632,
            "_file_size": 548.051,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vgg19_bn-c79401a0.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 143678248,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 74.218, 'acc@5': 91.842}},
            "_ops": 19.632,
            "_file_size": 548.143,
            "_docs": (
                'These weights were trained from scratch by using a simplified training '
                'recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=VGG11_Weights)
def vgg11(*, weights=None, progress=True, **kwargs):
    """VGG-11 (configuration "A", "Very Deep Convolutional Networks")."""
    return _vgg("A", False, weights, progress, **kwargs)


@register_model(weights=VGG11_BN_Weights)
def vgg11_bn(*, weights=None, progress=True, **kwargs):
    """VGG-11 with batch norm."""
    return _vgg("A", True, weights, progress, **kwargs)


@register_model(weights=VGG13_Weights)
def vgg13(*, weights=None, progress=True, **kwargs):
    """VGG-13 (configuration "B")."""
    return _vgg("B", False, weights, progress, **kwargs)


@register_model(weights=VGG13_BN_Weights)
def vgg13_bn(*, weights=None, progress=True, **kwargs):
    """VGG-13 with batch norm."""
    return _vgg("B", True, weights, progress, **kwargs)


@register_model(weights=VGG16_Weights)
def vgg16(*, weights=None, progress=True, **kwargs):
    """VGG-16 (configuration "D"). ``IMAGENET1K_FEATURES`` holds valid ``features`` only."""
    return _vgg("D", False, weights, progress, **kwargs)


@register_model(weights=VGG16_BN_Weights)
def vgg16_bn(*, weights=None, progress=True, **kwargs):
    """VGG-16 with batch norm."""
    return _vgg("D", True, weights, progress, **kwargs)


@register_model(weights=VGG19_Weights)
def vgg19(*, weights=None, progress=True, **kwargs):
    """VGG-19 (configuration "E")."""
    return _vgg("E", False, weights, progress, **kwargs)


@register_model(weights=VGG19_BN_Weights)
def vgg19_bn(*, weights=None, progress=True, **kwargs):
    """VGG-19 with batch norm."""
    return _vgg("E", True, weights, progress, **kwargs)
