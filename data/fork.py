"""``fork`` and ``demux``: one upstream pipe feeding several output pipes through buffers.

The output pipes share a hub holding the upstream iterator and one buffer per output. A
fresh ``iter()`` of an output that already joined the current pass starts a new pass (a new
epoch); the others join it. Each output's state contains the hub's, so a graph that zips the
outputs back together saves and restores as one.

    >>> from ember.data import IterableWrapper
    >>> a, b = IterableWrapper(range(4)).fork(2)
    >>> list(a.zip(b.map(lambda x: -x)))
    [(0, 0), (1, -1), (2, -2), (3, -3)]
    >>> evens, odds = IterableWrapper(range(5)).demux(2, lambda x: x % 2)
    >>> list(evens), list(odds)
    ([0, 2, 4], [1, 3])
"""
from __future__ import annotations

from collections import deque

from .pipe import IterDataPipe, PipeIter, register


class _Run:
    """One pass of the hub: the upstream iterator and the per-output buffers."""

    def __init__(self, hub):
        self.hub = hub
        self.src = iter(hub.source)
        self.bufs = [deque() for _ in range(hub.num_instances)]
        self.attached = set()
        self.done = False

    def _push(self, k, x):
        buf = self.bufs[k]
        buf.append(x)
        lim = self.hub.buffer_size
        if 0 <= lim < len(buf):
            raise BufferError(
                f"{type(self.hub).__name__}: output {k} fell more than buffer_size={lim} "
                f"samples behind; read the outputs in step or raise buffer_size (-1: unbounded)")

    def next_for(self, i):
        buf = self.bufs[i]
        if buf:
            return buf.popleft()
        while not self.done:
            try:
                x = next(self.src)
            except StopIteration:
                self.done = True
                break
            out = self.hub.route(self, i, x)
            if out is not _NONE:
                return out
        raise StopIteration

    def state_dict(self):
        return {"src": self.src.state_dict(), "bufs": [list(b) for b in self.bufs],
                "done": self.done}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.bufs = [deque(b) for b in state["bufs"]]
        self.done = state["done"]


_NONE = object()


class _Hub:
    """Shared base of Forker and Demultiplexer (not a pipe itself: its ``children`` are)."""

    def __init__(self, source, num_instances, buffer_size):
        if num_instances < 1:
            raise ValueError(f"{type(self).__name__}: num_instances must be >= 1")
        self.source, self.num_instances, self.buffer_size = source, num_instances, buffer_size
        self.children = tuple(_Output(self, i) for i in range(num_instances))
        self._run = None

    def attach(self, i):
        run = self._run
        if run is None or i in run.attached:
            run = self._run = _Run(self)
        run.attached.add(i)
        return run

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_run"] = None  # a live pass does not travel (to worker processes)
        return d


@register("fork")
class Forker(_Hub):
    """Every output pipe yields every sample (buffered up to ``buffer_size`` apart)."""

    def __init__(self, source, num_instances, buffer_size=1000):
        super().__init__(source, num_instances, buffer_size)

    def route(self, run, i, x):
        for k in range(self.num_instances):
            if k != i:
                run._push(k, x)
        return x


@register("demux")
class Demultiplexer(_Hub):
    """Sample ``x`` goes to output ``classifier_fn(x)``; None drops it if ``drop_none``."""

    def __init__(self, source, num_instances, classifier_fn, drop_none=False, buffer_size=1000):
        super().__init__(source, num_instances, buffer_size)
        self.classifier_fn, self.drop_none = classifier_fn, drop_none

    def route(self, run, i, x):
        k = self.classifier_fn(x)
        if k is None and self.drop_none:
            return _NONE
        if not isinstance(k, int) or not 0 <= k < self.num_instances:
            raise ValueError(f"demux: classifier_fn returned {k!r} for {x!r}; expected an int "
                             f"in [0, {self.num_instances})" +
                             ("" if self.drop_none else " (or None with drop_none=True)"))
        if k == i:
            return x
        run._push(k, x)
        return _NONE


class _Output(IterDataPipe):
    """Output ``index`` of a fork/demux hub."""

    def __init__(self, hub, index):
        self.hub, self.index = hub, index

    @property
    def source(self):
        return self.hub.source

    def __iter__(self):
        return _OutputIter(self)

    def __len__(self):
        if isinstance(self.hub, Forker):
            return len(self.hub.source)
        return super().__len__()

    def describe(self):
        return f"{type(self.hub).__name__}[{self.index} of {self.hub.num_instances}]"


class _OutputIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.run = pipe.hub.attach(pipe.index)

    def __next__(self):
        return self.run.next_for(self.pipe.index)

    def state_dict(self):
        return {"hub": self.run.state_dict()}

    def load_state_dict(self, state):
        self.run.load_state_dict(state["hub"])
