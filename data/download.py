"""Getting a dataset's files, for every domain: download through :mod:`ember.hub` with the
published hash, extract whole archives or single members atomically, and the dataset cache
folder (``$EMBER_HOME/datasets``).

A file already in the dataset folder is used as it is, so a copy placed there by hand, or a
file a test wrote in the published format, needs no network. A download is checked: sha256
while it streams (``ember.hub``), md5 after it landed; a mismatch removes the file and raises
``ember.hub.HashMismatchError`` naming the URL and both hashes. ``EMBER_OFFLINE=1`` fails at
once with the path the file belongs at.

    >>> import os, tempfile, hashlib
    >>> src = os.path.join(tempfile.mkdtemp(), "a.csv"); _ = open(src, "w").write("1,x\\n")
    >>> md5 = hashlib.md5(b"1,x\\n").hexdigest()
    >>> dst = fetch(Resource("file://" + src, "a.csv", md5=md5), tempfile.mkdtemp(),
    ...             progress=False)
    >>> open(dst).read()
    '1,x\\n'
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import zipfile
import zlib
from typing import NamedTuple

from ember.data.errors import check_policy, get_default_policy, record_skip

__all__ = ["Resource", "fetch", "file_hash", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive", "extract_member", "read_member_text",
           "DatasetFormatError", "ARCHIVE_ERRORS", "default_root", "dataset_folder"]

ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError,
                  ValueError, KeyError)


class DatasetFormatError(ValueError):
    """A dataset file that does not hold what its format says: a bad row (``path`` and
    ``line`` name it), or a damaged archive (``path`` is the archive, ``member`` the file
    that could not be read from it)."""

    def __init__(self, message, path=None, line=None, member=None):
        super().__init__(message)
        self.path, self.line, self.member = path, line, member


class Resource(NamedTuple):
    """One published file: where it is, its name in the dataset folder, its published hash
    (``md5`` and/or ``sha256``; None where no published hash could be verified) and other
    addresses holding the same bytes (tried in order; the hash decides what is accepted)."""

    url: str
    filename: str
    md5: str | None = None
    sha256: str | None = None
    mirrors: tuple = ()


def file_hash(path, algorithm="md5", chunk=1 << 20) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def fetch(res: Resource, folder, *, download=True, progress=True) -> str:
    """The local path of ``res`` in ``folder``: the file there, else downloaded (and checked)
    from ``res.url`` or its mirrors. ``download=False`` raises ``FileNotFoundError`` naming
    the path and the URL instead of downloading."""
    from ember import hub

    path = os.path.join(os.fspath(folder), res.filename)
    if os.path.isfile(path):
        return path
    if not download:
        raise FileNotFoundError(f"{path} not found (download=False); download {res.url} "
                                f"there, or pass download=True")
    failures = []
    for url in (res.url, *res.mirrors):
        try:
            hub.download_url_to_file(url, path, hash_prefix=res.sha256, progress=progress)
            if res.md5 is not None:
                got = file_hash(path, "md5")
                if got != res.md5.lower():
                    os.remove(path)
                    raise hub.HashMismatchError(
                        f"invalid md5 for {url}: expected {res.md5}, got {got}; the download "
                        f"was removed")
            return path
        except hub.OfflineError:
            raise
        except (OSError, RuntimeError) as e:
            failures.append((url, e))
    if len(failures) == 1:
        raise failures[0][1]
    raise RuntimeError(f"could not download {res.filename} into {path}:\n" + "\n".join(
        f"  {u}: {type(e).__name__}: {e}" for u, e in failures))


def _copy_atomic(src, dst):
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    tmp = f"{dst}.{os.getpid()}.partial"
    try:
        with open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _matches(name, member):
    """An archive name is ``member`` itself or ends in ``/member`` (a leading "./" ignored)."""
    while name.startswith("./"):
        name = name[2:]
    return name == member or name.endswith("/" + member)


def _tar_member(archive, member, dst):
    with tarfile.open(archive, "r|*") as tar:
        for m in tar:
            if m.isfile() and _matches(m.name, member):
                _copy_atomic(tar.extractfile(m), dst)
                return
    raise KeyError(f"no member {member!r} in the archive (truncated, or not this dataset's "
                   f"archive)")


def _zip_member(archive, member, dst):
    with zipfile.ZipFile(archive) as z:
        names = [n for n in z.namelist() if not n.endswith("/") and _matches(n, member)]
        if not names:
            raise KeyError(f"no member {member!r} in the archive")
        with z.open(names[0]) as src:
            _copy_atomic(src, dst)


def extract_member(archive, member, dst, *, on_error=None, dataset=""):
    """Copy the member ``member`` (its path inside the archive, "/"-separated, or the end of
    that path after a "/") of the tar
    (any compression) or zip ``archive`` to ``dst``, atomically, unless ``dst`` exists.

    A damaged or truncated archive raises :class:`DatasetFormatError` naming the archive and
    the member; with ``on_error="skip"`` (or the DataLoader's skip policy) it is recorded in
    the skip log (``ember.data.drain_skips``) and None is returned. Returns ``dst``."""
    check_policy(on_error)
    if os.path.isfile(dst):
        return dst
    try:
        if zipfile.is_zipfile(archive):
            _zip_member(archive, member, dst)
        else:
            _tar_member(archive, member, dst)
        return dst
    except ARCHIVE_ERRORS as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        err = DatasetFormatError(
            f"{archive}: cannot extract {member} ({type(e).__name__}: {msg}); the archive is "
            f"damaged or truncated: delete it to download it again", path=archive,
            member=member)
        if (on_error or get_default_policy()) == "skip":
            record_skip(f"{dataset or 'dataset'} extract", 0, f"{archive}/{member}", err)
            return None
        raise err from e


def read_member_text(data: bytes, where: str, encoding="utf-8") -> str:
    """``data`` decoded; a decoding error names ``where`` and the line it is on."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DatasetFormatError(f"{where}, line {line}: not valid {encoding} ({e.reason} at "
                                 f"byte {e.start})", path=where, line=line) from None


def check_integrity(fpath, md5=None, sha256=None) -> bool:
    """True when ``fpath`` exists and matches the given md5 and/or sha256 (hex digests)."""
    if not os.path.isfile(fpath):
        return False
    if md5 is not None and file_hash(fpath, "md5") != md5.lower():
        return False
    if sha256 is not None and not file_hash(fpath, "sha256").startswith(sha256.lower()):
        return False
    return True


def download_url(url, root, filename=None, md5=None, sha256=None, progress=False) -> None:
    """Fetch ``url`` into ``root/filename`` unless a file with the right hash is already there.
    A hash mismatch removes the download and raises ``RuntimeError`` naming the URL."""
    from ember import hub

    root = os.path.expanduser(os.fspath(root))
    filename = filename or os.path.basename(os.fspath(url).rstrip("/"))
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if (md5 or sha256) and check_integrity(fpath, md5, sha256):
        return
    hub.download_url_to_file(url, fpath, hash_prefix=sha256, progress=progress)
    if md5 is not None and not check_integrity(fpath, md5):
        got = file_hash(fpath, "md5")
        os.remove(fpath)
        raise RuntimeError(f"invalid md5 for {url}: expected {md5}, got {got}; the download was "
                           "removed")


def _safe_members(tar, dest):
    dest = os.path.realpath(dest)
    for m in tar.getmembers():
        target = os.path.realpath(os.path.join(dest, m.name))
        if not (target == dest or target.startswith(dest + os.sep)):
            raise RuntimeError(f"archive member {m.name!r} would be extracted outside {dest}")
        if m.issym() or m.islnk() or m.isdev():
            raise RuntimeError(f"archive member {m.name!r} is a link or device; refused")
        yield m


def extract_archive(from_path, to_path=None, remove_finished=False) -> str:
    """Extract a .tar(.gz|.tgz|.bz2|.xz), .zip or single-file .gz into ``to_path`` (default: the
    archive's folder). Members escaping ``to_path`` or links are refused. Returns ``to_path``."""
    from_path = os.fspath(from_path)
    to_path = os.fspath(to_path) if to_path is not None else os.path.dirname(from_path)
    os.makedirs(to_path, exist_ok=True)
    if tarfile.is_tarfile(from_path):
        with tarfile.open(from_path) as tar:
            tar.extractall(to_path, members=list(_safe_members(tar, to_path)))
    elif zipfile.is_zipfile(from_path):
        with zipfile.ZipFile(from_path) as z:
            dest = os.path.realpath(to_path)
            for name in z.namelist():
                target = os.path.realpath(os.path.join(dest, name))
                if not (target == dest or target.startswith(dest + os.sep)):
                    raise RuntimeError(f"zip member {name!r} would be extracted outside {dest}")
            z.extractall(to_path)
    elif from_path.endswith(".gz"):
        out = os.path.join(to_path, os.path.basename(from_path)[:-3])
        with gzip.open(from_path, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        raise ValueError(f"unknown archive type: {from_path} (expected tar, zip or gz)")
    if remove_finished:
        os.remove(from_path)
    return to_path


def download_and_extract_archive(url, download_root, extract_root=None, filename=None, md5=None,
                                 sha256=None, remove_finished=False, progress=False) -> None:
    download_root = os.path.expanduser(os.fspath(download_root))
    extract_root = extract_root or download_root
    filename = filename or os.path.basename(os.fspath(url).rstrip("/"))
    download_url(url, download_root, filename, md5, sha256, progress)
    extract_archive(os.path.join(download_root, filename), extract_root, remove_finished)


def default_root() -> str:
    """``$EMBER_HOME/datasets`` (``EMBER_HOME`` defaults to ``~/.cache/ember``)."""
    home = os.environ.get("EMBER_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "ember")
    return os.path.join(os.path.expanduser(home), "datasets")


def dataset_folder(root, name) -> str:
    """``root/name`` (``root`` None: :func:`default_root`), created if missing."""
    base = default_root() if root is None else os.path.expanduser(os.fspath(root))
    folder = os.path.join(base, name)
    os.makedirs(folder, exist_ok=True)
    return folder
