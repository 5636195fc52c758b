"""DataPipe bases: ``IterDataPipe``, ``MapDataPipe``, their explicit iterators, and the registry.

Every operation is one small class registered under a functional name by ``@register``; the
base classes below carry one plain method per name (so editors and type checkers see them),
which looks the class up in the registry. ``list_pipes()`` lists what is registered.

Iteration state is explicit (the torchdata lesson): ``iter(pipe)`` returns a ``PipeIter``, an
object with ``__next__``, ``state_dict()``, ``load_state_dict()`` and ``reset()``; a pipe
holding state (a shuffle buffer, a position in a file) keeps it there, never on a generator
frame. The state of the last pipe of a graph nests the states of all its upstream pipes, so a
graph saves and restores as one:

    >>> from ember.data import IterableWrapper
    >>> it = iter(IterableWrapper(range(10)).shuffle(buffer_size=4, seed=0).batch(3))
    >>> first = next(it)
    >>> state = it.state_dict()
    >>> rest = list(it)
    >>> it2 = iter(IterableWrapper(range(10)).shuffle(buffer_size=4, seed=0).batch(3))
    >>> it2.load_state_dict(state)
    >>> list(it2) == rest
    True
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Sequence

_REGISTRY: dict[str, dict[str, type]] = {"iter": {}, "map": {}}


def register(name: str, kind: str = "iter"):
    """Class decorator: register a pipe class under its functional name (refuses duplicates)."""
    if kind not in _REGISTRY:
        raise ValueError(f"kind must be 'iter' or 'map', got {kind!r}")

    def deco(cls):
        reg = _REGISTRY[kind]
        if name in reg and reg[name] is not cls:
            raise ValueError(f"a {kind} pipe named {name!r} is already registered "
                             f"({reg[name].__name__})")
        reg[name] = cls
        cls.functional_name = name
        return cls
    return deco


def list_pipes(kind: str = "iter") -> list[str]:
    """Sorted functional names of the registered pipes of ``kind`` ('iter' or 'map')."""
    return sorted(_REGISTRY[kind])


def get_pipe(name: str, kind: str = "iter") -> type:
    """The pipe class registered under ``name``."""
    try:
        return _REGISTRY[kind][name]
    except KeyError:
        raise KeyError(f"no {kind} pipe named {name!r}; registered: {list_pipes(kind)}") \
            from None


def _make(kind, name, *args, **kwargs):
    return _REGISTRY[kind][name](*args, **kwargs)


class PipeIter:
    """An explicit iterator over one pipe: ``__next__``, ``state_dict``, ``load_state_dict``,
    ``reset``. ``state_dict()`` returns plain data (dicts, lists, numbers, samples) that
    pickles; ``load_state_dict`` on a fresh iterator of an equal pipe continues exactly where
    the saved one stood."""

    pipe: Any = None

    def __iter__(self):
        return self

    def __next__(self):  # pragma: no cover - every subclass defines it
        raise StopIteration

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def reset(self) -> None:
        """Start over from the beginning (a new epoch of the same pipe)."""
        self.__init__(self.pipe)


class SourceIter(PipeIter):
    """A ``PipeIter`` that pulls from one upstream iterator ``self.src``."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.src = iter(pipe.source)

    def state_dict(self):
        return {"src": self.src.state_dict()}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])


class PassIter(SourceIter):
    """Yields the upstream samples unchanged (a pipe switched off: shuffle off, unsharded)."""

    def __next__(self):
        return next(self.src)


class DataPipe:
    """Common base: graph structure (``parents``), error policy, ``explain``."""

    functional_name: str = ""
    on_error: str | None = None  # "raise", "skip", or None (the loader's policy decides)

    def parents(self) -> tuple:
        """The pipes this one reads from (the graph's edges, for traversal and ``explain``)."""
        src = getattr(self, "source", None)
        return (src,) if isinstance(src, DataPipe) else ()

    def describe(self) -> str:
        """A one-line description for ``explain`` (pipes override to show their settings)."""
        return type(self).__name__

    def __repr__(self):
        return self.describe()

    def explain(self, file=None) -> str:
        """Print (and return) the graph, marking where shuffling, sharding and batching
        happen and whether every sample is seen once per epoch."""
        from .explain import explain

        return explain(self, file=file)


