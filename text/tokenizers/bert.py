"""BERT's WordPiece tokenizer from a published ``vocab.txt``.

BERT's basic tokenizer, as the library's ``BertNormalizer`` + ``BertPreTokenizer`` implement
it: control characters dropped and whitespace unified, every CJK ideograph made a word of its
own, optional lower-casing (which also strips accents unless ``strip_accents`` says
otherwise), then words split at whitespace and at every punctuation character. Each word is
cut greedily into the longest vocabulary pieces, ``##`` marking pieces inside a word; a word
with no such cut (or longer than ``max_input_chars_per_word``) becomes ``[UNK]``. ``encode``
adds ``[CLS] A [SEP]`` (``[CLS] A [SEP] B [SEP]`` for a pair, type ids 0 then 1).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(p, "w").write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                                    "un", "##aff", "##able", "cafe", "!"]))
    >>> tok = BERTTokenizer.from_vocab(p)
    >>> tok.encode("Unaffable CAFÉ!")
    [2, 5, 6, 7, 8, 9, 3]
    >>> tok.decode(tok.encode("unaffable cafe", add_special_tokens=False))
    'unaffable cafe'
"""
from __future__ import annotations

import os

import tokenizers as _tk
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

from ._base import Tokenizer
from ._files import read_wordpiece_vocab

__all__ = ["BERTTokenizer"]


class BERTTokenizer(Tokenizer):
    """WordPiece with BERT's basic tokenizer; see the module doc."""

    @classmethod
    def from_vocab(cls, vocab, lower_case=True, *, strip_accents=None,
                   tokenize_chinese_chars=True, clean_text=True, unk_token="[UNK]",
                   sep_token="[SEP]", cls_token="[CLS]", pad_token="[PAD]",
                   mask_token="[MASK]", max_input_chars_per_word=100,
                   wordpieces_prefix="##") -> "BERTTokenizer":
        """From a ``vocab.txt`` (path or URL) or a ``{token: id}`` dict.

        ``lower_case``: lower-case the text (uncased checkpoints); ``strip_accents``:
        ``None`` follows ``lower_case``, as BERT does. The special tokens present in the
        vocabulary are never split; ``unk_token``, ``cls_token`` and ``sep_token`` must be
        present.
        """
        where = "the given vocabulary"
        if not isinstance(vocab, dict):
            from .._download import asset_path

            where = os.fspath(vocab)
            vocab = read_wordpiece_vocab(asset_path(vocab))
        for role, t in (("unk_token", unk_token), ("cls_token", cls_token),
                        ("sep_token", sep_token)):
            if t not in vocab:
                raise ValueError(f"{role} {t!r} is not in {where}")
        backend = _tk.Tokenizer(models.WordPiece(
            dict(vocab), unk_token=unk_token, continuing_subword_prefix=wordpieces_prefix,
            max_input_chars_per_word=int(max_input_chars_per_word)))
        backend.normalizer = normalizers.BertNormalizer(
            clean_text=clean_text, handle_chinese_chars=tokenize_chinese_chars,
            strip_accents=strip_accents, lowercase=bool(lower_case))
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        cls_id, sep_id = vocab[cls_token], vocab[sep_token]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{cls_token}:0 $A:0 {sep_token}:0",
            pair=f"{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
            special_tokens=[(cls_token, cls_id), (sep_token, sep_id)])
        backend.decoder = decoders.WordPiece(prefix=wordpieces_prefix)
        specials = [t for t in (pad_token, unk_token, cls_token, sep_token, mask_token)
                    if t is not None and t in vocab]
        backend.add_special_tokens(specials)
        return cls(backend)
