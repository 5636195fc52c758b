"""Download and archive helpers under torchvision's names: download_url (any fsspec URL or local
path, through ember.hub, with md5/sha256 checks), check_integrity, extract_archive (tar,
tar.gz/tgz/bz2/xz, zip, gz), download_and_extract_archive. They live in
:mod:`ember.data.download`, shared by every domain.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); src = os.path.join(d, "a.txt"); _ = open(src, "w").write("hi")
    >>> download_url(src, os.path.join(d, "out"), md5="49f68a5c8493ec2c0bf489821c21fc3b")
    >>> open(os.path.join(d, "out", "a.txt")).read()
    'hi'
"""
from __future__ import annotations

from ember.data.download import (check_integrity, download_and_extract_archive,  # noqa: F401
                                 download_url, extract_archive, file_hash)

__all__ = ["calculate_md5", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive"]


def calculate_md5(fpath, chunk_size=1 << 20) -> str:
    return file_hash(fpath, "md5", chunk_size)
