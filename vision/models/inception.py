"""Inception v3 (torchvision's architecture and keys; 299x299 inputs).

In training mode with ``aux_logits`` the model returns ``InceptionOutputs(logits,
aux_logits)``; otherwise the logits alone.

    >>> import ember
    >>> from ember.vision.models import inception_v3
    >>> m = inception_v3(num_classes=10, aux_logits=False, init_weights=False).eval()
    >>> m(ember.randn(1, 3, 75, 75)).shape
    (1, 10)
"""
from __future__ import annotations

from collections import namedtuple

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, register_model
from ._meta import _IMAGENET_CATEGORIES
from .googlenet import BasicConv2d, _aux_weights_kwargs, _transform_input

__all__ = ["Inception3", "InceptionOutputs", "inception_v3", "Inception_V3_Weights"]

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])


def _cat(*xs):
    return ember.cat(list(xs), 1)


class InceptionA(nn.Module):
    def __init__(self, in_channels, pool_features, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.branch1x1 = cb(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = cb(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = cb(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = cb(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = cb(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = cb(96, 96, kernel_size=3, padding=1)
        self.branch_pool = cb(in_channels, pool_features, kernel_size=1)

    def forward(self, x):
        return _cat(self.branch1x1(x), self.branch5x5_2(self.branch5x5_1(x)),
                    self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                    self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)))


class InceptionB(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.branch3x3 = cb(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = cb(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = cb(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = cb(96, 96, kernel_size=3, stride=2)

    def forward(self, x):
        return _cat(self.branch3x3(x),
                    self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                    F.max_pool2d(x, kernel_size=3, stride=2))


class InceptionC(nn.Module):
    def __init__(self, in_channels, channels_7x7, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        c7 = channels_7x7
        self.branch1x1 = cb(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = cb(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = cb(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = cb(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = cb(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = cb(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = cb(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = cb(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = cb(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = cb(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        d = x
        for i in range(1, 6):
            d = getattr(self, f"branch7x7dbl_{i}")(d)
        return _cat(self.branch1x1(x), b7, d,
                    self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)))


class InceptionD(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.branch3x3_1 = cb(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = cb(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = cb(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = cb(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = cb(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = cb(192, 192, kernel_size=3, stride=2)

    def forward(self, x):
        b = x
        for i in range(1, 5):
            b = getattr(self, f"branch7x7x3_{i}")(b)
        return _cat(self.branch3x3_2(self.branch3x3_1(x)), b,
                    F.max_pool2d(x, kernel_size=3, stride=2))


class InceptionE(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.branch1x1 = cb(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = cb(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = cb(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = cb(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = cb(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = cb(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = cb(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = cb(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = cb(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b3 = self.branch3x3_1(x)
        b3 = _cat(self.branch3x3_2a(b3), self.branch3x3_2b(b3))
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        d = _cat(self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d))
        return _cat(self.branch1x1(x), b3, d,
                    self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)))


class InceptionAux(nn.Module):
    def __init__(self, in_channels, num_classes, conv_block=None):
        super().__init__()
        cb = conv_block or BasicConv2d
        self.conv0 = cb(in_channels, 128, kernel_size=1)
        self.conv1 = cb(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x):
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).flatten(1))


class Inception3(nn.Module):
    """Inception v3 on (N, 3, 299, 299) -> (N, num_classes) (plus the aux head while
    training)."""

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False,
                 inception_blocks=None, init_weights=None, dropout=0.5):
        super().__init__()
        blocks = inception_blocks or [BasicConv2d, InceptionA, InceptionB, InceptionC,
                                      InceptionD, InceptionE, InceptionAux]
        if len(blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(blocks)}")
        cb, ia, ib, ic, idd, ie, iaux = blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.Conv2d_1a_3x3 = cb(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = cb(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = cb(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = cb(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = cb(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = ia(192, pool_features=32)
        self.Mixed_5c = ia(256, pool_features=64)
        self.Mixed_5d = ia(288, pool_features=64)
        self.Mixed_6a = ib(288)
        self.Mixed_6b = ic(768, channels_7x7=128)
        self.Mixed_6c = ic(768, channels_7x7=160)
        self.Mixed_6d = ic(768, channels_7x7=160)
        self.Mixed_6e = ic(768, channels_7x7=192)
        self.AuxLogits = iaux(768, num_classes) if aux_logits else None
        self.Mixed_7a = idd(768)
        self.Mixed_7b = ie(1280)
        self.Mixed_7c = ie(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights is None or init_weights:
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    std = float(getattr(m, "stddev", 0.1))
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=std, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        if self.transform_input:
            x = _transform_input(x)
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(self.maxpool1(x))))
        for name in ("Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c",
                     "Mixed_6d", "Mixed_6e"):
            x = getattr(self, name)(x)
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        x = self.fc(self.dropout(self.avgpool(x)).flatten(1))
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


class Inception_V3_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/inception_v3_google-0cc3c7bd.pth',
        transforms=_preset(crop_size=299, resize_size=342),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (75, 75),
            "num_params": 27161264,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#inception-v3',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.294, 'acc@5': 93.45}},
            "_ops": 5.713,
            "_file_size": 103.903,
            "_docs": 'These weights are ported from the original paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=Inception_V3_Weights)
def inception_v3(*, weights=None, progress=True, **kwargs):
    """Inception v3 ("Rethinking the Inception Architecture for Computer Vision"). With
    weights, ``transform_input`` defaults to True and the aux head is kept only with
    ``aux_logits=True`` (the default)."""
    original_aux_logits = kwargs.get("aux_logits", True)
    _aux_weights_kwargs(weights, kwargs)
    model = _load(Inception3(**kwargs), weights, progress)
    if weights is not None:
        if not original_aux_logits:
            model.aux_logits = False
            model.AuxLogits = None
    return model
