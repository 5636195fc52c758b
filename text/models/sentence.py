"""Sentence embeddings: an encoder, a tokenizer, pooling and normalisation.

``SentenceEmbedder.from_pretrained(directory)`` reads a sentence-transformers directory
(``modules.json``, ``1_Pooling/config.json``, ``sentence_bert_config.json``) so that pooling,
normalisation and the maximum length are the ones the model was published with.

    >>> import ember
    >>> from ember.text.models import EncoderConfig, EncoderModel
    >>> enc = EncoderModel(EncoderConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
    ...                                  num_attention_heads=2, intermediate_size=32))
    >>> emb = SentenceEmbedder(enc, tokenizer=None, pooling="mean")
    >>> e = emb(ember.tensor([[1, 5, 7, 2], [1, 9, 2, 0]]), ember.tensor([[1, 1, 1, 1],
    ...                                                                   [1, 1, 1, 0]]))
    >>> e.shape, bool(((e * e).sum(1) - 1).abs().max() < 1e-5)
    ((2, 16), True)
    >>> emb(ember.jagged.as_jagged([[1, 5, 7, 2], [1, 9, 2]])).shape    # padding-free
    (2, 16)
"""
from __future__ import annotations

import json
import os

import numpy as np

import ember
from ember import nn
from ember.jagged import JaggedTensor, segment_max, segment_mean, segment_sum

from .encoder import EncoderModel, first_tokens
from .pretrained import from_pretrained as _load_dir

__all__ = ["SentenceEmbedder", "pool", "POOLING_MODES"]

POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len")


def pool(hidden, mask, mode):
    """Pool (B, L, d) token states into (B, d) over the tokens where ``mask`` (B, L) is 1:
    their mean, the first token's state ("cls"), their elementwise max, or their sum divided
    by sqrt(count) ("mean_sqrt_len"). ``hidden`` may be a ``JaggedTensor`` of B non-empty
    sequences (``mask`` None): the same pooling over each sequence's tokens, with the
    segment ops."""
    if isinstance(hidden, JaggedTensor):
        return _pool_jagged(hidden, mode)
    if mode == "cls":
        return hidden[:, 0]
    m = mask.to(hidden.dtype).unsqueeze(-1)                            # (B, L, 1)
    if mode == "max":
        return ember.amax(hidden.masked_fill(m == 0, -1e9), 1)
    total = (hidden * m).sum(1)
    count = m.sum(1).clamp(min=1e-9)
    if mode == "mean":
        return total / count
    if mode == "mean_sqrt_len":
        return total / count.sqrt()
    raise ValueError(f"pooling must be one of {POOLING_MODES}, got {mode!r}")


def _pool_jagged(hidden, mode):
    if mode == "cls":
        return first_tokens(hidden)
    if mode == "mean":
        return segment_mean(hidden)
    if mode == "max":
        return segment_max(hidden).values
    if mode == "mean_sqrt_len":
        n = hidden.lengths().to(hidden.dtype).clamp(min=1).sqrt().unsqueeze(-1)
        return segment_sum(hidden) / n
    raise ValueError(f"pooling must be one of {POOLING_MODES}, got {mode!r}")


def _plain_backend(tokenizer):
    """The ``tokenizers`` library object behind ``tokenizer`` (ember's tokenizers expose it
    as ``backend``), copied without the padding and truncation a ``tokenizer.json`` may set,
    so that lengths are decided here (as sentence-transformers decides them); None when the
    tokenizer has no such backend."""
    import tokenizers

    be = tokenizer if isinstance(tokenizer, tokenizers.Tokenizer) else \
        getattr(tokenizer, "backend", None)
    if not isinstance(be, tokenizers.Tokenizer):
        return None
    if be.padding is not None or be.truncation is not None:
        be = tokenizers.Tokenizer.from_str(be.to_str())
        be.no_padding()
        be.no_truncation()
    return be


def _ids_of(encoding, pad_id):
    """Token ids from a tokenizer's output: a list of ids (trailing padding, which a
    ``tokenizer.json`` with a padding block adds, is dropped) or an object with ``ids`` and
    ``attention_mask`` (the ``tokenizers`` library's ``Encoding``)."""
    if hasattr(encoding, "ids"):
        mask = getattr(encoding, "attention_mask", None)
        ids = list(encoding.ids)
        return ids if mask is None else [i for i, m in zip(ids, mask) if m]
    ids = list(encoding)
    while ids and ids[-1] == pad_id:
        ids.pop()
    return ids


