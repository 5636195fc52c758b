"""``IterableWrapper``: any Python iterable as the source of a pipe.

A sequence (``list``, ``tuple``, ``range``, an array: anything with ``__len__`` and
``__getitem__``) is read by index, so its state is one position. Any other iterable is
read through its own iterator and restored by re-iterating and skipping the consumed count
(exact for iterables that repeat themselves, such as generators from a function).

    >>> from ember.data import IterableWrapper
    >>> it = iter(IterableWrapper(["a", "b", "c"]))
    >>> next(it), it.state_dict()
    ('a', {'i': 1})

Consumers may call ``it.fast_next()`` when present (a builtin iterator's ``__next__``) and must
re-read it after ``load_state_dict``.
"""
from __future__ import annotations

from .pipe import IterDataPipe, PipeIter


def _is_sequence(obj):
    return hasattr(obj, "__len__") and hasattr(obj, "__getitem__") and \
        not isinstance(obj, (dict, str, bytes))


class IterableWrapper(IterDataPipe):
    """Wrap ``iterable`` (a sequence, or anything ``iter()`` accepts) as an ``IterDataPipe``."""

    def __init__(self, iterable):
        if isinstance(iterable, (str, bytes)):
            raise TypeError("IterableWrapper: wrap a list of strings, not one string")
        self.iterable = iterable

    def __iter__(self):
        if _is_sequence(self.iterable):
            return _SeqIter(self)
        return _GenericIter(self)

    def __len__(self):
        if hasattr(self.iterable, "__len__"):
            return len(self.iterable)
        return super().__len__()

    def describe(self):
        n = len(self.iterable) if hasattr(self.iterable, "__len__") else "?"
        return f"IterableWrapper({type(self.iterable).__name__}, len={n})"


_BUILTIN = (list, tuple, range)


class _SeqIter(PipeIter):
    """Index-based; lists, tuples and ranges go through their builtin iterator, whose position
    ``__reduce__`` reports and ``__setstate__`` restores (``fast_next`` lets a consumer call
    it without a Python-level ``__next__`` in between)."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.seq = pipe.iterable
        self.n = len(self.seq)
        self.i = 0
        self.it = iter(self.seq) if type(self.seq) in _BUILTIN else None
        if self.it is not None:
            self.fast_next = self.it.__next__

    def __next__(self):
        if self.it is not None:
            return next(self.it)
        i = self.i
        if i >= self.n:
            raise StopIteration
        self.i = i + 1
        return self.seq[i]

    def state_dict(self):
        if self.it is None:
            return {"i": self.i}
        r = self.it.__reduce__()
        return {"i": r[2] if len(r) > 2 else self.n}  # an exhausted iterator forgets its seq

    def load_state_dict(self, state):
        if self.it is None:
            self.i = state["i"]
            return
        self.it = iter(self.seq)
        self.it.__setstate__(state["i"])
        self.fast_next = self.it.__next__


class _GenericIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.it = iter(pipe.iterable)
        self.i = 0

    def __next__(self):
        x = next(self.it)
        self.i += 1
        return x

    def state_dict(self):
        return {"i": self.i}

    def load_state_dict(self, state):
        self.it = iter(self.pipe.iterable)
        self.i = 0
        for _ in range(state["i"]):
            next(self.it)
            self.i += 1
