"""Archive readers: tar (plain, .tar.gz, .tar.bz2, .tar.xz; streamed, never extracted to disk),
zip, and webdataset-style grouping of members by key.

Readers take ``(url, Stream)`` pairs (from ``open_files(mode="b")``) and yield
``(url/member_name, Stream)`` for each regular member, in archive order. Their state is the
upstream state, the archive being read and the number of members consumed; a restored reader
reopens that archive and skips to the position.

A corrupt archive raises (``tarfile.ReadError``, ``zipfile.BadZipFile``, ``EOFError``,
``zlib.error``) with a note naming the archive; with ``on_error="skip"`` a bad zip member is
skipped, and a tar stream that breaks is abandoned at that point (a stream cannot be
re-synchronised), each counted in the skip log.

    >>> import io, tarfile, fsspec
    >>> from ember.data import IterableWrapper
    >>> buf = io.BytesIO()
    >>> members = [("s1.txt", b"hi"), ("s1.cls", b"0"), ("s2.txt", b"yo"), ("s2.cls", b"1")]
    >>> with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    ...     for name, data in members:
    ...         info = tarfile.TarInfo(name)
    ...         info.size = len(data)
    ...         tar.addfile(info, io.BytesIO(data))
    >>> fsspec.filesystem("memory").pipe("/shard0.tar.gz", buf.getvalue())
    >>> dp = IterableWrapper(["memory:///shard0.tar.gz"]).open_files("b").load_from_tar()
    >>> dp = dp.webdataset()
    >>> [(s["__key__"].rsplit("/", 1)[-1], s[".txt"], s[".cls"]) for s in dp]
    [('s1', b'hi', b'0'), ('s2', b'yo', b'1')]
"""
from __future__ import annotations

import io
import posixpath
import tarfile
import zipfile
import zlib

from .errors import check_policy, handle
from .files import Stream, open_spec
from .pipe import IterDataPipe, SourceIter, register
from .readers import _wrap_foreign

_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError,
                   ValueError)


def _iter_tar_members(f):
    """(TarInfo, data) for each member of a tar stream; also yields non-files (data None)."""
    tar = tarfile.open(fileobj=f, mode="r|*")
    try:
        while True:
            m = tar.next()
            if m is None:
                # tarfile ends quietly on a cut-off header; a complete archive ends with a
                # full zero block, so a short read at the end means truncation
                if tar.fileobj.tell() < tar.offset + tarfile.BLOCKSIZE:
                    raise tarfile.ReadError("truncated tar archive (no end-of-archive block)")
                return
            data = tar.extractfile(m).read() if m.isfile() else None
            yield m, data
    finally:
        tar.close()


def open_member(spec):
    """The bytes of one archive member, as a BytesIO (``("member", kind, archive_spec, name)``)."""
    _, kind, archive_spec, name = spec
    with open_spec(archive_spec) as f:
        if kind == "zip":
            if not f.seekable():
                f = io.BytesIO(f.read())
            with zipfile.ZipFile(f) as zf:
                return io.BytesIO(zf.read(name))
        for m, data in _iter_tar_members(f):
            if m.name == name and data is not None:
                return io.BytesIO(data)
    raise FileNotFoundError(f"member {name!r} not found in {archive_spec[1]!r}")


class _ArchiveLoader(IterDataPipe):
    kind = ""

    def __init__(self, source, *, on_error=None):
        self.source = source
        self.on_error = check_policy(on_error)

    def __iter__(self):
        return _ArchiveIter(self)


