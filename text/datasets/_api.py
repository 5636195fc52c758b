"""The text-dataset registry and what every dataset shares: the cache folder and ``split=``.

A dataset is a function ``NAME(root=None, split=..., *, download=True, on_error=None)``
registered with :func:`register_dataset`; ``split`` is one split name (one pipe comes back)
or a tuple of them (a tuple of pipes, in that order), as in torchtext.

    >>> from ember.text import datasets
    >>> "AG_NEWS" in datasets.list_datasets()
    True
    >>> datasets.get_dataset_info("AG_NEWS").splits
    ('train', 'test')
"""
from __future__ import annotations

import difflib
from typing import Callable, NamedTuple

from ember.data.download import dataset_folder, default_root  # noqa: F401

__all__ = ["register_dataset", "list_datasets", "get_dataset", "get_dataset_info",
           "DatasetInfo", "default_root", "dataset_folder", "by_split"]


class DatasetInfo(NamedTuple):
    """What a registered dataset is: its builder, split names, task, the layout of each item
    and, for classification sets, the published meaning of each label."""

    name: str
    builder: Callable
    splits: tuple
    task: str
    item: str
    labels: dict | None


_DATASETS: dict[str, DatasetInfo] = {}


def register_dataset(name=None, *, splits, task, item, labels=None):
    """Decorator: register a dataset builder under ``name`` (default: the function's name).
    A second, different builder with the same name raises ``ValueError``."""
    def deco(fn):
        key = name or fn.__name__
        old = _DATASETS.get(key)
        if old is not None and old.builder is not fn:
            raise ValueError(f"a text dataset named {key!r} is already registered "
                             f"({old.builder.__module__}.{old.builder.__qualname__})")
        _DATASETS[key] = DatasetInfo(key, fn, tuple(splits), task, item,
                                     dict(labels) if labels else None)
        fn.splits = tuple(splits)
        return fn
    return deco


def list_datasets(task=None) -> list[str]:
    """Sorted names of the registered datasets (of one ``task`` when given:
    "classification", "language_modeling", "translation", "question_answering")."""
    return sorted(k for k, v in _DATASETS.items() if task is None or v.task == task)


def get_dataset_info(name) -> DatasetInfo:
    """The :class:`DatasetInfo` of ``name``; ``KeyError`` naming the nearest one if unknown."""
    try:
        return _DATASETS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_DATASETS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no text dataset named {name!r}{hint} (registered: "
                       f"{', '.join(list_datasets())})") from None


def get_dataset(name, **kwargs):
    """Build the registered dataset ``name`` with ``kwargs`` (``root``, ``split``, ...)."""
    return get_dataset_info(name).builder(**kwargs)


def by_split(name, split, build):
    """``build(s)`` for one split name, or a tuple of them for a tuple of names; a name the
    dataset does not have raises ``ValueError`` listing the ones it has."""
    allowed = _DATASETS[name].splits
    one = isinstance(split, str)
    names = (split,) if one else tuple(split)
    if not names:
        raise ValueError(f"{name}: split must name at least one of {allowed}")
    for s in names:
        if s not in allowed:
            raise ValueError(f"{name} has no split {s!r}; its splits are {allowed}")
    pipes = tuple(build(s) for s in names)
    return pipes[0] if one else pipes
