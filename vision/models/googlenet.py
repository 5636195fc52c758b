"""GoogLeNet (Inception v1, torchvision's batch-norm variant and keys).

In training mode with ``aux_logits`` the model returns ``GoogLeNetOutputs(logits,
aux_logits2, aux_logits1)``; otherwise the logits alone.

    >>> import ember
    >>> from ember.vision.models import googlenet
    >>> googlenet(num_classes=10, aux_logits=False).eval()(ember.randn(1, 3, 64, 64)).shape
    (1, 10)
"""
from __future__ import annotations

from collections import namedtuple

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _set_param, \
    _weights_kwargs, register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["GoogLeNet", "GoogLeNetOutputs", "googlenet", "GoogLeNet_Weights"]

GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])


class BasicConv2d(nn.Module):
    """Conv (no bias) -> BatchNorm (eps 1e-3) -> ReLU."""

    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


def _transform_input(x):
    """Map inputs normalized with ImageNet mean/std to the (x - 0.5) / 0.5 scaling."""
    chans = [x[:, i:i + 1] * ((s / 0.5)) + (m - 0.5) / 0.5
             for i, (m, s) in enumerate(((0.485, 0.229), (0.456, 0.224), (0.406, 0.225)))]
    return ember.cat(chans, 1)


class Inception(nn.Module):
    """Four parallel branches (1x1; 1x1->3x3; 1x1->3x3; maxpool->1x1) concatenated."""

    def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj,
                 conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.branch1 = cb(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(cb(in_channels, ch3x3red, kernel_size=1),
                                     cb(ch3x3red, ch3x3, kernel_size=3, padding=1))
        self.branch3 = nn.Sequential(cb(in_channels, ch5x5red, kernel_size=1),
                                     cb(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1,
                                                  ceil_mode=True),
                                     cb(in_channels, pool_proj, kernel_size=1))

    def forward(self, x):
        return ember.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)],
                         1)


class InceptionAux(nn.Module):
    """Auxiliary classifier: 4x4 average pool -> 1x1 conv -> fc 1024 -> fc classes."""

    def __init__(self, in_channels, num_classes, conv_block=None, dropout=0.7):
        super().__init__()
        self.conv = (conv_block or BasicConv2d)(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = self.conv(F.adaptive_avg_pool2d(x, (4, 4))).flatten(1)
        return self.fc2(self.dropout(F.relu(self.fc1(x), inplace=True)))


class GoogLeNet(nn.Module):
    """GoogLeNet on (N, 3, H, W) -> (N, num_classes) (plus aux heads while training)."""

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False,
                 init_weights=None, blocks=None, dropout=0.2, dropout_aux=0.7):
        super().__init__()
        conv_block, inception, aux = blocks or (BasicConv2d, Inception, InceptionAux)
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception3a = inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = inception(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception4a = inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = inception(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.inception5a = inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = inception(832, 384, 192, 384, 48, 128, 128)
        if aux_logits:
            self.aux1 = aux(512, num_classes, dropout=dropout_aux)
            self.aux2 = aux(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = None
            self.aux2 = None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)
        if init_weights is None or init_weights:
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        if self.transform_input:
            x = _transform_input(x)
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        x = self.fc(self.dropout(self.avgpool(x).flatten(1)))
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


class GoogLeNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/googlenet-1378be20.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (15, 15),
            "num_params": 6624904,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#googlenet',
            "_metrics": {'ImageNet-1K': {'acc@1': 69.778, 'acc@5': 89.53}},
            "_ops": 1.498,
            "_file_size": 49.731,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


def _aux_weights_kwargs(weights, kwargs):
    """Published GoogLeNet/Inception weights hold the aux heads and expect torchvision's input
    transform: build the model that way (the builder drops the heads afterwards if unwanted)."""
    if weights is not None:
        kwargs.setdefault("transform_input", True)
        _set_param(kwargs, "aux_logits", True)
        _set_param(kwargs, "init_weights", False)
        _weights_kwargs(weights, kwargs)


@register_model(weights=GoogLeNet_Weights)
def googlenet(*, weights=None, progress=True, **kwargs):
    """GoogLeNet ("Going Deeper with Convolutions"). With weights, ``transform_input``
    defaults to True and the aux heads are dropped unless ``aux_logits=True``."""
    original_aux_logits = kwargs.get("aux_logits", False)
    _aux_weights_kwargs(weights, kwargs)
    model = _load(GoogLeNet(**kwargs), weights, progress)
    if weights is not None:
        if not original_aux_logits:
            model.aux_logits = False
            model.aux1 = None
            model.aux2 = None
    return model
