"""Error policy of the data stack: annotate failures with the sample, or skip and count them.

A pipe that runs user code (map, filter, decoders, archive readers) with ``on_error="skip"``
records each failure in this process's skip log and moves on; with ``"raise"`` (the default)
the exception propagates with a note naming the pipe, the sample's position and its key.
The DataLoader drains the log of each worker with every batch (``loader.skipped``).

An exception in a DataLoader worker is re-raised in the main process as PyTorch does it, with
the worker's traceback as real lines of the message (``raise_worker_error``):

    ValueError: Caught ValueError in DataLoader worker process 0.
    Original Traceback (most recent call last):
      File "...", line 5, in __getitem__
    ValueError: bad sample 3
    ember.data: dataset[3] failed
    ember.data: DataLoader worker 0 (pid 4242) was loading batch 1 (dataset indices [2, 3])

    >>> from ember.data import IterableWrapper, drain_skips
    >>> list(IterableWrapper([1, 0, 2]).map(lambda x: 1 // x, on_error="skip"))
    [1, 0]
    >>> [(s.index, s.error) for s in drain_skips()]
    [(1, 'ZeroDivisionError: integer division or modulo by zero')]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

POLICIES = ("raise", "skip")
_DEFAULT = ["raise"]  # the process-wide default the DataLoader's on_error sets in workers
_SKIPS: list = []


@dataclass(frozen=True)
class Skipped:
    """One skipped sample: the pipe, its position in that pipe's input, its key, the error."""

    pipe: str
    index: int
    key: Any
    error: str


def check_policy(on_error):
    if on_error is not None and on_error not in POLICIES:
        raise ValueError(f"on_error must be 'raise', 'skip' or None, got {on_error!r}")
    return on_error


def set_default_policy(on_error: str) -> None:
    """The policy of pipes whose ``on_error`` is None (the loader sets it in each process)."""
    _DEFAULT[0] = check_policy(on_error) or "raise"


def get_default_policy() -> str:
    return _DEFAULT[0]


def sample_key(sample):
    """A human-readable key for a sample: its path/URL or ``__key__`` when it carries one."""
    if isinstance(sample, str):
        return sample if len(sample) <= 256 else None
    if isinstance(sample, (tuple, list)) and sample and isinstance(sample[0], str):
        return sample[0]
    if isinstance(sample, dict):
        for k in ("__key__", "path", "url", "key"):
            if isinstance(sample.get(k), str):
                return sample[k]
    return None


def handle(pipe, exc: BaseException, index: int, sample) -> None:
    """Called from an ``except`` block of ``pipe``: record and return if the policy skips,
    else add a note to ``exc`` naming the sample (the caller re-raises)."""
    policy = pipe.on_error or _DEFAULT[0]
    key = sample_key(sample)
    if policy == "skip" and isinstance(exc, Exception):
        _SKIPS.append(Skipped(pipe.describe(), index, key,
                              f"{type(exc).__name__}: {exc}"))
        return
    where = f"ember.data: {pipe.describe()} failed on sample #{index}"
    if key is not None:
        where += f" (key {key!r})"
    notes = getattr(exc, "__notes__", ())
    if not any(n.startswith("ember.data:") for n in notes):
        exc.add_note(where)
    raise exc


def should_skip(pipe) -> bool:
    return (pipe.on_error or _DEFAULT[0]) == "skip"


def drain_skips() -> list:
    """Take (and clear) the samples skipped in this process so far."""
    out = list(_SKIPS)
    _SKIPS.clear()
    return out


def record_skip(where: str, index: int, key, exc: BaseException) -> None:
    _SKIPS.append(Skipped(where, index, key, f"{type(exc).__name__}: {exc}"))


class WorkerError(RuntimeError):
    """An exception raised in a worker whose type could not be rebuilt in the main process."""


class _Verbatim(str):
    """A message whose ``repr`` is itself: ``KeyError`` shows ``repr(message)``, which would
    print the worker's traceback as one escaped line (PyTorch's ``KeyErrorMessage``)."""

    __slots__ = ()

    def __repr__(self):
        return self


def worker_message(info) -> str:
    """The text of a re-raised worker exception: PyTorch's two lines, the worker's formatted
    traceback (with its notes), then what the worker was doing."""
    tb = info["tb"] if info["tb"].endswith("\n") else info["tb"] + "\n"
    return (f"Caught {info['type_name']} in DataLoader worker process {info['worker']}.\n"
            f"Original {tb}"
            f"ember.data: DataLoader worker {info['worker']} (pid {info['pid']}) was loading "
            f"{info['where']}")


def worker_exception(info) -> BaseException:
    """The exception to raise in the main process for a worker's ``info`` (see
    ``worker.exception_info``): the worker's type built from ``worker_message`` where that
    type takes one message and shows it as it is, else :class:`WorkerError`."""
    text = _Verbatim(worker_message(info))
    etype = info.get("type")
    if isinstance(etype, type) and issubclass(etype, BaseException):
        try:
            exc = etype(text)
        except Exception:
            exc = None
        try:
            if exc is not None and str(exc) == text:
                return exc
        except Exception:   # a __str__ that fails on our message
            pass
    return WorkerError(str(text))


def raise_worker_error(info):
    """Re-raise a worker's exception in the main process (see :func:`worker_exception`)."""
    raise worker_exception(info)
