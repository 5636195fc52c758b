"""MaxViT-T (torchvision's architecture and keys): MBConv + block (window) and grid attention.

    >>> from ember.vision.models import maxvit_t
    >>> m = maxvit_t(num_classes=10)       # needs 224x224 inputs (partition size 7)
    >>> m.classifier[-1].out_features
    10
"""
from __future__ import annotations

import functools
from collections import OrderedDict

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _set_param, \
    _weights_kwargs, register_model
from ._blocks import Conv2dNormActivation, SqueezeExcitation, StochasticDepth
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["MaxVit", "maxvit_t", "MaxVit_T_Weights"]


def _conv_out(size, kernel_size, stride, padding):
    return tuple((s - kernel_size + 2 * padding) // stride + 1 for s in size)


def _relative_position_index(height, width):
    """(H*W, H*W) int64 index into the (2H-1)*(2W-1) relative-offset table."""
    coords = np.stack(np.meshgrid(np.arange(height), np.arange(width), indexing="ij"))
    coords = coords.reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0)
    rel[:, :, 0] += height - 1
    rel[:, :, 1] += width - 1
    rel[:, :, 0] *= 2 * width - 1
    return rel.sum(-1).astype(np.int64)


class MBConv(nn.Module):
    """Pre-norm MBConv with SE; the shortcut is (avgpool +) 1x1 conv when shape changes."""

    def __init__(self, in_channels, out_channels, expansion_ratio, squeeze_ratio, stride,
                 activation_layer, norm_layer, p_stochastic_dropout=0.0):
        super().__init__()
        if stride != 1 or in_channels != out_channels:
            proj = [nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=True)]
            if stride == 2:
                proj = [nn.AvgPool2d(kernel_size=3, stride=stride, padding=1)] + proj
            self.proj = nn.Sequential(*proj)
        else:
            self.proj = nn.Identity()
        mid = int(out_channels * expansion_ratio)
        sqz = int(out_channels * squeeze_ratio)
        self.stochastic_depth = (StochasticDepth(p_stochastic_dropout, mode="row")
                                 if p_stochastic_dropout else nn.Identity())
        self.layers = nn.Sequential(OrderedDict([
            ("pre_norm", norm_layer(in_channels)),
            ("conv_a", Conv2dNormActivation(in_channels, mid, kernel_size=1, stride=1, padding=0,
                                            activation_layer=activation_layer,
                                            norm_layer=norm_layer, inplace=None)),
            ("conv_b", Conv2dNormActivation(mid, mid, kernel_size=3, stride=stride, padding=1,
                                            activation_layer=activation_layer,
                                            norm_layer=norm_layer, groups=mid, inplace=None)),
            ("squeeze_excitation", SqueezeExcitation(mid, sqz, activation=nn.SiLU)),
            ("conv_c", nn.Conv2d(mid, out_channels, kernel_size=1, bias=True))]))

    def forward(self, x):
        return self.proj(x) + self.stochastic_depth(self.layers(x))


class RelativePositionalMultiHeadAttention(nn.Module):
    """Multi-head attention over (B, G, P, D) partitions with a relative position bias."""

    def __init__(self, feat_dim, head_dim, max_seq_len):
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ValueError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads = feat_dim // head_dim
        self.head_dim = head_dim
        self.size = int(round(max_seq_len ** 0.5))
        self.max_seq_len = max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * head_dim * 3)
        self.scale_factor = feat_dim ** -0.5
        self.merge = nn.Linear(head_dim * self.n_heads, feat_dim)
        self.relative_position_bias_table = nn.Parameter(
            ember.empty((2 * self.size - 1) * (2 * self.size - 1), self.n_heads))
        self.register_buffer("relative_position_index",
                             ember.from_numpy(_relative_position_index(self.size, self.size)))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self):
        idx = self.relative_position_index.reshape(-1)
        bias = self.relative_position_bias_table[idx].reshape(self.max_seq_len,
                                                              self.max_seq_len, -1)
        return bias.permute(2, 0, 1)[None]

    def forward(self, x):
        b, g, p, d = x.shape
        h, dh = self.n_heads, self.head_dim
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, g, p, h, dh).permute(0, 1, 3, 2, 4)
        k = k.reshape(b, g, p, h, dh).permute(0, 1, 3, 2, 4) * self.scale_factor
        v = v.reshape(b, g, p, h, dh).permute(0, 1, 3, 2, 4)
        attn = F.softmax(q @ k.transpose(-2, -1) + self.get_relative_positional_bias(), dim=-1)
        out = (attn @ v).permute(0, 1, 3, 2, 4).reshape(b, g, p, d)
        return self.merge(out)