def walk(pipe) -> list:
    """Every pipe of the graph ending at ``pipe``, each once, upstream first."""
    seen, order = set(), []
    stack = [(pipe, False)]
    while stack:
        p, done = stack.pop()
        if done:
            order.append(p)
            continue
        if id(p) in seen:
            continue
        seen.add(id(p))
        stack.append((p, True))
        for q in reversed(p.parents()):
            if id(q) not in seen:
                stack.append((q, False))
    return order


class ReplayIter(PipeIter):
    """Wraps a plain iterator (a user's generator-based ``__iter__``): its state is the number
    of samples consumed, and restoring replays the pipe and skips that many (correct for a
    pipe that repeats itself; write a ``PipeIter`` to restore without replaying)."""

    def __init__(self, pipe, it, make):
        self.pipe, self.it, self.make, self.n = pipe, it, make, 0

    def __next__(self):
        x = next(self.it)
        self.n += 1
        return x

    def state_dict(self):
        return {"n": self.n}

    def load_state_dict(self, state):
        self.it, self.n = self.make(self.pipe), 0
        for _ in range(state["n"]):
            next(self.it)
            self.n += 1

    def reset(self):
        self.it, self.n = self.make(self.pipe), 0


def _explicit_iter(f):
    @functools.wraps(f)
    def __iter__(self):
        it = f(self)
        return it if isinstance(it, PipeIter) else ReplayIter(self, it, f)
    __iter__._ember_explicit = True
    return __iter__


