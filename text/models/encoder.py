"""The BERT-family encoder (BERT, RoBERTa, XLM-R, MiniLM): one architecture, config-driven,
with the module tree and state-dict keys of Hugging Face ``transformers``::

    embeddings.{word_embeddings,position_embeddings,token_type_embeddings,LayerNorm}
    encoder.layer.N.attention.self.{query,key,value}
    encoder.layer.N.attention.output.{dense,LayerNorm}
    encoder.layer.N.intermediate.dense
    encoder.layer.N.output.{dense,LayerNorm}
    pooler.dense                                   (optional)

Per-token work runs on a (tokens, d) view of the batch; attention goes to a batch layout
(``_attention.PaddedBatch`` for padded batches, see there), so a padding-free layout slots in
through :meth:`EncoderModel.forward_tokens`.

    >>> import ember
    >>> cfg = EncoderConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
    ...                     num_attention_heads=4, intermediate_size=64)
    >>> m = EncoderModel(cfg).eval()
    >>> out = m(ember.tensor([[2, 7, 9, 0], [3, 4, 0, 0]]),
    ...         attention_mask=ember.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]))
    >>> out.last_hidden_state.shape, out.pooler_output.shape
    ((2, 4, 32), (2, 32))
"""
from __future__ import annotations

from typing import NamedTuple

import ember
from ember import nn

from ._attention import PaddedBatch
from ._config import EncoderConfig, activation

__all__ = ["EncoderModel", "BertModel", "RobertaModel", "XLMRobertaModel", "EncoderOutput",
           "EncoderLayer", "init_encoder_weights", "roberta_position_ids"]


class EncoderOutput(NamedTuple):
    """``last_hidden_state`` (B, L, d) and ``pooler_output`` (B, d), or None without a
    pooler."""

    last_hidden_state: ember.Tensor
    pooler_output: ember.Tensor | None


def _as_ids(x, device=None):
    """ids as an int64 Tensor on ``device`` (lists and arrays are converted)."""
    if not isinstance(x, ember.Tensor):
        x = ember.as_tensor(x, dtype=ember.int64)
    return x if device is None or x.device == device else x.to(device)


def roberta_position_ids(input_ids, padding_idx):
    """RoBERTa's positions: tokens count up from ``padding_idx + 1`` along each row, pads
    keep ``padding_idx``. (B, L) -> (B, L) int64."""
    real = (input_ids != padding_idx).long()
    return real.cumsum(1) * real + padding_idx


class Embeddings(nn.Module):
    """word + position + token-type embeddings, then LayerNorm and dropout, per token."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        d = cfg.hidden_size
        self.word_embeddings = nn.Embedding(cfg.vocab_size, d)
        self.word_embeddings.padding_idx = cfg.pad_token_id   # no gradient into the pad row
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, d)
        if cfg.roberta_positions:   # pads sit at position pad_token_id: no gradient there
            self.position_embeddings.padding_idx = cfg.pad_token_id
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, d)
        self.LayerNorm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, ids, positions, token_types):
        """ids, positions, token_types: (T,) int64 -> (T, d)."""
        x = self.word_embeddings(ids) + self.position_embeddings(positions)
        x = x + self.token_type_embeddings(token_types)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    """The q/k/v projections (``query``, ``key``, ``value``); attention itself is the
    layout's."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        d = cfg.hidden_size
        self.num_heads = cfg.num_attention_heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dropout_p = cfg.attention_probs_dropout_prob

    def forward(self, x, layout):
        p = self.dropout_p if self.training else 0.0
        return layout.attend(self.query(x), self.key(x), self.value(x), self.num_heads, p)


class DenseAddNorm(nn.Module):
    """LayerNorm(dropout(dense(x)) + residual): BERT's ``attention.output`` and ``output``."""

    def __init__(self, d_in, d_out, eps, p):
        super().__init__()
        self.dense = nn.Linear(d_in, d_out)
        self.LayerNorm = nn.LayerNorm(d_out, eps=eps)
        self.dropout = nn.Dropout(p)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.self = SelfAttention(cfg)
        self.output = DenseAddNorm(cfg.hidden_size, cfg.hidden_size, cfg.layer_norm_eps,
                                   cfg.hidden_dropout_prob)

    def forward(self, x, layout):
        return self.output(self.self(x, layout), x)


