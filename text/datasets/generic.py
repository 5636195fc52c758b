"""Generic readers for your own labelled text: a folder of text files per class
(``TextFolder``), CSV/TSV files (``TextCSV``) and JSON-lines files (``TextJsonLines``). Each is
an ``IterDataPipe`` of ``(label, text)`` pairs, as torchtext's classification datasets are.

    >>> import fsspec
    >>> fs = fsspec.filesystem("memory")
    >>> fs.pipe("/news.csv", b"label,title,text\\nsport,Cup final,Great game\\ntech,AI,New chip\\n")
    >>> list(TextCSV("memory:///news.csv", text_column=["title", "text"]))
    [('sport', 'Cup final Great game'), ('tech', 'AI New chip')]
    >>> list(TextCSV("memory:///news.csv", header=True, label_column=0, text_column=None,
    ...              label_transform=len))
    [(5, 'Cup final Great game'), (4, 'AI New chip')]
    >>> fs.pipe("/r.jsonl", b'{"text": "good", "label": 1}\\n\\n{"text": "bad", "label": 0}\\n')
    >>> list(TextJsonLines("memory:///r.jsonl"))
    [(1, 'good'), (0, 'bad')]
"""
from __future__ import annotations

import csv
import os

from ember.data.errors import check_policy, handle
from ember.data.pipe import IterDataPipe, PipeIter

from ._download import DatasetFormatError, read_member_text
from ._records import TextRecords

__all__ = ["TextFolder", "TextCSV", "TextJsonLines", "read_text_file"]


def read_text_file(path, encoding="utf-8") -> str:
    """The text of ``path`` without its final line break; bytes that are not valid
    ``encoding`` raise :class:`DatasetFormatError` naming the file and line."""
    with open(path, "rb") as f:
        data = f.read()
    text = read_member_text(data, path, encoding)
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


class TextFolder(IterDataPipe):
    """``(class index, text)`` for every text file in ``root/<class>/``, class by class
    (classes in sorted order, or the order of ``classes``), files in sorted order.

    ``extensions``: the file endings read (case-insensitive; None: every file); hidden
    files are ignored. Each file is one text, without its final line break. ``classes``,
    ``class_to_idx`` and ``samples`` (``[(path, class index)]``) are known before iterating;
    ``len()`` is the number of files. A file that is not valid ``encoding`` raises
    :class:`DatasetFormatError` naming it and the line; ``on_error="skip"`` skips it.

        root/sport/001.txt      -> (0, "...")
        root/sport/002.txt      -> (0, "...")
        root/weather/001.txt    -> (1, "...")
    """

    def __init__(self, root, *, classes=None, extensions=(".txt",), encoding="utf-8",
                 on_error=None):
        self.root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"TextFolder: {self.root} is not a directory")
        found = sorted(d.name for d in os.scandir(self.root)
                       if d.is_dir() and not d.name.startswith("."))
        if classes is None:
            classes = found
        else:
            classes = [str(c) for c in classes]
            missing = [c for c in classes if c not in found]
            if missing:
                raise FileNotFoundError(f"TextFolder: no folder for class(es) {missing} in "
                                        f"{self.root} (found {found})")
        if not classes:
            raise FileNotFoundError(f"TextFolder: {self.root} holds no class folders (expected "
                                    f"{self.root}/<class>/<file>.txt)")
        exts = None if extensions is None else tuple(e.lower() for e in extensions)
        samples = []
        for idx, c in enumerate(classes):
            folder = os.path.join(self.root, c)
            found_files = []
            for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for fn in filenames:
                    if fn.startswith(".") or (exts is not None and
                                              not fn.lower().endswith(exts)):
                        continue
                    path = os.path.join(dirpath, fn)
                    found_files.append((os.path.relpath(path, folder).split(os.sep), path))
            samples += [(path, idx) for _, path in sorted(found_files)]
        self.classes = list(classes)
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = samples
        self.targets = [i for _, i in samples]
        self.encoding = encoding
        self.on_error = check_policy(on_error)

    def __len__(self):
        return len(self.samples)

    def __iter__(self):
        return _FolderIter(self)

    def describe(self):
        return f"TextFolder({self.root!r}, {len(self.classes)} classes, {len(self)} files)"


class _FolderIter(PipeIter):
    def __init__(self, pipe):
        self.pipe, self.i = pipe, 0

    def __next__(self):
        p = self.pipe
        while self.i < len(p.samples):
            path, idx = p.samples[self.i]
            self.i += 1
            try:
                return idx, read_text_file(path, p.encoding)
            except (OSError, DatasetFormatError) as e:
                handle(p, e, self.i - 1, (path,))
        raise StopIteration

    def state_dict(self):
        return {"i": self.i}

    def load_state_dict(self, state):
        self.i = int(state["i"])


