"""Files on fsspec: ``FileLister``, ``FileOpener``, ``HttpReader``, ``Saver``, and ``Stream``.

Any fsspec URL works: local paths, ``file://``, ``memory://``, ``http(s)://``, and cloud
stores when their fsspec backend is installed. Openers yield ``(url, Stream)``; a ``Stream``
is opened lazily, reads bytes (mode "b") or text (mode "r"), and knows how to reopen itself
at a byte offset, which is what lets readers downstream save their position in a file.

    >>> import fsspec
    >>> from ember.data import FileLister
    >>> fs = fsspec.filesystem("memory")
    >>> fs.pipe({"/doc/a.txt": b"x\\ny\\n", "/doc/b.txt": b"z\\n", "/doc/c.csv": b"1,2\\n"})
    >>> list(FileLister("memory:///doc", masks="*.txt"))
    ['memory:///doc/a.txt', 'memory:///doc/b.txt']
    >>> [line for _, line in FileLister("memory:///doc", "*.txt").open_files().readlines()]
    ['x', 'y', 'z']
"""
from __future__ import annotations

import fnmatch
import io
import os
import posixpath
import uuid

import fsspec

from .pipe import IterDataPipe, SourceIter, register
from .sources import IterableWrapper

_GLOB = set("*?[")


# ----------------------------------------------------------------------------- streams
def open_spec(spec):
    """A binary file object for a stream spec (see ``Stream``)."""
    kind = spec[0]
    if kind == "file":
        _, url, kwargs = spec
        return fsspec.open(url, "rb", **kwargs).open()
    if kind == "http":
        _, url, timeout, kwargs = spec
        f = _http_fs(timeout, kwargs).open(url, "rb", block_size=0)
        return io.BufferedReader(_Raw(f), buffer_size=1 << 16)
    if kind == "member":
        from .archives import open_member

        return open_member(spec)
    if kind == "bytes":
        return io.BytesIO(spec[1])
    raise ValueError(f"unknown stream spec {spec!r}")


class _Raw(io.RawIOBase):
    """A forward-only file (an HTTP response stream) as raw I/O, so that io.BufferedReader can
    give it readline() without seeking."""

    def __init__(self, f):
        self.f = f

    def readable(self):
        return True

    def readinto(self, b):
        data = self.f.read(len(b))
        n = len(data)
        b[:n] = data
        return n

    def close(self):
        if not self.closed:
            self.f.close()
        super().close()


def _http_fs(timeout, kwargs):
    client_kwargs = dict(kwargs.pop("client_kwargs", {}) if kwargs else {})
    if timeout is not None:
        import aiohttp

        client_kwargs["timeout"] = aiohttp.ClientTimeout(total=timeout)
    return fsspec.filesystem("http", client_kwargs=client_kwargs, skip_instance_cache=True,
                             **(kwargs or {}))


class Stream:
    """A lazily opened, reopenable file-like object.

    ``spec`` says where the bytes come from: ``("file", url, open_kwargs)``,
    ``("http", url, timeout, kwargs)``, ``("member", kind, archive_spec, name)`` (an archive
    member) or ``("bytes", data)``. ``mode``: "b" (bytes) or "r" (text in ``encoding``).
    ``binary()`` is the underlying binary file; ``reopen(offset)`` a new Stream at ``offset``.
    """

    def __init__(self, spec, mode="b", encoding="utf-8", offset=0):
        self.spec, self.mode, self.encoding = spec, mode, encoding
        self._offset = offset
        self._bin = None
        self._text = None

    @property
    def name(self):
        if self.spec[0] == "member":
            return self.spec[3]
        return self.spec[1] if isinstance(self.spec[1], str) else "<bytes>"

    def binary(self):
        if self._bin is None:
            f = open_spec(self.spec)
            if self._offset:
                try:
                    f.seek(self._offset)
                except (OSError, ValueError, io.UnsupportedOperation, NotImplementedError):
                    left = self._offset  # a stream without seek: read forward
                    while left:
                        chunk = f.read(min(left, 1 << 20))
                        if not chunk:
                            break
                        left -= len(chunk)
            self._bin = f
        return self._bin

    def _textio(self):
        if self._text is None:
            self._text = io.TextIOWrapper(self.binary(), encoding=self.encoding, newline="")
        return self._text

    def read(self, n=-1):
        return self.binary().read(n) if self.mode == "b" else self._textio().read(n)

    def readline(self):
        return self.binary().readline() if self.mode == "b" else self._textio().readline()

    def __iter__(self):
        return iter(self.binary() if self.mode == "b" else self._textio())

    def seek(self, pos, whence=0):
        return self.binary().seek(pos, whence)

    def tell(self):
        return self.binary().tell()

    def reopen(self, offset=0):
        return Stream(self.spec, self.mode, self.encoding, offset)

    def close(self):
        f, self._bin, self._text = self._bin, None, None
        if f is not None:
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self):
        return {"spec": self.spec, "mode": self.mode, "encoding": self.encoding,
                "_offset": self._offset, "_bin": None, "_text": None}

    def __repr__(self):
        return f"Stream({self.name!r}, mode={self.mode!r})"


def _norm_mode(mode):
    m = mode.replace("t", "")
    if m in ("r", "b", "rb"):
        return "b" if "b" in m else "r"
    raise ValueError(f"open_files: mode must be 'r', 'rt', 'b' or 'rb', got {mode!r}")


