"""``Emformer`` (Shi et al. 2021): a streaming transformer encoder, as torchaudio's.

The utterance is cut into segments of ``segment_length`` frames. Each segment attends to its
own frames, up to ``left_context_length`` frames before it, ``right_context_length`` frames
of look-ahead (the "right context", copied out of the next segment and processed alongside
it in every layer) and, with ``max_memory_size > 0``, to memory vectors: one summary of each
earlier segment (its average, attended by a summary query). ``forward`` runs a whole
utterance at once with a block attention mask; ``infer`` runs one segment (plus its right
context) at a time and carries the left-context keys/values, the memory and the number of
frames seen in a state, so the streaming run reproduces the whole-utterance one.

Layouts: public inputs are (batch, time, dim); inside, time-major (time, batch, dim).
Queries are [right contexts, utterance, summaries]; keys [memories, right contexts,
(left context), utterance]. Module names match torchaudio's, so are the state-dict keys.

    >>> import ember
    >>> from ember.audio.models import Emformer
    >>> m = Emformer(16, 2, 32, 2, segment_length=4, right_context_length=1).eval()
    >>> out, lengths = m(ember.randn(1, 9, 16), ember.tensor([8]))     # 8 frames + 1 look-ahead
    >>> tuple(out.shape)
    (1, 8, 16)
    >>> out, lengths, states = m.infer(ember.randn(1, 5, 16), ember.tensor([5]), None)
    >>> tuple(out.shape)
    (1, 4, 16)
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["Emformer"]

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"Unsupported activation {name!r}: expected one of "
                         f"{sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]()


def _init_gains(strategy, num_layers):
    """Per-layer gain of the query/key/value init: 1/sqrt(l + 1) ("depthwise"), 1/sqrt(2)
    ("constant") or torch's default init (None)."""
    if strategy is None:
        return [None] * num_layers
    if strategy == "depthwise":
        return [1.0 / math.sqrt(i + 1) for i in range(num_layers)]
    if strategy == "constant":
        return [1.0 / math.sqrt(2)] * num_layers
    raise ValueError(f"Unsupported weight_init_scale_strategy value {strategy!r}: expected "
                     "'depthwise', 'constant' or None")


def _empty(like):
    return ember.zeros(0, *like.shape[1:], dtype=like.dtype, device=like.device)


def _key_padding_mask(lengths, extra, num_keys):
    """(B, K) bool, True at key positions past each sample's ``lengths + extra`` (the padded
    utterance frames, which are the last keys)."""
    kl = lengths.detach().numpy().astype(np.int64) + extra
    width = max(int(kl.max()), num_keys) if kl.size else num_keys
    mask = np.arange(width)[None, :] >= kl[:, None]
    return ember.tensor(mask[:, :num_keys], device=lengths.device)


