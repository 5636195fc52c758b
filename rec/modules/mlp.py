"""``Perceptron`` (linear + activation) and ``MLP`` (a stack of them), torchrec's layout:
``MLP(...)._mlp.<i>._linear.weight``."""
from __future__ import annotations

import ember
from ember import nn

from .activation import SwishLayerNorm


class Perceptron(nn.Module):
    """``activation(linear(input))``: (B, in_size) -> (B, out_size). ``activation`` is a
    function or a module (a module's parameters join the state dict under
    ``_activation_fn``)."""

    def __init__(self, in_size, out_size, bias=True, activation=ember.relu, device=None,
                 dtype=None):
        super().__init__()
        self._in_size, self._out_size = in_size, out_size
        self._linear = nn.Linear(in_size, out_size, bias=bias, device=device, dtype=dtype)
        self._activation_fn = activation

    def forward(self, input):
        return self._activation_fn(self._linear(input))


def _activation(activation, out_size, device):
    if activation == "relu":
        return ember.relu
    if activation == "sigmoid":
        return ember.sigmoid
    if activation == "swish_layernorm":
        return SwishLayerNorm(out_size, device=device)
    if isinstance(activation, str):
        raise ValueError(f"MLP: activation must be 'relu', 'sigmoid', 'swish_layernorm', a "
                         f"function or a module, got {activation!r}")
    if isinstance(activation, type) and issubclass(activation, nn.Module):
        return activation()  # a module class: one instance per layer, nothing shared
    return activation


class MLP(nn.Module):
    """``Perceptron`` layers of sizes ``layer_sizes`` after ``in_size``: (B, in_size) ->
    (B, layer_sizes[-1]). ``activation``: "relu" (default), "sigmoid", "swish_layernorm"
    (one ``SwishLayerNorm`` per layer), a function, a module (shared by every layer) or a
    module class (one instance per layer).

    >>> import ember
    >>> mlp = MLP(8, [16, 4], activation="swish_layernorm")
    >>> mlp(ember.ones(3, 8)).shape, sorted(mlp.state_dict())[:2]
    ((3, 4), ['_mlp.0._activation_fn.norm.0.bias', '_mlp.0._activation_fn.norm.0.weight'])
    """

    def __init__(self, in_size, layer_sizes, bias=True, activation="relu", device=None,
                 dtype=None):
        super().__init__()
        sizes = [in_size] + list(layer_sizes)
        self._mlp = nn.Sequential(*[
            Perceptron(sizes[i], sizes[i + 1], bias=bias,
                       activation=_activation(activation, sizes[i + 1], device),
                       device=device, dtype=dtype)
            for i in range(len(layer_sizes))])

    def forward(self, input):
        return self._mlp(input)
