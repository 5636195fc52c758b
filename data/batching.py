"""Batching: ``batch``, ``unbatch``, ``bucketbatch`` (length-homogeneous), ``groupby``.

    >>> from ember.data import IterableWrapper
    >>> list(IterableWrapper(range(5)).batch(2, drop_last=True))
    [[0, 1], [2, 3]]
    >>> list(IterableWrapper([[0, 1], [2]]).unbatch())
    [0, 1, 2]
    >>> words = IterableWrapper(["aaa", "b", "cc", "dddd"])
    >>> list(words.bucketbatch(2, sort_key=len, shuffle=False))
    [['b', 'cc'], ['aaa', 'dddd']]
"""
from __future__ import annotations

import random

from .pipe import IterDataPipe, SourceIter, register
from .seeding import fresh_seed
from .shuffle import _as_rng_state


@register("batch")
class Batcher(IterDataPipe):
    """Lists of ``batch_size`` consecutive samples (the last one shorter unless
    ``drop_last``); ``wrapper`` builds the batch from the list."""

    def __init__(self, source, batch_size, drop_last=False, wrapper=list):
        if int(batch_size) < 1:
            raise ValueError(f"batch: batch_size must be >= 1, got {batch_size}")
        self.source, self.batch_size, self.drop_last = source, int(batch_size), drop_last
        self.wrapper = wrapper

    def __iter__(self):
        return _BatchIter(self)

    def __len__(self):
        n = len(self.source)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def describe(self):
        return f"Batcher(batch_size={self.batch_size}" + \
            (", drop_last" if self.drop_last else "") + ")"


class _BatchIter(SourceIter):
    def __next__(self):
        src, size = self.src, self.pipe.batch_size
        out = []
        for _ in range(size):
            try:
                out.append(next(src))
            except StopIteration:
                break
        if not out or (len(out) < size and self.pipe.drop_last):
            raise StopIteration
        w = self.pipe.wrapper
        return out if w is list else w(out)


@register("unbatch")
class Unbatcher(IterDataPipe):
    """The items of each batch; ``unbatch_level`` levels deep (-1: all the way down)."""

    def __init__(self, source, unbatch_level=1):
        if unbatch_level < -1 or unbatch_level == 0:
            raise ValueError(f"unbatch: unbatch_level must be -1 or >= 1, got {unbatch_level}")
        self.source, self.unbatch_level = source, unbatch_level

    def __iter__(self):
        return _UnbatchIter(self)


def _flatten(x, level, out):
    if level == 0 or not isinstance(x, (list, tuple)):
        if level > 0:
            raise IndexError("unbatch: unbatch_level is deeper than the batches")
        out.append(x)
        return
    for item in x:
        _flatten(item, level - 1, out)


class _UnbatchIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.pending, self.pos = [], 0

    def __next__(self):
        while self.pos >= len(self.pending):
            batch = next(self.src)
            lvl = self.pipe.unbatch_level
            out = []
            if lvl == -1:
                _flatten_all(batch, out)
            else:
                _flatten(batch, lvl, out)
            self.pending, self.pos = out, 0
        x = self.pending[self.pos]
        self.pos += 1
        return x

    def state_dict(self):
        return {"src": self.src.state_dict(), "pending": self.pending[self.pos:]}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.pending, self.pos = list(state["pending"]), 0


def _flatten_all(x, out):
    if isinstance(x, (list, tuple)):
        for item in x:
            _flatten_all(item, out)
    else:
        out.append(x)


@register("bucketbatch")
class BucketBatcher(IterDataPipe):
    """Batches of similar ``sort_key`` (e.g. sequence length): pull a pool of
    ``batch_size * batch_num`` samples, sort it by ``sort_key``, cut it into batches, and
    yield those batches in a seeded random order (``shuffle=True``) or in sorted order."""

    def __init__(self, source, batch_size, drop_last=False, batch_num=100, sort_key=None,
                 shuffle=True, seed=None):
        if batch_size < 1 or batch_num < 1:
            raise ValueError("bucketbatch: batch_size and batch_num must be >= 1")
        self.source, self.batch_size, self.drop_last = source, batch_size, drop_last
        self.batch_num, self.sort_key, self.shuffle, self.seed = batch_num, sort_key, shuffle, seed

    def set_seed(self, seed):
        self.seed = seed
        return self

    def __iter__(self):
        return _BucketIter(self)

    def describe(self):
        pool = self.batch_size * self.batch_num
        return f"BucketBatcher(batch_size={self.batch_size}, pool={pool}" + \
            (", shuffled" if self.shuffle else "") + ")"


