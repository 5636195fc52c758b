"""Cross networks (DCN, DCN v2): explicit feature crosses ``x0 * (W x_l + b) + x_l``.

All take (B, N) and return (B, N). Parameters are ``ParameterList``s named as torchrec's
(``kernels.<l>``, ``W_kernels.<l>``, ``V_kernels.<l>``, ``bias.<l>``), so state dicts carry
over; kernels start Xavier-normal, biases at zero.
"""
from __future__ import annotations

import ember
from ember import nn


def _xavier(*shape):
    return nn.Parameter(nn.init.xavier_normal_(ember.empty(*shape)))


def _zeros(n):
    return nn.Parameter(ember.zeros(n, 1))


class CrossNet(nn.Module):
    """Full-rank cross layers (DCN v2): ``x_{l+1} = x_0 * (W_l x_l + b_l) + x_l`` with
    ``W_l`` (N, N).

    >>> import ember
    >>> CrossNet(6, num_layers=2)(ember.ones(3, 6)).shape
    (3, 6)
    """

    def __init__(self, in_features, num_layers):
        super().__init__()
        self._num_layers = num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, in_features)
                                         for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features) for _ in range(num_layers)])

    def forward(self, input):
        x0 = input.unsqueeze(2)                                     # (B, N, 1)
        x = x0
        for k, b in zip(self.kernels, self.bias):
            x = x0 * (ember.matmul(k, x) + b) + x                   # (N, N) @ (B, N, 1)
        return x.squeeze(2)


class LowRankCrossNet(nn.Module):
    """Low-rank cross layers (DCN v2, the "DCN-M" form): ``W_l`` factored as ``W (N, r)``
    times ``V (r, N)``: ``x_{l+1} = x_0 * (W_l (V_l x_l) + b_l) + x_l``. ``low_rank`` >= 1.

    >>> import ember
    >>> LowRankCrossNet(6, num_layers=2, low_rank=2)(ember.ones(3, 6)).shape
    (3, 6)
    """

    def __init__(self, in_features, num_layers, low_rank=1):
        super().__init__()
        if low_rank < 1:
            raise ValueError(f"LowRankCrossNet: low_rank must be >= 1, got {low_rank}")
        self._num_layers, self._low_rank = num_layers, low_rank
        self.W_kernels = nn.ParameterList([_xavier(in_features, low_rank)
                                           for _ in range(num_layers)])
        self.V_kernels = nn.ParameterList([_xavier(low_rank, in_features)
                                           for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features) for _ in range(num_layers)])

    def forward(self, input):
        x0 = input.unsqueeze(2)
        x = x0
        for w, v, b in zip(self.W_kernels, self.V_kernels, self.bias):
            x = x0 * (ember.matmul(w, ember.matmul(v, x)) + b) + x
        return x.squeeze(2)


class VectorCrossNet(nn.Module):
    """DCN v1 cross layers: ``x_{l+1} = x_0 (x_l . w_l) + b_l + x_l`` with a vector
    ``w_l`` (N, 1).

    >>> import ember
    >>> VectorCrossNet(6, num_layers=2)(ember.ones(3, 6)).shape
    (3, 6)
    """

    def __init__(self, in_features, num_layers):
        super().__init__()
        self._num_layers = num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, 1) for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features) for _ in range(num_layers)])

    def forward(self, input):
        x0 = input.unsqueeze(2)
        x = x0
        for k, b in zip(self.kernels, self.bias):
            s = ember.matmul(x.transpose(1, 2), k)                  # (B, 1, 1)
            x = ember.matmul(x0, s) + b + x
        return x.squeeze(2)
