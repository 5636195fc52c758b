"""ConvNeXt tiny/small/base/large (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import convnext_tiny
    >>> convnext_tiny(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

import functools

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import Conv2dNormActivation, StochasticDepth
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["ConvNeXt", "CNBlockConfig", "LayerNorm2d", "convnext_tiny", "convnext_small",
           "convnext_base", "convnext_large", "ConvNeXt_Tiny_Weights", "ConvNeXt_Small_Weights",
           "ConvNeXt_Base_Weights", "ConvNeXt_Large_Weights"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an (N, C, H, W) tensor."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Permute(nn.Module):
    """``x.permute(*dims)`` as a module."""

    def __init__(self, dims):
        super().__init__()
        self.dims = list(dims)

    def forward(self, x):
        return x.permute(*self.dims)

    def extra_repr(self):
        return f"dims={self.dims}"


class CNBlock(nn.Module):
    """Depthwise 7x7 -> LayerNorm (channels-last) -> Linear 4x -> GELU -> Linear, scaled by
    ``layer_scale`` (shape (C, 1, 1)) with a stochastic-depth residual."""

    def __init__(self, dim, layer_scale, stochastic_depth_prob, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or functools.partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]), norm_layer(dim), nn.Linear(dim, 4 * dim, bias=True),
            nn.GELU(), nn.Linear(4 * dim, dim, bias=True), Permute([0, 3, 1, 2]))
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        return self.stochastic_depth(self.layer_scale * self.block(input)) + input


class CNBlockConfig:
    """A stage: ``num_layers`` blocks of ``input_channels``, then a 2x2 stride-2 downsample to
    ``out_channels`` (None for the last stage)."""

    def __init__(self, input_channels, out_channels, num_layers):
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self):
        return (f"CNBlockConfig(input_channels={self.input_channels}, "
                f"out_channels={self.out_channels}, num_layers={self.num_layers})")


class ConvNeXt(nn.Module):
    """ConvNeXt on (N, 3, H, W) -> (N, num_classes): 4x4 patchify stem, stages with
    downsampling between them, LayerNorm + Linear head."""

    def __init__(self, block_setting, stochastic_depth_prob=0.0, layer_scale=1e-6,
                 num_classes=1000, block=None, norm_layer=None, **kwargs):
        super().__init__()
        if not block_setting or not all(isinstance(s, CNBlockConfig) for s in block_setting):
            raise TypeError("block_setting should be a non-empty list of CNBlockConfig")
        block = block or CNBlock
        norm_layer = norm_layer or functools.partial(LayerNorm2d, eps=1e-6)
        first = block_setting[0].input_channels
        layers = [Conv2dNormActivation(3, first, kernel_size=4, stride=4, padding=0,
                                       norm_layer=norm_layer, activation_layer=None, bias=True)]
        total = sum(c.num_layers for c in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                sd_prob = stochastic_depth_prob * block_id / (total - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels,
                                                      kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        last_out = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(last_out), nn.Flatten(1),
                                        nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


# (dims, depths, default stochastic depth) per size
_SIZES = {"tiny": ((96, 192, 384, 768), (3, 3, 9, 3), 0.1),
          "small": ((96, 192, 384, 768), (3, 3, 27, 3), 0.4),
          "base": ((128, 256, 512, 1024), (3, 3, 27, 3), 0.5),
          "large": ((192, 384, 768, 1536), (3, 3, 27, 3), 0.5)}


def _convnext(size, weights, progress, **kwargs):
    dims, depths, sd = _SIZES[size]
    setting = [CNBlockConfig(dims[i], dims[i + 1] if i < 3 else None, depths[i])
               for i in range(4)]
    _weights_kwargs(weights, kwargs)
    sd = kwargs.pop("stochastic_depth_prob", sd)
    return _load(ConvNeXt(setting, stochastic_depth_prob=sd, **kwargs), weights, progress)


class ConvNeXt_Tiny_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/convnext_tiny-983f1562.pth',
        transforms=_preset(crop_size=224, resize_size=236),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 28589128,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#convnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.52, 'acc@5': 96.146}},
            "_ops": 4.456,
            "_file_size": 109.119,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/convnext_small-0c510722.pth',
        transforms=_preset(crop_size=224, resize_size=230),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 50223688,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#convnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.616, 'acc@5': 96.65}},
            "_ops": 8.684,
            "_file_size": 191.703,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Base_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/convnext_base-6075fbad.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 88591464,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#convnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.062, 'acc@5': 96.87}},
            "_ops": 15.355,
            "_file_size": 338.064,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/convnext_large-ea097f82.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (32, 32),
            "num_params": 197767336,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#convnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.414, 'acc@5': 96.976}},
            "_ops": 34.361,
            "_file_size": 754.537,
            "_docs": (
                'These weights improve upon the results of the original paper by using a '
                "modified version of TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=ConvNeXt_Tiny_Weights)
def convnext_tiny(*, weights=None, progress=True, **kwargs):
    """ConvNeXt-Tiny ("A ConvNet for the 2020s")."""
    return _convnext("tiny", weights, progress, **kwargs)


@register_model(weights=ConvNeXt_Small_Weights)
def convnext_small(*, weights=None, progress=True, **kwargs):
    """ConvNeXt-Small."""
    return _convnext("small", weights, progress, **kwargs)


@register_model(weights=ConvNeXt_Base_Weights)
def convnext_base(*, weights=None, progress=True, **kwargs):
    """ConvNeXt-Base."""
    return _convnext("base", weights, progress, **kwargs)


@register_model(weights=ConvNeXt_Large_Weights)
def convnext_large(*, weights=None, progress=True, **kwargs):
    """ConvNeXt-Large."""
    return _convnext("large", weights, progress, **kwargs)
