"""``Tokenizer``: one protocol over a Rust ``tokenizers.Tokenizer``.

Every ember tokenizer (GPT-2 byte-level BPE, CLIP BPE, BERT WordPiece, any Hugging Face
``tokenizer.json``) answers the same calls:

==============================================  =============================================
``encode(text, pair=None)``                     ``list[int]``
``encode(text, return_offsets=True)``           ``(ids, offsets)``, offsets ``(start, end)``
                                                character spans of the text
``encode_batch(texts, pairs=None)``             ``list[list[int]]``, encoded in parallel on
                                                the library's threads
``encode_plus(text)`` / ``encode_batch_plus``   :class:`Encoding` (ids, tokens, offsets,
                                                type ids, special-tokens mask)
``decode(ids)`` / ``decode_batch``              text (special tokens kept unless
                                                ``skip_special_tokens=True``)
``token_to_id`` / ``id_to_token``               ``None`` when absent
``vocab_size``, ``special_tokens``              ``int``, ``{token: id}``
==============================================  =============================================

All work runs in the library; Python only routes calls. ``backend`` is the library object
for anything the protocol does not cover.

    >>> from tokenizers import Tokenizer as Backend, models, pre_tokenizers
    >>> b = Backend(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    >>> b.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> tok = Tokenizer(b)
    >>> tok.encode("hello world moon")
    [1, 2, 0]
    >>> tok.encode("hello world", return_offsets=True)
    ([1, 2], [(0, 5), (6, 11)])
    >>> tok.encode_batch(["world", "hello hello"])
    [[2], [1, 1]]
"""
from __future__ import annotations

import os
from typing import NamedTuple

import tokenizers as _tk

__all__ = ["Tokenizer", "Encoding"]


class Encoding(NamedTuple):
    """One encoded text (or pair): parallel lists, one entry per token."""

    ids: list
    tokens: list
    offsets: list
    type_ids: list
    special_tokens_mask: list

    @classmethod
    def of(cls, enc) -> "Encoding":
        """Copy a library ``tokenizers.Encoding`` (or any object with these fields)."""
        return cls(enc.ids, enc.tokens, enc.offsets, enc.type_ids, enc.special_tokens_mask)


