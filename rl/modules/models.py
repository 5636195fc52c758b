"""Network builders for policies and value functions, with torchrl's names and arguments:
``MLP``, ``ConvNet`` (+ ``SquashDims``) and the dueling Q-networks ``DuelingMlpDQNet`` and
``DuelingCnnDQNet``.

``MLP`` and ``ConvNet`` are ``nn.Sequential`` subclasses, so their state-dict keys are the
layer indices torchrl's have (``"0.weight"``, ``"2.bias"``, ...).

    >>> import ember
    >>> from ember.rl.modules import MLP
    >>> net = MLP(in_features=4, out_features=2, num_cells=[32, 32])
    >>> net(ember.randn(8, 4)).shape
    (8, 2)
    >>> MLP(out_features=(3, 2), depth=1, num_cells=16)(ember.randn(5, 4)).shape  # lazy input
    (5, 3, 2)
"""
from __future__ import annotations

import math

import ember
from ember import nn
from ember.nn import functional as F
from ember.nn import init
from ember.nn.parameter import Parameter

__all__ = ["MLP", "ConvNet", "SquashDims", "DuelingMlpDQNet", "DuelingCnnDQNet"]


class _LazyLinear(nn.Module):
    """A ``Linear`` whose ``in_features`` is read from its first input (torch's
    ``LazyLinear``): parameters exist after the first call, initialised as ``nn.Linear``'s.
    Build the optimizer after one forward pass."""

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.out_features, self._bias, self._device, self._dtype = out_features, bias, device, dtype
        self.in_features = None

    def _materialize(self, x):
        self.in_features = int(x.shape[-1])
        dtype = self._dtype or x.dtype
        self.weight = Parameter(ember.empty(self.out_features, self.in_features,
                                            device=self._device or x.device, dtype=dtype))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self._bias:
            self.bias = Parameter(ember.empty(self.out_features, device=self._device or x.device,
                                              dtype=dtype))
            bound = 1 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)
        else:
            self.bias = None

    def forward(self, x):
        if self.in_features is None:
            self._materialize(x)
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