class SwapAxes(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a = a
        self.b = b

    def forward(self, x):
        return x.swapaxes(self.a, self.b)


class WindowPartition(nn.Module):
    """(B, C, H, W) -> (B, H/p * W/p, p*p, C)."""

    def forward(self, x, p):
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (h // p) * (w // p), p * p, c)


class WindowDepartition(nn.Module):
    """(B, HP*WP, p*p, C) -> (B, C, HP*p, WP*p)."""

    def forward(self, x, p, h_partitions, w_partitions):
        b, g, pp, c = x.shape
        x = x.reshape(b, h_partitions, w_partitions, p, p, c).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, c, h_partitions * p, w_partitions * p)


class PartitionAttentionLayer(nn.Module):
    """Attention + MLP over window partitions ("window") or a dilated grid ("grid")."""

    def __init__(self, in_channels, head_dim, partition_size, partition_type, grid_size,
                 mlp_ratio, activation_layer, norm_layer, attention_dropout, mlp_dropout,
                 p_stochastic_dropout):
        super().__init__()
        if partition_type not in ("grid", "window"):
            raise ValueError("partition_type must be either 'grid' or 'window'")
        self.n_heads = in_channels // head_dim
        self.head_dim = head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type = partition_type
        self.grid_size = grid_size
        if partition_type == "window":
            self.p, self.g = partition_size, self.n_partitions
        else:
            self.p, self.g = self.n_partitions, partition_size
        self.partition_op = WindowPartition()
        self.departition_op = WindowDepartition()
        grid = partition_type == "grid"
        self.partition_swap = SwapAxes(-2, -3) if grid else nn.Identity()
        self.departition_swap = SwapAxes(-2, -3) if grid else nn.Identity()
        self.attn_layer = nn.Sequential(
            norm_layer(in_channels),
            RelativePositionalMultiHeadAttention(in_channels, head_dim, partition_size ** 2),
            nn.Dropout(attention_dropout))
        self.mlp_layer = nn.Sequential(
            nn.LayerNorm(in_channels), nn.Linear(in_channels, in_channels * mlp_ratio),
            activation_layer(), nn.Linear(in_channels * mlp_ratio, in_channels),
            nn.Dropout(mlp_dropout))
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, mode="row")

    def forward(self, x):
        gh, gw = self.grid_size[0] // self.p, self.grid_size[1] // self.p
        if self.grid_size[0] % self.p or self.grid_size[1] % self.p:
            raise ValueError(f"grid size {self.grid_size} is not divisible by partition size "
                             f"{self.p}")
        x = self.partition_swap(self.partition_op(x, self.p))
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        return self.departition_op(self.departition_swap(x), self.p, gh, gw)


class MaxVitLayer(nn.Module):
    """MBConv -> window attention -> grid attention (keys under ``layers.``)."""

    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, stride,
                 norm_layer, activation_layer, head_dim, mlp_ratio, mlp_dropout,
                 attention_dropout, p_stochastic_dropout, partition_size, grid_size):
        super().__init__()
        attn = functools.partial(PartitionAttentionLayer, in_channels=out_channels,
                                 head_dim=head_dim, partition_size=partition_size,
                                 grid_size=grid_size, mlp_ratio=mlp_ratio,
                                 activation_layer=activation_layer, norm_layer=nn.LayerNorm,
                                 attention_dropout=attention_dropout, mlp_dropout=mlp_dropout,
                                 p_stochastic_dropout=p_stochastic_dropout)
        self.layers = nn.Sequential(OrderedDict([
            ("MBconv", MBConv(in_channels, out_channels, expansion_ratio, squeeze_ratio, stride,
                              activation_layer, norm_layer, p_stochastic_dropout)),
            ("window_attention", attn(partition_type="window")),
            ("grid_attention", attn(partition_type="grid"))]))

    def forward(self, x):
        return self.layers(x)


