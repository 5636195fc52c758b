"""``ember.text.transforms``: torchtext-style text transforms, each an ``ember.nn.Module``.

Every transform takes one sample or a batch (a list of samples) and answers in kind; the
tokenizer transforms encode a batch in parallel on the Rust library's threads.

    >>> from ember.text.vocab import vocab
    >>> v = vocab({"hello": 3, "world": 2}, specials=["<pad>", "<unk>"])
    >>> v.set_default_index(v["<unk>"])
    >>> pipe = Sequential(VocabTransform(v), Truncate(3), AddToken(0, begin=True),
    ...                   ToTensor(padding_value=0))
    >>> pipe([["hello", "world", "world", "hello"], ["moon"]])
    tensor([[0, 2, 3, 3],
            [0, 1, 0, 0]])

As in torchtext, the three tokenizer transforms return token ids as strings (ready for a
``VocabTransform`` over id strings, as RoBERTa's pipeline uses) unless ``return_tokens=True``
(token strings) or ``as_ints=True`` (ints); :class:`StrToIntTransform` converts.
"""
from __future__ import annotations

import os

import numpy as np

import ember
from ember import nn

from .tokenizers import BERTTokenizer as _BERT
from .tokenizers import CLIPTokenizer as _CLIP
from .tokenizers import GPT2BPETokenizer as _GPT2
from .vocab import Vocab

__all__ = ["GPT2BPETokenizer", "CLIPTokenizer", "BERTTokenizer", "VocabTransform",
           "Truncate", "AddToken", "PadTransform", "ToTensor", "LabelToIndex",
           "StrToIntTransform", "Sequential"]


def _is_batch(x):
    """A batch is a non-empty list whose items are lists (an empty list is one sequence)."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and isinstance(x[0], (list, tuple))


# ------------------------------------------------------------------ tokenizers
class _TokenizerTransform(nn.Module):
    """str -> list, list[str] -> list[list]; ids as strings (torchtext), tokens or ints."""

    add_special_tokens = False

    def __init__(self, tokenizer, return_tokens=False, as_ints=False):
        super().__init__()
        if return_tokens and as_ints:
            raise ValueError("return_tokens and as_ints cannot both be set")
        self.tokenizer = tokenizer
        self.return_tokens = bool(return_tokens)
        self.as_ints = bool(as_ints)

    def _finish(self, ids):
        return ids if self.as_ints else [str(i) for i in ids]

    def forward(self, input):
        tok, add = self.tokenizer, self.add_special_tokens
        if isinstance(input, str):
            if self.return_tokens:
                return tok.encode_plus(input, add_special_tokens=add).tokens
            return self._finish(tok.encode(input, add_special_tokens=add))
        if not isinstance(input, (list, tuple)):
            raise TypeError(f"expected a str or a list of str, got {type(input).__name__}")
        if self.return_tokens:
            return [e.tokens for e in tok.encode_batch_plus(input, add_special_tokens=add)]
        return [self._finish(ids) for ids in tok.encode_batch(input, add_special_tokens=add)]

    def extra_repr(self):
        return f"vocab_size={self.tokenizer.vocab_size}, return_tokens={self.return_tokens}"


class GPT2BPETokenizer(_TokenizerTransform):
    """GPT-2 byte-level BPE from OpenAI's ``encoder.json`` + ``vocab.bpe`` (paths or URLs,
    URLs fetched once through ``ember.hub``)."""

    def __init__(self, encoder_json_path, vocab_bpe_path, return_tokens: bool = False, *,
                 as_ints: bool = False):
        super().__init__(_GPT2.from_files(encoder_json_path, vocab_bpe_path), return_tokens,
                         as_ints)


class CLIPTokenizer(_TokenizerTransform):
    """CLIP's BPE from OpenAI's merges file (``bpe_simple_vocab_16e6.txt[.gz]``), with an
    optional ``encoder_json_path`` and ``num_merges`` (see ``ember.text.tokenizers.CLIPTokenizer``).
    No start/end tokens are added; ``tokenizer.tokenize(texts)`` gives CLIP's padded batch."""

    def __init__(self, merges_path, encoder_json_path=None, num_merges=None,
                 return_tokens: bool = False, *, as_ints: bool = False):
        super().__init__(_CLIP.from_file(merges_path, num_merges=num_merges,
                                         encoder_json=encoder_json_path), return_tokens,
                         as_ints)


class BERTTokenizer(_TokenizerTransform):
    """BERT WordPiece from a ``vocab.txt``; ``[CLS]``/``[SEP]`` are not added (add them with
    :class:`AddToken`, as torchtext's pipelines do)."""

    def __init__(self, vocab_path, do_lower_case: bool = True, strip_accents=None,
                 return_tokens: bool = False, *, as_ints: bool = False):
        super().__init__(_BERT.from_vocab(vocab_path, lower_case=do_lower_case,
                                          strip_accents=strip_accents), return_tokens, as_ints)


