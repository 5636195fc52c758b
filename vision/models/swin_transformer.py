"""Swin Transformer T/S/B and Swin V2 T/S/B (torchvision's architecture and keys).

Activations run channels-last, (B, H, W, C), between the patch embedding and the head.

    >>> import ember
    >>> from ember.vision.models import swin_t
    >>> swin_t(num_classes=10).eval()(ember.randn(1, 3, 64, 64)).shape
    (1, 10)
"""
from __future__ import annotations

import functools
import math

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _weights_kwargs, \
    register_model
from ._blocks import MLP, StochasticDepth
from ._meta import _IMAGENET_CATEGORIES
from .convnext import Permute

__all__ = ["SwinTransformer", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s",
           "swin_v2_b", "Swin_T_Weights", "Swin_S_Weights", "Swin_B_Weights",
           "Swin_V2_T_Weights", "Swin_V2_S_Weights", "Swin_V2_B_Weights"]


def _patch_merging_pad(x):
    """(..., H, W, C) -> (..., ceil(H/2), ceil(W/2), 4C): the 2x2 neighbours side by side."""
    h, w = x.shape[-3], x.shape[-2]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    return ember.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                      x[..., 1::2, 1::2, :]], -1)


class PatchMerging(nn.Module):
    """(..., H, W, C) -> (..., H/2, W/2, 2C): merge 2x2 patches, LayerNorm(4C), Linear."""

    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        return self.reduction(self.norm(_patch_merging_pad(x)))


class PatchMergingV2(nn.Module):
    """Swin V2 patch merging: Linear first, then LayerNorm(2C)."""

    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        return self.norm(self.reduction(_patch_merging_pad(x)))


