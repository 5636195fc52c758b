"""The BERT-family encoder (BERT, RoBERTa, XLM-R, MiniLM): one architecture, config-driven,
with the module tree and state-dict keys of Hugging Face ``transformers``::

    embeddings.{word_embeddings,position_embeddings,token_type_embeddings,LayerNorm}
    encoder.layer.N.attention.self.{query,key,value}
    encoder.layer.N.attention.output.{dense,LayerNorm}
    encoder.layer.N.intermediate.dense
    encoder.layer.N.output.{dense,LayerNorm}
    pooler.dense                                   (optional)

Per-token work runs on a (tokens, d) view of the batch; attention goes to a batch layout
(``_attention.PaddedBatch`` for padded batches, ``_jagged.JaggedBatch`` for jagged ones), so
both run through :meth:`EncoderModel.forward_tokens`. A ``JaggedTensor`` of token ids in place
of padded ids and a mask runs padding-free: embeddings, projections, MLP and norms on the
packed (total_tokens, d) tokens, attention per sequence, positions per sequence; the hidden
states come back as a ``JaggedTensor`` of the input's layout.

    >>> import ember
    >>> cfg = EncoderConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
    ...                     num_attention_heads=4, intermediate_size=64)
    >>> m = EncoderModel(cfg).eval()
    >>> out = m(ember.tensor([[2, 7, 9, 0], [3, 4, 0, 0]]),
    ...         attention_mask=ember.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]))
    >>> out.last_hidden_state.shape, out.pooler_output.shape
    ((2, 4, 32), (2, 32))
    >>> out = m(ember.jagged.as_jagged([[2, 7, 9], [3, 4]]))
    >>> h = out.last_hidden_state                   # a JaggedTensor of the input's layout
    >>> h.lengths().tolist(), h.feature_shape, out.pooler_output.shape
    ([3, 2], (32,), (2, 32))
    >>> bool((h[1] - m(ember.tensor([[3, 4]]))[0][0]).abs().max() < 1e-5)
    True
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import ember
from ember import nn

from ember.jagged import JaggedTensor

from ._attention import PaddedBatch
from ._config import EncoderConfig, activation
from ._jagged import JaggedBatch

__all__ = ["EncoderModel", "BertModel", "RobertaModel", "XLMRobertaModel", "EncoderOutput",
           "EncoderLayer", "init_encoder_weights", "roberta_position_ids",
           "roberta_jagged_position_ids", "first_tokens"]


class EncoderOutput(NamedTuple):
    """``last_hidden_state`` (B, L, d) and ``pooler_output`` (B, d), or None without a
    pooler. For a jagged input, ``last_hidden_state`` is a ``JaggedTensor`` (B sequences of
    (length_b, d)) of the input's layout."""

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


def roberta_jagged_position_ids(input_ids: JaggedTensor, padding_idx):
    """:func:`roberta_position_ids` per sequence of a jagged batch: (T,) int64 packed."""
    ids = input_ids.values()
    real = (ids != padding_idx).long()
    run = real.cumsum(0)
    before = ember.cat([ember.zeros(1, dtype=run.dtype, device=run.device), run])
    start = before[input_ids.offsets()[:-1]]                  # count before each sequence
    return (run - start[input_ids.segment_ids()]) * real + padding_idx


def first_tokens(hidden: JaggedTensor):
    """Each sequence's first row of a jagged batch: (B, *F) (sequences must be
    non-empty)."""
    lens = hidden.lengths()
    if hidden.batch_size and not bool((lens > 0).all()):
        raise ValueError(f"sequence {int((lens == 0).nonzero()[0, 0])} of the jagged batch "
                         "is empty: it has no first token")
    return hidden.values().index_select(0, hidden.offsets()[:-1])


