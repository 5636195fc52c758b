"""``ember.text.vocab``: token <-> index tables with torchtext's surface.

    >>> from collections import Counter, OrderedDict
    >>> v = build_vocab_from_iterator([["a", "b", "b"], ["c", "b", "a"]], specials=["<unk>"])
    >>> v.get_itos()
    ['<unk>', 'b', 'a', 'c']
    >>> v["b"], "z" in v, len(v)
    (1, False, 4)
    >>> v.set_default_index(v["<unk>"])
    >>> v(["a", "z"])
    [2, 0]
    >>> vocab(OrderedDict([("x", 3), ("y", 1)]), min_freq=2).get_itos()
    ['x']
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Iterable

from ember.nn import Module

__all__ = ["Vocab", "vocab", "build_vocab_from_iterator", "VocabError", "VocabLookupError",
           "VocabIndexError", "DuplicateTokenError"]


class VocabError(RuntimeError):
    """Base of the vocabulary errors: a ``RuntimeError``, as torchtext raises, and each also
    the Python error its case calls for (``KeyError``, ``IndexError``, ``ValueError``)."""

    def __str__(self):  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class VocabLookupError(VocabError, KeyError):
    """A token is not in the vocabulary and no default index is set."""


class VocabIndexError(VocabError, IndexError):
    """An index outside the vocabulary."""


class DuplicateTokenError(VocabError, ValueError):
    """A token given twice, or inserted when already present."""


class Vocab(Module):
    """An ordered list of unique tokens; a token's index is its position.

    ``vocab[token]`` and ``vocab(tokens)`` (``forward``/``lookup_indices``) give indices; an
    unknown token gives the default index (:meth:`set_default_index`), or raises
    :class:`VocabLookupError` naming the token when none is set. ``lookup_token(s)`` go back.
    ``insert_token`` shifts the indices at and after the insertion point; ``append_token``
    adds at the end. Picklable.
    """

    def __init__(self, tokens: Iterable[str] = (), default_index: int | None = None):
        super().__init__()
        itos = list(tokens)
        stoi = {}
        for i, t in enumerate(itos):
            if not isinstance(t, str):
                raise TypeError(f"tokens must be str, got {type(t).__name__} at index {i}")
            if t in stoi:
                raise DuplicateTokenError(f"Duplicate token found in tokens list: {t!r}")
            stoi[t] = i
        self._itos, self._stoi = itos, stoi
        self._default_index = None
        if default_index is not None:
            self.set_default_index(default_index)

    # ---------------------------------------------------------------- lookups
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token) -> bool:
        return token in self._stoi

    def __getitem__(self, token: str) -> int:
        i = self._stoi.get(token)
        if i is not None:
            return i
        if self._default_index is None:
            raise VocabLookupError(f"Token {token!r} not found and default index is not set")
        return self._default_index

    def forward(self, tokens: list[str]) -> list[int]:
        """Indices of ``tokens`` (same as :meth:`lookup_indices`)."""
        return self.lookup_indices(tokens)

    def lookup_indices(self, tokens: list[str]) -> list[int]:
        """``[self[t] for t in tokens]``."""
        stoi, d = self._stoi, self._default_index
        if d is not None:
            return [stoi.get(t, d) for t in tokens]
        try:
            return [stoi[t] for t in tokens]
        except KeyError as e:
            raise VocabLookupError(f"Token {e.args[0]!r} not found and default index is "
                                   "not set") from None

    def lookup_token(self, index: int) -> str:
        """The token at ``index`` (:class:`VocabIndexError` naming it when out of range)."""
        index = int(index)
        if not 0 <= index < len(self._itos):
            raise VocabIndexError(f"Specified index {index} is out of bounds for vocab of size "
                             f"{len(self._itos)}")
        return self._itos[index]

    def lookup_tokens(self, indices: list[int]) -> list[str]:
        """``[self.lookup_token(i) for i in indices]``."""
        return [self.lookup_token(i) for i in indices]

    def get_stoi(self) -> dict[str, int]:
        """A copy of the ``token -> index`` dict."""
        return dict(self._stoi)

    def get_itos(self) -> list[str]:
        """A copy of the ``index -> token`` list."""
        return list(self._itos)

    # ---------------------------------------------------------------- default index
    def set_default_index(self, index: int | None) -> None:
        """Index returned for unknown tokens (``None``: raise instead)."""
        self._default_index = None if index is None else int(index)

    def get_default_index(self) -> int | None:
        """The default index, or ``None`` when unknown tokens raise."""
        return self._default_index

    # ---------------------------------------------------------------- edits
    def insert_token(self, token: str, index: int) -> None:
        """Put ``token`` at ``index`` (0 to ``len(self)``); tokens from there on move up one.
        :class:`DuplicateTokenError` if the token is already present, :class:`VocabIndexError`
        for a bad index."""
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, got {type(token).__name__}")
        index = int(index)
        if not 0 <= index <= len(self._itos):
            raise VocabIndexError(f"Specified index {index} is out of bounds for vocab of size "
                             f"{len(self._itos)}")
        if token in self._stoi:
            raise DuplicateTokenError(f"Token {token!r} already exists in the Vocab with index: "
                             f"{self._stoi[token]}")
        self._itos.insert(index, token)
        for i in range(index, len(self._itos)):
            self._stoi[self._itos[i]] = i

    def append_token(self, token: str) -> None:
        """Add ``token`` at the end (:class:`DuplicateTokenError` if already present)."""
        self.insert_token(token, len(self._itos))

    def extra_repr(self):
        return f"size={len(self._itos)}, default_index={self._default_index}"


def vocab(ordered_dict, min_freq: int = 1, specials=None, special_first: bool = True) -> Vocab:
    """A :class:`Vocab` of the keys of ``ordered_dict`` (token -> frequency) seen at least
    ``min_freq`` times, in the dict's order, with ``specials`` placed first (or last, with
    ``special_first=False``) whatever their frequency. The dict is not modified.

        >>> vocab({"b": 1, "a": 5, "<pad>": 9}, specials=["<pad>", "<unk>"]).get_itos()
        ['<pad>', '<unk>', 'b', 'a']
    """
    specials = list(specials or [])
    skip = set(specials)
    tokens = [t for t, f in ordered_dict.items() if t not in skip and f >= min_freq]
    tokens = specials + tokens if special_first else tokens + specials
    return Vocab(tokens)


def build_vocab_from_iterator(iterator: Iterable, min_freq: int = 1, specials=None,
                              special_first: bool = True, max_tokens: int | None = None) -> Vocab:
    """Count the tokens of every list that ``iterator`` yields and build a :class:`Vocab`:
    most frequent first, ties in lexicographic order, tokens seen fewer than ``min_freq``
    times dropped. ``max_tokens`` caps the size, specials included (the most frequent
    ``max_tokens - len(specials)`` tokens are kept before specials are removed from them, as
    torchtext does). ``specials`` as in :func:`vocab`.
    """
    counter = Counter()
    for tokens in iterator:
        counter.update(tokens)
    specials = list(specials or [])
    by_freq = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    if max_tokens is not None:
        if len(specials) >= max_tokens:
            raise ValueError(f"max_tokens={max_tokens} leaves no room beside the "
                             f"{len(specials)} special tokens")
        by_freq = by_freq[:max_tokens - len(specials)]
    return vocab(OrderedDict(by_freq), min_freq=min_freq, specials=specials,
                 special_first=special_first)
