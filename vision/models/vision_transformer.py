"""Vision Transformer B/16, B/32, L/16, L/32, H/14 (torchvision's architecture and keys).

    >>> import ember
    >>> from ember.vision.models import VisionTransformer
    >>> m = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2,
    ...                       hidden_dim=8, mlp_dim=16, num_classes=10).eval()
    >>> m(ember.randn(2, 3, 32, 32)).shape
    (2, 10)
"""
from __future__ import annotations

import functools
import math
from collections import OrderedDict

import ember
from ember import nn

from ._api import Weights, WeightsEnum, _load, _preset_factory as _preset, _set_param, \
    _weights_kwargs, register_model
from ._blocks import MLP
from ._meta import _IMAGENET_CATEGORIES

__all__ = ["VisionTransformer", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14",
           "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
           "ViT_H_14_Weights"]


class MLPBlock(MLP):
    """Linear -> GELU -> Dropout -> Linear -> Dropout (keys ``0.*`` and ``3.*``)."""

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None,
                         dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block on (N, S, D): x + attn(ln_1(x)), then + mlp(ln_2(.))."""

    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=functools.partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads,
                                                    dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        if input.ndim != 3:
            raise ValueError(f"expected (batch, seq, hidden) input, got shape "
                             f"{tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Learned position embedding (1, S, D) + ``num_layers`` blocks + final LayerNorm."""

    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                 attention_dropout, norm_layer=functools.partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.pos_embedding = nn.Parameter(
            ember.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout,
                                                attention_dropout, norm_layer))
            for i in range(num_layers)))
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """ViT on (N, 3, image_size, image_size) -> (N, num_classes): patchify with a strided conv,
    prepend a class token, encode, classify the class token."""

    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim,
                 dropout=0.0, attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=functools.partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError(f"image_size {image_size} is not divisible by patch_size "
                             f"{patch_size}")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout,
                               attention_dropout, norm_layer)
        self.seq_length = seq_length
        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)
        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if representation_size is not None:
            fan_in = self.heads.pre_logits.in_features
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, c, h, w = x.shape
        if h != self.image_size or w != self.image_size:
            raise ValueError(f"expected {self.image_size}x{self.image_size} images, got "
                             f"{h}x{w}")
        p = self.patch_size
        x = self.conv_proj(x)                                    # (N, D, H/p, W/p)
        x = x.reshape(n, self.hidden_dim, (h // p) * (w // p))   # (N, D, S-1)
        return x.permute(0, 2, 1)                                # (N, S-1, D)

    def forward(self, x):
        x = self._process_input(x)
        cls = self.class_token.expand(x.shape[0], -1, -1)
        x = self.encoder(ember.cat([cls, x], dim=1))
        return self.heads(x[:, 0])


def _vit(patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights, progress, **kwargs):
    if weights is not None:
        _weights_kwargs(weights, kwargs)
        h, w = weights.meta["min_size"]
        if h != w:
            raise ValueError(f"non-square min_size {weights.meta['min_size']}")
        _set_param(kwargs, "image_size", h)
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size,
                              num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
                              mlp_dim=mlp_dim, **kwargs)
    return _load(model, weights, progress)


class ViT_B_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vit_b_16-c867db91.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 86567656,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#vit_b_16',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.072, 'acc@5': 95.318}},
            "_ops": 17.564,
            "_file_size": 330.285,
            "_docs": (
                'These weights were trained from scratch by using a modified version of `DeIT '
                "<https://arxiv.org/abs/2012.12877>`_'s training recipe."
            ),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/vit_b_16_swag-9ac1b537.pth',
        transforms=_preset(crop_size=384, resize_size=384, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (384, 384),
            "num_params": 86859496,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 85.304, 'acc@5': 97.65}},
            "_ops": 55.484,
            "_file_size": 331.398,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/vit_b_16_lc_swag-4e70ced5.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 86567656,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 81.886, 'acc@5': 96.18}},
            "_ops": 17.564,
            "_file_size": 330.285,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_B_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vit_b_32-d86f8d99.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 88224232,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#vit_b_32',
            "_metrics": {'ImageNet-1K': {'acc@1': 75.912, 'acc@5': 92.466}},
            "_ops": 4.409,
            "_file_size": 336.604,
            "_docs": (
                'These weights were trained from scratch by using a modified version of `DeIT '
                "<https://arxiv.org/abs/2012.12877>`_'s training recipe."
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_L_16_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vit_l_16-852ce7e3.pth',
        transforms=_preset(crop_size=224, resize_size=242),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 304326632,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#vit_l_16',
            "_metrics": {'ImageNet-1K': {'acc@1': 79.662, 'acc@5': 94.638}},
            "_ops": 61.555,
            "_file_size": 1161.023,
            "_docs": (
                'These weights were trained from scratch by using a modified version of '
                "TorchVision's `new training recipe "
                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.'
            ),
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/vit_l_16_swag-4f3808c9.pth',
        transforms=_preset(crop_size=512, resize_size=512, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (512, 512),
            "num_params": 305174504,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 88.064, 'acc@5': 98.512}},
            "_ops": 361.986,
            "_file_size": 1164.258,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/vit_l_16_lc_swag-4d563306.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 304326632,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 85.146, 'acc@5': 97.422}},
            "_ops": 61.555,
            "_file_size": 1161.023,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_L_32_Weights(WeightsEnum):
    IMAGENET1K_V1 = Weights(
        url='https://download.pytorch.org/models/vit_l_32-c7638314.pth',
        transforms=_preset(crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 306535400,
            "recipe": 'https://github.com/pytorch/vision/tree/main/references/classification#vit_l_32',
            "_metrics": {'ImageNet-1K': {'acc@1': 76.972, 'acc@5': 93.07}},
            "_ops": 15.378,
            "_file_size": 1169.449,
            "_docs": (
                'These weights were trained from scratch by using a modified version of `DeIT '
                "<https://arxiv.org/abs/2012.12877>`_'s training recipe."
            ),
        },
    )
    DEFAULT = IMAGENET1K_V1


