"""Model building blocks shared by the vision models and detection heads: conv-norm-activation,
squeeze-excitation, MLP, stochastic depth and the frozen batch norm of detection backbones."""
from __future__ import annotations

import ember
from ember import nn
from ember._tensor import Tensor

__all__ = ["FrozenBatchNorm2d", "Conv2dNormActivation", "SqueezeExcitation", "MLP",
           "StochasticDepth", "stochastic_depth"]


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, all buffers (``weight``,
    ``bias``, ``running_mean``, ``running_var``): ``y = (x - mean) / sqrt(var + eps) * weight
    + bias`` in train and eval alike, as detection backbones use with small batches. Loads a
    ``BatchNorm2d`` state dict (its ``num_batches_tracked`` is dropped).

        >>> bn = FrozenBatchNorm2d(3)
        >>> bn
        FrozenBatchNorm2d(3, eps=1e-05)
        >>> list(bn.state_dict())
        ['weight', 'bias', 'running_mean', 'running_var']
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ember.ones(num_features))
        self.register_buffer("bias", ember.zeros(num_features))
        self.register_buffer("running_mean", ember.zeros(num_features))
        self.register_buffer("running_var", ember.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        # BatchNorm2d's counter has no place here: load from this module's keys without it
        # (a filtered copy, so the caller's dict stays as it was)
        skip = prefix + "num_batches_tracked"
        if skip in state_dict:
            state_dict = {k: v for k, v in state_dict.items() if k.startswith(prefix) and
                          k != skip}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, assign)

    def forward(self, x) -> Tensor:
        scale = self.weight.reshape(1, -1, 1, 1) * \
            (self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        shift = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + shift

    def __repr__(self):
        return f"{type(self).__name__}({self.weight.shape[0]}, eps={self.eps})"


def stochastic_depth(input, p: float, mode: str, training: bool = True) -> Tensor:
    """Drop whole residual branches: per sample (``mode="row"``) or for the batch ("batch"),
    with probability ``p``, scaling survivors by ``1 / (1 - p)``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival = 1.0 - p
    shape = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = ember.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(survival)
    if survival > 0.0:
        noise = noise / survival
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of ``stochastic_depth`` (arguments checked at construction)."""

    def __init__(self, p: float, mode: str):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ("batch", "row"):
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        self.p, self.mode = p, mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def extra_repr(self):
        return f"p={self.p}, mode={self.mode}"


class Conv2dNormActivation(nn.Sequential):
    """Conv2d -> norm (BatchNorm2d) -> activation (ReLU); children "0", "1", "2" as torchvision,
    so state-dict keys match. ``padding`` defaults to "same" for odd kernels."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1,
                 inplace=True, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation if isinstance(kernel_size, int) else \
                tuple((k - 1) // 2 * dilation for k in kernel_size)
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else
                          _act(activation_layer, inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


def _dropout(p, inplace):
    """torchvision's MLP hands ``inplace`` to its Dropout layers too (it shows in the repr)."""
    return nn.Dropout(p) if inplace is None else nn.Dropout(p, inplace=inplace)


def _act(layer, inplace):
    try:
        return layer(inplace=inplace)
    except TypeError:
        return layer()


class SqueezeExcitation(nn.Module):
    """``x * scale_activation(fc2(activation(fc1(avgpool(x)))))`` with 1x1 convs fc1/fc2."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU,
                 scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
        return input * s


class MLP(nn.Sequential):
    """Linear -> [norm] -> activation -> dropout per hidden size; the last layer is Linear ->
    dropout (indices as torchvision's, so state-dict keys match)."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU,
                 inplace=None, bias=True, dropout=0.0):
        layers, d = [], in_channels
        for h in hidden_channels[:-1]:
            layers.append(nn.Linear(d, h, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(h))
            layers.append(activation_layer() if inplace is None else
                          _act(activation_layer, inplace))
            layers.append(_dropout(dropout, inplace))
            d = h
        layers.append(nn.Linear(d, hidden_channels[-1], bias=bias))
        layers.append(_dropout(dropout, inplace))
        super().__init__(*layers)
