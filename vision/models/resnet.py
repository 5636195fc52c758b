"""ResNet, ResNeXt and Wide ResNet (torchvision's architecture and state-dict keys).

    >>> import ember
    >>> from ember.vision.models import resnet18
    >>> m = resnet18(num_classes=10).eval()
    >>> m(ember.randn(1, 3, 64, 64)).shape
    (1, 10)
"""
from __future__ import annotations

from ember import nn
from ember.nn.modules.container import bn_act

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
           "wide_resnet50_2", "wide_resnet101_2", "ResNet18_Weights", "ResNet34_Weights",
           "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights",
           "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights",
           "Wide_ResNet50_2_Weights", "Wide_ResNet101_2_Weights"]


def _conv3x3(cin, cout, stride=1, groups=1, dilation=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def _conv1x1(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convs with a residual; ``(N, inplanes, H, W) -> (N, planes, H/s, W/s)``."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise ValueError("dilation > 1 is not supported in BasicBlock")
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = bn_act(self.bn1, self.relu, self.conv1(x))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 (stride, groups) -> 1x1 expand (x4), with a residual."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = _conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = bn_act(self.bn1, self.relu, self.conv1(x))
        out = bn_act(self.bn2, self.relu, self.conv2(out))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """ResNet on (N, 3, H, W) images -> (N, num_classes) logits.

    ``block``: BasicBlock or Bottleneck; ``layers``: blocks per stage (e.g. [3, 4, 6, 3]);
    ``groups``/``width_per_group`` give ResNeXt and Wide ResNet; ``zero_init_residual`` zeroes
    the last BN of each block.
    """

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, 7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(bn_act(self.bn1, self.relu, self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def _resnet(block, layers, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    return _load(ResNet(block, layers, **kwargs), weights, progress)


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnet18-f37072fd.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 11689512,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
            "_metrics": {'ImageNet-1K': {'acc@1': 69.758, 'acc@5': 89.078}},
            "_ops": 1.814,
            "_file_size": 44.661,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnet34-b627a593.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 21797672,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
            "_metrics": {'ImageNet-1K': {'acc@1': 73.314, 'acc@5': 91.42}},
            "_ops": 3.664,
            "_file_size": 83.275,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnet50-0676ba61.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 25557032,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.13, 'acc@5': 92.862}},
            "_ops": 4.089,
            "_file_size": 97.781,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/resnet50-11ad3fa6.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 25557032,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621',
            "_metrics": {'ImageNet-1K': {'acc@1': 80.858, 'acc@5': 95.434}},
            "_ops": 4.089,
            "_file_size": 97.79,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnet101-63fe2227.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 44549160,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.374, 'acc@5': 93.546}},
            "_ops": 7.801,
            "_file_size": 170.511,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/resnet101-cd907fc2.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 44549160,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.886, 'acc@5': 95.78}},
            "_ops": 7.801,
            "_file_size": 170.53,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnet152-394f9c45.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 60192808,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.312, 'acc@5': 94.046}},
            "_ops": 11.514,
            "_file_size": 230.434,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/resnet152-f82ba261.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 60192808,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.284, 'acc@5': 96.002}},
            "_ops": 11.514,
            "_file_size": 230.474,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnext50_32x4d-7cdf4587.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 25028904,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 77.618, 'acc@5': 93.698}},
            "_ops": 4.23,
            "_file_size": 95.789,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/resnext50_32x4d-1a0047aa.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 25028904,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.198, 'acc@5': 95.34}},
            "_ops": 4.23,
            "_file_size": 95.833,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnext101_32x8d-8ba56ff5.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 88791336,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#resnext',
            "_metrics": {'ImageNet-1K': {'acc@1': 79.312, 'acc@5': 94.526}},
            "_ops": 16.414,
            "_file_size": 339.586,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/resnext101_32x8d-110c445d.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 88791336,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.834, 'acc@5': 96.228}},
            "_ops": 16.414,
            "_file_size": 339.673,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/resnext101_64x4d-173b62eb.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 83455272,
            "recipe": 'https://github.com/pytorch/vision/pull/5935',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.246, 'acc@5': 96.454}},
            "_ops": 15.46,
            "_file_size": 319.318,
            "_docs": (
                "These weights were trained from scratch by using TorchVision's `new training "
                'recipe '
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 68883240,
            "recipe": 'https://github.com/pytorch/vision/pull/912#issue-445437439',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.468, 'acc@5': 94.086}},
            "_ops": 11.398,
            "_file_size": 131.82,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 68883240,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.602, 'acc@5': 95.758}},
            "_ops": 11.398,
            "_file_size": 263.124,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/wide_resnet101_2-32ee1156.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 126886696,
            "recipe": 'https://github.com/pytorch/vision/pull/912#issue-445437439',
            "_metrics": {'ImageNet-1K': {'acc@1': 78.848, 'acc@5': 94.284}},
            "_ops": 22.753,
            "_file_size": 242.896,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simple '
                'training recipe.'
            ),
        },
    )
    IMAGENET1K_V2 = Weights(
        url='https://download.pytorch.org/models/wide_resnet101_2-d733dc28.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 126886696,
            "recipe": 'https://github.com/pytorch/vision/issues/3995#new-recipe',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.51, 'acc@5': 96.02}},
            "_ops": 22.753,
            "_file_size": 484.747,
            "_docs": (
                'These weights improve upon the results of the original paper by using '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V2


@register_model(weights=ResNet18_Weights)
def resnet18(*, weights=None, progress=True, **kwargs):
    """ResNet-18 ("Deep Residual Learning for Image Recognition")."""
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@register_model(weights=ResNet34_Weights)
def resnet34(*, weights=None, progress=True, **kwargs):
    """ResNet-34."""
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model(weights=ResNet50_Weights)
def resnet50(*, weights=None, progress=True, **kwargs):
    """ResNet-50 (stride in the 3x3 conv of the bottleneck, "ResNet v1.5")."""
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model(weights=ResNet101_Weights)
def resnet101(*, weights=None, progress=True, **kwargs):
    """ResNet-101."""
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model(weights=ResNet152_Weights)
def resnet152(*, weights=None, progress=True, **kwargs):
    """ResNet-152."""
    return _resnet(Bottleneck, [3, 8, 36, 3], weights, progress, **kwargs)


def _grouped(kwargs, groups, width):
    kwargs.setdefault("groups", groups)
    kwargs.setdefault("width_per_group", width)
    if (kwargs["groups"], kwargs["width_per_group"]) != (groups, width):
        raise ValueError(f"this builder fixes groups={groups} and width_per_group={width}")
    return kwargs


@register_model(weights=ResNeXt50_32X4D_Weights)
def resnext50_32x4d(*, weights=None, progress=True, **kwargs):
    """ResNeXt-50 32x4d ("Aggregated Residual Transformations for Deep Neural Networks")."""
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **_grouped(kwargs, 32, 4))


@register_model(weights=ResNeXt101_32X8D_Weights)
def resnext101_32x8d(*, weights=None, progress=True, **kwargs):
    """ResNeXt-101 32x8d."""
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **_grouped(kwargs, 32, 8))


@register_model(weights=ResNeXt101_64X4D_Weights)
def resnext101_64x4d(*, weights=None, progress=True, **kwargs):
    """ResNeXt-101 64x4d."""
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **_grouped(kwargs, 64, 4))


@register_model(weights=Wide_ResNet50_2_Weights)
def wide_resnet50_2(*, weights=None, progress=True, **kwargs):
    """Wide ResNet-50-2 ("Wide Residual Networks"): bottlenecks twice as wide."""
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **_grouped(kwargs, 1, 128))


@register_model(weights=Wide_ResNet101_2_Weights)
def wide_resnet101_2(*, weights=None, progress=True, **kwargs):
    """Wide ResNet-101-2."""
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **_grouped(kwargs, 1, 128))
