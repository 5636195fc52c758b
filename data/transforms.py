"""Per-sample operations: map, filter, flatmap, collate, enumerate, header, rows2columnar.

    >>> from ember.data import IterableWrapper
    >>> list(IterableWrapper([(1, "a"), (2, "b")]).map(lambda v: v * 10, input_col=0))
    [(10, 'a'), (20, 'b')]
    >>> list(IterableWrapper(range(5)).enumerate().header(2))
    [(0, 0), (1, 1)]
"""
from __future__ import annotations

import functools

from .columns import column_fn, select_fn
from .errors import check_policy, handle
from .pipe import IterDataPipe, PipeIter, SourceIter, register


def _fn_name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


@register("map")
class Mapper(IterDataPipe):
    """``fn(sample)`` for each sample; with ``input_col``/``output_col`` on tuple, list or
    dict samples (see ``ember.data.columns``). Consecutive maps run fused in one iterator."""

    def __init__(self, source, fn, input_col=None, output_col=None, *, on_error=None):
        if not callable(fn):
            raise TypeError(f"map: fn must be callable, got {type(fn).__name__}")
        self.source, self.fn = source, fn
        self.input_col, self.output_col = input_col, output_col
        self.on_error = check_policy(on_error)
        self._apply = column_fn(fn, input_col, output_col)

    def __iter__(self):
        return _MapIter(self)

    def __len__(self):
        return len(self.source)

    def describe(self):
        cols = f", input_col={self.input_col!r}" if self.input_col is not None else ""
        return f"Mapper(fn={_fn_name(self.fn)}{cols})"


class _MapIter(PipeIter):
    """Runs a chain of consecutive maps (same ``on_error``) in one loop, pulling straight from
    a builtin iterator when the source offers one: close to a hand-written loop's speed."""

    def __init__(self, pipe):
        self.pipe = pipe
        stages = [pipe]
        p = pipe.source
        while type(p) is Mapper and p.on_error == pipe.on_error:
            stages.append(p)
            p = p.source
        stages.reverse()
        self.stages = stages
        self.fns = tuple(m._apply for m in stages)
        self.src = iter(p)
        self.pull = getattr(self.src, "fast_next", None) or self.src.__next__
        self.n = 0

    def __next__(self):
        while True:
            x = self.pull()
            self.n += 1
            try:
                for f in self.fns:
                    x = f(x)
                return x
            except Exception as e:
                handle(self._stage(e), e, self.n - 1, x)

    def _stage(self, e):
        """The map that raised (found from the traceback: the fused loop keeps no counter)."""
        if len(self.stages) == 1:
            return self.stages[0]
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        code = tb.tb_frame.f_code if tb is not None else None
        hits = [m for m, f in zip(self.stages, self.fns) if _code_of(f) is code]
        return hits[0] if len(hits) == 1 else _Chain(self.stages)

    def state_dict(self):
        return {"src": self.src.state_dict(), "n": self.n}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.pull = getattr(self.src, "fast_next", None) or self.src.__next__
        self.n = state["n"]


def _code_of(f):
    f = getattr(f, "func", f)  # functools.partial
    code = getattr(f, "__code__", None)
    if code is None:
        call = getattr(type(f), "__call__", None)
        code = getattr(call, "__code__", None)
    return code


class _Chain:
    """Stands for a fused chain of maps in an error note when the failing one is ambiguous."""

    def __init__(self, stages):
        self.stages = stages
        self.on_error = stages[0].on_error

    def describe(self):
        return " -> ".join(m.describe() for m in self.stages) + " (fused)"


@register("filter")
class Filter(IterDataPipe):
    """The samples for which ``fn(sample)`` (or ``fn(sample[input_col])``) is true."""

    def __init__(self, source, fn, input_col=None, *, on_error=None):
        if not callable(fn):
            raise TypeError(f"filter: fn must be callable, got {type(fn).__name__}")
        self.source, self.fn, self.input_col = source, fn, input_col
        self.on_error = check_policy(on_error)
        self._test = select_fn(fn, input_col)

    def __iter__(self):
        return _FilterIter(self)

    def describe(self):
        return f"Filter(fn={_fn_name(self.fn)})"