class ViT_H_14_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url='https://download.pytorch.org/models/vit_h_14_swag-80465313.pth',
        transforms=_preset(crop_size=518, resize_size=518, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (518, 518),
            "num_params": 633470440,
            "recipe": 'https://github.com/facebookresearch/SWAG',
            "_metrics": {'ImageNet-1K': {'acc@1': 88.552, 'acc@5': 98.694}},
            "_ops": 1016.717,
            "_file_size": 2416.643,
            "_docs": (
                'These weights are learnt via transfer learning by end-to-end fine-tuning the '
                'original `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K '
                'data.'
            ),
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url='https://download.pytorch.org/models/vit_h_14_lc_swag-c1eb923e.pth',
        transforms=_preset(crop_size=224, resize_size=224, interpolation='bicubic'),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "min_size": (224, 224),
            "num_params": 632045800,
            "recipe": 'https://github.com/pytorch/vision/pull/5793',
            "_metrics": {'ImageNet-1K': {'acc@1': 85.708, 'acc@5': 97.73}},
            "_ops": 167.295,
            "_file_size": 2411.209,
            "_docs": (
                'These weights are composed of the original frozen `SWAG '
                '<https://arxiv.org/abs/2201.08371>`_ trunk weights and a linear classifier '
                'learnt on top of them trained on ImageNet-1K data.'
            ),
        },
    )
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


@register_model(weights=ViT_B_16_Weights)
def vit_b_16(*, weights=None, progress=True, **kwargs):
    """ViT-B/16 ("An Image is Worth 16x16 Words")."""
    return _vit(16, 12, 12, 768, 3072, weights, progress, **kwargs)


@register_model(weights=ViT_B_32_Weights)
def vit_b_32(*, weights=None, progress=True, **kwargs):
    """ViT-B/32."""
    return _vit(32, 12, 12, 768, 3072, weights, progress, **kwargs)


@register_model(weights=ViT_L_16_Weights)
def vit_l_16(*, weights=None, progress=True, **kwargs):
    """ViT-L/16."""
    return _vit(16, 24, 16, 1024, 4096, weights, progress, **kwargs)


@register_model(weights=ViT_L_32_Weights)
def vit_l_32(*, weights=None, progress=True, **kwargs):
    """ViT-L/32."""
    return _vit(32, 24, 16, 1024, 4096, weights, progress, **kwargs)


@register_model(weights=ViT_H_14_Weights)
def vit_h_14(*, weights=None, progress=True, **kwargs):
    """ViT-H/14."""
    return _vit(14, 32, 16, 1280, 5120, weights, progress, **kwargs)
