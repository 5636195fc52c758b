"""Models trained by ember itself on data shipped inside the package.

``mnist_cnn``: two conv blocks and an MLP head for 28x28 grayscale digits, trained by
``ember run classify`` (the main job) on the 5,000-image MNIST subset in ``ember.recipes``;
its weights ship with ember, so ``mnist_cnn(weights="DEFAULT")`` works offline.

    >>> import ember
    >>> from ember.vision.models import mnist_cnn, MNIST_CNN_Weights
    >>> MNIST_CNN_Weights.DEFAULT.meta["_metrics"]["MNIST-5k"]["acc@1"] >= 97
    True
    >>> mnist_cnn().eval()(ember.zeros(2, 1, 28, 28)).shape
    (2, 10)
"""
from __future__ import annotations

import functools
from pathlib import Path

import ember  # noqa: F401 (the doctests use it)
from ember import nn

from ..transforms._presets import DigitClassification
from ._api import Weights, WeightsEnum, _load, _weights_kwargs, register_model

__all__ = ["SmallCNN", "mnist_cnn", "MNIST_CNN_Weights"]

WEIGHTS_DIR = Path(__file__).with_name("weights")
_MNIST_CNN_FILE = "mnist_cnn-d074a422.safetensors"


class SmallCNN(nn.Module):
    """Two conv blocks and an MLP head for small grayscale images.

    Input (N, in_channels, H, W) with H, W divisible by 4 -> logits (N, num_classes).

        >>> m = SmallCNN(num_classes=10)
        >>> m(ember.zeros(2, 1, 28, 28)).shape
        (2, 10)
    """

    def __init__(self, num_classes=10, in_channels=1, width=16, image_size=28, hidden=128,
                 dropout=0.0):
        super().__init__()
        w = int(width)
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(),
            nn.MaxPool2d(2))
        side = int(image_size) // 4
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(2 * w * side * side, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class MNIST_CNN_Weights(WeightsEnum):
    EMBER_MNIST5K_V1 = Weights(
        url=(WEIGHTS_DIR / _MNIST_CNN_FILE).as_uri(),
        transforms=functools.partial(DigitClassification, size=28),
        meta={
            "categories": [str(d) for d in range(10)],
            "min_size": (28, 28),
            "input_size": (28, 28),
            "input_channels": 1,
            "num_params": 207018,
            "recipe": "ember run classify",
            "_metrics": {"MNIST-5k": {"acc@1": 98.2}},
            "_ops": 0.0012,
            "_file_size": 0.794,
            "_docs": (
                "Trained by ember's main job (`ember run classify`, the default config, seed 0) "
                "on the 4,000 training images of the 5,000-image MNIST subset shipped in "
                "ember.recipes; acc@1 measured on its 1,000 held-out images."
            ),
        },
    )
    DEFAULT = EMBER_MNIST5K_V1


@register_model(weights=MNIST_CNN_Weights)
def mnist_cnn(*, weights=None, progress=True, **kwargs):
    """The main job's digit classifier (``SmallCNN`` with width 16 and dropout 0.2)."""
    _weights_kwargs(weights, kwargs)
    kwargs.setdefault("dropout", 0.2)
    return _load(SmallCNN(**kwargs), weights, progress)