def _relative_position_index(window_size):
    """(Wh*Ww*Wh*Ww,) int64 index into the (2Wh-1)*(2Ww-1) relative-offset table."""
    wh, ww = window_size
    coords = np.stack(np.meshgrid(np.arange(wh), np.arange(ww), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0)
    rel[:, :, 0] += wh - 1
    rel[:, :, 1] += ww - 1
    rel[:, :, 0] *= 2 * ww - 1
    return rel.sum(-1).reshape(-1).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _shift_mask(pad_h, pad_w, window_size, shift_size):
    """(num_windows, N, N) float32 mask: 0 within a region, -100 across shifted regions."""
    wh, ww = window_size
    sh, sw = shift_size
    img = np.zeros((pad_h, pad_w), np.float32)
    count = 0
    for hs in ((0, -wh), (-wh, -sh), (-sh, None)):
        for ws in ((0, -ww), (-ww, -sw), (-sw, None)):
            img[hs[0]:hs[1], ws[0]:ws[1]] = count
            count += 1
    win = img.reshape(pad_h // wh, wh, pad_w // ww, ww).transpose(0, 2, 1, 3).reshape(-1, wh * ww)
    diff = win[:, None, :] - win[:, :, None]
    return np.where(diff != 0, np.float32(-100.0), np.float32(0.0))


def shifted_window_attention(input, qkv_weight, proj_weight, relative_position_bias,
                             window_size, num_heads, shift_size, attention_dropout=0.0,
                             dropout=0.0, qkv_bias=None, proj_bias=None, logit_scale=None,
                             training=True):
    """Window multi-head self-attention on (B, H, W, C), optionally with shifted windows
    (cyclic shift + mask) and, with ``logit_scale``, Swin V2's scaled cosine attention."""
    b, h, w, c = input.shape
    wh, ww = window_size
    pad_r = (ww - w % ww) % ww
    pad_b = (wh - h % wh) % wh
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    ph, pw = x.shape[1], x.shape[2]
    shift = list(shift_size)
    if wh >= ph:
        shift[0] = 0
    if ww >= pw:
        shift[1] = 0
    shifted = sum(shift) > 0
    if shifted:
        x = ember.roll(x, shifts=(-shift[0], -shift[1]), dims=(1, 2))
    nw = (ph // wh) * (pw // ww)
    n = wh * ww
    x = x.reshape(b, ph // wh, wh, pw // ww, ww, c).permute(0, 1, 3, 2, 4, 5).reshape(b * nw, n, c)
    if logit_scale is not None and qkv_bias is not None:
        length = qkv_bias.shape[0] // 3
        qkv_bias = ember.cat([qkv_bias[:length], ember.zeros_like(qkv_bias[length:2 * length]),
                              qkv_bias[2 * length:]])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(b * nw, n, 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        attn = (q * (c // num_heads) ** -0.5) @ k.transpose(-2, -1)
    attn = attn + relative_position_bias
    if shifted:
        mask = _shift_mask(ph, pw, (wh, ww), tuple(shift))
        mask = ember.from_numpy(mask).to(attn.device)
        attn = attn.reshape(b, nw, num_heads, n, n) + mask[None, :, None]
        attn = attn.reshape(-1, num_heads, n, n)
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = (attn @ v).transpose(1, 2).reshape(b * nw, n, c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = x.reshape(b, ph // wh, pw // ww, wh, ww, c).permute(0, 1, 3, 2, 4, 5).reshape(b, ph, pw, c)
    if shifted:
        x = ember.roll(x, shifts=(shift[0], shift[1]), dims=(1, 2))
    return x[:, :h, :w, :]


class ShiftedWindowAttention(nn.Module):
    """W-MSA / SW-MSA with a learned relative position bias table."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = list(window_size)
        self.shift_size = list(shift_size)
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.register_buffer("relative_position_index",
                             ember.from_numpy(_relative_position_index(self.window_size)))

    def define_relative_position_bias_table(self):
        wh, ww = self.window_size
        self.relative_position_bias_table = nn.Parameter(
            ember.zeros((2 * wh - 1) * (2 * ww - 1), self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def _bias_from_table(self, table):
        n = self.window_size[0] * self.window_size[1]
        bias = table[self.relative_position_index].reshape(n, n, -1)
        return bias.permute(2, 0, 1)[None]                      # (1, heads, N, N)

    def get_relative_position_bias(self):
        return self._bias_from_table(self.relative_position_bias_table)

    def forward(self, x):
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
            self.window_size, self.num_heads, shift_size=self.shift_size,
            attention_dropout=self.attention_dropout, dropout=self.dropout,
            qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """Swin V2 attention: cosine similarity with a learned (clamped) logit scale and a
    continuous position bias from a small MLP over log-spaced relative coordinates."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=qkv_bias,
                         proj_bias=proj_bias, attention_dropout=attention_dropout,
                         dropout=dropout)
        self.logit_scale = nn.Parameter(ember.full((num_heads, 1, 1), math.log(10.0)))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias and self.qkv.bias.device.type != "meta":   # meta tensors hold no data
            length = self.qkv.bias.shape[0] // 3
            with ember.no_grad():
                self.qkv.bias[length:2 * length] = 0.0

    def define_relative_position_bias_table(self):
        wh, ww = self.window_size
        rh = np.arange(-(wh - 1), wh, dtype=np.float32)
        rw = np.arange(-(ww - 1), ww, dtype=np.float32)
        table = np.stack(np.meshgrid(rh, rw, indexing="ij")).transpose(1, 2, 0)[None].copy()
        table[..., 0] /= wh - 1
        table[..., 1] /= ww - 1
        table *= 8
        table = np.sign(table) * np.log2(np.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table",
                             ember.from_numpy(table.astype(np.float32)))

    def get_relative_position_bias(self):
        table = self.cpb_mlp(self.relative_coords_table).reshape(-1, self.num_heads)
        return 16 * ember.sigmoid(self._bias_from_table(table))

    def forward(self, x):
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(),
            self.window_size, self.num_heads, shift_size=self.shift_size,
            attention_dropout=self.attention_dropout, dropout=self.dropout,
            qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, logit_scale=self.logit_scale,
            training=self.training)


class SwinTransformerBlock(nn.Module):
    """Pre-norm block on (B, H, W, C): x + attn(norm1(x)), then + mlp(norm2(.))."""

    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm,
                 attn_layer=ShiftedWindowAttention):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads,
                               attention_dropout=attention_dropout, dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None,
                       dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """Swin V2 block: post-norm residuals, x + norm1(attn(x)), then + norm2(mlp(.))."""

    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm,
                 attn_layer=ShiftedWindowAttentionV2):
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio=mlp_ratio,
                         dropout=dropout, attention_dropout=attention_dropout,
                         stochastic_depth_prob=stochastic_depth_prob, norm_layer=norm_layer,
                         attn_layer=attn_layer)

    def forward(self, x):
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


class SwinTransformer(nn.Module):
    """Swin Transformer on (N, 3, H, W) -> (N, num_classes): patch embedding, stages of
    (shifted) window blocks with patch merging between them, LayerNorm, pooled linear head."""

    def __init__(self, patch_size, embed_dim, depths, num_heads, window_size, mlp_ratio=4.0,
                 dropout=0.0, attention_dropout=0.0, stochastic_depth_prob=0.1,
                 num_classes=1000, norm_layer=None, block=None,
                 downsample_layer=PatchMerging):
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or functools.partial(nn.LayerNorm, eps=1e-5)
        layers = [nn.Sequential(nn.Conv2d(3, embed_dim, kernel_size=tuple(patch_size),
                                          stride=tuple(patch_size)),
                                Permute([0, 2, 3, 1]), norm_layer(embed_dim))]
        total = sum(depths)
        block_id = 0
        for i, depth in enumerate(depths):
            dim = embed_dim * 2 ** i
            stage = []
            for j in range(depth):
                sd_prob = stochastic_depth_prob * float(block_id) / (total - 1)
                stage.append(block(dim, num_heads[i], window_size=list(window_size),
                                   shift_size=[0 if j % 2 == 0 else s // 2 for s in window_size],
                                   mlp_ratio=mlp_ratio, dropout=dropout,
                                   attention_dropout=attention_dropout,
                                   stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if i < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


def _swin(embed_dim, depths, num_heads, window, sd, v2, weights, progress, **kwargs):
    _weights_kwargs(weights, kwargs)
    if v2:
        kwargs.setdefault("block", SwinTransformerBlockV2)
        kwargs.setdefault("downsample_layer", PatchMergingV2)
    model = SwinTransformer(patch_size=[4, 4], embed_dim=embed_dim, depths=depths,
                            num_heads=num_heads, window_size=[window, window],
                            stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", sd),
                            **kwargs)
    return _load(model, weights, progress)


class Swin_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_t-704ceda3.pth',
        transforms=_preset(crop_size=224, resize_size=232, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 28288354,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.474, 'acc@5': 95.776}},
            "_ops": 4.491,
            "_file_size": 108.19,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_s-5e29d889.pth',
        transforms=_preset(crop_size=224, resize_size=246, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 49606258,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.196, 'acc@5': 96.36}},
            "_ops": 8.741,
            "_file_size": 189.786,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_b-68c6b09e.pth',
        transforms=_preset(crop_size=224, resize_size=238, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 87768224,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.582, 'acc@5': 96.64}},
            "_ops": 15.431,
            "_file_size": 335.364,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_T_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_v2_t-b137f0e2.pth',
        transforms=_preset(crop_size=256, resize_size=260, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (256, 256),
            "num_params": 28351570,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 82.072, 'acc@5': 96.132}},
            "_ops": 5.94,
            "_file_size": 108.626,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_v2_s-637d8ceb.pth',
        transforms=_preset(crop_size=256, resize_size=260, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (256, 256),
            "num_params": 49737442,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 83.712, 'acc@5': 96.816}},
            "_ops": 11.546,
            "_file_size": 190.675,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class Swin_V2_B_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/swin_v2_b-781e5279.pth',
        transforms=_preset(crop_size=256, resize_size=272, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (256, 256),
            "num_params": 87930848,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#swintransformer-v2',
            "_metrics": {'ImageNet-1K': {'acc@1': 84.112, 'acc@5': 96.864}},
            "_ops": 20.325,
            "_file_size": 336.372,
            "_docs": (
                'These weights reproduce closely the results of the paper using a similar '
                'training recipe.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model(weights=Swin_T_Weights)
def swin_t(*, weights=None, progress=True, **kwargs):
    """Swin-T ("Swin Transformer: Hierarchical Vision Transformer using Shifted Windows")."""
    return _swin(96, [2, 2, 6, 2], [3, 6, 12, 24], 7, 0.2, False, weights, progress, **kwargs)


@register_model(weights=Swin_S_Weights)
def swin_s(*, weights=None, progress=True, **kwargs):
    """Swin-S."""
    return _swin(96, [2, 2, 18, 2], [3, 6, 12, 24], 7, 0.3, False, weights, progress,
                 **kwargs)


@register_model(weights=Swin_B_Weights)
def swin_b(*, weights=None, progress=True, **kwargs):
    """Swin-B."""
    return _swin(128, [2, 2, 18, 2], [4, 8, 16, 32], 7, 0.5, False, weights, progress,
                 **kwargs)


@register_model(weights=Swin_V2_T_Weights)
def swin_v2_t(*, weights=None, progress=True, **kwargs):
    """Swin V2-T ("Swin Transformer V2: Scaling Up Capacity and Resolution")."""
    return _swin(96, [2, 2, 6, 2], [3, 6, 12, 24], 8, 0.2, True, weights, progress, **kwargs)


@register_model(weights=Swin_V2_S_Weights)
def swin_v2_s(*, weights=None, progress=True, **kwargs):
    """Swin V2-S."""
    return _swin(96, [2, 2, 18, 2], [3, 6, 12, 24], 8, 0.3, True, weights, progress,
                 **kwargs)


@register_model(weights=Swin_V2_B_Weights)
def swin_v2_b(*, weights=None, progress=True, **kwargs):
    """Swin V2-B."""
    return _swin(128, [2, 2, 18, 2], [4, 8, 16, 32], 8, 0.5, True, weights, progress,
                 **kwargs)