def _same_layout(like: JaggedTensor, values):
    """A JaggedTensor of ``like``'s layout holding ``values`` (``apply`` shares the layout
    and the index maps cached on it)."""
    return like.apply(lambda _: values)


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
    ``XLMRobertaModel`` are this class.

    Padding-free: ``input_ids`` a ``JaggedTensor`` of B non-empty sequences of ids (values
    (T,) int64) and no ``attention_mask``; ``token_type_ids``/``position_ids`` None, a
    JaggedTensor of the same lengths or packed (T,) ids. Positions are counted per sequence
    as above. The output's ``last_hidden_state`` is a JaggedTensor of the input's layout,
    ``pooler_output`` (B, d) from each sequence's first token; on the tokens both equal the
    padded path's (see :class:`._jagged.JaggedBatch` for how attention is run)."""

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

    def _check_length(self, n):
        cfg = self.config
        if n > cfg.max_position_embeddings - (cfg.pad_token_id + 1 if cfg.roberta_positions
                                              else 0):
            raise ValueError(f"sequence length {n} exceeds the model's "
                             f"{cfg.max_position_embeddings} position embeddings")

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        dev = self.embeddings.word_embeddings.weight.device
        if isinstance(input_ids, JaggedTensor):
            return self._forward_jagged(input_ids, attention_mask, token_type_ids,
                                        position_ids, dev)
        input_ids = _as_ids(input_ids, dev)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape "
                             f"{tuple(input_ids.shape)}")
        b, n = input_ids.shape
        self._check_length(n)
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

    def jagged_positions(self, input_ids: JaggedTensor):
        """Default position ids of a jagged batch, per sequence: (T,) int64 packed."""
        if self.config.roberta_positions:
            return roberta_jagged_position_ids(input_ids, self.config.pad_token_id)
        return input_ids.positions()

    def _forward_jagged(self, jt, attention_mask, token_type_ids, position_ids, dev):
        if attention_mask is not None:
            raise ValueError("a JaggedTensor of ids carries its own lengths: pass no "
                             "attention_mask with it")
        if jt.device != dev:
            jt = jt.to(dev)
        ids = jt.values()
        if ids.dim() != 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"jagged input_ids must hold integer ids, values of shape "
                             f"(total_tokens,), got {tuple(ids.shape)} {ids.dtype}")
        if ids.dtype != ember.int64:
            ids = ids.long()
            jt = _same_layout(jt, ids)
        lens = jt.lengths().cpu().numpy()
        if lens.size and lens.min() == 0:
            raise ValueError(f"sequence {int(np.argmin(lens))} of the jagged batch is empty; "
                             "every sequence needs at least one token")
        self._check_length(jt.max_length)
        pos = self.jagged_positions(jt) if position_ids is None else \
            _packed_ids(position_ids, jt, "position_ids", dev)
        types = ember.zeros_like(ids) if token_type_ids is None else \
            _packed_ids(token_type_ids, jt, "token_type_ids", dev)
        cfg = self.config
        layout = JaggedBatch(lens, cfg.num_attention_heads, cfg.head_dim, device=dev)
        h = self.forward_tokens(layout.pack(ids), layout.pack(pos), layout.pack(types),
                                layout)
        pooled = None if self.pooler is None else self.pooler(layout.first_tokens(h))
        return EncoderOutput(_same_layout(jt, layout.unpack(h)), pooled)


def _packed_ids(x, like: JaggedTensor, name, dev):
    """Per-token ids for the jagged batch ``like``: a JaggedTensor of its lengths or packed
    (T,) ids -> (T,) int64 on ``dev``."""
    if isinstance(x, JaggedTensor):
        if x.batch_size != like.batch_size or not bool((x.offsets().to(like.device) ==
                                                        like.offsets()).all()):
            raise ValueError(f"{name}: the JaggedTensor's lengths differ from input_ids'")
        x = x.values()
    x = _as_ids(x, dev)
    if tuple(x.shape) != (like.values().shape[0],):
        raise ValueError(f"{name}: expected a JaggedTensor like input_ids or packed ids of "
                         f"shape ({like.values().shape[0]},), got {tuple(x.shape)}")
    return x.long() if x.dtype != ember.int64 else x


BertModel = RobertaModel = XLMRobertaModel = EncoderModel