class SentenceEmbedder(nn.Module):
    """``model`` (an encoder returning (B, L, d) states first) + ``tokenizer`` + pooling
    (``"mean"``, ``"cls"``, ``"max"``, ``"mean_sqrt_len"``) + optional L2 normalisation.

    ``forward(input_ids, attention_mask) -> (B, d)``, or ``forward(jagged_ids)`` with a
    ``JaggedTensor`` of ids (padding-free); ``encode(texts, batch_size=32) -> Tensor (n, d)``
    tokenizes (one ``encode_batch`` call, with the tokenizer's special tokens), batches texts
    of similar length together, runs each batch padding-free (jagged; a model other than
    ``EncoderModel`` gets padded batches) and returns the embeddings in the input order.
    ``max_length`` (default: the model's positions): longer token sequences keep their
    first ``max_length - 1`` ids and their last (the end token). ``tokenizer``:
    an ``ember.text.tokenizers`` tokenizer or a ``tokenizers.Tokenizer``; the padding and
    truncation set in a ``tokenizer.json`` are not applied (lengths are decided here)."""

    def __init__(self, model, tokenizer, pooling="mean", normalize=True, max_length=None):
        super().__init__()
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling, self.normalize = pooling, bool(normalize)
        cfg = getattr(model, "config", None)
        limit = getattr(cfg, "max_position_embeddings", None)
        if limit is not None and getattr(cfg, "roberta_positions", False):
            limit -= cfg.pad_token_id + 1
        self.max_length = limit if max_length is None else int(max_length)
        self.pad_id = getattr(cfg, "pad_token_id", 0) or 0
        self._backend = None if tokenizer is None else _plain_backend(tokenizer)

    def forward(self, input_ids, attention_mask=None):
        if isinstance(input_ids, JaggedTensor):
            if attention_mask is not None:
                raise ValueError("a JaggedTensor of ids carries its own lengths: pass no "
                                 "attention_mask with it")
            h = self.model(input_ids)[0]
        else:
            if attention_mask is None:
                raise TypeError("forward() needs an attention_mask with padded input_ids "
                                "(or a JaggedTensor of ids)")
            h = self.model(input_ids, attention_mask)[0]
        e = pool(h, attention_mask, self.pooling)
        if self.normalize:
            e = e / (e * e).sum(-1, keepdim=True).sqrt().clamp(min=1e-12)
        return e

    def tokenize(self, texts):
        """Token ids of each text (with the tokenizer's special tokens), cut to
        ``max_length``."""
        if self.tokenizer is None:
            raise ValueError("this SentenceEmbedder has no tokenizer: pass token ids to "
                             "forward() instead")
        texts = list(texts)
        encs = self.tokenizer.encode_batch(texts) if self._backend is None else \
            self._backend.encode_batch_fast(texts, add_special_tokens=True)
        out = []
        for enc in encs:
            ids = _ids_of(enc, self.pad_id)
            if self.max_length is not None and len(ids) > self.max_length:
                ids = ids[:self.max_length - 1] + ids[-1:]
            out.append(ids)
        return out

    @ember.no_grad()
    def encode(self, texts, batch_size=32):
        """Embeddings of ``texts`` (a list of strings): Tensor (n, d)."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings; wrap a single text in a list")
        seqs = self.tokenize(texts)
        n = len(seqs)
        if n == 0:
            raise ValueError("encode() got no texts")
        empty = [i for i, s in enumerate(seqs) if not s]
        if empty:
            raise ValueError(f"text {empty[0]} gives no tokens (a tokenizer without special "
                             "tokens on an empty text?): nothing to embed")
        dev = next(self.model.parameters()).device
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        jagged = isinstance(self.model, EncoderModel)
        parts = []
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            if jagged:
                lens = np.array([len(seqs[i]) for i in idx], np.int64)
                flat = np.fromiter((t for i in idx for t in seqs[i]), np.int64, int(lens.sum()))
                parts.append(self(JaggedTensor(ember.tensor(flat, device=dev),
                                               lengths=lens)))
                continue
            width = max(len(seqs[i]) for i in idx)
            ids = np.full((len(idx), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1
            parts.append(self(ember.tensor(ids, device=dev), ember.tensor(mask, device=dev)))
        back = np.empty(n, np.int64)
        back[order] = np.arange(n)                    # sorted position of each text
        return ember.cat(parts, 0).index_select(0, ember.tensor(back, device=dev))

    @classmethod
    def from_pretrained(cls, directory, pooling=None, normalize=None, max_length=None,
                        tokenizer=True, device=None):
        """Load an encoder directory; a sentence-transformers layout sets pooling,
        normalisation and ``max_length`` as published (arguments given here override).
        A plain Hugging Face directory gets mean pooling and normalisation. ``tokenizer``:
        True loads the directory's, False loads none, a tokenizer object is used as is."""
        d = os.fspath(directory)
        model_dir, st_pool, st_norm, st_len = d, None, None, None
        mpath = os.path.join(d, "modules.json")
        if os.path.exists(mpath):
            with open(mpath, encoding="utf-8") as f:
                modules = json.load(f)
            st_norm = False
            for mod in modules:
                kind = mod.get("type", "").rsplit(".", 1)[-1]
                path = os.path.join(d, mod.get("path", ""))
                if kind == "Transformer":
                    model_dir = path
                    st_len = _read_json(os.path.join(path, "sentence_bert_config.json")).get(
                        "max_seq_length")
                elif kind == "Pooling":
                    st_pool = _pooling_mode(_read_json(os.path.join(path, "config.json")),
                                            path)
                elif kind == "Normalize":
                    st_norm = True
                else:
                    raise ValueError(f"{mpath}: module type {mod.get('type')!r} is not "
                                     "supported (Transformer, Pooling and Normalize are)")
        given = not isinstance(tokenizer, bool)
        model, tok = _load_dir(model_dir, tokenizer=tokenizer if not given else False,
                               device=device)
        tok = tokenizer if given else tok
        return cls(model, tok,
                   pooling=pooling or st_pool or "mean",
                   normalize=normalize if normalize is not None else
                   (st_norm if st_norm is not None else True),
                   max_length=max_length if max_length is not None else st_len)


def _read_json(path):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _pooling_mode(cfg, where):
    modes = [m for key, m in (("pooling_mode_cls_token", "cls"),
                              ("pooling_mode_mean_tokens", "mean"),
                              ("pooling_mode_max_tokens", "max"),
                              ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"))
             if cfg.get(key)]
    if len(modes) != 1:
        raise ValueError(f"{where}: expected exactly one pooling mode, found {modes or 'none'}"
                         " (concatenated pooling modes are not supported)")
    return modes[0]