class Intermediate(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.act = activation(cfg.hidden_act)

    def forward(self, x):
        return self.act(self.dense(x))


class EncoderLayer(nn.Module):
    """Post-norm block: x = LN(x + attn(x)); x = LN(x + W2 act(W1 x)), on (T, d)."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.attention = Attention(cfg)
        self.intermediate = Intermediate(cfg)
        self.output = DenseAddNorm(cfg.intermediate_size, cfg.hidden_size, cfg.layer_norm_eps,
                                   cfg.hidden_dropout_prob)

    def forward(self, x, layout):
        a = self.attention(x, layout)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.layer = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.num_hidden_layers))

    def forward(self, x, layout):
        for blk in self.layer:
            x = blk(x, layout)
        return x


class Pooler(nn.Module):
    """tanh(dense(first token)): (B, d) -> (B, d)."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def forward(self, first_tokens):
        return ember.tanh(self.dense(first_tokens))


def init_encoder_weights(module, std):
    """``transformers``' initialisation: N(0, std) for linear and embedding weights, zero
    biases and pad rows, LayerNorm 1 and 0."""
    with ember.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=std)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].fill_(0)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)


class EncoderModel(nn.Module):
    """A BERT-family encoder. ``forward(input_ids, attention_mask=None, token_type_ids=None,
    position_ids=None) -> EncoderOutput`` on a padded batch: ``input_ids`` (B, L) int64,
    ``attention_mask`` (B, L) with 1 for tokens and 0 for padding. Positions default to
    0..L-1 (BERT) or, for ``model_type`` "roberta"/"xlm-roberta", count from
    ``pad_token_id + 1`` over the non-pad tokens. ``BertModel``, ``RobertaModel`` and
    ``XLMRobertaModel`` are this class."""

    base_model_prefixes = ("bert", "roberta")   # the prefixes of HF task checkpoints

    def __init__(self, config: EncoderConfig, add_pooling_layer=True):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooler = Pooler(config) if add_pooling_layer else None
        init_encoder_weights(self, config.initializer_range)

    def forward_tokens(self, ids, positions, token_types, layout):
        """The per-token pipeline: (T,) ids, positions and token types -> (T, d) hidden
        states, with attention done by ``layout`` (which knows the sequences)."""
        return self.encoder(self.embeddings(ids, positions, token_types), layout)

    def positions(self, input_ids):
        """Default position ids of a padded (B, L) batch."""
        if self.config.roberta_positions:
            return roberta_position_ids(input_ids, self.config.pad_token_id)
        b, n = input_ids.shape
        return ember.arange(n, device=input_ids.device).reshape(1, n).expand(b, n)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        dev = self.embeddings.word_embeddings.weight.device
        input_ids = _as_ids(input_ids, dev)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape "
                             f"{tuple(input_ids.shape)}")
        b, n = input_ids.shape
        cfg = self.config
        if n > cfg.max_position_embeddings - (cfg.pad_token_id + 1 if cfg.roberta_positions
                                              else 0):
            raise ValueError(f"sequence length {n} exceeds the model's "
                             f"{cfg.max_position_embeddings} position embeddings")
        pos = self.positions(input_ids) if position_ids is None else \
            _as_ids(position_ids, dev)
        types = ember.zeros_like(input_ids) if token_type_ids is None else \
            _as_ids(token_type_ids, dev)
        layout = PaddedBatch(b, n, None if attention_mask is None else
                             _as_ids(attention_mask, dev))
        h = self.forward_tokens(input_ids.reshape(-1), pos.expand(b, n).reshape(-1),
                                types.reshape(-1), layout)
        h = h.reshape(b, n, -1)
        pooled = None if self.pooler is None else self.pooler(h[:, 0])
        return EncoderOutput(h, pooled)


BertModel = RobertaModel = XLMRobertaModel = EncoderModel