class _ArchiveIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.url = None
        self.spec = None
        self.stream = None
        self.members = None  # iterator over (name, data) of the current archive
        self.k = 0           # members consumed from the current archive

    def _open(self, url, stream, skip):
        if not isinstance(stream, Stream):
            stream = _wrap_foreign(stream)
        self.url, self.spec = url, stream.spec
        self.stream = stream  # referenced while its members are read (a dropped Stream closes)
        self.members = self._members(stream.binary())
        self.k = 0
        for _ in range(skip):
            next(self.members)
            self.k += 1

    def _members(self, f):
        if self.pipe.kind == "tar":
            for m, data in _iter_tar_members(f):
                yield m.name, data
            return
        if not f.seekable():
            f = io.BytesIO(f.read())
        with zipfile.ZipFile(f) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    yield info.filename, None
                    continue
                try:
                    data = zf.read(info)
                except _ARCHIVE_ERRORS as e:  # one bad member: the others are still readable
                    yield info.filename, e
                    continue
                yield info.filename, data

    def _drop(self):
        if self.stream is not None:
            self.stream.close()
        self.url = self.spec = self.members = self.stream = None

    def __next__(self):
        while True:
            if self.members is None:
                url, stream = next(self.src)
                try:
                    self._open(url, stream, 0)
                except _ARCHIVE_ERRORS as e:
                    self._drop()
                    handle(self.pipe, e, 0, (url,))
                    continue
            try:
                name, data = next(self.members)
            except StopIteration:
                self._drop()
                continue
            except _ARCHIVE_ERRORS as e:  # the stream broke: the rest of it is lost
                url, k = self.url, self.k
                self._drop()
                handle(self.pipe, e, k, (url,))
                continue
            self.k += 1
            if data is None:
                continue
            path = f"{self.url}/{name}"
            if isinstance(data, BaseException):
                handle(self.pipe, data, self.k - 1, (path,))
                continue
            s = Stream(("member", self.pipe.kind, self.spec, name), "b")
            s._bin = io.BytesIO(data)
            return path, s

    def state_dict(self):
        cur = None if self.members is None else {"url": self.url, "spec": self.spec, "k": self.k}
        return {"src": self.src.state_dict(), "cur": cur}

    def load_state_dict(self, state):
        self._drop()
        self.src.load_state_dict(state["src"])
        cur = state["cur"]
        if cur is not None:
            self._open(cur["url"], Stream(cur["spec"], "b"), cur["k"])


@register("load_from_tar")
class TarArchiveLoader(_ArchiveLoader):
    """``(url/member, Stream)`` for each regular member of each tar archive (any compression
    tarfile detects), read as a stream."""

    kind = "tar"


@register("load_from_zip")
class ZipArchiveLoader(_ArchiveLoader):
    """``(url/member, Stream)`` for each member of each zip archive."""

    kind = "zip"


def _split_key(path):
    """``dir/abc.seg.jpg -> ("dir/abc", ".seg.jpg")``: the key ends at the basename's first dot."""
    d, base = posixpath.split(path)
    stem, dot, ext = base.partition(".")
    return posixpath.join(d, stem) if d else stem, dot + ext


@register("webdataset")
class WebDataset(IterDataPipe):
    """Group consecutive archive members sharing a key (the path up to the first dot of the
    file name) into one dict: ``{"__key__": key, ".jpg": bytes, ".cls": bytes, ...}``."""

    def __init__(self, source):
        self.source = source

    def __iter__(self):
        return _WdsIter(self)


def _read(x):
    return x.read() if hasattr(x, "read") else x


class _WdsIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.ahead = None  # the first member of the next sample, already read

    def __next__(self):
        if self.ahead is None:
            path, data = next(self.src)
            self.ahead = (path, _read(data))
        key, ext = _split_key(self.ahead[0])
        sample = {"__key__": key, ext: self.ahead[1]}
        self.ahead = None
        while True:
            try:
                path, data = next(self.src)
            except StopIteration:
                return sample
            k, ext = _split_key(path)
            if k != key:
                self.ahead = (path, _read(data))
                return sample
            if ext in sample:
                raise ValueError(f"webdataset: duplicate member {path!r} in sample {key!r}")
            sample[ext] = _read(data)

    def state_dict(self):
        return {"src": self.src.state_dict(), "ahead": self.ahead}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.ahead = None if state["ahead"] is None else tuple(state["ahead"])
