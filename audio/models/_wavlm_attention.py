"""WavLM's self attention: a gated relative position bias (Chen et al., 2022), as torchaudio's
``WavLMSelfAttention`` (same keys: ``attention.in_proj_weight``, ``rel_attn_embed.weight``
in the first layer, ``gru_rel_pos_linear.*``, ``gru_rel_pos_const``).

The first layer turns each (query, key) offset into one of ``num_buckets`` log-spaced buckets
and looks up a bias per head; every layer gates that bias with a sigmoid of its input, per
query, before adding it to the attention scores. The ungated bias is handed on to the next
layer as ``position_bias``.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["WavLMSelfAttention", "relative_position_buckets"]


def relative_position_buckets(query_length, key_length, num_buckets, max_distance):
    """(query_length, key_length) int64 bucket of ``key - query`` (bidirectional: half the
    buckets per sign; offsets below a quarter of ``num_buckets`` exact, larger ones
    log-spaced up to ``max_distance``). float32 arithmetic, as torchaudio's."""
    rel = np.arange(key_length)[None, :] - np.arange(query_length)[:, None]
    half = num_buckets // 2
    buckets = (rel > 0).astype(np.int64) * half
    dist = np.abs(rel)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        scaled = (np.log(dist.astype(np.float32) / np.float32(max_exact))
                  / np.float32(math.log(max_distance / max_exact))
                  * np.float32(half - max_exact))
    large = max_exact + np.where(dist == 0, 0, scaled).astype(np.int64)
    large = np.minimum(large, half - 1)
    return buckets + np.where(dist < max_exact, dist, large)


class WavLMSelfAttention(nn.Module):
    """Multi-head self attention with WavLM's gated relative position bias.

    ``forward(query (batch, frame, embed_dim), key_padding_mask=None, attention_mask=None,
    position_bias=None)`` -> (output, position_bias). ``attention_mask`` (additive, shape
    (batch, 1, frame, frame), as the wav2vec2 encoder builds it from lengths) is added to the
    gated bias; torchaudio's version refuses it, so it cannot run with ``lengths``.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True,
                 has_relative_attention_bias=False, num_buckets=32, max_distance=128,
                 gru_rel_pos=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim ({embed_dim}) is not divisible by num_heads "
                             f"({num_heads})")
        self.has_relative_attention_bias = has_relative_attention_bias
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.rel_attn_embed = (nn.Embedding(num_buckets, num_heads)
                               if has_relative_attention_bias else None)
        self.dropout = dropout
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, bias=bias,
                                               batch_first=True)
        self.gru_rel_pos = gru_rel_pos
        if gru_rel_pos:
            self.gru_rel_pos_linear = nn.Linear(self.head_dim, 8)
            self.gru_rel_pos_const = nn.Parameter(ember.ones(1, num_heads, 1, 1))
        self.has_position_bias = True

    def compute_bias(self, query_length, key_length):
        """(num_heads, query_length, key_length) bias from the bucket embedding."""
        idx = relative_position_buckets(query_length, key_length, self.num_buckets,
                                        self.max_distance)
        idx = ember.tensor(idx, device=self.rel_attn_embed.weight.device)
        return self.rel_attn_embed(idx).permute(2, 0, 1)

    def forward(self, query, key_padding_mask=None, attention_mask=None, position_bias=None):
        b, n, d = query.shape
        if d != self.embed_dim:
            raise ValueError(f"expected input of shape (batch, frame, {self.embed_dim}), got "
                             f"{list(query.shape)}")
        if self.rel_attn_embed is not None and position_bias is None:
            position_bias = self.compute_bias(n, n).unsqueeze(0).expand(
                b, self.num_heads, n, n)
        mask = None
        if position_bias is not None:
            mask = position_bias
            if self.gru_rel_pos:
                q = query.view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
                gates = F.sigmoid(self.gru_rel_pos_linear(q).view(
                    b, self.num_heads, n, 2, 4).sum(-1))
                gate_a, gate_b = gates[..., :1], gates[..., 1:]
                mask = (gate_a * (gate_b * self.gru_rel_pos_const - 1.0) + 2.0) * position_bias
        if key_padding_mask is not None:
            pad = ember.zeros(b, 1, 1, n, dtype=query.dtype, device=query.device).masked_fill(
                key_padding_mask.view(b, 1, 1, n), -math.inf)
            mask = pad if mask is None else mask + pad
        if attention_mask is not None:
            mask = attention_mask if mask is None else mask + attention_mask
        qkv = F.linear(query, self.attention.in_proj_weight, self.attention.in_proj_bias)
        shape = (b, n, self.num_heads, self.head_dim)
        q, k, v = (t.reshape(shape).transpose(2, 1) for t in qkv.chunk(3, -1))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout if self.training else 0.0)
        out = out.transpose(1, 2).reshape(b, n, self.embed_dim)
        return self.attention.out_proj(out), position_bias
