"""Combining pipes: ``concat``, ``zip``, ``mux``, ``mux_longest``, ``cycle``.

    >>> from ember.data import IterableWrapper as W
    >>> list(W(range(3)).mux(W(range(10, 15)), W(range(20, 25))))
    [0, 10, 20, 1, 11, 21, 2, 12, 22]
    >>> list(W(range(2)).mux_longest(W(range(10, 13))))
    [0, 10, 1, 11, 12]
    >>> list(W([1, 2]).cycle(2))
    [1, 2, 1, 2]
"""
from __future__ import annotations

from .pipe import IterDataPipe, PipeIter, SourceIter, register


def _check_pipes(name, pipes):
    for p in pipes:
        if not isinstance(p, IterDataPipe):
            raise TypeError(f"{name}: expected IterDataPipes, got {type(p).__name__}")
    return tuple(pipes)


class _Multi(IterDataPipe):
    def __init__(self, *pipes):
        self.sources = _check_pipes(self.functional_name, pipes)

    def parents(self):
        return self.sources

    def describe(self):
        return f"{type(self).__name__}({len(self.sources)} inputs)"


@register("concat")
class Concater(_Multi):
    """All samples of the first pipe, then of the next, and so on."""

    def __iter__(self):
        return _ConcatIter(self)

    def __len__(self):
        return sum(len(p) for p in self.sources)


class _ConcatIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.idx = 0
        self.cur = iter(pipe.sources[0]) if pipe.sources else None

    def __next__(self):
        while self.cur is not None:
            try:
                return next(self.cur)
            except StopIteration:
                self.idx += 1
                srcs = self.pipe.sources
                self.cur = iter(srcs[self.idx]) if self.idx < len(srcs) else None
        raise StopIteration

    def state_dict(self):
        return {"idx": self.idx, "cur": None if self.cur is None else self.cur.state_dict()}

    def load_state_dict(self, state):
        self.idx = state["idx"]
        srcs = self.pipe.sources
        self.cur = iter(srcs[self.idx]) if self.idx < len(srcs) else None
        if self.cur is not None:
            self.cur.load_state_dict(state["cur"])


@register("zip")
class Zipper(_Multi):
    """Tuples of one sample from each pipe; stops with the shortest."""

    def __iter__(self):
        return _ZipIter(self)

    def __len__(self):
        return min(len(p) for p in self.sources)


class _ZipIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.its = [iter(p) for p in pipe.sources]

    def __next__(self):
        return tuple([next(it) for it in self.its])

    def state_dict(self):
        return {"srcs": [it.state_dict() for it in self.its]}

    def load_state_dict(self, state):
        for it, st in zip(self.its, state["srcs"]):
            it.load_state_dict(st)


@register("mux")
class Multiplexer(_Multi):
    """One sample from each pipe in turn; a round that cannot be completed (some pipe is
    exhausted) ends the iteration and is dropped."""

    def __iter__(self):
        return _MuxIter(self)

    def __len__(self):
        return min(len(p) for p in self.sources) * len(self.sources)


class _MuxIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.its = [iter(p) for p in pipe.sources]
        self.round, self.pos, self.done = [], 0, False

    def __next__(self):
        if self.pos >= len(self.round):
            if self.done:
                raise StopIteration
            try:
                self.round = [next(it) for it in self.its]
            except StopIteration:
                self.done, self.round = True, []
                raise StopIteration from None
            self.pos = 0
        x = self.round[self.pos]
        self.pos += 1
        return x

    def state_dict(self):
        return {"srcs": [it.state_dict() for it in self.its],
                "round": self.round[self.pos:], "done": self.done}

    def load_state_dict(self, state):
        for it, st in zip(self.its, state["srcs"]):
            it.load_state_dict(st)
        self.round, self.pos, self.done = list(state["round"]), 0, state["done"]


@register("mux_longest")
class MultiplexerLongest(_Multi):
    """One sample from each pipe in turn, skipping exhausted pipes, until all are done."""

    def __iter__(self):
        return _MuxLongestIter(self)

    def __len__(self):
        return sum(len(p) for p in self.sources)


class _MuxLongestIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.its = [iter(p) for p in pipe.sources]
        self.live = [True] * len(self.its)
        self.k = 0

    def __next__(self):
        n = len(self.its)
        for _ in range(n):
            k = self.k
            self.k = (k + 1) % n
            if not self.live[k]:
                continue
            try:
                return next(self.its[k])
            except StopIteration:
                self.live[k] = False
        raise StopIteration

    def state_dict(self):
        return {"srcs": [it.state_dict() if live else None
                         for it, live in zip(self.its, self.live)],
                "live": list(self.live), "k": self.k}

    def load_state_dict(self, state):
        self.live = list(state["live"])
        self.k = state["k"]
        for it, st, live in zip(self.its, state["srcs"], self.live):
            if live:
                it.load_state_dict(st)


@register("cycle")
class Cycler(IterDataPipe):
    """The samples of the source, repeated ``count`` times (forever when None)."""

    def __init__(self, source, count=None):
        if count is not None and count < 0:
            raise ValueError(f"cycle: count must be >= 0 or None, got {count}")
        self.source, self.count = source, count

    def __iter__(self):
        return _CycleIter(self)

    def __len__(self):
        if self.count is None:
            raise TypeError("cycle() without a count has no length")
        return len(self.source) * self.count

    def describe(self):
        return f"Cycler(count={self.count})"


class _CycleIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.rounds = 0
        self.got = False  # did the current round yield anything (an empty source ends)

    def __next__(self):
        count = self.pipe.count
        while count is None or self.rounds < count:
            try:
                x = next(self.src)
                self.got = True
                return x
            except StopIteration:
                self.rounds += 1
                if not self.got:
                    break
                self.got = False
                self.src = iter(self.pipe.source)
        raise StopIteration

    def state_dict(self):
        return {"src": self.src.state_dict(), "rounds": self.rounds, "got": self.got}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.rounds, self.got = state["rounds"], state["got"]
