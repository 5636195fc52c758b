"""RNN transducer (Graves 2012) with an Emformer transcriber, as torchaudio's ``RNNT``,
``emformer_rnnt_model`` and ``emformer_rnnt_base``.

- transcriber (``_EmformerEncoder``): linear -> time reduction (stack ``stride`` frames) ->
  Emformer -> linear -> layer norm; ``forward`` for whole utterances, ``infer`` segment by
  segment with the Emformer's state.
- predictor (``_Predictor``): embedding -> layer norm -> LSTM layers with layer-normed gates
  and cell (``_CustomLSTM``) -> linear -> layer norm; carries its LSTM state between calls.
- joiner (``_Joiner``): ``linear(relu(source[:, :, None] + target[:, None]))``, giving the
  (B, T, U, num_symbols) logits that ``rnnt_loss`` and ``RNNTBeamSearch`` consume.

Module names match torchaudio's, so do the state-dict keys (``transcriber.transformer.
emformer_layers.0.attention.emb_to_query.weight``, ``predictor.lstm_layers.0.x2g.weight``,
``joiner.linear.weight``, ...).

    >>> import ember
    >>> from ember.audio.models import emformer_rnnt_model
    >>> m = emformer_rnnt_model(input_dim=8, encoding_dim=16, num_symbols=6, segment_length=4,
    ...     right_context_length=2, time_reduction_input_dim=8, time_reduction_stride=2,
    ...     transformer_num_heads=2, transformer_ffn_dim=16, transformer_num_layers=1,
    ...     transformer_dropout=0.0, transformer_activation="gelu",
    ...     transformer_left_context_length=2, transformer_max_memory_size=0,
    ...     transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
    ...     symbol_embedding_dim=8, num_lstm_layers=1, lstm_layer_norm=True,
    ...     lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0).eval()
    >>> out, src_len, tgt_len, _ = m(ember.randn(1, 10, 8), ember.tensor([8]),
    ...                              ember.tensor([[1, 2, 3]]), ember.tensor([3]))
    >>> tuple(out.shape)
    (1, 4, 3, 6)
"""
from __future__ import annotations

import ember
from ember import nn

from .emformer import Emformer

__all__ = ["RNNT", "emformer_rnnt_base", "emformer_rnnt_model"]


