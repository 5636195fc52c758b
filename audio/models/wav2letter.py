"""``Wav2Letter``: the fully convolutional speech recogniser of Collobert et al. (2016), as
torchaudio's (same constructor, keys ``acoustic_model.*`` and forward contract).

    >>> import ember
    >>> from ember.audio.models import Wav2Letter
    >>> m = Wav2Letter(num_classes=29, input_type="mfcc", num_features=13)
    >>> tuple(m(ember.randn(1, 13, 100)).shape)   # log-probabilities over classes, per frame
    (1, 29, 51)
"""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F

__all__ = ["Wav2Letter"]

_INPUT_TYPES = ("waveform", "power_spectrum", "mfcc")


def _conv_relu(in_channels, out_channels, kernel_size, stride, padding):
    return [nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding),
            nn.ReLU(inplace=True)]


class Wav2Letter(nn.Module):
    """``Wav2Letter(num_classes=40, input_type="waveform", num_features=1)``.

    ``forward(x)``: x (batch, num_features, time) -> log-probabilities (batch, num_classes,
    frames) (log-softmax over the class axis). With ``input_type="waveform"`` a strided
    conv (kernel 250, stride 160) first turns samples into 250 learned features.
    """

    def __init__(self, num_classes=40, input_type="waveform", num_features=1):
        super().__init__()
        if input_type not in _INPUT_TYPES:
            raise ValueError(f"input_type must be one of {_INPUT_TYPES}, got {input_type!r}")
        in_features = 250 if input_type == "waveform" else num_features
        layers = _conv_relu(in_features, 250, 48, 2, 23)
        for _ in range(7):
            layers += _conv_relu(250, 250, 7, 1, 3)
        layers += _conv_relu(250, 2000, 32, 1, 16)
        layers += _conv_relu(2000, 2000, 1, 1, 0)
        layers += _conv_relu(2000, num_classes, 1, 1, 0)
        acoustic = nn.Sequential(*layers)
        if input_type == "waveform":
            acoustic = nn.Sequential(nn.Sequential(*_conv_relu(num_features, 250, 250, 160, 45)),
                                     acoustic)
        self.acoustic_model = acoustic

    def forward(self, x):
        if x.ndim != 3:
            raise ValueError(f"Wav2Letter expects x of shape (batch, num_features, time), got "
                             f"{list(x.shape)}")
        return F.log_softmax(self.acoustic_model(x), dim=1)
