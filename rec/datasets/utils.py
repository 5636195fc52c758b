"""What the rec datasets share: the ``Batch`` a recommender model trains on, the error a bad
file raises, and getting a published archive (``fetch``: ``ember.hub`` download into a cache
folder, checked against the published hash, unpacked atomically).

    >>> import ember
    >>> from ember.rec import KeyedJaggedTensor
    >>> b = Batch(dense_features=ember.zeros(2, 3),
    ...           sparse_features=KeyedJaggedTensor.from_lengths_sync(
    ...               ["f"], ember.tensor([1, 2]), ember.tensor([1, 1])),
    ...           labels=ember.tensor([0.0, 1.0]))
    >>> b.batch_size, b.to("cpu").dense_features.shape, b.pin_memory().labels.tolist()
    (2, (2, 3), [0.0, 1.0])
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import zipfile
from dataclasses import dataclass
from typing import Any, NamedTuple

from ember.data.pipe import IterDataPipe, PipeIter

__all__ = ["Batch", "DatasetFormatError", "FieldError", "LineRecords", "Resource",
           "dataset_dir", "fetch", "unpack", "file_md5"]


@dataclass
class Batch:
    """One training batch of a recommender (torchrec's ``Batch``): ``dense_features``
    (B, n_dense) float Tensor, ``sparse_features`` a ``KeyedJaggedTensor`` of batch size B,
    ``labels`` (B,) Tensor."""

    dense_features: Any
    sparse_features: Any
    labels: Any

    @property
    def batch_size(self):
        return int(self.labels.shape[0])

    def to(self, device, non_blocking=False):
        return Batch(self.dense_features.to(device), self.sparse_features.to(device),
                     self.labels.to(device))

    def pin_memory(self):
        """Each part pinned where it can be (numpy host memory needs nothing)."""
        def pin(x):
            return x.pin_memory() if hasattr(x, "pin_memory") else x
        return Batch(pin(self.dense_features), pin(self.sparse_features), pin(self.labels))


class DatasetFormatError(ValueError):
    """A row of a dataset file that does not hold what its format says; ``path``, ``line``
    (1-based) and ``field`` (the column's name) say where."""

    def __init__(self, message, path=None, line=None, field=None):
        super().__init__(message)
        self.path, self.line, self.field = path, line, field


class FieldError(ValueError):
    """Raised by a line parser: ``field`` names the column (None: the line as a whole); the
    reader turns it into a ``DatasetFormatError`` with the file and line."""

    def __init__(self, field, message):
        super().__init__(message)
        self.field = field


_REMOTE = ("memory:", "http:", "https:", "s3:", "gs:", "file:")


class LineRecords(IterDataPipe):
    """``parse(line_text)`` for each non-empty line of the files ``paths`` (local paths or
    fsspec URLs; compression inferred from the suffix), after ``header`` lines skipped per
    file. ``parse`` raising ``FieldError`` (or ``ValueError``) becomes a
    ``DatasetFormatError`` naming the file, the line and the field.

    Iteration state is explicit (file index, byte offset, line number): a restored
    iterator reopens the file at its offset."""

    def __init__(self, paths, parse, header=0, encoding="utf-8", name="LineRecords"):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        if not self.paths:
            raise ValueError(f"{name}: no files given")
        self.parse, self.header, self.encoding, self.name = parse, int(header), encoding, name

    def __iter__(self):
        return _LinesIter(self)

    def describe(self):
        return f"{self.name}({len(self.paths)} files)"


class _LinesIter(PipeIter):
    def __init__(self, pipe, state=None):
        self.pipe, self.f = pipe, None
        self.file, self.offset, self.line = (0, 0, 0) if state is None else \
            (state["file"], state["offset"], state["line"])

    def _open(self):
        import fsspec

        path = self.pipe.paths[self.file]
        if not path.startswith(_REMOTE) and not os.path.isfile(path):
            raise FileNotFoundError(f"{self.pipe.name}: file {path} not found")
        self.f = fsspec.open(path, "rb", compression="infer").open()
        if self.offset:
            self.f.seek(self.offset)

    def __next__(self):
        p = self.pipe
        while self.file < len(p.paths):
            if self.f is None:
                self._open()
            raw = self.f.readline()
            if not raw:
                self.f.close()
                self.f, self.file, self.offset, self.line = None, self.file + 1, 0, 0
                continue
            self.offset += len(raw)
            self.line += 1
            if self.line <= p.header:
                continue
            text = raw.rstrip(b"\r\n")
            if not text:
                continue
            path = p.paths[self.file]
            try:
                return p.parse(text.decode(p.encoding))
            except UnicodeDecodeError as e:
                raise DatasetFormatError(f"{path}, line {self.line}: not valid {p.encoding} "
                                         f"({e.reason})", path=path, line=self.line) from None
            except ValueError as e:
                field = getattr(e, "field", None)
                raise DatasetFormatError(f"{path}, line {self.line}: {e}", path=path,
                                         line=self.line, field=field) from None
        raise StopIteration

    def state_dict(self):
        return {"file": self.file, "offset": self.offset, "line": self.line}

    def load_state_dict(self, state):
        if self.f is not None:
            self.f.close()
        self.__init__(self.pipe, state)

    def reset(self):
        self.load_state_dict({"file": 0, "offset": 0, "line": 0})


class Resource(NamedTuple):
    """A published file: its URL, its file name in the cache folder, and its published hash
    (``md5`` and/or ``sha256``; None where the publisher gives none)."""

    url: str
    filename: str
    md5: str | None = None
    sha256: str | None = None


def dataset_dir(name, root=None):
    """``root/name``, ``root`` defaulting to ``$EMBER_HOME/datasets`` (``~/.cache/ember``)."""
    if root is None:
        home = os.environ.get("EMBER_HOME") or os.path.join(
            os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "ember")
        root = os.path.join(home, "datasets")
    return os.path.join(os.fspath(root), name)


def file_md5(path, chunk=1 << 20):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def fetch(res: Resource, folder, *, progress=True) -> str:
    """The path of ``res`` in ``folder``: the file already there, else downloaded through
    ``ember.hub`` (sha256 checked while it streams, md5 after; a mismatch removes the file
    and raises ``ember.hub.HashMismatchError``). ``EMBER_OFFLINE=1`` fails at once with the
    path the file belongs at."""
    from ember import hub

    path = os.path.join(os.fspath(folder), res.filename)
    if os.path.isfile(path):
        return path
    hub.download_url_to_file(res.url, path, hash_prefix=res.sha256, progress=progress)
    if res.md5 is not None:
        got = file_md5(path)
        if got != res.md5.lower():
            os.remove(path)
            raise hub.HashMismatchError(f"invalid md5 for {res.url}: expected {res.md5}, got "
                                        f"{got}; the download was removed")
    return path


def unpack(archive, folder) -> str:
    """Unpack the zip or tar ``archive`` into ``folder`` (atomic: into a temporary sibling
    folder, then renamed). Members that would land outside ``folder`` are refused."""
    folder = os.fspath(folder)
    if os.path.isdir(folder):
        return folder
    tmp = f"{folder}.{os.getpid()}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for n in z.namelist():
                    _inside(tmp, n, archive)
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
        os.replace(tmp, folder)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DatasetFormatError(f"{archive}: cannot unpack ({type(e).__name__}: {e}); the "
                                 "archive is damaged or truncated: delete it to download it "
                                 "again", path=archive) from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _inside(root, name, archive):
    dst = os.path.realpath(os.path.join(root, name))
    if not dst.startswith(os.path.realpath(root) + os.sep) and dst != os.path.realpath(root):
        raise DatasetFormatError(f"{archive}: member {name!r} would be written outside "
                                 f"{root}", path=archive)
