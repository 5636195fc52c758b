"""``in_memory_cache`` (replay the first pass from memory) and ``prefetch`` (a background
thread producing samples ahead).

    >>> from ember.data import IterableWrapper
    >>> calls = []
    >>> dp = IterableWrapper(range(3)).map(lambda x: calls.append(x) or x).in_memory_cache()
    >>> list(dp), list(dp), len(calls)
    ([0, 1, 2], [0, 1, 2], 3)
    >>> list(IterableWrapper(range(5)).prefetch(2))
    [0, 1, 2, 3, 4]
"""
from __future__ import annotations

import threading
from collections import deque

from .pipe import IterDataPipe, PipeIter, SourceIter, register


@register("in_memory_cache")
class InMemoryCacheHolder(IterDataPipe):
    """The first complete pass is kept in memory (if it fits in ``size`` samples) and
    later passes replay it without touching the source.

    State: during the first pass, the upstream state and the samples cached so far; during a
    replay, the position (a new process refills the cache from the source first)."""

    def __init__(self, source, size=None):
        if size is not None and size < 1:
            raise ValueError(f"in_memory_cache: size must be >= 1 or None, got {size}")
        self.source, self.size = source, size
        self.cache = None  # the complete first pass, once there is one

    def __iter__(self):
        return _CacheIter(self)

    def __len__(self):
        return len(self.cache) if self.cache is not None else len(self.source)

    def __getstate__(self):
        d = dict(self.__dict__)
        d["cache"] = None
        return d

    def describe(self):
        return "InMemoryCacheHolder(" + ("filled" if self.cache is not None else "empty") + ")"


class _CacheIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.pos = 0
        if pipe.cache is not None:
            self.src, self.items = None, None
        else:
            self.src, self.items = iter(pipe.source), []

    def __next__(self):
        if self.src is None:
            cache = self.pipe.cache
            if self.pos >= len(cache):
                raise StopIteration
            x = cache[self.pos]
            self.pos += 1
            return x
        try:
            x = next(self.src)
        except StopIteration:
            if self.items is not None:
                self.pipe.cache = self.items
            raise
        if self.items is not None:
            if self.pipe.size is not None and len(self.items) >= self.pipe.size:
                self.items = None  # does not fit: stream through, cache nothing
            else:
                self.items.append(x)
        self.pos += 1
        return x

    def state_dict(self):
        if self.src is None:
            return {"replay": True, "pos": self.pos}
        return {"replay": False, "pos": self.pos, "src": self.src.state_dict(),
                "items": None if self.items is None else list(self.items)}

    def load_state_dict(self, state):
        self.pos = state["pos"]
        if state["replay"]:
            if self.pipe.cache is None:  # a new process: fill the cache from the source
                self.pipe.cache = list(iter(self.pipe.source))
            self.src, self.items = None, None
            return
        self.src = iter(self.pipe.source)
        self.src.load_state_dict(state["src"])
        self.items = None if state["items"] is None else list(state["items"])


@register("prefetch")
class Prefetcher(IterDataPipe):
    """Run the upstream pipe in a background thread, up to ``buffer_size`` samples ahead
    (overlaps I/O with compute; Python code upstream still shares the GIL).

    State: the upstream state at the moment of saving plus the samples already prefetched
    but not yet consumed, so nothing is lost or repeated on restore."""

    def __init__(self, source, buffer_size=10):
        if buffer_size < 1:
            raise ValueError(f"prefetch: buffer_size must be >= 1, got {buffer_size}")
        self.source, self.buffer_size = source, buffer_size

    def __iter__(self):
        return _PrefetchIter(self)

    def __len__(self):
        return len(self.source)

    def describe(self):
        return f"Prefetcher(buffer_size={self.buffer_size})"


class _Shared:
    """What the prefetch thread and the consumer share (the thread holds no reference to
    the iterator itself, so an abandoned iterator is collected and its thread exits)."""

    def __init__(self):
        self.buf = deque()
        self.cond = threading.Condition()
        self.src_lock = threading.Lock()  # held while the thread advances the source
        self.done = False
        self.exc = None
        self.stop = False


def _produce(sh, src, size):
    while True:
        with sh.cond:
            while len(sh.buf) >= size and not sh.stop:
                sh.cond.wait()
            if sh.stop:
                return
        with sh.src_lock:
            if sh.stop:
                return
            try:
                x = next(src)
            except StopIteration:
                with sh.cond:
                    sh.done = True
                    sh.cond.notify_all()
                return
            except BaseException as e:  # re-raised in the consumer
                with sh.cond:
                    sh.exc, sh.done = e, True
                    sh.cond.notify_all()
                return
            with sh.cond:
                sh.buf.append(x)
                sh.cond.notify_all()


class _PrefetchIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.sh = _Shared()
        self.thread = None

    def __next__(self):
        sh = self.sh
        if self.thread is None and not sh.done:
            self.thread = threading.Thread(target=_produce,
                                           args=(sh, self.src, self.pipe.buffer_size),
                                           name="ember-prefetch", daemon=True)
            self.thread.start()
        with sh.cond:
            while not sh.buf and not sh.done:
                sh.cond.wait()
            if sh.buf:
                x = sh.buf.popleft()
                sh.cond.notify_all()
                return x
            if sh.exc is not None:
                e, sh.exc = sh.exc, None
                raise e
            raise StopIteration

    def close(self):
        """Stop the background thread (it finishes the sample in progress)."""
        sh = self.sh
        with sh.cond:
            sh.stop = True
            sh.cond.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=10)
            self.thread = None

    def reset(self):
        self.close()
        self.__init__(self.pipe)

    def __del__(self):
        sh = getattr(self, "sh", None)
        if sh is not None:
            sh.stop = True
            with sh.cond:
                sh.cond.notify_all()

    def state_dict(self):
        sh = self.sh
        with sh.src_lock, sh.cond:
            return {"src": self.src.state_dict(), "buf": list(sh.buf),
                    "done": sh.done and sh.exc is None}

    def load_state_dict(self, state):
        self.close()
        self.src.load_state_dict(state["src"])
        self.sh = _Shared()
        self.sh.buf = deque(state["buf"])
        self.sh.done = state["done"]
