"""MNASNet 0.5/0.75/1.0/1.3, the B1 variant (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import mnasnet0_5
    >>> mnasnet0_5(num_classes=10).eval()(ember.randn(1, 3, 32, 32)).shape
    (1, 10)
"""
from __future__ import annotations

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["MNASNet", "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3",
           "MNASNet0_5_Weights", "MNASNet0_75_Weights", "MNASNet1_0_Weights",
           "MNASNet1_3_Weights"]

_BN_MOMENTUM = 1 - 0.9997


class _InvertedResidual(nn.Module):
    """1x1 expand -> kxk depthwise (stride) -> 1x1 project (+ residual); keys under
    ``layers.``."""

    def __init__(self, in_ch, out_ch, kernel_size, stride, expansion_factor, bn_momentum=0.1):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in (3, 5):
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid, 1, bias=False), nn.BatchNorm2d(mid, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid,
                      bias=False),
            nn.BatchNorm2d(mid, momentum=bn_momentum), nn.ReLU(inplace=True),
            nn.Conv2d(mid, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch, momentum=bn_momentum))

    def forward(self, input):
        out = self.layers(input)
        return out + input if self.apply_residual else out


def _stack(in_ch, out_ch, kernel_size, stride, exp_factor, repeats, bn_momentum):
    blocks = [_InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum)]
    blocks += [_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum)
               for _ in range(1, repeats)]
    return nn.Sequential(*blocks)


def _round_to_multiple_of(val, divisor, round_up_bias=0.9):
    """Round to a multiple of ``divisor``, rounding up unless that overshoots by > 10%."""
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha):
    return [_round_to_multiple_of(d * alpha, 8) for d in (32, 16, 24, 40, 80, 96, 192, 320)]


class MNASNet(nn.Module):
    """MNASNet (B1) on (N, 3, H, W) -> (N, num_classes); ``alpha`` scales the widths."""

    def __init__(self, alpha, num_classes=1000, dropout=0.2):
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        self.num_classes = num_classes
        d = _get_depths(alpha)
        m = _BN_MOMENTUM
        self.layers = nn.Sequential(
            nn.Conv2d(3, d[0], 3, padding=1, stride=2, bias=False),
            nn.BatchNorm2d(d[0], momentum=m), nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[0], 3, padding=1, stride=1, groups=d[0], bias=False),
            nn.BatchNorm2d(d[0], momentum=m), nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[1], 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(d[1], momentum=m),
            _stack(d[1], d[2], 3, 2, 3, 3, m), _stack(d[2], d[3], 5, 2, 3, 3, m),
            _stack(d[3], d[4], 5, 2, 6, 3, m), _stack(d[4], d[5], 3, 1, 6, 2, m),
            _stack(d[5], d[6], 5, 2, 6, 4, m), _stack(d[6], d[7], 3, 1, 6, 1, m),
            nn.Conv2d(d[7], 1280, 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(1280, momentum=m), nn.ReLU(inplace=True))
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(1280, num_classes))
        for mod in self.modules():
            if isinstance(mod, nn.Conv2d):
                nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.BatchNorm2d):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.Linear):
                nn.init.kaiming_uniform_(mod.weight, mode="fan_out", nonlinearity="sigmoid")
                nn.init.zeros_(mod.bias)

    def forward(self, x):
        return self.classifier(self.layers(x).mean([2, 3]))


def _mnasnet(alpha, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    return _load(MNASNet(alpha, **kwargs), weights, progress)


class MNASNet0_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mnasnet0.5_top1_67.823-3ffadce67e.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 2218512,
            "recipe": 'https://github.com/1e100/mnasnet_trainer',
            "_metrics": {'ImageNet-1K': {'acc@1': 67.734, 'acc@5': 87.49}},
            "_ops": 0.104,
            "_file_size": 8.591,
            "_docs": 'These weights reproduce closely the results of the paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class MNASNet0_75_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mnasnet0_75-7090bc5f.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 3170208,
            "recipe": 'https://github.com/pytorch/vision/pull/6019',
            "_metrics": {'ImageNet-1K': {'acc@1': 71.18, 'acc@5': 90.496}},
            "_ops": 0.215,
            "_file_size": 12.303,
            "_docs": (
                "These weights were trained from scratch by using TorchVision's `new training "
                'recipe '
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class MNASNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mnasnet1.0_top1_73.512-f206786ef8.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 4383312,
            "recipe": 'https://github.com/1e100/mnasnet_trainer',
            "_metrics": {'ImageNet-1K': {'acc@1': 73.456, 'acc@5': 91.51}},
            "_ops": 0.314,
            "_file_size": 16.915,
            "_docs": 'These weights reproduce closely the results of the paper.',
        },
    )
    DEFAULT = IMAGENET1K_V1


class MNASNet1_3_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/mnasnet1_3-a4c69d6f.pth',
        transforms=_preset(crop_size=224, resize_size=232),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (1, 1),
            "num_params": 6282256,
            "recipe": 'https://github.com/pytorch/vision/pull/6019',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.506, 'acc@5': 93.522}},
            "_ops": 0.526,
            "_file_size": 24.246,
            "_docs": (
                "These weights were trained from scratch by using TorchVision's `new training "
                'recipe '
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=MNASNet0_5_Weights)
def mnasnet0_5(*, weights=None, progress=True, **kwargs):
    """MNASNet with depth multiplier 0.5 ("MnasNet: Platform-Aware Neural Architecture
    Search for Mobile")."""
    return _mnasnet(0.5, weights, progress, **kwargs)


@register_model(weights=MNASNet0_75_Weights)
def mnasnet0_75(*, weights=None, progress=True, **kwargs):
    """MNASNet with depth multiplier 0.75."""
    return _mnasnet(0.75, weights, progress, **kwargs)


@register_model(weights=MNASNet1_0_Weights)
def mnasnet1_0(*, weights=None, progress=True, **kwargs):
    """MNASNet with depth multiplier 1.0."""
    return _mnasnet(1.0, weights, progress, **kwargs)


@register_model(weights=MNASNet1_3_Weights)
def mnasnet1_3(*, weights=None, progress=True, **kwargs):
    """MNASNet with depth multiplier 1.3."""
    return _mnasnet(1.3, weights, progress, **kwargs)
