"""Where audio comes from and where it goes: local paths, ``bytes``, file objects and fsspec
URLs (``memory://``, ``s3://``, ``http(s)://``, ...), opened for PyAV.

Reading: ``open_input(src)`` returns an ``Input`` (the open ``av`` container, a name for
messages, the header bytes when cheaply available). Writing: ``Output(dst)`` is a context
manager giving what ``av.open(..., "w")`` takes; a local path is written to a temporary file
in the same folder and renamed over the destination only when everything succeeded (a crash
never leaves half a file under the real name); a URL is encoded in memory and uploaded in one
write.
"""
from __future__ import annotations

import errno
import io
import os
import secrets

import av

from ._errors import AudioError, ffmpeg_words

__all__ = ["Input", "Output", "open_input", "describe", "extension"]

# demuxer names for the format names users pass (those FFmpeg calls differently)
_DEMUXERS = {"vorbis": "ogg", "opus": "ogg", "oga": "ogg", "m4a": "mp4", "mp4": "mp4",
             "aac": "aac"}
_HEADER_BYTES = 1 << 16


def _url(s):
    return "://" in s and not s.startswith("file://")


def describe(src):
    """A short name of a source or destination for messages."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return f"<{len(src)} bytes>"
    if isinstance(src, (str, os.PathLike)):
        return repr(os.fsdecode(src))
    name = getattr(src, "name", None) or getattr(src, "path", None)
    kind = type(src).__name__
    return f"<{kind} {name!r}>" if isinstance(name, str) and name else f"<{kind}>"


def extension(obj):
    """The lower-case extension (without the dot) of a path, URL or named file object."""
    if isinstance(obj, (str, os.PathLike)):
        s = os.fsdecode(obj)
    else:
        s = getattr(obj, "name", None) or getattr(obj, "path", None)
        if not isinstance(s, str):
            return None
    s = s.split("?", 1)[0].split("#", 1)[0]
    base = s.rstrip("/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[1].lower() if "." in base else None


class Input:
    """An opened source: ``container`` (av), ``name`` (for messages) and ``head`` (up to the
    first 64 KiB of the file when they could be read without disturbing the stream, else
    ``None``: used to read headers FFmpeg does not report, e.g. a WAV's declared length)."""

    __slots__ = ("container", "name", "head", "_tail", "_closers")

    def __init__(self, container, name, head, closers, tail=None):
        self.container, self.name, self.head, self._closers = container, name, head, closers
        self._tail = tail

    def tail(self):
        """The last 64 KiB of the file, or None when they cannot be read without disturbing
        the stream (call it after decoding: file objects are repositioned)."""
        try:
            return self._tail() if self._tail is not None else None
        except (OSError, ValueError, AttributeError):
            return None

    def close(self):
        try:
            self.container.close()
        finally:
            for c in self._closers:
                c()
            self._closers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _peek(fobj):
    """The first bytes of a seekable file object, its position restored; None otherwise."""
    try:
        if not fobj.seekable():
            return None
        pos = fobj.tell()
        fobj.seek(0)
        head = fobj.read(_HEADER_BYTES)
        fobj.seek(pos)
        return bytes(head) if head is not None else None
    except (AttributeError, OSError, ValueError):
        return None


def _tail_of(fobj):
    def read():
        if not fobj.seekable():
            return None
        pos = fobj.tell()
        end = fobj.seek(0, os.SEEK_END)
        fobj.seek(max(0, end - _HEADER_BYTES))
        data = fobj.read(_HEADER_BYTES)
        fobj.seek(pos)
        return bytes(data) if data is not None else None
    return read


def _tail_of_path(path):
    def read():
        with open(path, "rb") as f:
            return _tail_of(f)()
    return read


def open_input(src, format=None, option=None, buffer_size=4096):
    """Open ``src`` (path, URL, bytes or binary file object) with PyAV. FFmpeg's refusals
    become ``AudioError`` naming the source; a missing local file is ``FileNotFoundError``."""
    name = describe(src)
    closers = []
    head = tail = None
    if isinstance(src, (bytes, bytearray, memoryview)):
        target = io.BytesIO(src)
        head = bytes(memoryview(src)[:_HEADER_BYTES])
        tail = (lambda m=memoryview(src): bytes(m[-_HEADER_BYTES:]))
    elif isinstance(src, (str, os.PathLike)):
        s = os.fsdecode(src)
        if s.startswith("file://"):
            s = s[len("file://"):]
        if _url(s):
            import fsspec

            try:
                target = fsspec.open(s, "rb").open()
            except FileNotFoundError as e:
                raise FileNotFoundError(errno.ENOENT, f"No such file: {s}") from e
            closers.append(target.close)
            head = _peek(target)
            tail = _tail_of(target)
        else:
            if not os.path.exists(s):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", s)
            if os.path.isdir(s):
                raise IsADirectoryError(errno.EISDIR, "Is a directory (expected an audio file)",
                                        s)
            target = s
            tail = _tail_of_path(s)
            try:
                with open(s, "rb") as f:
                    head = f.read(_HEADER_BYTES)
            except OSError:
                head = None
    elif hasattr(src, "read"):
        target = src
        head = _peek(src)
        tail = _tail_of(src)
    else:
        raise TypeError(f"audio source must be a path, URL, bytes or a binary file object, "
                        f"got {type(src).__name__}")
    demuxer = _DEMUXERS.get(format, format) if format is not None else None
    try:
        container = av.open(target, "r", format=demuxer, options=dict(option or {}),
                            buffer_size=buffer_size)
    except av.error.FFmpegError as e:
        for c in closers:
            c()
        if isinstance(e, FileNotFoundError):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", name) from None
        what = f" as format {format!r}" if format else ""
        raise AudioError(f"cannot open {name}{what}: FFmpeg reported: {ffmpeg_words(e)}",
                         name, ffmpeg_words(e)) from None
    except BaseException:
        for c in closers:
            c()
        raise
    return Input(container, name, head, closers, tail)


class Output:
    """``with Output(dst) as target: av.open(target, "w", format=...)``; committed on a clean
    exit, discarded on an exception.

    Local paths: a temporary sibling file (created with the process umask) replaces ``dst``
    atomically with ``os.replace``. URLs: an in-memory buffer written through fsspec in one
    piece. File objects: written directly (the caller owns them)."""

    def __init__(self, dst):
        self.dst = dst
        self.name = describe(dst)
        self._tmp = None
        self._buf = None
        self._url = None

    def __enter__(self):
        dst = self.dst
        if isinstance(dst, (str, os.PathLike)):
            s = os.fsdecode(dst)
            if s.startswith("file://"):
                s = s[len("file://"):]
            if _url(s):
                self._url = s
                self._buf = io.BytesIO()
                return self._buf
            folder, base = os.path.split(os.path.abspath(s))
            if not os.path.isdir(folder):
                raise FileNotFoundError(errno.ENOENT, "No such directory", folder)
            for _ in range(100):
                tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
                try:
                    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
                except FileExistsError:
                    continue
                os.close(fd)
                break
            self._tmp, self._final = tmp, s
            return tmp
        if hasattr(dst, "write"):
            return dst
        raise TypeError(f"audio destination must be a path, URL or a writable binary file "
                        f"object, got {type(dst).__name__}")

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            if self._tmp is not None and os.path.exists(self._tmp):
                os.unlink(self._tmp)
            return False
        if self._tmp is not None:
            os.replace(self._tmp, self._final)
        elif self._url is not None:
            import fsspec

            with fsspec.open(self._url, "wb") as f:
                f.write(self._buf.getbuffer())
        return False