def _column(spec, header, where, what):
    """The index of column ``spec`` (a name looked up in ``header``, or an int)."""
    if isinstance(spec, int):
        return spec
    if header is None:
        raise ValueError(f"{what} {spec!r} is a column name, but the file has no header "
                         f"(pass header=True, or give the column's index)")
    try:
        return header.index(spec)
    except ValueError:
        raise ValueError(f"no column {spec!r} in the header {header}") from None


class RowToPair:
    """``(label, text)`` from a CSV row: the ``label_column`` field (through
    ``label_transform``) and the ``text_column`` field(s) joined by a space (None: every
    field but the label's, in order). A row too short for them is an error."""

    def __init__(self, label_column, text_column, label_transform=None):
        self.label_column = label_column
        self.text_column = text_column
        self.label_transform = label_transform

    def __call__(self, row, where):
        header = where.header
        if self.label_column is None:
            li = None
        else:
            li = _column(self.label_column, header, where, "label_column")
        if self.text_column is None:
            ti = [k for k in range(len(row)) if k != li]
        else:
            cols = self.text_column if isinstance(self.text_column, (list, tuple)) else \
                [self.text_column]
            ti = [_column(c, header, where, "text_column") for c in cols]
        need = max(ti + ([li] if li is not None else []), default=-1) + 1
        if len(row) < need or not ti:
            raise ValueError(f"expected at least {max(need, 2 if li is not None else 1)} "
                             f"fields, got {len(row)}: {row!r}"[:300])
        text = " ".join(row[k] for k in ti)
        if li is None:
            return text
        label = row[li]
        if self.label_transform is not None:
            try:
                label = self.label_transform(label)
            except (TypeError, ValueError) as e:
                raise ValueError(f"bad label {label!r} ({e})") from None
        return label, text


class TextCSV(TextRecords):
    """``(label, text)`` pairs from CSV or TSV files.

    ``delimiter``: default "\\t" for ``.tsv`` files, else ",". ``header``: whether the first
    row names the columns; the default (None) is True when a column is given by name, False
    when both are indices. ``label_column``/``text_column``: names (with a header) or 0-based
    indices; ``text_column`` may list several columns, joined by a space, or be None for
    every column but the label's (AG_NEWS's layout is ``header=False, label_column=0,
    text_column=None``); ``label_column=None`` yields the text alone. ``label_transform``
    (e.g. ``int``) is applied to the label string; a label it rejects is a bad row.
    ``quoting``: a ``csv`` module constant (``csv.QUOTE_NONE`` for unquoted TSV files).
    Bad rows raise :class:`DatasetFormatError` naming the file and line, or are skipped and
    logged with ``on_error="skip"``.
    """

    def __init__(self, files, *, label_column="label", text_column="text", header=None,
                 delimiter=None, label_transform=None, quoting=csv.QUOTE_MINIMAL,
                 encoding="utf-8", on_error=None):
        files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        files = [os.fspath(f) for f in files]
        if delimiter is None:
            delimiter = "\t" if files and all(f.lower().endswith(".tsv") for f in files) \
                else ","
        if header is None:
            cols = [label_column] + (list(text_column) if isinstance(text_column, (list, tuple))
                                     else [text_column])
            header = any(isinstance(c, str) for c in cols)
        super().__init__(files, RowToPair(label_column, text_column, label_transform),
                         fmt="csv", delimiter=delimiter, quoting=quoting, header=header,
                         encoding=encoding, on_error=on_error, name="TextCSV")


class ObjectToPair:
    """``(label, text)`` from a JSON object's ``label_key`` and ``text_key`` fields."""

    def __init__(self, text_key, label_key, label_transform=None):
        self.text_key, self.label_key, self.label_transform = text_key, label_key, \
            label_transform

    def __call__(self, obj, where):
        if not isinstance(obj, dict):
            raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
        for key in (self.text_key, self.label_key):
            if key is not None and key not in obj:
                raise ValueError(f"no {key!r} field in {sorted(obj)}")
        text = obj[self.text_key]
        if not isinstance(text, str):
            raise ValueError(f"{self.text_key!r} must be a string, got {type(text).__name__}")
        if self.label_key is None:
            return text
        label = obj[self.label_key]
        if self.label_transform is not None:
            try:
                label = self.label_transform(label)
            except (TypeError, ValueError) as e:
                raise ValueError(f"bad label {label!r} ({e})") from None
        return label, text


class TextJsonLines(TextRecords):
    """``(label, text)`` pairs from JSON-lines files: one object per line with ``text_key``
    and ``label_key`` fields (``label_key=None``: the text alone); blank lines are skipped.
    A line that is not JSON, not an object, or lacks a field raises
    :class:`DatasetFormatError` naming the file and line (``on_error="skip"`` skips it)."""

    def __init__(self, files, *, text_key="text", label_key="label", label_transform=None,
                 encoding="utf-8", on_error=None):
        files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        super().__init__([os.fspath(f) for f in files],
                         ObjectToPair(text_key, label_key, label_transform), fmt="jsonl",
                         encoding=encoding, on_error=on_error, name="TextJsonLines")
