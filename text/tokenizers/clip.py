"""CLIP's BPE tokenizer, OpenAI's algorithm on the Rust library.

OpenAI's ``simple_tokenizer`` does, per text:

1. clean: ``ftfy.fix_text`` (Unicode NFC when ftfy is not installed), HTML-unescape twice,
   collapse every whitespace run to one space, strip, lower-case (all in Python here, with
   Python's own ``str.lower`` and ``\\s``, so the result is the reference's to the character);
2. split with OpenAI's pattern: the two special tokens, contractions, runs of letters, single
   digits, runs of other non-space symbols; whitespace is dropped;
3. spell each piece's UTF-8 bytes with GPT-2's byte alphabet, mark its last symbol with
   ``</w>`` and apply the ranked merges (lowest rank first, every occurrence).

Steps 2-3 run in the library: a ``Split`` pre-tokenizer with the same pattern, a byte-level
mapping, and a BPE model with ``end_of_word_suffix="</w>"``. A text that contains
``<|startoftext|>``/``<|endoftext|>`` goes through the same pattern first (in Rust) so that the
special ids come only where OpenAI's regex finds those strings as whole pieces.

The vocabulary (:meth:`CLIPTokenizer.from_file`) is OpenAI's: the 256 byte symbols, the same
with ``</w>``, one token per merge, then ``<|startoftext|>`` and ``<|endoftext|>``; OpenAI's
published file holds more merges than CLIP uses, and the first 48,894 are taken (49,408
tokens). On a merge list as a trainer writes it (every merge built from earlier ones, no
token made twice, as in OpenAI's file) the library's merge order gives OpenAI's tokens
exactly; loading another list warns.

``encode`` returns the BPE ids without special tokens (as torchtext's tokenizer does);
:meth:`CLIPTokenizer.tokenize` returns the ``(n, context_length)`` int64 batch of
``clip.tokenize``. Offsets index the cleaned text (:meth:`CLIPTokenizer.clean`).
"""
from __future__ import annotations

import html
import os
import re
import unicodedata
import warnings

import numpy as np
import tokenizers as _tk
from tokenizers import decoders, models, pre_tokenizers, processors

from ._base import Encoding, Tokenizer
from ._files import byte_to_unicode, first_out_of_order_merge, read_merges, read_vocab_json

__all__ = ["CLIPTokenizer", "clip_clean"]

SOT, EOT = "<|startoftext|>", "<|endoftext|>"
#: OpenAI's split pattern. OpenAI matches it ignoring case (with the ``regex`` module), on
#: lower-cased text; there, case matters only for two characters whose case partners are not
#: ASCII: "ſ" (long s, which then matches "s") and U+0345 (a combining mark whose partner is
#: the letter iota: it drops out of the "other symbols" class, is not taken as a letter either,
#: and so is skipped like a space). Spelling those two out gives the same pieces (checked on
#: every code point of Unicode 14) without the library's case-insensitive mode, which makes
#: the split 2.7x slower.
PATTERN = (r"<\|[sſ]tartoftext\|>|<\|endoftext\|>|'[sſ]|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|"
           r"[^\s\p{L}\p{N}\x{345}]+")
#: merges CLIP's released vocabulary uses (49,152 - 256 byte symbols - 2 specials)
CLIP_NUM_MERGES = 49152 - 256 - 2

_WHITESPACE = re.compile(r"\s+")

try:  # OpenAI's cleaning uses ftfy; without it, NFC is the part of ftfy that matters most
    from ftfy import fix_text as _fix_text
except ImportError:
    def _fix_text(text):
        return unicodedata.normalize("NFC", text)


def clip_clean(text: str) -> str:
    """OpenAI CLIP's text cleaning (step 1 of the module doc)."""
    text = html.unescape(html.unescape(_fix_text(text))).strip()
    return _WHITESPACE.sub(" ", text).strip().lower()


def openai_vocab(merges) -> dict[str, int]:
    """CLIP's ``{token: id}`` from its merges, numbered as OpenAI's code numbers them (a token
    spelled twice keeps the later id)."""
    symbols = list(byte_to_unicode().values())
    tokens = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges] + [SOT, EOT]
    return {t: i for i, t in enumerate(tokens)}


def _has_special(text):
    return SOT in text or EOT in text


