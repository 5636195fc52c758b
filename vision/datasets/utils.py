"""Download and archive helpers: download_url (any fsspec URL or local path, through ember.hub, with
md5/sha256 checks), check_integrity, extract_archive (tar, tar.gz/tgz/bz2/xz, zip, gz),
download_and_extract_archive.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); src = os.path.join(d, "a.txt"); _ = open(src, "w").write("hi")
    >>> download_url(src, os.path.join(d, "out"), md5="49f68a5c8493ec2c0bf489821c21fc3b")
    >>> open(os.path.join(d, "out", "a.txt")).read()
    'hi'
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import zipfile


def calculate_hash(fpath, algorithm="md5", chunk_size=1 << 20) -> str:
    h = hashlib.new(algorithm)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def calculate_md5(fpath, chunk_size=1 << 20) -> str:
    return calculate_hash(fpath, "md5", chunk_size)


def check_integrity(fpath, md5=None, sha256=None) -> bool:
    """True when ``fpath`` exists and matches the given md5 and/or sha256 (hex digests)."""
    if not os.path.isfile(fpath):
        return False
    if md5 is not None and calculate_hash(fpath, "md5") != md5.lower():
        return False
    if sha256 is not None and not calculate_hash(fpath, "sha256").startswith(sha256.lower()):
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
        got = calculate_md5(fpath)
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