def _per_layer(value, n, name, who):
    """``value`` (one item or a sequence of ``n``) as a list of ``n`` items."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{who}: {name} has {len(value)} entries for {n} layers")
        return list(value)
    return [value] * n


def _cells(num_cells, depth, who, default):
    if num_cells is None:
        num_cells = default if depth is None else default[:1] * depth
    if isinstance(num_cells, int):
        if depth is None:
            raise ValueError(f"{who}: num_cells={num_cells} (an int) needs depth")
        num_cells = [num_cells] * depth
    num_cells = [int(c) for c in num_cells]
    if depth is not None and len(num_cells) != depth:
        raise ValueError(f"{who}: depth={depth} but num_cells has {len(num_cells)} entries")
    return num_cells


class MLP(nn.Sequential):
    """A multi-layer perceptron: ``depth`` hidden layers (Linear, optional norm, activation,
    optional dropout) and a last Linear.

    Args:
        in_features: input size; ``None`` reads it from the first input (lazy first layer).
        out_features: output size, an int or a shape (the output is reshaped to it).
        depth / num_cells: hidden layers; ``num_cells`` an int (with ``depth``) or a list of
            widths. Default: three layers of 32.
        activation_class / activation_kwargs: the hidden activation (default ``nn.Tanh``).
        norm_class / norm_kwargs: a normalisation layer after each hidden Linear.
        dropout: dropout probability after each hidden activation.
        bias_last_layer: bias on the last Linear.
        activate_last_layer: apply the activation to the output too.
    """

    def __init__(self, in_features=None, out_features=None, depth=None, num_cells=None,
                 activation_class=nn.Tanh, activation_kwargs=None, norm_class=None,
                 norm_kwargs=None, dropout=None, bias_last_layer=True,
                 activate_last_layer=False, layer_class=None, layer_kwargs=None, device=None):
        who = "MLP"
        if out_features is None:
            raise ValueError(f"{who}: out_features is required")
        out_shape = tuple(out_features) if isinstance(out_features, (list, tuple)) \
            else (int(out_features),)
        n_out = math.prod(out_shape)
        cells = _cells(num_cells, depth, who, [32, 32, 32])
        layer_kwargs = dict(layer_kwargs or {})

        def linear(i, o, bias=True):
            if layer_class is not None:
                return layer_class(i, o, bias=bias, **layer_kwargs)
            if i is None:
                return _LazyLinear(o, bias=bias, device=device)
            return nn.Linear(i, o, bias=bias, device=device)

        def act():
            return activation_class(**(activation_kwargs or {}))

        layers, width = [], in_features
        for c in cells:
            layers.append(linear(width, c))
            if norm_class is not None:
                layers.append(norm_class(**(norm_kwargs or {})))
            layers.append(act())
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = c
        layers.append(linear(width, n_out, bias=bias_last_layer))
        if activate_last_layer:
            layers.append(act())
        super().__init__(*layers)
        self.in_features, self.out_features, self.num_cells = in_features, out_features, cells
        self.out_shape = out_shape

    def forward(self, *inputs):
        x = inputs[0] if len(inputs) == 1 else ember.cat(list(inputs), -1)
        out = super().forward(x)
        if len(self.out_shape) > 1:
            out = out.reshape(*out.shape[:-1], *self.out_shape)
        return out


class SquashDims(nn.Module):
    """Flatten the last ``ndims_in`` dims into one (a ConvNet's C, H, W into features)."""

    def __init__(self, ndims_in=3):
        super().__init__()
        self.ndims_in = ndims_in

    def forward(self, x):
        if x.ndim < self.ndims_in:
            raise ValueError(f"SquashDims: input of shape {list(x.shape)} has fewer than "
                             f"{self.ndims_in} dims")
        return x.reshape(*x.shape[:x.ndim - self.ndims_in], -1)


class ConvNet(nn.Sequential):
    """2-D convolutions (each followed by an activation, default ``nn.ELU``) and an
    aggregator (default ``SquashDims``: the output is ``[*batch, features]``). Inputs are
    ``[*batch, C, H, W]`` with any number of batch dims.

    Args:
        in_features: input channels.
        depth / num_cells: the conv layers' output channels (default ``[32, 32, 32]``).
        kernel_sizes, strides, paddings: one value, or one per layer.
    """

    def __init__(self, in_features=None, depth=None, num_cells=None, kernel_sizes=3, strides=1,
                 paddings=0, activation_class=nn.ELU, activation_kwargs=None, norm_class=None,
                 norm_kwargs=None, bias_last_layer=True, aggregator_class=SquashDims,
                 aggregator_kwargs=None, squeeze_output=False, device=None):
        who = "ConvNet"
        if in_features is None:
            raise ValueError(f"{who}: in_features (the input channels) is required")
        cells = _cells(num_cells, depth, who, [32, 32, 32])
        n = len(cells)
        ks = _per_layer(kernel_sizes, n, "kernel_sizes", who)
        st = _per_layer(strides, n, "strides", who)
        pd = _per_layer(paddings, n, "paddings", who)
        layers, ch = [], in_features
        for i, c in enumerate(cells):
            bias = bias_last_layer if i == n - 1 else True
            layers.append(nn.Conv2d(ch, c, ks[i], stride=st[i], padding=pd[i], bias=bias,
                                    device=device))
            if norm_class is not None:
                layers.append(norm_class(**(norm_kwargs or {})))
            layers.append(activation_class(**(activation_kwargs or {})))
            ch = c
        if aggregator_class is not None:
            layers.append(aggregator_class(**(aggregator_kwargs or {})))
        super().__init__(*layers)
        self.in_features, self.num_cells, self.squeeze_output = in_features, cells, squeeze_output

    def forward(self, x):
        if x.ndim < 3:
            raise ValueError(f"ConvNet: expected an input [*batch, C, H, W], got shape "
                             f"{list(x.shape)}")
        lead = tuple(x.shape[:-3])
        flat = x.reshape(-1, *x.shape[-3:]) if len(lead) != 1 else x
        out = super().forward(flat)
        if len(lead) != 1:
            out = out.reshape(*lead, *out.shape[1:])
        if self.squeeze_output:
            out = out.squeeze(-1)
        return out


def _dueling(value, advantage):
    """Q = V + A - mean(A): the advantage stream is centred so V is identifiable."""
    return value + advantage - advantage.mean(-1, keepdim=True)


class DuelingMlpDQNet(nn.Module):
    """Dueling Q-network on an MLP trunk (Wang et al. 2016): ``features`` (default two layers
    of 256, ELU), then an ``advantage`` head (``out_features`` actions) and a ``value`` head,
    combined as ``V + A - mean(A)``. ``mlp_kwargs_feature`` may give ``in_features``."""

    def __init__(self, out_features, out_features_value=1, mlp_kwargs_feature=None,
                 mlp_kwargs_output=None, device=None):
        super().__init__()
        feat = {"num_cells": [256, 256], "out_features": 256, "activation_class": nn.ELU,
                "activate_last_layer": True, "depth": None, "device": device}
        feat.update(mlp_kwargs_feature or {})
        self.features = MLP(**feat)
        head = {"num_cells": [512], "activation_class": nn.ELU, "depth": None,
                "in_features": feat["out_features"], "device": device}
        head.update(mlp_kwargs_output or {})
        self.advantage = MLP(**{**head, "out_features": out_features})
        self.value = MLP(**{**head, "out_features": out_features_value})

    def forward(self, x):
        h = self.features(x)
        return _dueling(self.value(h), self.advantage(h))


class DuelingCnnDQNet(nn.Module):
    """Dueling Q-network on a ConvNet trunk (default: the Atari DQN convs 32/64/64 with
    kernels 8/4/3 and strides 4/2/1); ``cnn_kwargs`` must give ``in_features`` (channels).
    Each head is an MLP with one hidden layer of 512 (ELU)."""

    def __init__(self, out_features, out_features_value=1, cnn_kwargs=None, mlp_kwargs=None,
                 device=None):
        super().__init__()
        cnn = {"num_cells": [32, 64, 64], "kernel_sizes": [8, 4, 3], "strides": [4, 2, 1],
               "device": device}
        cnn.update(cnn_kwargs or {})
        self.features = ConvNet(**cnn)
        mlp = {"num_cells": [512], "activation_class": nn.ELU, "depth": None, "device": device}
        mlp.update(mlp_kwargs or {})
        self.advantage = MLP(**{**mlp, "out_features": out_features})
        self.value = MLP(**{**mlp, "out_features": out_features_value})

    def forward(self, x):
        h = self.features(x)
        return _dueling(self.value(h), self.advantage(h))