# ----------------------------------------------------------------------------- listing
def list_url(root, masks=("",), recursive=False):
    """Sorted URLs of the files under ``root`` (a file, directory, or glob pattern)."""
    fs, path = fsspec.core.url_to_fs(root)
    plain_local = "://" not in root and not root.startswith("file:")
    if any(c in _GLOB for c in path):
        paths = [p for p in fs.glob(path) if fs.isfile(p)]
    elif fs.isfile(path):
        paths = [path]
    else:
        if not fs.exists(path):
            raise FileNotFoundError(f"FileLister: {root!r} does not exist")
        paths = fs.find(path, maxdepth=None if recursive else 1)
    if masks and any(masks):
        paths = [p for p in paths
                 if any(fnmatch.fnmatch(posixpath.basename(p), m) for m in masks if m)]
    paths.sort()
    if plain_local:
        return paths
    return [fs.unstrip_protocol(p) for p in paths]


def _as_pipe(source):
    if isinstance(source, IterDataPipe):
        return source
    if isinstance(source, (str, os.PathLike)):
        return IterableWrapper([os.fspath(source)])
    return IterableWrapper(list(source))


@register("list_files")
class FileLister(IterDataPipe):
    """URLs of the files under each root (a path, URL or glob; or a pipe of them), sorted.

    ``masks``: shell patterns on the file name ("*.jpg" or a list); ``recursive``: descend into
    sub-directories. State: the root being listed and the position in its listing."""

    def __init__(self, root=".", masks="", *, recursive=False):
        self.source = _as_pipe(root)
        self.masks = [masks] if isinstance(masks, str) else list(masks)
        self.recursive = recursive

    def __iter__(self):
        return _ListIter(self)

    def describe(self):
        return f"FileLister(masks={self.masks}, recursive={self.recursive})"


class _ListIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.root, self.files, self.i = None, [], 0

    def __next__(self):
        while self.i >= len(self.files):
            self.root = next(self.src)
            self.files = list_url(self.root, self.pipe.masks, self.pipe.recursive)
            self.i = 0
        url = self.files[self.i]
        self.i += 1
        return url

    def state_dict(self):
        return {"src": self.src.state_dict(), "root": self.root, "i": self.i}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.root, self.i = state["root"], state["i"]
        self.files = [] if self.root is None else \
            list_url(self.root, self.pipe.masks, self.pipe.recursive)


@register("open_files")
class FileOpener(IterDataPipe):
    """``(url, Stream)`` for each URL; ``mode`` "r" (text) or "b" (bytes)."""

    def __init__(self, source, mode="r", encoding=None, **open_kwargs):
        self.source = _as_pipe(source)
        self.mode = _norm_mode(mode)
        self.encoding = encoding or "utf-8"
        self.open_kwargs = open_kwargs

    def __iter__(self):
        return _OpenIter(self)

    def __len__(self):
        return len(self.source)

    def describe(self):
        return f"FileOpener(mode={self.mode!r})"

    def make_stream(self, url):
        return Stream(("file", url, self.open_kwargs), self.mode, self.encoding)


class _OpenIter(SourceIter):
    def __next__(self):
        url = next(self.src)
        return url, self.pipe.make_stream(url)


@register("read_from_http")
class HttpReader(FileOpener):
    """``(url, Stream)`` for each http(s) URL, streamed through fsspec's HTTP backend
    (aiohttp); ``timeout`` in seconds for each request."""

    def __init__(self, source, timeout=None, **open_kwargs):
        super().__init__(source, "b", None, **open_kwargs)
        self.timeout = timeout

    def make_stream(self, url):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"read_from_http: expected an http(s) URL, got {url!r}")
        return Stream(("http", url, self.timeout, self.open_kwargs), "b")

    def describe(self):
        return f"HttpReader(timeout={self.timeout})"


@register("save_to_disk")
class Saver(IterDataPipe):
    """Write each ``(url, data)`` (bytes, str or a readable stream) to ``filepath_fn(url)``
    (the url itself by default) atomically: a temporary file in the same folder, then a
    rename. Yields the written URL."""

    def __init__(self, source, mode="wb", filepath_fn=None):
        if mode not in ("w", "wb"):
            raise ValueError(f"save_to_disk: mode must be 'w' or 'wb', got {mode!r}")
        self.source, self.mode, self.filepath_fn = source, mode, filepath_fn

    def __iter__(self):
        return _SaveIter(self)

    def __len__(self):
        return len(self.source)


def atomic_write(url, data, mode="wb"):
    """Write ``data`` to ``url`` through a temporary sibling and a rename."""
    fs, path = fsspec.core.url_to_fs(url)
    parent = posixpath.dirname(path)
    if parent:
        fs.makedirs(parent, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    if hasattr(data, "read"):
        data = data.read()
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif mode == "w":
        raise TypeError("save_to_disk(mode='w') expects str data")
    try:
        with fs.open(tmp, "wb") as f:
            f.write(data)
        if type(fs).__name__ == "LocalFileSystem":
            os.replace(tmp, path)
        else:
            fs.mv(tmp, path)
    except BaseException:
        try:
            fs.rm(tmp)
        except Exception:
            pass
        raise
    return url


class _SaveIter(SourceIter):
    def __next__(self):
        url, data = next(self.src)
        target = self.pipe.filepath_fn(url) if self.pipe.filepath_fn else url
        return atomic_write(target, data, self.pipe.mode)
