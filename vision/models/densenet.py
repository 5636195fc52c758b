"""DenseNet-121/161/169/201 (torchvision's architecture and keys).

The published checkpoints use the old key style ``denselayer1.norm.1.weight``; loading maps
them to ``denselayer1.norm1.weight`` as torchvision does.

    >>> import ember
    >>> from ember.vision.models import densenet121
    >>> densenet121(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import re
from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201",
           "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights",
           "DenseNet201_Weights"]


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (bn_size * growth) -> BN-ReLU-3x3 conv (growth) on the concatenation
    of all previous features."""

    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, 1, stride=1,
                               bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, stride=1, padding=1,
                               bias=False)
        self.drop_rate = float(drop_rate)

    def forward(self, features):
        x = ember.cat(features, 1) if isinstance(features, (list, tuple)) else features
        x = self.conv1(self.relu1(self.norm1(x)))
        x = self.conv2(self.relu2(self.norm2(x)))
        if self.drop_rate > 0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x


class _DenseBlock(nn.Module):
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(
                num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate))

    def forward(self, init_features):
        features = [init_features]
        for layer in self.children():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super().__init__(OrderedDict([
            ("norm", nn.BatchNorm2d(num_input_features)), ("relu", nn.ReLU(inplace=True)),
            ("conv", nn.Conv2d(num_input_features, num_output_features, 1, stride=1,
                               bias=False)),
            ("pool", nn.AvgPool2d(kernel_size=2, stride=2))]))


class DenseNet(nn.Module):
    """DenseNet-BC on (N, 3, H, W) -> (N, num_classes); ``growth_rate`` k, ``block_config``
    layers per dense block, transitions halve the channels."""

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64,
                 bn_size=4, drop_rate=0, num_classes=1000, memory_efficient=False):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, 7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)), ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
        n = num_init_features
        for i, layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(
                layers, n, bn_size, growth_rate, drop_rate))
            n += layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(n, n // 2))
                n //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(n))
        self.classifier = nn.Linear(n, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.relu(self.features(x), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1)).flatten(1)
        return self.classifier(out)


_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\."
                      r"(?:weight|bias|running_mean|running_var))$")


def _remap_old_keys(state_dict):
    """``...denselayer1.norm.1.weight`` -> ``...denselayer1.norm1.weight`` (old checkpoints)."""
    out = OrderedDict()
    for key, value in state_dict.items():
        m = _OLD_KEY.match(key)
        out[m.group(1) + m.group(2) if m else key] = value
    return out


def _densenet(growth_rate, block_config, num_init_features, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
    if weights is not None:
        sd = weights.get_state_dict(progress=progress, check_hash=True)
        model.load_state_dict(_remap_old_keys(sd))
    return model


class DenseNet121_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/densenet121-a639ec97.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (29, 29),
            "num_params": 7978856,
            "recipe": 'https://github.com/pytorch/vision/pull/116',
            "_metrics": {'ImageNet-1K': {'acc@1': 74.434, 'acc@5': 91.972}},
            "_ops": 2.834,
            "_file_size": 30.845,
            "_docs": 'These weights are ported from LuaTorch.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class DenseNet161_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/densenet161-8d451a50.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (29, 29),
            "num_params": 28681000,
            "recipe": 'https://github.com/pytorch/vision/pull/116',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.138, 'acc@5': 93.56}},
            "_ops": 7.728,
            "_file_size": 110.369,
            "_docs": 'These weights are ported from LuaTorch.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class DenseNet169_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/densenet169-b2777c0a.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (29, 29),
            "num_params": 14149480,
            "recipe": 'https://github.com/pytorch/vision/pull/116',
            "_metrics": {'ImageNet-1K': {'acc@1': 75.6, 'acc@5': 92.806}},
            "_ops": 3.36,
            "_file_size": 54.708,
            "_docs": 'These weights are ported from LuaTorch.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class DenseNet201_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/densenet201-c1103571.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (29, 29),
            "num_params": 20013928,
            "recipe": 'https://github.com/pytorch/vision/pull/116',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.896, 'acc@5': 93.37}},
            "_ops": 4.291,
            "_file_size": 77.373,
            "_docs": 'These weights are ported from LuaTorch.',
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=DenseNet121_Weights)
def densenet121(*, weights=None, progress=True, **kwargs):
    """DenseNet-121 ("Densely Connected Convolutional Networks")."""
    return _densenet(32, (6, 12, 24, 16), 64, weights, progress, **kwargs)


@register_model(weights=DenseNet161_Weights)
def densenet161(*, weights=None, progress=True, **kwargs):
    """DenseNet-161."""
    return _densenet(48, (6, 12, 36, 24), 96, weights, progress, **kwargs)


@register_model(weights=DenseNet169_Weights)
def densenet169(*, weights=None, progress=True, **kwargs):
    """DenseNet-169."""
    return _densenet(32, (6, 12, 32, 32), 64, weights, progress, **kwargs)


@register_model(weights=DenseNet201_Weights)
def densenet201(*, weights=None, progress=True, **kwargs):
    """DenseNet-201."""
    return _densenet(32, (6, 12, 48, 32), 64, weights, progress, **kwargs)
