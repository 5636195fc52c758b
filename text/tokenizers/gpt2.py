"""GPT-2 byte-level BPE (also RoBERTa's, and what :func:`train_bpe` produces).

Every byte of the UTF-8 text is one of 256 printable characters (``byte_to_unicode``), so
any text encodes and decodes back exactly. The text is first cut by GPT-2's pattern (runs of
letters, digits or other symbols, each with the space before it; contractions; whitespace),
then each piece is merged by the ranked merges, all in the Rust library.

    >>> import tempfile
    >>> tok = train_bpe(["low lower lowest"] * 50, vocab_size=300, special_tokens=["<|endoftext|>"])
    >>> ids = tok.encode("lowest of the low 🙂")
    >>> tok.decode(ids)
    'lowest of the low 🙂'
    >>> d = tempfile.mkdtemp()
    >>> _ = tok.save(d)
    >>> GPT2BPETokenizer.load(d).encode("lowest of the low 🙂") == ids
    True
"""
from __future__ import annotations

import json
import os

import tokenizers as _tk
from tokenizers import decoders, models, pre_tokenizers, trainers

from ._base import Tokenizer
from ._files import read_merges, read_vocab_json, write_merges, write_vocab_json

__all__ = ["GPT2BPETokenizer", "train_bpe"]

ENDOFTEXT = "<|endoftext|>"


def _resolve(path):
    from .._download import asset_path

    return asset_path(path)


class GPT2BPETokenizer(Tokenizer):
    """Byte-level BPE as GPT-2 (and RoBERTa) defines it; see the module doc.

    Build it from OpenAI's files (:meth:`from_files`), from a Hugging Face ``vocab.json`` +
    ``merges.txt`` (:meth:`from_vocab_merges`, the same formats), from a saved directory
    (:meth:`load`) or by training (:func:`train_bpe`). Special tokens (``<|endoftext|>`` when
    the vocabulary has it) are matched in the text before any splitting, as Hugging Face's
    GPT-2 tokenizer does; ``decode`` keeps them unless told to skip them.
    """

    @classmethod
    def from_files(cls, encoder_json, vocab_bpe, *, special_tokens=None,
                   add_prefix_space=False) -> "GPT2BPETokenizer":
        """From OpenAI's published pair ``encoder.json`` + ``vocab.bpe`` (paths or URLs)."""
        return cls.from_vocab_merges(encoder_json, vocab_bpe, special_tokens=special_tokens,
                                     add_prefix_space=add_prefix_space)

    @classmethod
    def from_vocab_merges(cls, vocab, merges, *, special_tokens=None,
                          add_prefix_space=False) -> "GPT2BPETokenizer":
        """From a ``vocab.json`` + ``merges.txt`` pair (paths or URLs), or from a ``{token:
        id}`` dict and a list of ``(left, right)`` merges.

        ``special_tokens``: tokens never split (default: ``<|endoftext|>`` if the vocabulary
        holds it); one missing from the vocabulary gets the next free id.
        ``add_prefix_space``: encode a text as if it began with a space (RoBERTa-style
        word-initial tokens for the first word).
        """
        where = "the given vocabulary"
        if not isinstance(vocab, dict):
            where = os.fspath(vocab)
            vocab = read_vocab_json(_resolve(vocab))
        if not isinstance(merges, (list, tuple)):
            where = f"{where} and {os.fspath(merges)}"
            merges = read_merges(_resolve(merges))
        try:
            model = models.BPE(vocab=dict(vocab), merges=[tuple(m) for m in merges])
        except Exception as e:  # the library raises a bare Exception naming the bad token
            raise ValueError(f"cannot build a BPE from {where}: {e}") from None
        backend = _tk.Tokenizer(model)
        _byte_level(backend, add_prefix_space)
        if special_tokens is None:
            special_tokens = [ENDOFTEXT] if ENDOFTEXT in vocab else []
        backend.add_special_tokens(list(special_tokens))
        return cls(backend)

    def _bpe_parts(self):
        """``(vocab, merges)`` of the model, as the files hold them."""
        model = json.loads(self._backend.to_str())["model"]
        if model.get("type") != "BPE":
            raise TypeError(f"this tokenizer's model is {model.get('type')}, not BPE")
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                  for m in model["merges"]]
        return model["vocab"], merges

    def save(self, directory) -> list[str]:
        """Write ``vocab.json`` + ``merges.txt`` (the published formats) and
        ``tokenizer.json`` (which also keeps the special tokens) into ``directory``."""
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        vocab, merges = self._bpe_parts()
        paths = [os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt")]
        write_vocab_json(paths[0], vocab)
        write_merges(paths[1], merges)
        return paths + super().save(directory)

    @classmethod
    def load(cls, directory) -> "GPT2BPETokenizer":
        """Load a directory written by :meth:`save`: its ``tokenizer.json``, else its
        ``vocab.json`` + ``merges.txt``."""
        directory = os.fspath(directory)
        if os.path.isfile(os.path.join(directory, "tokenizer.json")):
            return cls._from_json_file(directory)
        return cls.from_vocab_merges(os.path.join(directory, "vocab.json"),
                                     os.path.join(directory, "merges.txt"))


def _byte_level(backend, add_prefix_space=False):
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space,
                                                     use_regex=True)
    backend.decoder = decoders.ByteLevel()


def _is_file_list(x):
    if isinstance(x, (str, os.PathLike)):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(
        isinstance(p, os.PathLike) or (isinstance(p, str) and os.path.isfile(p)) for p in x)


def train_bpe(files_or_iterator, vocab_size, special_tokens=(ENDOFTEXT,), *,
              min_frequency=2, add_prefix_space=False, show_progress=False,
              limit_alphabet=None) -> GPT2BPETokenizer:
    """Train a GPT-2-style byte-level BPE with the library's trainer.

    ``files_or_iterator``: a text file path, a list of paths (each an existing file), or any
    iterable of texts (or of lists of texts). ``vocab_size`` counts the 256 byte tokens, the
    merges and ``special_tokens`` (which get the first ids). Pairs seen fewer than
    ``min_frequency`` times are not merged. Returns a :class:`GPT2BPETokenizer`;
    ``save(dir)`` + ``GPT2BPETokenizer.load(dir)`` give the same ids.
    """
    backend = _tk.Tokenizer(models.BPE())
    _byte_level(backend, add_prefix_space)
    kw = {} if limit_alphabet is None else {"limit_alphabet": limit_alphabet}
    trainer = trainers.BpeTrainer(vocab_size=int(vocab_size), min_frequency=int(min_frequency),
                                  special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=show_progress, **kw)
    if _is_file_list(files_or_iterator):
        files = files_or_iterator
        files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        files = [os.fspath(f) for f in files]
        for f in files:
            if not os.path.isfile(f):
                raise FileNotFoundError(f"training file not found: {f}")
        backend.train(files, trainer)
    else:
        backend.train_from_iterator(files_or_iterator, trainer)
    return GPT2BPETokenizer(backend)