# ------------------------------------------------------------------ token lists
class VocabTransform(nn.Module):
    """Tokens -> indices through a :class:`~ember.text.vocab.Vocab` (a list of tokens, or a
    batch of them)."""

    def __init__(self, vocab: Vocab):
        super().__init__()
        if not hasattr(vocab, "lookup_indices"):
            raise TypeError(f"expected a Vocab, got {type(vocab).__name__}")
        self.vocab = vocab

    def forward(self, input):
        if _is_batch(input):
            return [self.vocab.lookup_indices(x) for x in input]
        return self.vocab.lookup_indices(input)


class StrToIntTransform(nn.Module):
    """``["12", "7"] -> [12, 7]`` (or a batch of such lists)."""

    def forward(self, input):
        if _is_batch(input):
            return [[int(t) for t in x] for x in input]
        return [int(t) for t in input]


class Truncate(nn.Module):
    """Keep the first ``max_seq_len`` items of a sequence (or of each in a batch)."""

    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = int(max_seq_len)

    def forward(self, input):
        if _is_batch(input):
            return [x[:self.max_seq_len] for x in input]
        return input[:self.max_seq_len]

    def extra_repr(self):
        return f"max_seq_len={self.max_seq_len}"


class AddToken(nn.Module):
    """Add ``token`` (an id or a string) at the start (``begin=True``) or the end of a sequence
    (or of each in a batch)."""

    def __init__(self, token, begin: bool = True):
        super().__init__()
        self.token, self.begin = token, bool(begin)

    def _add(self, x):
        return [self.token, *x] if self.begin else [*x, self.token]

    def forward(self, input):
        if _is_batch(input):
            return [self._add(x) for x in input]
        return self._add(input)

    def extra_repr(self):
        return f"token={self.token!r}, begin={self.begin}"


class PadTransform(nn.Module):
    """Pad the last dimension up to ``max_length`` with ``pad_value`` (a Tensor, a list, or a
    batch of lists); longer input is left as it is."""

    def __init__(self, max_length: int, pad_value: int):
        super().__init__()
        self.max_length, self.pad_value = int(max_length), pad_value

    def _pad_list(self, x):
        return list(x) + [self.pad_value] * (self.max_length - len(x))

    def forward(self, x):
        if isinstance(x, ember.Tensor):
            short = self.max_length - x.shape[-1]
            if short <= 0:
                return x
            return nn.functional.pad(x, (0, short), value=self.pad_value)
        if _is_batch(x):
            return [self._pad_list(r) for r in x]
        return self._pad_list(x)

    def extra_repr(self):
        return f"max_length={self.max_length}, pad_value={self.pad_value}"


class ToTensor(nn.Module):
    """A list of ids -> a 1-D Tensor; a batch -> a 2-D Tensor, rows padded at the end with
    ``padding_value`` (``None``: rows must have equal lengths)."""

    def __init__(self, padding_value=None, dtype=ember.int64):
        super().__init__()
        self.padding_value, self.dtype = padding_value, dtype

    def forward(self, input):
        if not _is_batch(input):
            return ember.from_numpy(np.asarray(list(input), dtype=self.dtype).reshape(-1))
        rows = [list(r) for r in input]
        width = max((len(r) for r in rows), default=0)
        if self.padding_value is None:
            lengths = {len(r) for r in rows}
            if len(lengths) > 1:
                raise ValueError(f"rows have different lengths {sorted(lengths)}; give "
                                 "padding_value to pad them")
            fill = 0
        else:
            fill = self.padding_value
        out = np.full((len(rows), width), fill, dtype=self.dtype)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return ember.from_numpy(out)

    def extra_repr(self):
        return f"padding_value={self.padding_value}, dtype={self.dtype}"


class LabelToIndex(nn.Module):
    """Label names -> indices, from ``label_names`` or a file with one label per line
    (``label_path``); ``sort_names`` sorts them first. An unknown label raises naming it."""

    def __init__(self, label_names=None, label_path=None, sort_names: bool = False):
        super().__init__()
        if (label_names is None) == (label_path is None):
            raise ValueError("give exactly one of label_names and label_path")
        if label_path is not None:
            with open(os.fspath(label_path), encoding="utf-8") as f:
                label_names = [line.strip() for line in f if line.strip()]
        names = sorted(label_names) if sort_names else list(label_names)
        self._label_vocab = Vocab(names)
        self._label_names = names

    @property
    def label_names(self) -> list[str]:
        return list(self._label_names)

    def forward(self, input):
        if isinstance(input, str):
            return self._label_vocab[input]
        return self._label_vocab.lookup_indices(input)

    def extra_repr(self):
        return f"num_labels={len(self._label_names)}"


class Sequential(nn.Sequential):
    """Apply transforms in order (an ``ember.nn.Sequential``)."""