class _FilterIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.test = pipe._test
        self.n = 0

    def __next__(self):
        test = self.test
        while True:
            x = next(self.src)
            self.n += 1
            try:
                if test(x):
                    return x
            except Exception as e:
                handle(self.pipe, e, self.n - 1, x)

    def state_dict(self):
        return {"src": self.src.state_dict(), "n": self.n}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.n = state["n"]


def _identity(x):
    return x


@register("flatmap")
class FlatMapper(IterDataPipe):
    """Each item of ``fn(sample)`` (an iterable; ``fn`` is the identity when None)."""

    def __init__(self, source, fn=None, input_col=None, *, on_error=None):
        self.source, self.fn, self.input_col = source, fn, input_col
        self.on_error = check_policy(on_error)
        self._apply = select_fn(fn if fn is not None else _identity, input_col)

    def __iter__(self):
        return _FlatMapIter(self)

    def describe(self):
        return f"FlatMapper(fn={_fn_name(self.fn) if self.fn else 'identity'})"


class _FlatMapIter(SourceIter):
    """State: the upstream position plus the items of the current sample not yet yielded."""

    def __init__(self, pipe):
        super().__init__(pipe)
        self.pending = []
        self.pos = 0
        self.n = 0

    def __next__(self):
        while self.pos >= len(self.pending):
            x = next(self.src)
            self.n += 1
            try:
                self.pending = list(self.pipe._apply(x))
            except Exception as e:
                handle(self.pipe, e, self.n - 1, x)
                self.pending = []
            self.pos = 0
        item = self.pending[self.pos]
        self.pos += 1
        return item

    def state_dict(self):
        return {"src": self.src.state_dict(), "n": self.n,
                "pending": self.pending[self.pos:]}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.n = state["n"]
        self.pending, self.pos = list(state["pending"]), 0


@register("collate")
class Collator(Mapper):
    """``collate_fn(batch)`` for each batch (``default_collate`` by default)."""

    def __init__(self, source, collate_fn=None):
        from .collate import default_collate

        super().__init__(source, collate_fn or default_collate)

    def describe(self):
        return f"Collator(fn={_fn_name(self.fn)})"


@register("enumerate")
class Enumerator(IterDataPipe):
    """``(index, sample)`` pairs, counting from ``starting_index``."""

    def __init__(self, source, starting_index=0):
        self.source, self.starting_index = source, starting_index

    def __iter__(self):
        return _EnumIter(self)

    def __len__(self):
        return len(self.source)


class _EnumIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.i = pipe.starting_index

    def __next__(self):
        x = next(self.src)
        i = self.i
        self.i = i + 1
        return i, x

    def state_dict(self):
        return {"src": self.src.state_dict(), "i": self.i}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.i = state["i"]


@register("header")
class Header(IterDataPipe):
    """The first ``limit`` samples."""

    def __init__(self, source, limit=10):
        if limit < 0:
            raise ValueError(f"header: limit must be >= 0, got {limit}")
        self.source, self.limit = source, limit

    def __iter__(self):
        return _HeaderIter(self)

    def __len__(self):
        try:
            return min(len(self.source), self.limit)
        except TypeError:
            return self.limit

    def describe(self):
        return f"Header(limit={self.limit})"


class _HeaderIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.i = 0

    def __next__(self):
        if self.i >= self.pipe.limit:
            raise StopIteration
        x = next(self.src)
        self.i += 1
        return x

    def state_dict(self):
        return {"src": self.src.state_dict(), "i": self.i}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.i = state["i"]


def _rows_to_columns(batch, names):
    if not batch:
        return {}
    first = batch[0]
    if isinstance(first, dict):
        keys = list(first) if names is None else list(names)
        return {k: [row[k] for row in batch] for k in keys}
    if names is None:
        names = list(range(len(first)))
    return {name: [row[i] for row in batch] for i, name in enumerate(names)}


@register("rows2columnar")
class Rows2Columnar(Mapper):
    """A batch of rows (dicts, or sequences named by ``column_names``) becomes a dict of
    column lists: ``[{"a": 1}, {"a": 2}] -> {"a": [1, 2]}``."""

    def __init__(self, source, column_names=None):
        self.column_names = column_names
        super().__init__(source, functools.partial(_rows_to_columns, names=column_names))

    def describe(self):
        return "Rows2Columnar()"