def _as_ids(ids):
    """Plain ints from a list, a numpy array or an ember Tensor of ids."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return [int(i) for i in ids]


def _check_text(text, what="text"):
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")


class Tokenizer:
    """The tokenizer protocol over a library ``tokenizers.Tokenizer`` (see the module doc).

    Subclasses only build the backend from published files and, where a format needs it
    (CLIP), prepare the text before it reaches the library.
    """

    #: whether ``encode`` adds the post-processor's special tokens when not told
    add_special_tokens_default = True

    def __init__(self, backend: _tk.Tokenizer):
        if not isinstance(backend, _tk.Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(backend).__name__}")
        self._backend = backend

    # ------------------------------------------------------------------ construction
    @property
    def backend(self) -> _tk.Tokenizer:
        """The Rust ``tokenizers.Tokenizer`` doing the work."""
        return self._backend

    @classmethod
    def from_file(cls, path) -> "Tokenizer":
        """Load a Hugging Face ``tokenizer.json`` (a path, a directory holding one, or a URL
        fetched once through ``ember.hub``)."""
        return cls._from_json_file(path)

    @classmethod
    def _from_json_file(cls, path):
        from .._download import asset_path

        path = asset_path(path)
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no tokenizer file at {path}")
        try:
            backend = _tk.Tokenizer.from_file(path)
        except Exception as e:  # the library raises a bare Exception on a malformed file
            raise ValueError(f"{path}: not a valid tokenizer.json ({e})") from None
        return cls(backend)

    @classmethod
    def from_str(cls, json_str: str) -> "Tokenizer":
        """Build from the JSON text of a ``tokenizer.json``."""
        return cls(_tk.Tokenizer.from_str(json_str))

    def to_str(self, pretty=False) -> str:
        """The ``tokenizer.json`` text of this tokenizer."""
        return self._backend.to_str(pretty)

    def save(self, path) -> list[str]:
        """Write ``tokenizer.json`` (``path`` is a directory, or a file name ending in
        ``.json``) atomically; returns the paths written. ``type(self).load`` reads it back."""
        path = os.fspath(path)
        if not path.endswith(".json"):
            os.makedirs(path, exist_ok=True)
            path = os.path.join(path, "tokenizer.json")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self._backend.to_str(True))
        os.replace(tmp, path)
        return [path]

    @classmethod
    def load(cls, directory) -> "Tokenizer":
        """Load what :meth:`save` wrote into ``directory``."""
        return cls._from_json_file(directory)

    # ------------------------------------------------------------------ encoding
    def _add(self, add_special_tokens):
        return self.add_special_tokens_default if add_special_tokens is None \
            else bool(add_special_tokens)

    def _encode_one(self, text, pair, add):
        """One library ``Encoding`` (subclasses may prepare the text first)."""
        return self._backend.encode(text, pair, add_special_tokens=add)

    def _encode_many(self, texts, pairs, add, offsets):
        """Library encodings of a batch, on the library's threads. Without ``offsets`` the
        library's fast path (which skips offset bookkeeping) is used."""
        inputs = texts if pairs is None else list(zip(texts, pairs))
        if offsets:
            return self._backend.encode_batch(inputs, add_special_tokens=add)
        return self._backend.encode_batch_fast(inputs, add_special_tokens=add)

    @staticmethod
    def _check_batch(texts, pairs):
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of texts; use encode for one text")
        texts = list(texts)
        for t in texts:
            _check_text(t, "every text")
        if pairs is not None:
            pairs = list(pairs)
            if len(pairs) != len(texts):
                raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
            for p in pairs:
                _check_text(p, "every pair")
        return texts, pairs

    def encode(self, text, pair=None, *, add_special_tokens=None, return_offsets=False):
        """Token ids of ``text`` (and of ``pair``, joined as the post-processor says).

        ``add_special_tokens``: add the post-processor's special tokens (``[CLS]``/``[SEP]``
        for BERT; ``<|startoftext|>``/``<|endoftext|>`` for CLIP); default per tokenizer
        (``add_special_tokens_default``). ``return_offsets=True`` returns ``(ids, offsets)``
        where ``offsets[i] = (start, end)`` is the character span of token ``i``.
        """
        _check_text(text)
        if pair is not None:
            _check_text(pair, "pair")
        enc = self._encode_one(text, pair, self._add(add_special_tokens))
        return (enc.ids, enc.offsets) if return_offsets else enc.ids

    def encode_batch(self, texts, pairs=None, *, add_special_tokens=None,
                     return_offsets=False):
        """``[encode(t) for t in texts]``, computed in parallel by the library (with
        ``return_offsets=True``: a list of ``(ids, offsets)``)."""
        texts, pairs = self._check_batch(texts, pairs)
        encs = self._encode_many(texts, pairs, self._add(add_special_tokens), return_offsets)
        if return_offsets:
            return [(e.ids, e.offsets) for e in encs]
        return [e.ids for e in encs]

    def encode_plus(self, text, pair=None, *, add_special_tokens=None) -> Encoding:
        """Everything about one encoded text: an :class:`Encoding`."""
        _check_text(text)
        if pair is not None:
            _check_text(pair, "pair")
        return Encoding.of(self._encode_one(text, pair, self._add(add_special_tokens)))

    def encode_batch_plus(self, texts, pairs=None, *, add_special_tokens=None) -> list:
        """:meth:`encode_plus` of each text, in parallel."""
        texts, pairs = self._check_batch(texts, pairs)
        return [Encoding.of(e) for e in
                self._encode_many(texts, pairs, self._add(add_special_tokens), True)]

    def tokenize_to_strings(self, text) -> list[str]:
        """The token strings of ``text`` (no special tokens added)."""
        _check_text(text)
        return self._encode_one(text, None, False).tokens

    # ------------------------------------------------------------------ decoding, vocab
    def decode(self, ids, *, skip_special_tokens=False) -> str:
        """Text of ``ids`` (a list, array or 1-D Tensor) through the library's decoder."""
        return self._backend.decode(_as_ids(ids), skip_special_tokens=skip_special_tokens)

    def decode_batch(self, batch, *, skip_special_tokens=False) -> list[str]:
        """:meth:`decode` of each row (a list of lists, or a 2-D array/Tensor)."""
        if hasattr(batch, "tolist"):
            batch = batch.tolist()
        return self._backend.decode_batch([_as_ids(r) for r in batch],
                                          skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str):
        """The id of ``token``, or ``None`` if it is not in the vocabulary."""
        return self._backend.token_to_id(token)

    def id_to_token(self, id: int):
        """The token of ``id``, or ``None`` if no token has it."""
        return self._backend.id_to_token(int(id))

    @property
    def vocab_size(self) -> int:
        """Number of tokens, added (special) tokens included."""
        return self._backend.get_vocab_size(with_added_tokens=True)

    def __len__(self):
        return self.vocab_size

    def get_vocab(self, with_added_tokens=True) -> dict[str, int]:
        """``{token: id}`` of the whole vocabulary."""
        return self._backend.get_vocab(with_added_tokens=with_added_tokens)

    @property
    def special_tokens(self) -> dict[str, int]:
        """``{token: id}`` of the special tokens (never split, skippable in decode)."""
        added = self._backend.get_added_tokens_decoder()
        return {t.content: i for i, t in sorted(added.items()) if t.special}

    def __repr__(self):
        return (f"{type(self).__name__}(vocab_size={self.vocab_size}, "
                f"special_tokens={list(self.special_tokens)})")