class CLIPTokenizer(Tokenizer):
    """CLIP's BPE (see the module doc)."""

    add_special_tokens_default = False

    def __init__(self, backend):
        super().__init__(backend)
        self._split = pre_tokenizers.Split(_tk.Regex(PATTERN), behavior="removed", invert=True)
        self._sot = backend.token_to_id(SOT)
        self._eot = backend.token_to_id(EOT)
        if self._sot is None or self._eot is None:
            raise ValueError(f"a CLIP vocabulary needs {SOT} and {EOT}")

    def __getstate__(self):
        return {"backend": self._backend}

    def __setstate__(self, state):
        self.__init__(state["backend"])

    @classmethod
    def from_file(cls, path, *, num_merges=None, encoder_json=None) -> "CLIPTokenizer":
        """From OpenAI's ``bpe_simple_vocab_16e6.txt`` (or ``.txt.gz``; a path or URL): its
        first line is a header, then merges in rank order.

        ``num_merges``: how many merges to use (default CLIP's 48,894, or all the file has if
        fewer). ``encoder_json``: a ``{token: id}`` JSON to use instead of OpenAI's numbering.
        """
        from .._download import asset_path

        path = asset_path(path)
        limit = CLIP_NUM_MERGES if num_merges is None else int(num_merges)
        merges = read_merges(path, skip_first_line=True, limit=limit)
        vocab = openai_vocab(merges) if encoder_json is None else \
            read_vocab_json(asset_path(encoder_json))
        return cls._build(vocab, merges, path)

    @classmethod
    def from_vocab_merges(cls, vocab, merges) -> "CLIPTokenizer":
        """From Hugging Face's CLIP files, ``vocab.json`` + ``merges.txt`` (paths or URLs)."""
        from .._download import asset_path

        where = f"{os.fspath(vocab)} and {os.fspath(merges)}"
        return cls._build(read_vocab_json(asset_path(vocab)),
                          read_merges(asset_path(merges)), where)

    @classmethod
    def _build(cls, vocab, merges, where):
        symbols = list(byte_to_unicode().values())
        bad = first_out_of_order_merge(merges, symbols + [s + "</w>" for s in symbols])
        if bad is not None:
            warnings.warn(f"{where}: merge {bad} {' '.join(merges[bad])!r} uses a token no "
                          "earlier merge made, or remakes one; on such a list the ids may differ "
                          "from OpenAI's tokenizer", stacklevel=3)
        try:
            model = models.BPE(vocab=vocab, merges=merges, end_of_word_suffix="</w>")
        except Exception as e:  # the library raises a bare Exception naming the bad token
            raise ValueError(f"cannot build CLIP's BPE from {where}: {e}") from None
        backend = _tk.Tokenizer(model)
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(_tk.Regex(PATTERN), behavior="removed", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        backend.decoder = decoders.Sequence([decoders.ByteLevel(),
                                             decoders.Replace("</w>", " ")])
        for t in (SOT, EOT):
            if t not in vocab:
                raise ValueError(f"{where}: the vocabulary has no {t}")
        backend.add_special_tokens([SOT, EOT])
        backend.post_processor = processors.TemplateProcessing(
            single=f"{SOT}:0 $A:0 {EOT}:0", pair=f"{SOT}:0 $A:0 {EOT}:0 $B:1 {EOT}:1",
            special_tokens=[(SOT, vocab[SOT]), (EOT, vocab[EOT])])
        return cls(backend)

    # ------------------------------------------------------------------ text in
    clean = staticmethod(clip_clean)

    def _pieces(self, text):
        return self._split.pre_tokenize_str(text)

    def _encode_split(self, text, pair, add):
        """Encode pre-split pieces, so a special token is matched only as a whole piece."""
        seqs = [self._pieces(text)] + ([self._pieces(pair)] if pair is not None else [])
        words = [[w for w, _ in s] for s in seqs]
        enc = self._backend.encode(words[0], words[1] if pair is not None else None,
                                   is_pretokenized=True, add_special_tokens=add)
        offsets = []
        for (s, e), seq, word in zip(enc.offsets, enc.sequence_ids, enc.word_ids):
            if seq is None or word is None:
                offsets.append((0, 0))
            else:
                base = seqs[seq][word][1][0]
                offsets.append((base + s, base + e))
        return Encoding(enc.ids, enc.tokens, offsets, enc.type_ids, enc.special_tokens_mask)

    def _encode_one(self, text, pair, add):
        text = clip_clean(text)
        pair = None if pair is None else clip_clean(pair)
        if _has_special(text) or (pair is not None and _has_special(pair)):
            return self._encode_split(text, pair, add)
        return self._backend.encode(text, pair, add_special_tokens=add)

    def _encode_many(self, texts, pairs, add, offsets):
        texts = [clip_clean(t) for t in texts]
        if pairs is not None:
            pairs = [clip_clean(p) for p in pairs]
        special = [i for i, t in enumerate(texts)
                   if _has_special(t) or (pairs is not None and _has_special(pairs[i]))]
        if not special:
            return super()._encode_many(texts, pairs, add, offsets)
        out = [None] * len(texts)
        for i in special:
            out[i] = self._encode_split(texts[i], None if pairs is None else pairs[i], add)
        rest = [i for i in range(len(texts)) if out[i] is None]
        encs = super()._encode_many([texts[i] for i in rest],
                                    None if pairs is None else [pairs[i] for i in rest],
                                    add, offsets)
        for i, e in zip(rest, encs):
            out[i] = e
        return out

    # ------------------------------------------------------------------ clip.tokenize
    def tokenize(self, texts, context_length: int = 77, truncate: bool = False):
        """OpenAI's ``clip.tokenize``: an ``(n, context_length)`` int64 ember Tensor, each row
        ``<|startoftext|> ids <|endoftext|>`` then zeros. A text too long raises
        ``RuntimeError`` naming it, unless ``truncate=True`` (then the row is cut and ends with
        ``<|endoftext|>``). ``texts``: one string or a list of them."""
        import ember

        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        rows = self.encode_batch(texts, add_special_tokens=True)
        out = np.zeros((len(rows), int(context_length)), np.int64)
        for i, ids in enumerate(rows):
            if len(ids) > context_length:
                if not truncate:
                    raise RuntimeError(f"Input {texts[i]} is too long for context length "
                                       f"{context_length}")
                ids = ids[:context_length]
                ids[-1] = self._eot
            out[i, :len(ids)] = ids
        return ember.from_numpy(out)
