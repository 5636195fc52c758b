"""GPT-2 with Hugging Face ``transformers``' module tree and state-dict keys (``wte``, ``wpe``,
``h.N.ln_1``, ``h.N.attn.c_attn`` in GPT-2's Conv1D (in, out) layout, ``h.N.mlp.c_fc``,
``ln_f``; the LM head ``lm_head`` tied to ``wte``), a KV cache and ``generate``.

Per-token work runs on a (tokens, d) view; attention is :func:`._attention.causal_attention`
over the cached keys plus the new ones, so each generated token costs one position.

    >>> import ember
    >>> cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4)
    >>> m = GPT2LMHeadModel(cfg).eval()
    >>> m(ember.tensor([[1, 2, 3]])).shape
    (1, 3, 64)
    >>> m.generate(ember.tensor([[1, 2, 3]]), max_new_tokens=4, temperature=0).shape
    (1, 7)
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn

from ._attention import causal_attention, heads_first, heads_last
from ._config import GPT2Config, activation
from .encoder import _as_ids

__all__ = ["Conv1D", "GPT2Model", "GPT2LMHeadModel", "KVCache", "sample_next"]


class Conv1D(nn.Module):
    """GPT-2's linear layer with the weight stored (in_features, out_features):
    ``x @ weight + bias``. (The name and layout are OpenAI's, kept for the checkpoints.)"""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(ember.empty((nx, nf)))
        self.bias = nn.Parameter(ember.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return nn.functional.linear(x, self.weight.mT, self.bias)

    def extra_repr(self):
        return f"nf={self.nf}, nx={self.weight.shape[0]}"


class KVCache:
    """Keys and values of the positions seen so far, per layer, as (B, H, capacity, D)
    buffers that grow by doubling; ``length`` positions are filled. A model call with the
    cache attends over them and appends its new positions (``update`` per layer, then
    ``advance``). With gradients enabled the buffers are joined with ``cat`` instead, so
    gradients flow through the cache."""

    def __init__(self, num_layers, capacity=None):
        self.length = 0
        self.capacity = capacity
        self._k = [None] * num_layers
        self._v = [None] * num_layers

    def _put(self, buf, new, start):
        end = start + new.shape[2]
        if ember.is_grad_enabled() and new.requires_grad:
            return new if start == 0 else ember.cat([buf[:, :, :start], new], 2)
        if buf is None or buf.shape[2] < end or buf.requires_grad:
            old = 0 if buf is None else buf.shape[2]
            cap = max(end, self.capacity or 0, 2 * old)
            b, h, _, d = new.shape
            grown = ember.empty((b, h, cap, d), dtype=new.dtype, device=new.device)
            with ember.no_grad():
                if start:
                    grown[:, :, :start] = buf[:, :, :start]
            buf = grown
        with ember.no_grad():
            buf[:, :, start:end] = new
        return buf

    def update(self, layer, k, v):
        """Store the new (B, H, L, D) keys/values of ``layer`` after the ``length`` cached
        ones; returns the keys and values of all ``length + L`` positions."""
        end = self.length + k.shape[2]
        self._k[layer] = self._put(self._k[layer], k, self.length)
        self._v[layer] = self._put(self._v[layer], v, self.length)
        return self._k[layer][:, :, :end], self._v[layer][:, :, :end]

    def advance(self, n):
        self.length += int(n)


class _CausalLayout:
    """Attention for a (B, L) block of new tokens after ``past`` cached positions."""

    __slots__ = ("batch", "length", "cache", "key_mask", "past")

    def __init__(self, batch, length, cache, key_mask, past):
        self.batch, self.length, self.cache = batch, length, cache
        self.key_mask, self.past = key_mask, past

    def attend(self, q, k, v, num_heads, dropout_p, layer, scale):
        b, n = self.batch, self.length
        q, k, v = (heads_first(t, b, n, num_heads) for t in (q, k, v))
        if self.cache is not None:
            k, v = self.cache.update(layer, k, v)
        return heads_last(causal_attention(q, k, v, self.past, self.key_mask, dropout_p,
                                           scale))


class Attention(nn.Module):
    def __init__(self, cfg: GPT2Config, layer_idx):
        super().__init__()
        d = cfg.n_embd
        self.num_heads, self.layer_idx = cfg.n_head, layer_idx
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)
        self.attn_dropout_p = cfg.attn_pdrop
        self.resid_dropout = nn.Dropout(cfg.resid_pdrop)
        self.scale = cfg.head_dim ** -0.5 if cfg.scale_attn_weights else 1.0
        if cfg.scale_attn_by_inverse_layer_idx:
            self.scale /= float(layer_idx + 1)

    def forward(self, x, layout):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=-1)
        p = self.attn_dropout_p if self.training else 0.0
        o = layout.attend(q, k, v, self.num_heads, p, self.layer_idx, self.scale)
        return self.resid_dropout(self.c_proj(o))


