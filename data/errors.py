"""Error policy of the data stack: annotate failures with the sample, or skip and count them.

A pipe that runs user code (map, filter, decoders, archive readers) with ``on_error="skip"``
records each failure in this process's skip log and moves on; with ``"raise"`` (the default)
the exception propagates with a note naming the pipe, the sample's position and its key.
The DataLoader drains the log of each worker with every batch (``loader.skipped``).

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