class _EmformerAttention(nn.Module):
    """Multi-head attention of [right context, utterance, summary] queries over [memory,
    right context, (left context), utterance] keys; outputs the attended frames and the
    new memory (the summary outputs, through tanh or clamped to [-10, 10])."""

    def __init__(self, input_dim, num_heads, dropout=0.0, weight_init_gain=None,
                 tanh_on_mem=False, negative_inf=-1e8):
        super().__init__()
        if input_dim % num_heads != 0:
            raise ValueError(f"input_dim ({input_dim}) is not a multiple of num_heads "
                             f"({num_heads}).")
        self.input_dim = input_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.tanh_on_mem = tanh_on_mem
        self.negative_inf = negative_inf
        self.scaling = (input_dim // num_heads) ** -0.5
        self.emb_to_key_value = nn.Linear(input_dim, 2 * input_dim, bias=True)
        self.emb_to_query = nn.Linear(input_dim, input_dim, bias=True)
        self.out_proj = nn.Linear(input_dim, input_dim, bias=True)
        if weight_init_gain:
            nn.init.xavier_uniform_(self.emb_to_key_value.weight, gain=weight_init_gain)
            nn.init.xavier_uniform_(self.emb_to_query.weight, gain=weight_init_gain)

    def _heads(self, x, batch):
        """(L, B, D) -> (B * H, L, D / H)."""
        return x.contiguous().view(x.shape[0], batch * self.num_heads,
                                   self.input_dim // self.num_heads).transpose(0, 1)

    def _attend(self, utterance, lengths, right_context, summary, mems, attention_mask,
                left_context_key=None, left_context_val=None):
        batch = utterance.shape[1]
        n_q = right_context.shape[0] + utterance.shape[0] + summary.shape[0]
        query = self.emb_to_query(ember.cat([right_context, utterance, summary]))
        key, value = self.emb_to_key_value(ember.cat([mems, right_context, utterance])).chunk(
            2, dim=2)
        max_len = int(lengths.max().item()) if lengths.numel() else 0
        rc_blocks = n_q - max_len - summary.shape[0]
        n_lc = 0
        if left_context_key is not None:
            # torchaudio inserts the left context after [memory, right context blocks], whose
            # length it takes as n_q - max(lengths) - n_summary
            cut = mems.shape[0] + rc_blocks
            key = ember.cat([key[:cut], left_context_key, key[cut:]])
            value = ember.cat([value[:cut], left_context_val, value[cut:]])
            n_lc = left_context_key.shape[0]
        q, k, v = (self._heads(t, batch) for t in (query, key, value))
        weights = ember.bmm(q * self.scaling, k.transpose(1, 2))       # (B * H, n_q, n_k)
        weights = weights.float().masked_fill(attention_mask.unsqueeze(0), self.negative_inf)
        if batch > 1:
            pad = _key_padding_mask(lengths, mems.shape[0] + rc_blocks + n_lc, weights.shape[2])
            weights = weights.view(batch, self.num_heads, n_q, -1).masked_fill(
                pad[:, None, None, :], self.negative_inf).view(batch * self.num_heads, n_q, -1)
        probs = F.softmax(weights, dim=-1).to(q.dtype)
        probs = F.dropout(probs, p=float(self.dropout), training=self.training)
        att = ember.bmm(probs, v).transpose(0, 1).contiguous().view(n_q, batch, self.input_dim)
        out = self.out_proj(att)
        n_s = summary.shape[0]
        out_frames, out_mems = out[:n_q - n_s], out[n_q - n_s:]
        out_mems = out_mems.tanh() if self.tanh_on_mem else out_mems.clamp(min=-10, max=10)
        return out_frames, out_mems, key, value

    def forward(self, utterance, lengths, right_context, summary, mems, attention_mask):
        """Training / whole-utterance pass: (frames (R + T, B, D), memory (M, B, D))."""
        out, out_mems, _, _ = self._attend(utterance, lengths, right_context, summary, mems,
                                           attention_mask)
        return out, out_mems[:-1]

    def infer(self, utterance, lengths, right_context, summary, mems, left_context_key,
              left_context_val):
        """One segment: (frames, memory, keys and values of [left context, utterance])."""
        n_q = right_context.shape[0] + utterance.shape[0] + summary.shape[0]
        n_k = (right_context.shape[0] + utterance.shape[0] + mems.shape[0]
               + left_context_key.shape[0])
        mask = np.zeros((n_q, n_k), bool)
        mask[-1, :mems.shape[0]] = True                  # the summary never sees the memory
        out, out_mems, key, value = self._attend(
            utterance, lengths, right_context, summary, mems,
            ember.tensor(mask, device=utterance.device), left_context_key, left_context_val)
        start = mems.shape[0] + right_context.shape[0]
        return out, out_mems, key[start:], value[start:]


class _EmformerLayer(nn.Module):
    """Pre-norm attention + position-wise feed-forward + output norm, with the per-layer
    streaming state [memory, left-context keys, left-context values, frames seen]."""

    def __init__(self, input_dim, num_heads, ffn_dim, segment_length, dropout=0.0,
                 activation="relu", left_context_length=0, max_memory_size=0,
                 weight_init_gain=None, tanh_on_mem=False, negative_inf=-1e8):
        super().__init__()
        self.attention = _EmformerAttention(input_dim, num_heads, dropout=dropout,
                                            weight_init_gain=weight_init_gain,
                                            tanh_on_mem=tanh_on_mem, negative_inf=negative_inf)
        self.dropout = nn.Dropout(dropout)
        self.memory_op = nn.AvgPool1d(kernel_size=segment_length, stride=segment_length,
                                      ceil_mode=True)
        self.pos_ff = nn.Sequential(
            nn.LayerNorm(input_dim), nn.Linear(input_dim, ffn_dim), _activation(activation),
            nn.Dropout(dropout), nn.Linear(ffn_dim, input_dim), nn.Dropout(dropout))
        self.layer_norm_input = nn.LayerNorm(input_dim)
        self.layer_norm_output = nn.LayerNorm(input_dim)
        self.left_context_length = left_context_length
        self.segment_length = segment_length
        self.max_memory_size = max_memory_size
        self.input_dim = input_dim
        self.use_mem = max_memory_size > 0

    def _summary(self, utterance):
        if not self.use_mem:
            return _empty(utterance)
        return self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)

    def _init_state(self, batch, like):
        z = lambda n: ember.zeros(n, batch, self.input_dim, dtype=like.dtype,  # noqa: E731
                                  device=like.device)
        past = ember.zeros(1, batch, dtype=ember.int32, device=like.device)
        return [z(self.max_memory_size), z(self.left_context_length),
                z(self.left_context_length), past]

    def _unpack_state(self, state):
        past = int(state[3][0][0].item())
        n_lc = min(self.left_context_length, past)
        n_mem = min(self.max_memory_size, math.ceil(past / self.segment_length))
        return (state[0][self.max_memory_size - n_mem:],
                state[1][self.left_context_length - n_lc:],
                state[2][self.left_context_length - n_lc:])

    def _pack_state(self, next_k, next_v, update_length, mems, state):
        new_k = ember.cat([state[1], next_k])
        new_v = ember.cat([state[2], next_v])
        mem = ember.cat([state[0], mems])
        if self.max_memory_size > 0:
            mem = mem[max(mem.shape[0] - self.max_memory_size, 0):]
        state[0] = mem
        state[1] = new_k[new_k.shape[0] - self.left_context_length:]
        state[2] = new_v[new_v.shape[0] - self.left_context_length:]
        state[3] = state[3] + update_length
        return state

    def _pre_norm(self, utterance, right_context):
        x = self.layer_norm_input(ember.cat([right_context, utterance]))
        r = right_context.shape[0]
        return x[r:], x[:r]

    def _post(self, rc_output, utterance, right_context):
        x = self.dropout(rc_output) + ember.cat([right_context, utterance])
        x = self.layer_norm_output(self.pos_ff(x) + x)
        r = right_context.shape[0]
        return x[r:], x[:r]

    def forward(self, utterance, lengths, right_context, mems, attention_mask):
        """-> (utterance (T, B, D), right context (R, B, D), memory (M, B, D))."""
        utt_n, rc_n = self._pre_norm(utterance, right_context)
        rc_output, out_mems = self.attention(utt_n, lengths, rc_n, self._summary(utt_n), mems,
                                             attention_mask)
        out_utt, out_rc = self._post(rc_output, utterance, right_context)
        return out_utt, out_rc, out_mems

    def infer(self, utterance, lengths, right_context, state, mems):
        """-> (utterance, right context, new state, memory) for one segment."""
        utt_n, rc_n = self._pre_norm(utterance, right_context)
        if state is None:
            state = self._init_state(utterance.shape[1], utterance)
        pre_mems, lc_key, lc_val = self._unpack_state(state)
        summary = self._summary(utt_n)[:1]
        rc_output, out_mems, next_k, next_v = self.attention.infer(
            utt_n, lengths, rc_n, summary, pre_mems, lc_key, lc_val)
        state = self._pack_state(next_k, next_v, utterance.shape[0], mems, list(state))
        out_utt, out_rc = self._post(rc_output, utterance, right_context)
        return out_utt, out_rc, state, out_mems


class Emformer(nn.Module):
    """Emformer encoder, as ``torchaudio.models.Emformer``.

    Args: input_dim, num_heads, ffn_dim, num_layers, segment_length, dropout=0.0,
    activation="relu" ("gelu", "silu"), left_context_length=0, right_context_length=0,
    max_memory_size=0, weight_init_scale_strategy="depthwise" ("constant", None),
    tanh_on_mem=False, negative_inf=-1e8.

    ``forward(input, lengths)``: input (B, T + right_context_length, D), the utterance
    right-padded with the look-ahead frames; lengths (B,) valid utterance frames ->
    (output (B, T, D), lengths). ``infer(input, lengths, states=None)``: input
    (B, segment_length + right_context_length, D) -> (output (B, segment_length, D),
    lengths - right_context_length clamped at 0, states for the next call).
    """

    def __init__(self, input_dim, num_heads, ffn_dim, num_layers, segment_length, dropout=0.0,
                 activation="relu", left_context_length=0, right_context_length=0,
                 max_memory_size=0, weight_init_scale_strategy="depthwise", tanh_on_mem=False,
                 negative_inf=-1e8):
        super().__init__()
        gains = _init_gains(weight_init_scale_strategy, num_layers)
        self.emformer_layers = nn.ModuleList([
            _EmformerLayer(input_dim, num_heads, ffn_dim, segment_length, dropout=dropout,
                           activation=activation, left_context_length=left_context_length,
                           max_memory_size=max_memory_size, weight_init_gain=gains[i],
                           tanh_on_mem=tanh_on_mem, negative_inf=negative_inf)
            for i in range(num_layers)])
        self.use_mem = max_memory_size > 0
        self.memory_op = nn.AvgPool1d(kernel_size=segment_length, stride=segment_length,
                                      ceil_mode=True)
        self.left_context_length = left_context_length
        self.right_context_length = right_context_length
        self.segment_length = segment_length
        self.max_memory_size = max_memory_size

    def _right_context(self, x):
        """The look-ahead block of every segment, stacked: (num_segs * R, B, D)."""
        T, R, L = x.shape[0], self.right_context_length, self.segment_length
        num_segs = math.ceil((T - R) / L)
        blocks = [x[(i + 1) * L:(i + 1) * L + R] for i in range(num_segs - 1)]
        blocks.append(x[T - R:])
        return ember.cat(blocks)

    def _attention_mask(self, T):
        """(queries, keys) bool, True where attention is not allowed; see the module doc."""
        L, R, LC, M = (self.segment_length, self.right_context_length,
                       self.left_context_length, self.max_memory_size)
        num_segs = math.ceil(T / L)
        n_mem = num_segs - 1 if self.use_mem else 0
        n_rc = R * num_segs
        n_sum = num_segs if self.use_mem else 0
        allowed = np.zeros((n_rc + T + n_sum, n_mem + n_rc + T), bool)
        rc0, utt0 = n_mem, n_mem + n_rc
        for i in range(num_segs):
            s0, s1 = i * L, min((i + 1) * L, T)
            cols = [(rc0 + i * R, rc0 + (i + 1) * R), (utt0 + max(s0 - LC, 0), utt0 + s1)]
            rows = [(i * R, (i + 1) * R), (n_rc + s0, n_rc + s1)]
            for r in rows:
                for c in cols:
                    allowed[r[0]:r[1], c[0]:c[1]] = True
                if self.use_mem:
                    allowed[r[0]:r[1], max(i - M, 0):i] = True
            if self.use_mem:
                for c in cols:
                    allowed[n_rc + T + i, c[0]:c[1]] = True
        return ~allowed

    def forward(self, input, lengths):
        x = input.permute(1, 0, 2)
        right_context = self._right_context(x)
        utterance = x[:x.shape[0] - self.right_context_length]
        mask = ember.tensor(self._attention_mask(utterance.shape[0]), device=input.device)
        mems = (self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)[:-1]
                if self.use_mem else _empty(utterance))
        out = utterance
        for layer in self.emformer_layers:
            out, right_context, mems = layer(out, lengths, right_context, mems, mask)
        return out.permute(1, 0, 2), lengths

    def infer(self, input, lengths, states=None):
        expected = self.segment_length + self.right_context_length
        if input.ndim != 3 or input.shape[1] != expected:
            raise ValueError(
                "Per configured segment_length and right_context_length, expected size of "
                f"{expected} for dimension 1 of input (batch, {expected}, dim), but got shape "
                f"{tuple(input.shape)}.")
        if states is not None and len(states) != len(self.emformer_layers):
            raise ValueError(f"states must hold one state per layer "
                             f"({len(self.emformer_layers)}), got {len(states)}")
        x = input.permute(1, 0, 2)
        start = x.shape[0] - self.right_context_length
        right_context, utterance = x[start:], x[:start]
        out_lengths = (lengths - self.right_context_length).clamp(min=0)
        mems = (self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)
                if self.use_mem else _empty(utterance))
        out = utterance
        out_states = []
        for i, layer in enumerate(self.emformer_layers):
            out, right_context, st, mems = layer.infer(
                out, out_lengths, right_context, None if states is None else states[i], mems)
            out_states.append(st)
        return out.permute(1, 0, 2), out_lengths, out_states