class MaxVitBlock(nn.Module):
    """``n_layers`` MaxVitLayers; the first halves the resolution."""

    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, norm_layer,
                 activation_layer, head_dim, mlp_ratio, mlp_dropout, attention_dropout,
                 partition_size, input_grid_size, n_layers, p_stochastic):
        super().__init__()
        if len(p_stochastic) != n_layers:
            raise ValueError(f"p_stochastic must have length n_layers={n_layers}, got "
                             f"p_stochastic={p_stochastic}.")
        self.layers = nn.ModuleList()
        self.grid_size = _conv_out(input_grid_size, 3, 2, 1)
        for i, p in enumerate(p_stochastic):
            self.layers.append(MaxVitLayer(
                in_channels if i == 0 else out_channels, out_channels, squeeze_ratio,
                expansion_ratio, 2 if i == 0 else 1, norm_layer, activation_layer, head_dim,
                mlp_ratio, mlp_dropout, attention_dropout, p, partition_size, self.grid_size))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class MaxVit(nn.Module):
    """MaxViT on (N, 3, H, W) -> (N, num_classes); every block's input size must be divisible
    by ``partition_size``."""

    def __init__(self, input_size, stem_channels, partition_size, block_channels, block_layers,
                 head_dim, stochastic_depth_prob, norm_layer=None, activation_layer=nn.GELU,
                 squeeze_ratio=0.25, expansion_ratio=4, mlp_ratio=4, mlp_dropout=0.0,
                 attention_dropout=0.0, num_classes=1000):
        super().__init__()
        norm_layer = norm_layer or functools.partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        sizes, s = [], _conv_out(tuple(input_size), 3, 2, 1)
        for _ in block_channels:
            s = _conv_out(s, 3, 2, 1)
            sizes.append(s)
        for i, s in enumerate(sizes):
            if s[0] % partition_size or s[1] % partition_size:
                raise ValueError(f"input size {s} of block {i} is not divisible by partition "
                                 f"size {partition_size}; block input sizes: {sizes}")
        self.stem = nn.Sequential(
            Conv2dNormActivation(3, stem_channels, 3, stride=2, norm_layer=norm_layer,
                                 activation_layer=activation_layer, bias=False, inplace=None),
            Conv2dNormActivation(stem_channels, stem_channels, 3, stride=1, norm_layer=None,
                                 activation_layer=None, bias=True))
        grid = _conv_out(tuple(input_size), 3, 2, 1)
        self.partition_size = partition_size
        self.blocks = nn.ModuleList()
        p_all = np.linspace(0, stochastic_depth_prob, sum(block_layers)).tolist()
        start = 0
        for cin, cout, n in zip([stem_channels] + list(block_channels[:-1]), block_channels,
                                block_layers):
            self.blocks.append(MaxVitBlock(cin, cout, squeeze_ratio, expansion_ratio, norm_layer,
                                           activation_layer, head_dim, mlp_ratio, mlp_dropout,
                                           attention_dropout, partition_size, grid, n,
                                           p_all[start:start + n]))
            grid = self.blocks[-1].grid_size
            start += n
        c = block_channels[-1]
        self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(c),
                                        nn.Linear(c, c), nn.Tanh(),
                                        nn.Linear(c, num_classes, bias=False))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


class MaxVit_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/maxvit_t-bc5ab103.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 30919624,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#maxvit',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.7, 'acc@5': 96.722}},
            "_ops": 5.558,
            "_file_size": 118.769,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe. They were trained with a BatchNorm2D momentum of 0.99 '
                'instead of the more correct 0.01.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=MaxVit_T_Weights)
def maxvit_t(*, weights=None, progress=True, **kwargs):
    """MaxViT-T ("MaxViT: Multi-Axis Vision Transformer")."""
    if weights is not None:
        _weights_kwargs(weights, kwargs)
        _set_param(kwargs, "input_size", tuple(weights.meta["min_size"]))
    input_size = kwargs.pop("input_size", (224, 224))
    model = MaxVit(input_size=input_size, stem_channels=64, partition_size=7,
                   block_channels=[64, 128, 256, 512], block_layers=[2, 2, 5, 2], head_dim=32,
                   stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.2), **kwargs)
    return _load(model, weights, progress)