class _TimeReduction(nn.Module):
    """(B, T, D) -> (B, T // stride, D * stride): consecutive frames stacked; lengths // stride."""

    def __init__(self, stride):
        super().__init__()
        self.stride = stride

    def forward(self, input, lengths):
        B, T, D = input.shape
        n = T - T % self.stride
        out = input[:, :n, :].reshape(B, n // self.stride, D * self.stride).contiguous()
        return out, lengths.div(self.stride, rounding_mode="trunc")


class _CustomLSTM(nn.Module):
    """One LSTM layer with optional layer norm on the gates (``g_norm``) and the cell
    (``c_norm``); gate order input, forget, cell, output. ``forward(input (T, B, D), state
    [h, c] or None) -> (output (T, B, H), [h, c])``."""

    def __init__(self, input_dim, hidden_dim, layer_norm=False, layer_norm_epsilon=1e-5):
        super().__init__()
        self.x2g = nn.Linear(input_dim, 4 * hidden_dim, bias=not layer_norm)
        self.p2g = nn.Linear(hidden_dim, 4 * hidden_dim, bias=False)
        if layer_norm:
            self.c_norm = nn.LayerNorm(hidden_dim, eps=layer_norm_epsilon)
            self.g_norm = nn.LayerNorm(4 * hidden_dim, eps=layer_norm_epsilon)
        else:
            self.c_norm = nn.Identity()
            self.g_norm = nn.Identity()
        self.hidden_dim = hidden_dim

    def forward(self, input, state):
        if state is None:
            B = input.shape[1]
            h = ember.zeros(B, self.hidden_dim, dtype=input.dtype, device=input.device)
            c = ember.zeros(B, self.hidden_dim, dtype=input.dtype, device=input.device)
        else:
            h, c = state
        gated = self.x2g(input)
        outputs = []
        for t in range(gated.shape[0]):
            gates = self.g_norm(gated[t] + self.p2g(h))
            i, f, g, o = gates.chunk(4, 1)
            c = self.c_norm(f.sigmoid() * c + i.sigmoid() * g.tanh())
            h = o.sigmoid() * c.tanh()
            outputs.append(h)
        return ember.stack(outputs, 0), [h, c]


class _EmformerEncoder(nn.Module):
    """Transcription network: see the module doc. ``forward(input (B, T + R, input_dim),
    lengths)`` -> ((B, T // stride, output_dim), lengths); ``infer`` adds the states."""

    def __init__(self, *, input_dim, output_dim, segment_length, right_context_length,
                 time_reduction_input_dim, time_reduction_stride, transformer_num_heads,
                 transformer_ffn_dim, transformer_num_layers, transformer_left_context_length,
                 transformer_dropout=0.0, transformer_activation="relu",
                 transformer_max_memory_size=0, transformer_weight_init_scale_strategy="depthwise",
                 transformer_tanh_on_mem=False):
        super().__init__()
        self.input_linear = nn.Linear(input_dim, time_reduction_input_dim, bias=False)
        self.time_reduction = _TimeReduction(time_reduction_stride)
        dim = time_reduction_input_dim * time_reduction_stride
        self.transformer = Emformer(
            dim, transformer_num_heads, transformer_ffn_dim, transformer_num_layers,
            segment_length // time_reduction_stride, dropout=transformer_dropout,
            activation=transformer_activation,
            left_context_length=transformer_left_context_length,
            right_context_length=right_context_length // time_reduction_stride,
            max_memory_size=transformer_max_memory_size,
            weight_init_scale_strategy=transformer_weight_init_scale_strategy,
            tanh_on_mem=transformer_tanh_on_mem)
        self.output_linear = nn.Linear(dim, output_dim)
        self.layer_norm = nn.LayerNorm(output_dim)

    def forward(self, input, lengths):
        x, lengths = self.time_reduction(self.input_linear(input), lengths)
        x, lengths = self.transformer(x, lengths)
        return self.layer_norm(self.output_linear(x)), lengths

    def infer(self, input, lengths, states):
        x, lengths = self.time_reduction(self.input_linear(input), lengths)
        x, lengths, states = self.transformer.infer(x, lengths, states)
        return self.layer_norm(self.output_linear(x)), lengths, states


class _Predictor(nn.Module):
    """Prediction network: ``forward(input (B, U) token ids, lengths, state=None)`` ->
    ((B, U, output_dim), lengths, state: one [h, c] per LSTM layer)."""

    def __init__(self, num_symbols, output_dim, symbol_embedding_dim, num_lstm_layers,
                 lstm_hidden_dim, lstm_layer_norm=False, lstm_layer_norm_epsilon=1e-5,
                 lstm_dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(num_symbols, symbol_embedding_dim)
        self.input_layer_norm = nn.LayerNorm(symbol_embedding_dim)
        self.lstm_layers = nn.ModuleList([
            _CustomLSTM(symbol_embedding_dim if i == 0 else lstm_hidden_dim, lstm_hidden_dim,
                        layer_norm=lstm_layer_norm, layer_norm_epsilon=lstm_layer_norm_epsilon)
            for i in range(num_lstm_layers)])
        self.dropout = nn.Dropout(p=lstm_dropout)
        self.linear = nn.Linear(lstm_hidden_dim, output_dim)
        self.output_layer_norm = nn.LayerNorm(output_dim)
        self.lstm_dropout = lstm_dropout

    def forward(self, input, lengths, state=None):
        if input.ndim != 2:
            raise ValueError(f"predictor input must be (batch, U) token ids, got shape "
                             f"{tuple(input.shape)}")
        x = self.input_layer_norm(self.embedding(input.permute(1, 0)))
        state_out = []
        for i, lstm in enumerate(self.lstm_layers):
            x, st = lstm(x, None if state is None else state[i])
            x = self.dropout(x)
            state_out.append(st)
        x = self.output_layer_norm(self.linear(x))
        return x.permute(1, 0, 2), lengths, state_out


class _Joiner(nn.Module):
    """Joint network: (B, T, D) and (B, U, D) encodings -> (B, T, U, output_dim) logits."""

    def __init__(self, input_dim, output_dim, activation="relu"):
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim, bias=True)
        if activation == "relu":
            self.activation = nn.ReLU()
        elif activation == "tanh":
            self.activation = nn.Tanh()
        else:
            raise ValueError(f"Unsupported activation {activation!r}: expected 'relu' or 'tanh'")

    def forward(self, source_encodings, source_lengths, target_encodings, target_lengths):
        joint = source_encodings.unsqueeze(2) + target_encodings.unsqueeze(1)
        return self.linear(self.activation(joint)), source_lengths, target_lengths


class RNNT(nn.Module):
    """Recurrent neural network transducer: ``transcriber``, ``predictor``, ``joiner``.
    Build it with ``emformer_rnnt_model`` or ``emformer_rnnt_base``.

    ``forward(sources (B, T, D), source_lengths, targets (B, U), target_lengths,
    predictor_state=None)`` -> (logits (B, T', U, num_symbols), source lengths, target
    lengths, predictor state). ``transcribe``/``transcribe_streaming``/``predict``/``join``
    run the parts on their own (what ``RNNTBeamSearch`` uses).
    """

    def __init__(self, transcriber, predictor, joiner):
        super().__init__()
        self.transcriber = transcriber
        self.predictor = predictor
        self.joiner = joiner

    def forward(self, sources, source_lengths, targets, target_lengths, predictor_state=None):
        src, src_len = self.transcriber(input=sources, lengths=source_lengths)
        tgt, tgt_len, predictor_state = self.predictor(input=targets, lengths=target_lengths,
                                                       state=predictor_state)
        out, src_len, tgt_len = self.joiner(src, src_len, tgt, tgt_len)
        return out, src_len, tgt_len, predictor_state

    def transcribe_streaming(self, sources, source_lengths, state):
        """One segment (B, segment_length + right_context_length, D) -> (encodings, lengths,
        state for the next segment)."""
        return self.transcriber.infer(sources, source_lengths, state)

    def transcribe(self, sources, source_lengths):
        """A whole utterance right-padded with the right context -> (encodings, lengths)."""
        return self.transcriber(sources, source_lengths)

    def predict(self, targets, target_lengths, state):
        return self.predictor(input=targets, lengths=target_lengths, state=state)

    def join(self, source_encodings, source_lengths, target_encodings, target_lengths):
        return self.joiner(source_encodings, source_lengths, target_encodings, target_lengths)


def emformer_rnnt_model(*, input_dim, encoding_dim, num_symbols, segment_length,
                        right_context_length, time_reduction_input_dim, time_reduction_stride,
                        transformer_num_heads, transformer_ffn_dim, transformer_num_layers,
                        transformer_dropout, transformer_activation,
                        transformer_left_context_length, transformer_max_memory_size,
                        transformer_weight_init_scale_strategy, transformer_tanh_on_mem,
                        symbol_embedding_dim, num_lstm_layers, lstm_layer_norm,
                        lstm_layer_norm_epsilon, lstm_dropout):
    """Emformer RNN-T with torchaudio's full (keyword-only) configuration. ``segment_length``
    and ``right_context_length`` count input frames (before time reduction)."""
    encoder = _EmformerEncoder(
        input_dim=input_dim, output_dim=encoding_dim, segment_length=segment_length,
        right_context_length=right_context_length,
        time_reduction_input_dim=time_reduction_input_dim,
        time_reduction_stride=time_reduction_stride, transformer_num_heads=transformer_num_heads,
        transformer_ffn_dim=transformer_ffn_dim, transformer_num_layers=transformer_num_layers,
        transformer_dropout=transformer_dropout, transformer_activation=transformer_activation,
        transformer_left_context_length=transformer_left_context_length,
        transformer_max_memory_size=transformer_max_memory_size,
        transformer_weight_init_scale_strategy=transformer_weight_init_scale_strategy,
        transformer_tanh_on_mem=transformer_tanh_on_mem)
    predictor = _Predictor(num_symbols, encoding_dim, symbol_embedding_dim=symbol_embedding_dim,
                           num_lstm_layers=num_lstm_layers, lstm_hidden_dim=symbol_embedding_dim,
                           lstm_layer_norm=lstm_layer_norm,
                           lstm_layer_norm_epsilon=lstm_layer_norm_epsilon,
                           lstm_dropout=lstm_dropout)
    return RNNT(encoder, predictor, _Joiner(encoding_dim, num_symbols))


def emformer_rnnt_base(num_symbols):
    """The Emformer RNN-T of torchaudio's ``EMFORMER_RNNT_BASE_LIBRISPEECH``: 80 mel bins,
    20 Emformer layers of width 512, 3-layer LSTM predictor, 1024-d joint space (76.7M
    parameters for 4097 symbols)."""
    return emformer_rnnt_model(
        input_dim=80, encoding_dim=1024, num_symbols=num_symbols, segment_length=16,
        right_context_length=4, time_reduction_input_dim=128, time_reduction_stride=4,
        transformer_num_heads=8, transformer_ffn_dim=2048, transformer_num_layers=20,
        transformer_dropout=0.1, transformer_activation="gelu",
        transformer_left_context_length=30, transformer_max_memory_size=0,
        transformer_weight_init_scale_strategy="depthwise", transformer_tanh_on_mem=True,
        symbol_embedding_dim=512, num_lstm_layers=3, lstm_layer_norm=True,
        lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.3)
