"""Local paths for the asset files that text tokenizers and transforms read.

A plain path (or ``file://`` URL) is used where it lies. Any other URL (``https://``,
``memory://``, ...) is fetched once through :mod:`ember.hub` into
``<hub>/text/<url hash>/<name>`` (so two ``vocab.json`` from different places never collide),
and the cached copy is used from then on; ``EMBER_OFFLINE=1`` fails fast with the path it was
expected at, as ``ember.hub`` does.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(p, "w").write("[PAD]\\n")
    >>> asset_path(p) == p
    True
"""
from __future__ import annotations

import hashlib
import os
import urllib.parse

__all__ = ["asset_path"]


def asset_path(path_or_url, *, cache_dir=None, sha256=None, progress=False) -> str:
    """The local file for ``path_or_url``, downloading a remote URL into ``cache_dir`` (default
    ``<ember hub dir>/text``) the first time. ``sha256`` (full hex digest) checks a download."""
    from ember import hub

    s = os.fspath(path_or_url)
    if "://" not in s:
        return s
    parsed = urllib.parse.urlparse(s)
    if parsed.scheme in ("file", "local"):
        return urllib.parse.unquote(parsed.path)
    name = os.path.basename(parsed.path)
    if not name:
        raise ValueError(f"cannot derive a file name from the URL {s!r}")
    folder = os.path.expanduser(os.fspath(cache_dir)) if cache_dir is not None else \
        os.path.join(hub.get_dir(), "text")
    dst = os.path.join(folder, hashlib.sha256(s.encode()).hexdigest()[:16], name)
    if not os.path.exists(dst):
        hub.download_url_to_file(s, dst, hash_prefix=sha256, progress=progress)
    return dst