class MLP(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.c_fc = Conv1D(cfg.inner_dim, cfg.n_embd)
        self.c_proj = Conv1D(cfg.n_embd, cfg.inner_dim)
        self.act = activation(cfg.activation_function)
        self.dropout = nn.Dropout(cfg.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm block: x += attn(ln_1(x)); x += mlp(ln_2(x)), on (T, d)."""

    def __init__(self, cfg: GPT2Config, layer_idx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = Attention(cfg, layer_idx)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = MLP(cfg)

    def forward(self, x, layout):
        x = x + self.attn(self.ln_1(x), layout)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    """The GPT-2 stack: ``forward(input_ids, attention_mask=None, position_ids=None,
    cache=None) -> hidden states (B, L, d)`` after ``ln_f``.

    ``attention_mask``: (B, P + L) covering the P cached positions and the L new ones, 1 for
    tokens and 0 for (left) padding. ``cache``: a :class:`KVCache`; the new positions are
    appended to it. Positions default to P .. P + L - 1."""

    base_model_prefixes = ("transformer",)

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.config = config
        d = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, d)
        self.wpe = nn.Embedding(config.n_positions, d)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList(Block(config, i) for i in range(config.n_layer))
        self.ln_f = nn.LayerNorm(d, eps=config.layer_norm_epsilon)
        _init_gpt2_weights(self, config)

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None):
        dev = self.wte.weight.device
        input_ids = _as_ids(input_ids, dev)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape "
                             f"{tuple(input_ids.shape)}")
        b, n = input_ids.shape
        past = 0 if cache is None else cache.length
        if past + n > self.config.n_positions:
            raise ValueError(f"{past + n} positions exceed the model's n_positions "
                             f"{self.config.n_positions}")
        if position_ids is None:
            pos = ember.arange(past, past + n, device=dev).reshape(1, n)
        else:
            pos = _as_ids(position_ids, dev)
        key_mask = None
        if attention_mask is not None:
            m = _as_ids(attention_mask, dev).bool()
            if tuple(m.shape) != (b, past + n):
                raise ValueError(f"attention_mask has shape {tuple(m.shape)}, expected "
                                 f"({b}, {past + n}) (cached + new positions)")
            if not bool(m.all()):
                key_mask = m
        x = self.wte(input_ids.reshape(-1)) + self.wpe(pos.expand(b, n).reshape(-1))
        x = self.drop(x)
        layout = _CausalLayout(b, n, cache, key_mask, past)
        for blk in self.h:
            x = blk(x, layout)
        if cache is not None:
            cache.advance(n)
        return self.ln_f(x).reshape(b, n, -1)


def _init_gpt2_weights(model, cfg):
    """``transformers``' GPT-2 initialisation: N(0, 0.02) weights, zero biases, and the
    residual projections (``c_proj``) scaled by 1/sqrt(2 n_layer)."""
    std = cfg.initializer_range
    with ember.no_grad():
        for name, m in model.named_modules():
            if isinstance(m, (Conv1D, nn.Linear, nn.Embedding)):
                s = std / math.sqrt(2 * cfg.n_layer) if name.endswith("c_proj") else std
                nn.init.normal_(m.weight, std=s)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)


def sample_next(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """Next-token ids (B,) from (B, V) logits (a numpy array): argmax when ``temperature`` is
    0, else a draw from softmax(logits / temperature) restricted to the ``top_k`` most likely
    tokens and to the smallest set whose probability reaches ``top_p`` (nucleus)."""
    if not temperature:
        return logits.argmax(-1)
    rng = np.random.default_rng() if rng is None else rng
    z = logits.astype(np.float64) / float(temperature)
    V = z.shape[-1]
    if top_k is not None and 0 < top_k < V:
        kth = np.partition(z, V - top_k, axis=-1)[:, V - top_k, None]
        z[z < kth] = -np.inf
    if top_p is not None and top_p < 1.0:
        order = np.argsort(-z, axis=-1, kind="stable")
        zs = np.take_along_axis(z, order, -1)
        ps = np.exp(zs - zs[:, :1])
        ps /= ps.sum(-1, keepdims=True)
        drop = np.cumsum(ps, -1) - ps >= top_p        # mass before this token already enough
        drop[:, 0] = False
        np.put_along_axis(z, order, np.where(drop, -np.inf, zs), -1)
    p = np.exp(z - z.max(-1, keepdims=True))
    c = np.cumsum(p, -1)
    u = rng.random((z.shape[0], 1)) * c[:, -1:]
    return np.minimum((c < u).sum(-1), V - 1)


class GPT2LMHeadModel(nn.Module):
    """GPT-2 with its language-model head: ``forward(...) -> logits (B, L, vocab)`` (same
    arguments as :class:`GPT2Model`) and :meth:`generate`."""

    base_model_prefix = "transformer"

    def __init__(self, config: GPT2Config):
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None):
        return self.lm_head(self.transformer(input_ids, attention_mask, position_ids, cache))

    def new_cache(self, capacity=None):
        """An empty :class:`KVCache` for this model."""
        return KVCache(self.config.n_layer, capacity)

    @ember.no_grad()
    def generate(self, input_ids, max_new_tokens=20, temperature=1.0, top_k=None, top_p=None,
                 eos=None, seed=None, attention_mask=None, use_cache=True):
        """Continue each prompt by ``max_new_tokens`` tokens: (B, L) or (L,) ids -> (B, L + n)
        (or (L + n,)). ``temperature=0`` is greedy decoding; otherwise tokens are sampled
        (see :func:`sample_next`) from a generator seeded with ``seed``. ``eos`` (an id or a
        list): a sequence that emits it is finished and continues with that id; generation
        stops when all are. ``attention_mask`` (B, L): 0 on left padding of shorter prompts.
        With ``use_cache`` (default) every step runs the model on one new position per
        sequence; ``use_cache=False`` re-runs the whole prefix (the reference)."""
        ids = _as_ids(input_ids)
        single = ids.dim() == 1
        if single:
            ids = ids.reshape(1, -1)
        b, n0 = ids.shape
        dev = self.lm_head.weight.device
        if n0 + max_new_tokens > self.config.n_positions:
            raise ValueError(f"prompt {n0} + {max_new_tokens} new tokens exceed n_positions "
                             f"{self.config.n_positions}")
        mask = None if attention_mask is None else \
            np.asarray(_as_ids(attention_mask).cpu().numpy(), dtype=bool)
        if mask is not None and mask.shape != (b, n0):
            raise ValueError(f"attention_mask has shape {mask.shape}, expected {(b, n0)}")
        pos = (np.broadcast_to(np.arange(n0), (b, n0)) if mask is None else
               np.maximum(np.cumsum(mask, 1) - 1, 0)).astype(np.int64)
        eos_ids = [] if eos is None else ([int(eos)] if np.isscalar(eos) else
                                          [int(e) for e in eos])
        rng = np.random.default_rng(seed)
        toks = ids.cpu().numpy().astype(np.int64)
        done = np.zeros(b, dtype=bool)
        cache = self.new_cache(n0 + max_new_tokens) if use_cache else None
        step_ids, step_pos = toks, pos
        for _ in range(max_new_tokens):
            am = None if mask is None else ember.tensor(mask, device=dev)
            if use_cache:
                h = self.transformer(ember.tensor(step_ids, device=dev), am,
                                     ember.tensor(step_pos, device=dev), cache)
            else:
                h = self.transformer(ember.tensor(toks, device=dev), am,
                                     ember.tensor(pos, device=dev))
            logits = self.lm_head(h[:, -1]).cpu().numpy()
            nxt = np.asarray(sample_next(logits, temperature, top_k, top_p, rng),
                             dtype=np.int64)
            if eos_ids:
                nxt[done] = eos_ids[0]
                done |= np.isin(nxt, eos_ids)
            toks = np.concatenate([toks, nxt[:, None]], 1)
            step_ids, step_pos = nxt[:, None], pos[:, -1:] + 1
            pos = np.concatenate([pos, step_pos], 1)
            if mask is not None:
                mask = np.concatenate([mask, np.ones((b, 1), dtype=bool)], 1)
            if eos_ids and done.all():
                break
        out = ember.tensor(toks, device=dev)
        return out.reshape(-1) if single else out
