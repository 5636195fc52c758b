"""Record readers that know where each record came from: lines, CSV/TSV rows and JSON lines
of files (``TextRecords``), two line-aligned files read in step (``ParallelLines``), and the
entries of whole JSON documents (``JsonEntries``).

A record that cannot be read or parsed (bytes that are not valid UTF-8, a CSV quote left
open, a row with too few fields, a label that is no number, JSON that does not parse) raises
:class:`DatasetFormatError` whose message starts with ``FILE, line N:``; with
``on_error="skip"`` (or a DataLoader with ``on_error="skip"``) the record is left out and
recorded in the skip log, which ``ember.data.drain_skips()`` (or ``loader.skipped``) returns.

Iteration state is explicit: the file, the byte offset in it and the line number, so a
restored iterator reopens the file at that offset and reads on.

    >>> import fsspec
    >>> fsspec.filesystem("memory").pipe("/r.csv", b'1,"a, b"\\n2,c\\nx,d\\n')
    >>> pipe = TextRecords(["memory:///r.csv"], fmt="csv", on_error="skip",
    ...                    parse=lambda row, where: (int(row[0]), row[1]))
    >>> list(pipe)
    [(1, 'a, b'), (2, 'c')]
    >>> from ember.data import drain_skips
    >>> [s.error for s in drain_skips()]
    ["DatasetFormatError: memory:///r.csv, line 3: invalid literal for int() with base 10: 'x'"]
"""
from __future__ import annotations

import csv
import json
from typing import NamedTuple

import fsspec

from ember.data.errors import check_policy, handle
from ember.data.pipe import IterDataPipe, PipeIter

from ._download import DatasetFormatError

__all__ = ["TextRecords", "ParallelLines", "JsonEntries", "Where", "DatasetFormatError"]

FORMATS = ("lines", "csv", "jsonl")


class Where(NamedTuple):
    """Where a record starts: its file, its first line (1-based) and the file's CSV header
    (None without one)."""

    path: str
    line: int
    header: list | None = None


class _Bad(Exception):
    """A record that could not be read at ``line`` (the message goes into a
    DatasetFormatError)."""

    def __init__(self, message, line):
        super().__init__(message)
        self.line = line


def _open(path, offset):
    f = fsspec.open(path, "rb").open()
    if offset:
        f.seek(offset)
    return f


def _fail(pipe, exc, index, path, line):
    """Report a bad record: raise (with the file and line in the message) or skip it."""
    if not isinstance(exc, DatasetFormatError):
        reason = str(exc) or type(exc).__name__
        exc = DatasetFormatError(f"{path}, line {line}: {reason}", path=path, line=line)
    handle(pipe, exc, index, (f"{path}:{line}",))


class TextRecords(IterDataPipe):
    """The records of local (or any fsspec) text ``files``, in order.

    ``fmt``: "lines" (each line; ``strip_newline`` drops its line break, ``skip_blank``
    leaves out empty lines), "csv" (rows through Python's ``csv`` with ``delimiter`` and
    ``quoting``; fields may span lines; blank lines are skipped) or "jsonl" (one JSON value
    per non-blank line). ``skip_lines`` lines are dropped at the start of each file; with
    ``header`` the next CSV row is the file's header (given to ``parse`` in ``where``).
    ``parse(record, where)`` turns a record into the item yielded (default: the record
    itself); an exception it raises makes the record a bad one (see the module doc).
    """

    def __init__(self, files, parse=None, *, fmt="lines", delimiter=",",
                 quoting=csv.QUOTE_MINIMAL, header=False, skip_lines=0, strip_newline=True,
                 skip_blank=False, encoding="utf-8", on_error=None, name="TextRecords"):
        if fmt not in FORMATS:
            raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
        self.files = [files] if isinstance(files, str) else [str(f) for f in files]
        self.parse, self.fmt = parse, fmt
        self.delimiter, self.quoting, self.header = delimiter, quoting, bool(header)
        self.skip_lines, self.strip_newline = int(skip_lines), strip_newline
        self.skip_blank, self.encoding, self.name = skip_blank, encoding, name
        self.on_error = check_policy(on_error)

    def __iter__(self):
        return _RecordsIter(self)

    def describe(self):
        return f"{self.name}({len(self.files)} file{'s' * (len(self.files) != 1)}, {self.fmt})"