class _BucketIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.seed = pipe.seed if pipe.seed is not None else fresh_seed()
        self.rng = random.Random(self.seed)
        self.batches = []

    def _refill(self):
        p = self.pipe
        pool = []
        for _ in range(p.batch_size * p.batch_num):
            try:
                pool.append(next(self.src))
            except StopIteration:
                break
        if not pool:
            raise StopIteration
        if p.sort_key is not None:
            pool.sort(key=p.sort_key)
        bs = p.batch_size
        batches = [pool[i:i + bs] for i in range(0, len(pool), bs)]
        if p.drop_last and len(batches[-1]) < bs:
            batches.pop()
        if p.shuffle:
            self.rng.shuffle(batches)
        batches.reverse()  # pop() from the end yields them in order
        self.batches = batches

    def __next__(self):
        while not self.batches:
            self._refill()
        return self.batches.pop()

    def state_dict(self):
        return {"src": self.src.state_dict(), "rng": self.rng.getstate(),
                "batches": [list(b) for b in self.batches], "seed": self.seed}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.rng.setstate(_as_rng_state(state["rng"]))
        self.batches = [list(b) for b in state["batches"]]
        self.seed = state["seed"]


@register("groupby")
class Grouper(IterDataPipe):
    """Lists of samples with the same ``group_key_fn(sample)``.

    A group is yielded when it reaches ``group_size``; when ``buffer_size`` samples are held,
    the largest group is yielded (or dropped if smaller than ``guaranteed_group_size``); at the
    end the remaining groups come out in first-seen order (dropped with ``drop_remaining``)."""

    def __init__(self, source, group_key_fn, *, buffer_size=10000, group_size=None,
                 guaranteed_group_size=None, drop_remaining=False):
        if buffer_size < 1:
            raise ValueError(f"groupby: buffer_size must be >= 1, got {buffer_size}")
        if group_size is not None and group_size > buffer_size:
            raise ValueError("groupby: group_size must be <= buffer_size")
        if guaranteed_group_size is not None and group_size is not None and \
                not 0 < guaranteed_group_size <= group_size:
            raise ValueError("groupby: guaranteed_group_size must be in (0, group_size]")
        self.source, self.group_key_fn = source, group_key_fn
        self.buffer_size, self.group_size = buffer_size, group_size
        self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining

    def __iter__(self):
        return _GroupIter(self)


class _GroupIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.groups = {}  # key -> list, insertion ordered
        self.held = 0
        self.done = False
        self.tail = []  # groups ready at the end

    def _release_largest(self):
        p = self.pipe
        key = max(self.groups, key=lambda k: len(self.groups[k]))
        g = self.groups.pop(key)
        self.held -= len(g)
        if p.guaranteed_group_size is not None and len(g) < p.guaranteed_group_size:
            return None
        return g

    def __next__(self):
        p = self.pipe
        while not self.done:
            if self.held >= p.buffer_size:
                g = self._release_largest()
                if g is not None:
                    return g
                continue
            try:
                x = next(self.src)
            except StopIteration:
                self.done = True
                if not p.drop_remaining:
                    self.tail = [g for g in self.groups.values()
                                 if p.guaranteed_group_size is None
                                 or len(g) >= p.guaranteed_group_size]
                self.tail.reverse()
                self.groups, self.held = {}, 0
                break
            key = p.group_key_fn(x)
            g = self.groups.setdefault(key, [])
            g.append(x)
            self.held += 1
            if p.group_size is not None and len(g) == p.group_size:
                del self.groups[key]
                self.held -= len(g)
                return g
        if not self.tail:
            raise StopIteration
        return self.tail.pop()

    def state_dict(self):
        return {"src": self.src.state_dict(),
                "groups": [(k, list(g)) for k, g in self.groups.items()],
                "done": self.done, "tail": [list(g) for g in self.tail]}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.groups = {k: list(g) for k, g in state["groups"]}
        self.held = sum(len(g) for g in self.groups.values())
        self.done = state["done"]
        self.tail = [list(g) for g in state["tail"]]