class IterDataPipe(DataPipe):
    """An iterable pipe: ``iter(pipe)`` gives a ``PipeIter``. Operations chain:

        >>> from ember.data import IterableWrapper
        >>> list(IterableWrapper(range(6)).map(lambda x: x * 10).filter(lambda x: x > 0).batch(2))
        [[10, 20], [30, 40], [50]]

    A subclass whose ``__iter__`` returns a plain iterator (a generator) still gets a
    ``PipeIter`` (``ReplayIter``), so it chains, saves and restores like the others.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        f = cls.__dict__.get("__iter__")
        if f is not None and not getattr(f, "_ember_explicit", False):
            cls.__iter__ = _explicit_iter(f)

    def __iter__(self) -> PipeIter:
        raise TypeError(f"{type(self).__name__} does not define __iter__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} has no length known before iterating")

    def __add__(self, other):  # pipe + pipe: one after the other (torch: a ChainDataset)
        from .datasets import ChainDataset

        return ChainDataset([self, other])

    # -- one method per functional name (see the registry) --------------------------------
    def map(self, fn: Callable, input_col=None, output_col=None, *,
            on_error: str | None = None) -> IterDataPipe:
        """Apply ``fn`` to each sample (or to ``sample[input_col]``; see ``Mapper``)."""
        return _make("iter", "map", self, fn, input_col, output_col, on_error=on_error)

    def filter(self, fn: Callable, input_col=None, *, on_error: str | None = None) -> IterDataPipe:
        """Keep the samples for which ``fn`` is true."""
        return _make("iter", "filter", self, fn, input_col, on_error=on_error)

    def flatmap(self, fn: Callable | None = None, input_col=None, *,
                on_error: str | None = None) -> IterDataPipe:
        """Apply ``fn`` (identity by default) and yield each item of the iterable it returns."""
        return _make("iter", "flatmap", self, fn, input_col, on_error=on_error)

    def batch(self, batch_size: int, drop_last: bool = False, wrapper: Callable = list) \
            -> IterDataPipe:
        """Group consecutive samples into lists of ``batch_size``."""
        return _make("iter", "batch", self, batch_size, drop_last, wrapper)

    def unbatch(self, unbatch_level: int = 1) -> IterDataPipe:
        """Undo ``batch``: yield the items of each batch (``unbatch_level`` levels deep)."""
        return _make("iter", "unbatch", self, unbatch_level)

    def shuffle(self, buffer_size: int = 10000, seed: int | None = None,
                enabled: bool = True) -> IterDataPipe:
        """Shuffle through a buffer of ``buffer_size`` samples with a seeded RNG."""
        return _make("iter", "shuffle", self, buffer_size, seed, enabled)

    def sharding_filter(self, block: int | None = None) -> IterDataPipe:
        """Keep this worker's/rank's share of the samples (set by the DataLoader)."""
        return _make("iter", "sharding_filter", self, block)

    def collate(self, collate_fn: Callable | None = None) -> IterDataPipe:
        """Turn each batch into arrays/Tensors (``default_collate`` by default)."""
        return _make("iter", "collate", self, collate_fn)

    def zip(self, *others: IterDataPipe) -> IterDataPipe:
        """Tuples of one sample from each pipe; ends with the shortest."""
        return _make("iter", "zip", self, *others)

    def concat(self, *others: IterDataPipe) -> IterDataPipe:
        """All samples of this pipe, then of each of ``others``."""
        return _make("iter", "concat", self, *others)

    def mux(self, *others: IterDataPipe) -> IterDataPipe:
        """One sample from each pipe in turn; ends at the first incomplete round."""
        return _make("iter", "mux", self, *others)

    def mux_longest(self, *others: IterDataPipe) -> IterDataPipe:
        """One sample from each pipe in turn, skipping exhausted ones, until all are done."""
        return _make("iter", "mux_longest", self, *others)

    def fork(self, num_instances: int, buffer_size: int = 1000) -> tuple:
        """``num_instances`` pipes that each yield every sample of this one."""
        hub = _make("iter", "fork", self, num_instances, buffer_size)
        return hub.children

    def demux(self, num_instances: int, classifier_fn: Callable, drop_none: bool = False,
              buffer_size: int = 1000) -> tuple:
        """``num_instances`` pipes; sample ``x`` goes to pipe ``classifier_fn(x)``."""
        hub = _make("iter", "demux", self, num_instances, classifier_fn, drop_none, buffer_size)
        return hub.children

    def cycle(self, count: int | None = None) -> IterDataPipe:
        """Repeat the pipe ``count`` times (forever when None)."""
        return _make("iter", "cycle", self, count)

    def header(self, limit: int = 10) -> IterDataPipe:
        """The first ``limit`` samples."""
        return _make("iter", "header", self, limit)

    def enumerate(self, starting_index: int = 0) -> IterDataPipe:
        """``(index, sample)`` pairs."""
        return _make("iter", "enumerate", self, starting_index)

    def in_memory_cache(self, size: int | None = None) -> IterDataPipe:
        """Keep the first pass in memory (up to ``size`` samples) and replay it later."""
        return _make("iter", "in_memory_cache", self, size)

    def prefetch(self, buffer_size: int = 10) -> IterDataPipe:
        """Produce up to ``buffer_size`` samples ahead in a background thread."""
        return _make("iter", "prefetch", self, buffer_size)

    def bucketbatch(self, batch_size: int, drop_last: bool = False, batch_num: int = 100,
                    sort_key: Callable | None = None, shuffle: bool = True,
                    seed: int | None = None) -> IterDataPipe:
        """Length-homogeneous batches: sort pools of ``batch_size * batch_num`` samples by
        ``sort_key``, cut them into batches, shuffle the batches."""
        return _make("iter", "bucketbatch", self, batch_size, drop_last, batch_num, sort_key,
                     shuffle, seed)

    def groupby(self, group_key_fn: Callable, *, buffer_size: int = 10000,
                group_size: int | None = None, guaranteed_group_size: int | None = None,
                drop_remaining: bool = False) -> IterDataPipe:
        """Lists of samples sharing ``group_key_fn(sample)``."""
        return _make("iter", "groupby", self, group_key_fn, buffer_size=buffer_size,
                     group_size=group_size, guaranteed_group_size=guaranteed_group_size,
                     drop_remaining=drop_remaining)

    def rows2columnar(self, column_names: Sequence[str] | None = None) -> IterDataPipe:
        """A batch of rows (dicts or sequences) becomes a dict of columns."""
        return _make("iter", "rows2columnar", self, column_names)

    # file and archive operations
    def list_files(self, masks: str | Sequence[str] = "", *, recursive: bool = False) \
            -> IterDataPipe:
        """URLs of the files under each root URL this pipe yields."""
        return _make("iter", "list_files", self, masks, recursive=recursive)

    def open_files(self, mode: str = "r", encoding: str | None = None, **open_kwargs) \
            -> IterDataPipe:
        """``(url, stream)`` for each URL (any fsspec URL)."""
        return _make("iter", "open_files", self, mode, encoding, **open_kwargs)

    def read_from_http(self, timeout: float | None = None, **open_kwargs) -> IterDataPipe:
        """``(url, stream)`` for each http(s) URL, through fsspec."""
        return _make("iter", "read_from_http", self, timeout, **open_kwargs)

    def readlines(self, *, strip_newline: bool = True, encoding: str = "utf-8",
                  return_path: bool = True) -> IterDataPipe:
        """``(url, line)`` for each line of each ``(url, stream)``."""
        return _make("iter", "readlines", self, strip_newline=strip_newline,
                     encoding=encoding, return_path=return_path)

    def parse_csv(self, *, delimiter: str = ",", skip_lines: int = 0, as_dict: bool = False,
                  return_path: bool = False, encoding: str = "utf-8", **fmtparams) \
            -> IterDataPipe:
        """Rows (lists, or dicts with ``as_dict``) of each CSV/TSV ``(url, stream)``."""
        return _make("iter", "parse_csv", self, delimiter=delimiter, skip_lines=skip_lines,
                     as_dict=as_dict, return_path=return_path, encoding=encoding, **fmtparams)

    def parse_jsonlines(self, *, return_path: bool = True, encoding: str = "utf-8") \
            -> IterDataPipe:
        """``(url, object)`` for each JSON line of each ``(url, stream)``."""
        return _make("iter", "parse_jsonlines", self, return_path=return_path,
                     encoding=encoding)

    def load_from_tar(self, *, on_error: str | None = None) -> IterDataPipe:
        """``(url/member, stream)`` for each member of each tar ``(url, stream)`` (any
        compression; streamed)."""
        return _make("iter", "load_from_tar", self, on_error=on_error)

    def load_from_zip(self, *, on_error: str | None = None) -> IterDataPipe:
        """``(url/member, stream)`` for each member of each zip ``(url, stream)``."""
        return _make("iter", "load_from_zip", self, on_error=on_error)

    def webdataset(self) -> IterDataPipe:
        """Group consecutive ``(path, stream)`` archive members by key into dicts."""
        return _make("iter", "webdataset", self)

    def save_to_disk(self, mode: str = "wb", filepath_fn: Callable | None = None) \
            -> IterDataPipe:
        """Write each ``(url, data)`` atomically to ``filepath_fn(url)``; yield the URL."""
        return _make("iter", "save_to_disk", self, mode, filepath_fn)


class MapDataPipe(DataPipe):
    """A map-style pipe: ``pipe[i]`` and ``len(pipe)``.

        >>> from ember.data import SequenceWrapper
        >>> SequenceWrapper([1, 2, 3]).map(lambda x: x + 1)[2]
        4
    """

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} does not define __len__")

    def __iter__(self) -> Iterator:
        return iter(self.to_iter())

    def __add__(self, other):  # torch: a ConcatDataset
        from .datasets import ConcatDataset

        return ConcatDataset([self, other])

    def map(self, fn: Callable) -> MapDataPipe:
        """``pipe.map(fn)[i] == fn(pipe[i])``."""
        return _make("map", "map", self, fn)

    def batch(self, batch_size: int, drop_last: bool = False, wrapper: Callable = list) \
            -> MapDataPipe:
        """``pipe.batch(n)[i]`` is the list of items ``i*n`` to ``(i+1)*n - 1``."""
        return _make("map", "batch", self, batch_size, drop_last, wrapper)

    def shuffle(self, seed: int | None = None, enabled: bool = True) -> IterDataPipe:
        """An iterable pipe over the items in a seeded random order."""
        return _make("map", "shuffle", self, seed, enabled)

    def concat(self, *others: MapDataPipe) -> MapDataPipe:
        """Items of this pipe then of each of ``others``, indexed continuously."""
        return _make("map", "concat", self, *others)

    def zip(self, *others: MapDataPipe) -> MapDataPipe:
        """``pipe.zip(b)[i] == (pipe[i], b[i])``; length of the shortest."""
        return _make("map", "zip", self, *others)

    def to_iter(self) -> IterDataPipe:
        """An iterable pipe yielding the items in index order (resumable)."""
        return _make("map", "to_iter", self)