class _RecordsIter(PipeIter):
    def __init__(self, pipe):
        self.pipe = pipe
        self.i = 0            # index of the current file
        self.f = None         # its binary file object (None between files)
        self.offset = 0       # bytes consumed in it
        self.line = 0         # lines consumed in it
        self.header = None    # its CSV header
        self.count = 0        # records read so far (good and bad): the skip log's index

    # ------------------------------------------------------------------ reading
    def _raw(self):
        """The next raw line (bytes, with its line break), or b"" at the end."""
        raw = self.f.readline()
        if raw:
            self.offset += len(raw)
            self.line += 1
        return raw

    def _decode(self, raw):
        try:
            return raw.decode(self.pipe.encoding)
        except UnicodeDecodeError as e:
            raise _Bad(f"not valid {self.pipe.encoding} ({e.reason} at byte {e.start} of the "
                       f"line)", self.line) from None

    def _text_line(self):
        raw = self._raw()
        if not raw:
            raise EOFError
        return self._decode(raw)

    def _csv_row(self):
        """The next CSV row (a list of strings) and its first line; blank lines skipped."""
        p = self.pipe
        first = [None]

        def lines():
            while True:
                raw = self._raw()
                if not raw:
                    return
                if first[0] is None:
                    first[0] = self.line
                yield self._decode(raw)
        # a fresh reader per row pulls exactly that row's lines, so the offset stays exact
        reader = csv.reader(lines(), delimiter=p.delimiter, quoting=p.quoting, strict=True)
        while True:
            first[0] = None
            try:
                row = next(reader)
            except StopIteration:
                raise EOFError from None
            except csv.Error as e:
                raise _Bad(f"malformed CSV ({e})", first[0] or self.line) from None
            if row:
                return row, first[0]

    def _next_record(self):
        """(record, first line) of the current file; EOFError at its end; _Bad for a record
        that cannot be read."""
        p = self.pipe
        if p.fmt == "csv":
            return self._csv_row()
        while True:
            text = self._text_line()
            if p.fmt == "jsonl":
                if not text.strip():
                    continue
                try:
                    return json.loads(text), self.line
                except json.JSONDecodeError as e:
                    raise _Bad(f"invalid JSON ({e.msg} at column {e.colno})", self.line) \
                        from None
            if p.strip_newline and text.endswith("\n"):
                text = text[:-2] if text.endswith("\r\n") else text[:-1]
            if p.skip_blank and not text.strip():
                continue
            return text, self.line

    def _start_file(self):
        p = self.pipe
        self.f, self.offset, self.line, self.header = _open(p.files[self.i], 0), 0, 0, None
        for _ in range(p.skip_lines):
            if not self._raw():
                break
        if p.fmt == "csv" and p.header:
            try:
                self.header, _ = self._csv_row()
            except EOFError:
                self.header = []

    def _close(self):
        if self.f is not None:
            self.f.close()
        self.f = None

    def __next__(self):
        p = self.pipe
        while True:
            if self.f is None:
                if self.i >= len(p.files):
                    raise StopIteration
                try:
                    self._start_file()
                except _Bad as e:   # an unreadable header: the file cannot be used
                    path, line = p.files[self.i], e.line
                    self._close()
                    self.i += 1
                    self.count += 1
                    _fail(p, DatasetFormatError(f"{path}, line {line}: header: {e}", path, line),
                          self.count - 1, path, line)
                    continue
            path = p.files[self.i]
            try:
                rec, line = self._next_record()
            except EOFError:
                self._close()
                self.i += 1
                continue
            except _Bad as e:
                self.count += 1
                _fail(p, e, self.count - 1, path, e.line)
                continue
            self.count += 1
            if p.parse is None:
                return rec
            try:
                return p.parse(rec, Where(path, line, self.header))
            except Exception as e:
                _fail(p, e, self.count - 1, path, line)

    # ------------------------------------------------------------------ state
    def state_dict(self):
        return {"i": self.i, "open": self.f is not None, "offset": self.offset,
                "line": self.line, "header": self.header, "count": self.count}

    def load_state_dict(self, state):
        self._close()
        self.i, self.count = state["i"], state["count"]
        self.offset, self.line, self.header = state["offset"], state["line"], state["header"]
        if state["open"]:
            self.f = _open(self.pipe.files[self.i], self.offset)

    def reset(self):
        self._close()
        self.__init__(self.pipe)


class ParallelLines(IterDataPipe):
    """``(line of a, line of b)`` for two line-aligned files (a translation pair), read in
    step; ``strip_newline`` drops the line breaks. Files of different lengths are a format
    error naming both files and the line where one of them ended."""

    def __init__(self, path_a, path_b, *, strip_newline=True, encoding="utf-8",
                 on_error=None, name="ParallelLines"):
        self.paths = (str(path_a), str(path_b))
        self.strip_newline, self.encoding, self.name = strip_newline, encoding, name
        self.on_error = check_policy(on_error)

    def __iter__(self):
        return _ParallelIter(self)

    def describe(self):
        return f"{self.name}({self.paths[0]}, {self.paths[1]})"


