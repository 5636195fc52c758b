"""AlexNet (torchvision's single-tower variant and keys).

    >>> import ember
    >>> from ember.vision.models import alexnet
    >>> alexnet(num_classes=10).eval()(ember.randn(1, 3, 63, 63)).shape
    (1, 10)
"""
from __future__ import annotations

from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["AlexNet", "alexnet", "AlexNet_Weights"]


class AlexNet(nn.Module):
    """Five convs with max pools -> adaptive 6x6 average pool -> 3-layer classifier."""

    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x):
        x = self.avgpool(self.features(x)).flatten(1)
        return self.classifier(x)


class AlexNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/alexnet-owt-7be5be79.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (63, 63),
            "num_params": 61100840,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
            "_metrics": {'ImageNet-1K': {'acc@1': 56.522, 'acc@5': 79.066}},
            "_ops": 0.714,
            "_file_size": 233.087,
            "_docs": (
                'These weights reproduce closely the results of the paper using a simplified '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=AlexNet_Weights)
def alexnet(*, weights=None, progress=True, **kwargs):
    """AlexNet ("One weird trick for parallelizing convolutional neural networks")."""
    _weights_kwargs(weights, kwargs)
    return _load(AlexNet(**kwargs), weights, progress)
