"""The building blocks of :class:`~ember.audio.models.Wav2Vec2Model` (wav2vec 2.0 / HuBERT).

Module names and nesting follow torchaudio's ``models.wav2vec2.components`` so that state-dict
keys are identical (``feature_extractor.conv_layers.0.conv.weight``,
``encoder.transformer.layers.3.attention.q_proj.weight``, ...), and torchaudio's published
checkpoints load as they are. Shapes: waveforms (batch, time); features (batch, frame, feature).
"""
from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["ConvLayerBlock", "FeatureExtractor", "FeatureProjection",
           "ConvolutionalPositionalEmbedding", "SelfAttention", "FeedForward", "EncoderLayer",
           "Transformer", "Encoder", "feature_extractor", "encoder"]


class ChannelLayerNorm(nn.LayerNorm):
    """Layer norm over the channel axis of a (batch, channel, frame) tensor."""

    def forward(self, input):
        x = input.transpose(-2, -1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.transpose(-2, -1)


class ConvLayerBlock(nn.Module):
    """Conv1d -> optional norm (group norm or channel layer norm) -> GELU; also maps the valid
    lengths through the convolution (``floor((len - kernel) / stride) + 1``, at least 0)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, bias, layer_norm):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.layer_norm = layer_norm
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, bias=bias)

    def forward(self, x, length=None):
        x = self.conv(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = F.gelu(x)
        if length is not None:
            length = ember.clamp((length - self.kernel_size) // self.stride + 1, min=0)
        return x, length


class FeatureExtractor(nn.Module):
    """The convolutional front end: (batch, time) waveforms -> (batch, frame, feature)."""

    def __init__(self, conv_layers):
        super().__init__()
        self.conv_layers = conv_layers

    def forward(self, x, length=None):
        if x.ndim != 2:
            raise ValueError(f"waveforms must be 2-D (batch, time), got shape {list(x.shape)}")
        x = x.unsqueeze(1)
        for layer in self.conv_layers:
            x, length = layer(x, length)
        return x.transpose(1, 2), length


class FeatureProjection(nn.Module):
    """Layer norm, linear projection to the encoder width, dropout."""

    def __init__(self, in_features, out_features, dropout):
        super().__init__()
        self.layer_norm = nn.LayerNorm(in_features)
        self.projection = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.projection(self.layer_norm(x)))


class _WeightNorm(nn.Module):
    """The parameters of a weight-normalised tensor, named as ``torch.nn.utils.parametrizations
    .weight_norm`` names them: ``original0`` the magnitude g, ``original1`` the direction v."""

    def __init__(self, weight, dim):
        super().__init__()
        self.dim = dim
        self.original0 = nn.Parameter(_norm_except(weight.detach(), dim))
        self.original1 = nn.Parameter(weight.detach().clone())

    def forward(self):
        v = self.original1
        return v * (self.original0 / _norm_except(v, self.dim))


def _norm_except(v, dim):
    """The L2 norm of ``v`` over every axis but ``dim`` (kept as size-1 axes)."""
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return (v * v).sum(dim=axes, keepdim=True).sqrt()


class WeightNormConv1d(nn.Module):
    """A Conv1d whose weight is g * v / ||v|| with the norm over all axes but ``dim``.

    State-dict keys: ``bias``, ``parametrizations.weight.original0`` (g) and ``...original1``
    (v), as torch's parametrised conv; the older ``weight_g``/``weight_v`` keys (torchaudio's
    published wav2vec2 checkpoints) are accepted on load and renamed.
    """

    def __init__(self, in_channels, out_channels, kernel_size, padding, groups, dim=2):
        super().__init__()
        conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=padding, groups=groups)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.padding, self.groups = kernel_size, padding, groups
        self.bias = conv.bias
        self.parametrizations = nn.ModuleDict({"weight": _WeightNorm(conv.weight, dim)})

    @property
    def weight(self):
        return self.parametrizations["weight"]()

    def forward(self, x):
        return F.conv1d(x, self.weight, self.bias, padding=self.padding, groups=self.groups)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for old, new in (("weight_g", "original0"), ("weight_v", "original1")):
            if prefix + old in state_dict:
                state_dict[f"{prefix}parametrizations.weight.{new}"] = \
                    state_dict.pop(prefix + old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size=({self.kernel_size},), "
                f"padding=({self.padding},), groups={self.groups}, weight_norm(dim=2)")


class ConvolutionalPositionalEmbedding(nn.Module):
    """Relative position information from a grouped, weight-normalised convolution over
    frames: (batch, frame, feature) -> same shape (GELU applied; for an even kernel the last
    output frame is dropped so the length is kept)."""

    def __init__(self, embed_dim, kernel_size, groups):
        super().__init__()
        self.embed_dim = embed_dim
        self.kernel_size = kernel_size
        self.conv = WeightNormConv1d(embed_dim, embed_dim, kernel_size, kernel_size // 2, groups)
        self.num_remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        x = self.conv(x.transpose(-2, -1))
        if self.num_remove > 0:
            x = x[..., :-self.num_remove]
        return F.gelu(x).transpose(-2, -1)


class SelfAttention(nn.Module):
    """Multi-head self attention with separate q/k/v/out projections (torchaudio's layout);
    ``attention_mask`` is additive, shape (batch, 1, frame, frame)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        head_dim = embed_dim // num_heads
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim ({embed_dim}) is not divisible by num_heads "
                             f"({num_heads})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, head_dim
        self.dropout = dropout
        self.scaling = head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(self, x, attention_mask=None, position_bias=None, key_padding_mask=None):
        if x.ndim != 3 or x.shape[2] != self.embed_dim:
            raise ValueError(f"expected input of shape (batch, sequence, embed_dim="
                             f"{self.embed_dim}), got {list(x.shape)}")
        b, n, _ = x.shape
        if attention_mask is not None and tuple(attention_mask.shape) != (b, 1, n, n):
            raise ValueError(f"expected an attention mask of shape {[b, 1, n, n]}, got "
                             f"{list(attention_mask.shape)}")
        shape = (b, n, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(*shape).transpose(2, 1)
        k = self.k_proj(x).view(*shape).transpose(2, 1)
        v = self.v_proj(x).view(*shape).transpose(2, 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask,
                                             dropout_p=self.dropout if self.training else 0.0)
        out = out.transpose(1, 2).reshape(b, n, self.embed_dim)
        return self.out_proj(out), None


class FeedForward(nn.Module):
    """Linear -> GELU -> dropout -> linear -> dropout."""

    def __init__(self, io_features, intermediate_features, intermediate_dropout, output_dropout):
        super().__init__()
        self.intermediate_dense = nn.Linear(io_features, intermediate_features)
        self.intermediate_dropout = nn.Dropout(intermediate_dropout)
        self.output_dense = nn.Linear(intermediate_features, io_features)
        self.output_dropout = nn.Dropout(output_dropout)

    def forward(self, x):
        x = self.intermediate_dropout(F.gelu(self.intermediate_dense(x)))
        return self.output_dropout(self.output_dense(x))


class EncoderLayer(nn.Module):
    """One transformer layer, pre-norm (``layer_norm_first``) or post-norm."""

    def __init__(self, attention, dropout, layer_norm_first, feed_forward):
        super().__init__()
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(attention.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.feed_forward = feed_forward
        self.final_layer_norm = nn.LayerNorm(attention.embed_dim)

    def forward(self, x, attention_mask=None, position_bias=None, key_padding_mask=None):
        residual = x
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x, position_bias = self.attention(x, attention_mask=attention_mask,
                                          position_bias=position_bias,
                                          key_padding_mask=key_padding_mask)
        x = residual + self.dropout(x)
        if self.layer_norm_first:
            return x + self.feed_forward(self.final_layer_norm(x)), position_bias
        x = self.layer_norm(x)
        return self.final_layer_norm(x + self.feed_forward(x)), position_bias


class Transformer(nn.Module):
    """Positional convolution, then the layers (with layer drop in training). ``layer_norm``
    runs before the layers when ``layer_norm_first`` (post-norm layers) and after them
    otherwise, as in torchaudio."""

    def __init__(self, pos_conv_embed, dropout, layers, layer_norm_first, layer_drop):
        super().__init__()
        self.pos_conv_embed = pos_conv_embed
        self.layer_norm = nn.LayerNorm(pos_conv_embed.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.layer_drop = layer_drop
        self.dropout = nn.Dropout(dropout)
        self.layers = layers

    def _preprocess(self, x):
        x = x + self.pos_conv_embed(x)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        return self.dropout(x)

    def forward(self, x, attention_mask=None, position_bias=None):
        x = self._preprocess(x)
        for layer in self.layers:
            if not (self.training and ember.rand(1).item() <= self.layer_drop):
                x, position_bias = layer(x, attention_mask, position_bias=position_bias)
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        return x

    def get_intermediate_outputs(self, x, attention_mask=None, num_layers=None):
        """The output of each of the first ``num_layers`` layers (all by default)."""
        if num_layers is not None and not 0 < num_layers <= len(self.layers):
            raise ValueError(f"num_layers must be in [1, {len(self.layers)}], got {num_layers}")
        out, position_bias = [], None
        x = self._preprocess(x)
        for layer in self.layers:
            x, position_bias = layer(x, attention_mask, position_bias=position_bias)
            out.append(x)
            if num_layers is not None and len(out) >= num_layers:
                break
        return out


class Encoder(nn.Module):
    """Feature projection + transformer; ``lengths`` zero the padded frames and mask them out
    of attention (additive -10000, as fairseq and torchaudio)."""

    def __init__(self, feature_projection, transformer):
        super().__init__()
        self.feature_projection = feature_projection
        self.transformer = transformer

    def _preprocess(self, features, lengths=None):
        x = self.feature_projection(features)
        mask = None
        if lengths is not None:
            b, n, _ = x.shape
            pad = ember.arange(n, device=x.device).unsqueeze(0) >= lengths.unsqueeze(1)
            x = x.masked_fill(pad.unsqueeze(-1), 0.0)
            mask = (pad.to(x.dtype) * -10000.0).view(b, 1, 1, n).expand(b, 1, n, n)
        return x, mask

    def forward(self, features, lengths=None):
        x, mask = self._preprocess(features, lengths)
        return self.transformer(x, attention_mask=mask)

    def extract_features(self, features, lengths=None, num_layers=None):
        x, mask = self._preprocess(features, lengths)
        return self.transformer.get_intermediate_outputs(x, attention_mask=mask,
                                                         num_layers=num_layers)


def feature_extractor(norm_mode, shapes, bias):
    """The conv front end for ``shapes`` [(out_channels, kernel, stride), ...]:
    ``"group_norm"`` normalises the first block only (per channel), ``"layer_norm"`` every
    block (over channels)."""
    if norm_mode not in ("group_norm", "layer_norm"):
        raise ValueError(f"extractor_mode must be 'group_norm' or 'layer_norm', got "
                         f"{norm_mode!r}")
    blocks, in_channels = [], 1
    for i, shape in enumerate(shapes):
        if len(shape) != 3:
            raise ValueError(f"extractor_conv_layer_config entries are (out_channels, "
                             f"kernel_size, stride), got {shape!r}")
        out_channels, kernel_size, stride = (int(s) for s in shape)
        norm = None
        if norm_mode == "group_norm" and i == 0:
            norm = nn.GroupNorm(out_channels, out_channels, affine=True)
        elif norm_mode == "layer_norm":
            norm = ChannelLayerNorm(out_channels, elementwise_affine=True)
        blocks.append(ConvLayerBlock(in_channels, out_channels, kernel_size, stride, bias, norm))
        in_channels = out_channels
    return FeatureExtractor(nn.ModuleList(blocks))


def encoder(in_features, embed_dim, dropout_input, pos_conv_kernel, pos_conv_groups,
            num_layers, num_heads, attention_dropout, ff_interm_features, ff_interm_dropout,
            dropout, layer_norm_first, layer_drop, attention=None):
    """The projection + transformer encoder (fairseq's wav2vec 2.0 layout). ``attention(i)``
    builds layer ``i``'s attention (default: :class:`SelfAttention`; WavLM passes its own)."""
    if attention is None:
        def attention(i):
            return SelfAttention(embed_dim, num_heads, attention_dropout)
    layers = nn.ModuleList()
    for i in range(num_layers):
        layers.append(EncoderLayer(
            attention(i), dropout, layer_norm_first,
            FeedForward(embed_dim, ff_interm_features, ff_interm_dropout, dropout)))
    transformer = Transformer(
        ConvolutionalPositionalEmbedding(embed_dim, pos_conv_kernel, pos_conv_groups), dropout,
        layers, not layer_norm_first, layer_drop)
    return Encoder(FeatureProjection(in_features, embed_dim, dropout_input), transformer)