class _ParallelIter(PipeIter):
    def __init__(self, pipe, offsets=(0, 0), line=0, done=False):
        self.pipe = pipe
        self.offsets, self.line, self.done = list(offsets), line, done
        self.files = None if done else [_open(p, o) for p, o in zip(pipe.paths, offsets)]

    def _line(self, k, raw):
        p = self.pipe
        try:
            text = raw.decode(p.encoding)
        except UnicodeDecodeError as e:
            raise DatasetFormatError(f"{p.paths[k]}, line {self.line}: not valid {p.encoding} "
                                     f"({e.reason})", p.paths[k], self.line) from None
        if p.strip_newline and text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
        return text

    def __next__(self):
        p = self.pipe
        while not self.done:
            raws = [f.readline() for f in self.files]
            self.offsets = [o + len(r) for o, r in zip(self.offsets, raws)]
            if not raws[0] and not raws[1]:
                self._finish()
                break
            self.line += 1
            if not raws[0] or not raws[1]:
                short, long_ = (0, 1) if not raws[0] else (1, 0)
                self._finish()
                err = DatasetFormatError(
                    f"{p.paths[short]}, line {self.line}: the file ends here but "
                    f"{p.paths[long_]} goes on (the two files must have one line each per "
                    f"pair)", p.paths[short], self.line)
                _fail(p, err, self.line - 1, p.paths[short], self.line)
                break
            try:
                return self._line(0, raws[0]), self._line(1, raws[1])
            except DatasetFormatError as e:
                _fail(p, e, self.line - 1, e.path, self.line)
        raise StopIteration

    def _finish(self):
        for f in self.files or ():
            f.close()
        self.files, self.done = None, True

    def state_dict(self):
        return {"offsets": list(self.offsets), "line": self.line, "done": self.done}

    def load_state_dict(self, state):
        self._finish()
        self.__init__(self.pipe, state["offsets"], state["line"], state["done"])

    def reset(self):
        self._finish()
        self.__init__(self.pipe)


class JsonEntries(IterDataPipe):
    """The entries of whole JSON documents: each file is parsed (a syntax error names the
    file and line) and ``entries(document, path)`` yields its items; it may yield an
    exception instance for an entry it cannot read (reported, or skipped, like a bad
    record). State: the file and the number of entries consumed."""

    def __init__(self, files, entries, *, encoding="utf-8", on_error=None, name="JsonEntries"):
        self.files = [files] if isinstance(files, str) else [str(f) for f in files]
        self.entries, self.encoding, self.name = entries, encoding, name
        self.on_error = check_policy(on_error)

    def __iter__(self):
        return _JsonIter(self)

    def describe(self):
        return f"{self.name}({len(self.files)} file{'s' * (len(self.files) != 1)}, json)"


class _JsonIter(PipeIter):
    def __init__(self, pipe):
        self.pipe, self.i, self.k, self.gen, self.count = pipe, 0, 0, None, 0

    def _load(self, skip):
        p = self.pipe
        path = p.files[self.i]
        with fsspec.open(path, "rb") as f:
            data = f.read()
        try:
            doc = json.loads(data.decode(p.encoding))
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise DatasetFormatError(f"{path}, line {line}: not valid {p.encoding} "
                                     f"({e.reason})", path, line) from None
        except json.JSONDecodeError as e:
            raise DatasetFormatError(f"{path}, line {e.lineno}: invalid JSON ({e.msg} at "
                                     f"column {e.colno})", path, e.lineno) from None
        self.gen, self.k = iter(p.entries(doc, path)), 0
        for _ in range(skip):
            next(self.gen)
            self.k += 1

    def __next__(self):
        p = self.pipe
        while True:
            if self.gen is None:
                if self.i >= len(p.files):
                    raise StopIteration
                try:
                    self._load(0)
                except DatasetFormatError as e:
                    self.i += 1
                    self.count += 1
                    _fail(p, e, self.count - 1, e.path, e.line)
                    continue
            try:
                item = next(self.gen)
            except StopIteration:
                self.gen, self.i = None, self.i + 1
                continue
            self.k += 1
            self.count += 1
            if isinstance(item, Exception):
                _fail(p, item, self.count - 1, p.files[self.i], getattr(item, "line", None))
                continue
            return item

    def state_dict(self):
        return {"i": self.i, "k": self.k if self.gen is not None else None,
                "count": self.count}

    def load_state_dict(self, state):
        self.i, self.count, self.gen = state["i"], state["count"], None
        if state["k"] is not None:
            self._load(state["k"])
