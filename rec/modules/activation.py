"""``SwishLayerNorm``: ``x * sigmoid(layer_norm(x))``, the gated activation of DCN/DLRM towers."""
from __future__ import annotations

from ember import nn


class SwishLayerNorm(nn.Module):
    """``input * sigmoid(LayerNorm(input))`` over the last ``input_dims`` dims (an int or a
    list, as ``nn.LayerNorm``'s ``normalized_shape``). State keys ``norm.0.weight`` and
    ``norm.0.bias`` (torchrec's).

    >>> import ember
    >>> m = SwishLayerNorm(4)
    >>> m(ember.ones(2, 4)).shape
    (2, 4)
    """

    def __init__(self, input_dims, device=None):
        super().__init__()
        self.norm = nn.Sequential(nn.LayerNorm(input_dims, device=device), nn.Sigmoid())

    def forward(self, input):
        return input * self.norm(input)
