"""``Conformer``: convolution-augmented transformer encoder (Gulati et al., 2020), as
torchaudio's (same constructor, keys ``conformer_layers.N.*`` and forward contract).

    >>> import ember
    >>> from ember.audio.models import Conformer
    >>> m = Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2,
    ...               depthwise_conv_kernel_size=31).eval()
    >>> out, lengths = m(ember.randn(3, 50, 80), ember.tensor([50, 40, 12]))
    >>> tuple(out.shape), lengths.tolist()
    ((3, 50, 80), [50, 40, 12])
"""
from __future__ import annotations

import ember
from ember import nn

__all__ = ["Conformer", "ConformerLayer"]


def _lengths_to_padding_mask(lengths):
    """(batch,) lengths -> (batch, max_length) bool, True on padded frames."""
    n = int(lengths.max().item())
    return ember.arange(n, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)


class _ConvolutionModule(nn.Module):
    """Layer norm, pointwise conv + GLU, depthwise conv, batch (or group) norm, SiLU, pointwise
    conv, dropout; (batch, time, dim) in and out."""

    def __init__(self, input_dim, num_channels, depthwise_kernel_size, dropout=0.0, bias=False,
                 use_group_norm=False):
        super().__init__()
        if (depthwise_kernel_size - 1) % 2 != 0:
            raise ValueError(f"depthwise_kernel_size must be odd to keep the length ('SAME' "
                             f"padding), got {depthwise_kernel_size}")
        self.layer_norm = nn.LayerNorm(input_dim)
        norm = (nn.GroupNorm(num_groups=1, num_channels=num_channels) if use_group_norm
                else nn.BatchNorm1d(num_channels))
        self.sequential = nn.Sequential(
            nn.Conv1d(input_dim, 2 * num_channels, 1, stride=1, padding=0, bias=bias),
            nn.GLU(dim=1),
            nn.Conv1d(num_channels, num_channels, depthwise_kernel_size, stride=1,
                      padding=(depthwise_kernel_size - 1) // 2, groups=num_channels, bias=bias),
            norm,
            nn.SiLU(),
            nn.Conv1d(num_channels, input_dim, kernel_size=1, stride=1, padding=0, bias=bias),
            nn.Dropout(dropout),
        )

    def forward(self, input):
        x = self.layer_norm(input).transpose(1, 2)
        return self.sequential(x).transpose(1, 2)


class _FeedForwardModule(nn.Module):
    """Layer norm, linear, SiLU, dropout, linear, dropout."""

    def __init__(self, input_dim, hidden_dim, dropout=0.0):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(input_dim), nn.Linear(input_dim, hidden_dim, bias=True), nn.SiLU(),
            nn.Dropout(dropout), nn.Linear(hidden_dim, input_dim, bias=True),
            nn.Dropout(dropout))

    def forward(self, input):
        return self.sequential(input)


class ConformerLayer(nn.Module):
    """Half-step feed forward, self attention and convolution (either order), half-step feed
    forward, final layer norm. ``forward(input (time, batch, dim), key_padding_mask)``."""

    def __init__(self, input_dim, ffn_dim, num_attention_heads, depthwise_conv_kernel_size,
                 dropout=0.0, use_group_norm=False, convolution_first=False):
        super().__init__()
        self.ffn1 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.self_attn_layer_norm = nn.LayerNorm(input_dim)
        self.self_attn = nn.MultiheadAttention(input_dim, num_attention_heads, dropout=dropout)
        self.self_attn_dropout = nn.Dropout(dropout)
        self.conv_module = _ConvolutionModule(input_dim, input_dim, depthwise_conv_kernel_size,
                                              dropout=dropout, bias=True,
                                              use_group_norm=use_group_norm)
        self.ffn2 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.final_layer_norm = nn.LayerNorm(input_dim)
        self.convolution_first = convolution_first

    def _apply_convolution(self, x):
        return x + self.conv_module(x.transpose(0, 1)).transpose(0, 1)

    def forward(self, input, key_padding_mask):
        x = self.ffn1(input) * 0.5 + input
        if self.convolution_first:
            x = self._apply_convolution(x)
        residual = x
        y = self.self_attn_layer_norm(x)
        y, _ = self.self_attn(query=y, key=y, value=y, key_padding_mask=key_padding_mask,
                              need_weights=False)
        x = self.self_attn_dropout(y) + residual
        if not self.convolution_first:
            x = self._apply_convolution(x)
        x = self.ffn2(x) * 0.5 + x
        return self.final_layer_norm(x)


class Conformer(nn.Module):
    """``Conformer(input_dim, num_heads, ffn_dim, num_layers, depthwise_conv_kernel_size,
    dropout=0.0, use_group_norm=False, convolution_first=False)``.

    ``forward(input, lengths)``: input (batch, time, input_dim), lengths (batch,) valid
    frames -> (output (batch, time, input_dim), lengths). Padded frames are masked out of
    attention.
    """

    def __init__(self, input_dim, num_heads, ffn_dim, num_layers, depthwise_conv_kernel_size,
                 dropout=0.0, use_group_norm=False, convolution_first=False):
        super().__init__()
        self.conformer_layers = nn.ModuleList([
            ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size,
                           dropout=dropout, use_group_norm=use_group_norm,
                           convolution_first=convolution_first)
            for _ in range(num_layers)])

    def forward(self, input, lengths):
        if input.ndim != 3:
            raise ValueError(f"Conformer expects input of shape (batch, time, input_dim), got "
                             f"{list(input.shape)}")
        if lengths.ndim != 1 or lengths.shape[0] != input.shape[0]:
            raise ValueError(f"lengths must be 1-D with one entry per batch row "
                             f"({input.shape[0]}), got shape {list(lengths.shape)}")
        mask = _lengths_to_padding_mask(lengths)
        x = input.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, mask)
        return x.transpose(0, 1), lengths
