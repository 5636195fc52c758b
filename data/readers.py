"""Record readers over ``(url, Stream)`` pairs: lines, CSV/TSV rows, JSON lines.

Each reader keeps its position as a byte offset into the current file, so its state is
``(upstream state, stream spec, offset, record number)`` and a restored reader reopens the
file at that offset (no re-reading of what was consumed).

    >>> import fsspec
    >>> from ember.data import IterableWrapper
    >>> fsspec.filesystem("memory").pipe("/t.tsv", b"a\\tb\\n1\\t2\\n3\\t4\\n")
    >>> files = IterableWrapper(["memory:///t.tsv"]).open_files()
    >>> list(files.parse_csv(delimiter="\\t", as_dict=True))
    [{'a': '1', 'b': '2'}, {'a': '3', 'b': '4'}]
"""
from __future__ import annotations

import csv
import json

from .errors import handle
from .files import Stream
from .pipe import IterDataPipe, SourceIter, register


class _Reader(IterDataPipe):
    def __init__(self, source, *, encoding="utf-8", return_path=True):
        self.source, self.encoding, self.return_path = source, encoding, return_path

    def __iter__(self):
        return _ReaderIter(self)

    def start(self, it):
        """Per-file setup (skip lines, read a header); returns per-file context."""
        return None

    def read(self, it):
        """The next record of the current file, or raise EOFError at its end."""
        raise NotImplementedError(f"{type(self).__name__} must define read(it): a reader "
                                  "subclass returns the next record of the current file")


class _ReaderIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.url = None
        self.stream = None  # the Stream of the current file (None between files)
        self.f = None       # its binary file object
        self.offset = 0     # bytes consumed in the current file
        self.n = 0          # records read from the current file
        self.ctx = None     # per-file context (CSV header)

    def readline(self):
        line = self.f.readline()
        self.offset += len(line)
        return line

    def _open(self, url, stream, offset):
        if not isinstance(stream, Stream):
            stream = _wrap_foreign(stream)
        if offset:
            stream = stream.reopen(offset)  # keep it referenced: a dropped Stream closes its file
        self.url, self.stream = url, stream
        self.f = stream.binary()
        self.offset = offset

    def _close(self):
        if self.stream is not None:
            self.stream.close()
        self.url = self.stream = self.f = self.ctx = None

    def __next__(self):
        pipe = self.pipe
        while True:
            if self.stream is None:
                url, stream = next(self.src)
                self._open(url, stream, 0)
                self.n = 0
                self.ctx = pipe.start(self)
            try:
                rec = pipe.read(self)
            except EOFError:
                self._close()
                continue
            except Exception as e:
                self.n += 1
                handle(pipe, e, self.n - 1, (self.url,))
                continue
            self.n += 1
            return (self.url, rec) if pipe.return_path else rec

    def state_dict(self):
        cur = None
        if self.stream is not None:
            s = self.stream
            cur = {"url": self.url, "spec": s.spec, "mode": s.mode, "encoding": s.encoding,
                   "offset": self.offset, "n": self.n, "ctx": self.ctx}
        return {"src": self.src.state_dict(), "cur": cur}

    def load_state_dict(self, state):
        self._close()
        self.src.load_state_dict(state["src"])
        cur = state["cur"]
        if cur is not None:
            stream = Stream(cur["spec"], cur["mode"], cur["encoding"])
            self._open(cur["url"], stream, cur["offset"])
            self.n, self.ctx = cur["n"], cur["ctx"]


def _wrap_foreign(f):
    """A plain file object (not an ember Stream): read it into memory once."""
    data = f.read()
    if isinstance(data, str):
        data = data.encode("utf-8")
    return Stream(("bytes", data), "b")


def _decode(line, encoding, strip):
    text = line.decode(encoding)
    if strip:
        if text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


@register("readlines")
class LineReader(_Reader):
    """``(url, line)`` for each line of each file (newline stripped by default)."""

    def __init__(self, source, *, strip_newline=True, encoding="utf-8", return_path=True):
        super().__init__(source, encoding=encoding, return_path=return_path)
        self.strip_newline = strip_newline

    def read(self, it):
        line = it.readline()
        if not line:
            raise EOFError
        return _decode(line, self.encoding, self.strip_newline)


@register("parse_csv")
class CSVParser(_Reader):
    """Rows of each CSV/TSV file: lists of strings, or dicts keyed by the header row with
    ``as_dict``. ``skip_lines`` lines are skipped at the start of each file; other keyword
    arguments go to ``csv.reader`` (quotechar, ...). Quoted fields may span lines."""

    def __init__(self, source, *, delimiter=",", skip_lines=0, as_dict=False,
                 return_path=False, encoding="utf-8", **fmtparams):
        super().__init__(source, encoding=encoding, return_path=return_path)
        self.delimiter, self.skip_lines, self.as_dict = delimiter, skip_lines, as_dict
        self.fmtparams = fmtparams

    def _row(self, it):
        def lines():
            while True:
                line = it.readline()
                if not line:
                    return
                yield line.decode(self.encoding)
        # a fresh csv.reader per row: it pulls exactly the lines of one record, so the
        # byte offset after each row is exact (the reader holds no state between rows)
        for row in csv.reader(lines(), delimiter=self.delimiter, **self.fmtparams):
            return row
        raise EOFError

    def start(self, it):
        for _ in range(self.skip_lines):
            if not it.readline():
                break
        if self.as_dict:
            try:
                return self._row(it)
            except EOFError:
                return []
        return None

    def read(self, it):
        row = self._row(it)
        if self.as_dict:
            header = it.ctx
            if len(row) != len(header):
                raise ValueError(f"CSV row has {len(row)} fields, header has {len(header)}")
            return dict(zip(header, row))
        return row


@register("parse_jsonlines")
class JsonLinesParser(_Reader):
    """``(url, object)`` for each non-empty line of each JSON-lines file."""

    def __init__(self, source, *, return_path=True, encoding="utf-8"):
        super().__init__(source, encoding=encoding, return_path=return_path)

    def read(self, it):
        while True:
            line = it.readline()
            if not line:
                raise EOFError
            if line.strip():
                return json.loads(line.decode(self.encoding))
