"""Attention for the text models, apart from the per-token work.

The encoders and the decoder do all per-token work (embeddings, projections, MLP, norms) on a
(tokens, d) view of the batch and hand attention to a *batch layout* object with one method:

    layout.attend(q, k, v, num_heads, dropout_p=0.0) -> (tokens, d)

``q``, ``k``, ``v`` are (tokens, d) with the heads side by side in d. :class:`PaddedBatch` is
the layout of a padded (B, L) batch, tokens = B * L in row-major order, with a key mask for the
padding. A padding-free layout (one packed sequence per row of a jagged batch, attention per
sequence) implements the same method, so the encoder runs on either unchanged.

    >>> import ember
    >>> lay = PaddedBatch(2, 3, ember.tensor([[1, 1, 1], [1, 1, 0]]))
    >>> q = ember.randn(6, 8)
    >>> lay.attend(q, q, q, num_heads=2).shape
    (6, 8)
"""
from __future__ import annotations

import ember
import ember.nn.functional as F

__all__ = ["PaddedBatch", "heads_first", "heads_last", "causal_attention"]


def heads_first(x, batch, length, num_heads):
    """(B * L, H * D) -> (B, H, L, D) (a view)."""
    d = x.shape[-1] // num_heads
    return x.reshape(batch, length, num_heads, d).permute(0, 2, 1, 3)


def heads_last(x):
    """(B, H, L, D) -> (B * L, H * D)."""
    b, h, l, d = x.shape
    return x.permute(0, 2, 1, 3).reshape(b * l, h * d)


class PaddedBatch:
    """A padded batch of ``batch`` sequences of ``length`` tokens as a (B * L, d) token view.

    ``attention_mask``: (B, L), 1/True for tokens and 0/False for padding, or None (no
    padding). Padding keys are masked out of every query's attention; padding queries still
    attend the sequence's tokens (their outputs are defined, and ignored downstream), as in
    BERT's additive mask."""

    __slots__ = ("batch", "length", "mask", "key_mask")

    def __init__(self, batch, length, attention_mask=None):
        self.batch, self.length = int(batch), int(length)
        self.mask = None
        self.key_mask = None
        if attention_mask is not None:
            m = attention_mask if isinstance(attention_mask, ember.Tensor) else \
                ember.tensor(attention_mask)
            if tuple(m.shape) != (self.batch, self.length):
                raise ValueError(f"attention_mask has shape {tuple(m.shape)}, expected "
                                 f"({self.batch}, {self.length})")
            m = m.detach().bool()
            if not bool(m.all()):
                self.mask = m
                self.key_mask = m.reshape(self.batch, 1, 1, self.length)   # (B, 1, 1, L)

    @property
    def num_tokens(self):
        return self.batch * self.length

    def attend(self, q, k, v, num_heads, dropout_p=0.0):
        """Multi-head attention within each sequence: (B*L, d) x3 -> (B*L, d)."""
        b, n = self.batch, self.length
        out = F.scaled_dot_product_attention(
            heads_first(q, b, n, num_heads), heads_first(k, b, n, num_heads),
            heads_first(v, b, n, num_heads), attn_mask=self.key_mask, dropout_p=dropout_p)
        return heads_last(out)


def causal_attention(q, k, v, past_len, key_mask=None, dropout_p=0.0, scale=None):
    """Causal attention of L new queries over P + L keys (P = ``past_len`` cached ones):
    query i (at absolute position P + i) sees keys 0 .. P + i.

    Shapes: q (B, H, L, D), k and v (B, H, P + L, D); ``key_mask``: (B, P + L) bool, True for
    real tokens (left padding of a batch of prompts), or None. Returns (B, H, L, D)."""
    L, S = q.shape[2], k.shape[2]
    if S != past_len + L:
        raise ValueError(f"causal_attention: {S} keys for {past_len} past + {L} new positions")
    if key_mask is None and past_len == 0:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True,
                                              scale=scale)
    dev = q.device
    allow = ember.arange(S, device=dev).reshape(1, S) <= \
        (ember.arange(L, device=dev) + past_len).reshape(L, 1)               # (L, S)
    if key_mask is not None:
        allow = allow.reshape(1, 1, L, S) & key_mask.reshape(key_mask.shape[0], 1, 1, S)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allow, dropout_p=dropout_p,
                                          scale=scale)
