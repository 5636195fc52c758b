"""``ember.text.tokenizers``: GPT-2 byte-level BPE, CLIP BPE, BERT WordPiece and any Hugging
Face ``tokenizer.json``, all running in the Rust ``tokenizers`` library behind one protocol
(:class:`Tokenizer`): ``encode``, ``encode_batch`` (parallel), ``decode``, ``token_to_id``,
``id_to_token``, ``vocab_size``, ``special_tokens``, offsets on request.

    >>> from ember.text.tokenizers import train_bpe
    >>> tok = train_bpe(["the cat sat on the mat"] * 20, vocab_size=280)
    >>> ids = tok.encode("the cat")
    >>> tok.decode(ids)
    'the cat'
    >>> tok.encode_batch(["the cat", "the mat"])[0] == ids
    True
"""
from ._base import Encoding, Tokenizer
from ._files import byte_to_unicode
from .bert import BERTTokenizer
from .clip import CLIPTokenizer, clip_clean
from .gpt2 import GPT2BPETokenizer, train_bpe

__all__ = ["Tokenizer", "Encoding", "GPT2BPETokenizer", "CLIPTokenizer", "BERTTokenizer",
           "train_bpe", "byte_to_unicode", "clip_clean"]
