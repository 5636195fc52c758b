"""``ember.hub``: download checkpoints once into a local cache and load them.

Cache root: ``$EMBER_HOME/hub`` (``EMBER_HOME`` defaults to ``$XDG_CACHE_HOME/ember``, i.e.
``~/.cache/ember``), or whatever ``set_dir`` chose; checkpoints live in ``<hub>/checkpoints/``.
Files are fetched through fsspec (local paths, ``file://``, ``memory://``, ``http(s)://`` and any
installed protocol) in chunks, hashed (sha256) while they stream into a temporary file in the
target folder, checked, then renamed into place, so a cache never holds a partial or corrupt
file under its final name. With ``EMBER_OFFLINE=1`` nothing goes to the network: a checkpoint
that is not cached fails at once with the path where it was expected.

    >>> import ember, os, tempfile
    >>> src = os.path.join(tempfile.mkdtemp(), "tiny-0a1b.ember")
    >>> ember.save({"w": ember.ones(2)}, src)
    >>> sd = ember.hub.load_state_dict_from_url("file://" + src, model_dir=tempfile.mkdtemp(),
    ...                                         progress=False)
    >>> sd["w"]
    tensor([1., 1.])
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import sys
import urllib.parse

__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url",
           "HashMismatchError", "OfflineError", "DownloadError"]

_CHUNK = 1 << 20
_LOCAL_PROTOCOLS = {"file", "local", "memory"}  # reachable without a network
_HASH_IN_NAME = re.compile(r"-([a-f0-9]+)\.")
_state = {"dir": None}


class HashMismatchError(RuntimeError):
    """A downloaded file's sha256 does not match the expected one (the file was removed)."""


class OfflineError(FileNotFoundError):
    """``EMBER_OFFLINE=1`` and the file is not in the cache (``.path`` says where it belongs)."""


class DownloadError(FileNotFoundError):
    """A download failed; ``.url``, ``.path`` (where a copy placed by hand is used, offline
    too) and ``.reason`` (the underlying error, as text) say what and where. A
    ``FileNotFoundError``, as fsspec's own error for an unreachable URL is."""

    def __init__(self, url, path, reason, local=False):
        hint = (f"place the file at {path} to use it without a download" if local else
                f"to work offline, place the file at {path} (e.g. copied from a machine with "
                f"network access); EMBER_OFFLINE=1 then keeps ember off the network")
        super().__init__(f"download failed: {url} could not be fetched ({reason}); {hint}")
        self.url, self.path, self.reason = url, path, reason


def _reason(exc, url) -> str:
    """The most telling message in ``exc``'s chain (fsspec wraps a refused connection or an
    HTTP 404 into ``FileNotFoundError(url)``, whose text is just the URL)."""
    seen, e = [], exc
    while e is not None and e not in seen and len(seen) < 16:
        seen.append(e)
        e = e.__cause__ or e.__context__
    for e in seen:
        status = getattr(e, "status", None)
        if isinstance(status, int) and 100 <= status < 600:
            msg = getattr(e, "message", "") or ""
            return f"HTTP {status}" + (f" {msg}" if msg else "")
        text = str(e).strip()
        if text and text not in (url, repr(url)):
            return f"{type(e).__name__}: {text}"
    return type(exc).__name__


def get_dir() -> str:
    """The hub cache folder: ``set_dir``'s choice, else ``$EMBER_HOME/hub``."""
    if _state["dir"] is not None:
        return _state["dir"]
    home = os.environ.get("EMBER_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "ember")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d) -> None:
    """Use ``d`` as the hub cache folder from now on (``None`` restores the default)."""
    _state["dir"] = None if d is None else os.path.expanduser(os.fspath(d))


def _offline() -> bool:
    return os.environ.get("EMBER_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _protocol(url) -> str:
    from fsspec.utils import get_protocol

    return get_protocol(os.fspath(url))


def download_url_to_file(url, dst, hash_prefix=None, progress=True) -> None:
    """Copy ``url`` (any fsspec URL or a local path) to ``dst``.

    The bytes stream in 1 MiB chunks into a temporary file next to ``dst`` while their sha256 is
    computed; with ``hash_prefix`` (a leading part of the hex digest, or all of it) a mismatch
    removes the temporary file and raises :class:`HashMismatchError` naming the URL and both
    hashes. On success the file is renamed to ``dst`` (atomic). ``progress`` shows a tqdm bar on
    stderr. Under ``EMBER_OFFLINE=1`` a network URL raises :class:`OfflineError`; a failed
    fetch raises :class:`DownloadError` naming the reason and ``dst``.
    """
    url = os.fspath(url)
    dst = os.path.abspath(os.path.expanduser(os.fspath(dst)))
    if hash_prefix is not None:
        hash_prefix = str(hash_prefix).lower()
        if not re.fullmatch(r"[0-9a-f]{1,64}", hash_prefix):
            raise ValueError(f"hash_prefix must be 1 to 64 hex digits of a sha256, got "
                             f"{hash_prefix!r}")
    proto = _protocol(url)
    if _offline() and proto not in _LOCAL_PROTOCOLS:
        err = OfflineError(f"EMBER_OFFLINE is set, so {url} was not downloaded; the file was "
                           f"expected at {dst} (place it there, or unset EMBER_OFFLINE)")
        err.path = dst
        raise err
    import fsspec
    from tqdm.auto import tqdm

    fs, path = fsspec.core.url_to_fs(url)
    try:
        total = fs.size(path)
    except Exception:  # some servers give no length: the bar then counts up without a total
        total = None
    opts = {"block_size": 0} if proto in ("http", "https") else {}  # stream, no range requests
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = f"{dst}.{secrets.token_hex(6)}.partial"
    sha = hashlib.sha256()
    if progress:
        sys.stderr.write(f'Downloading: "{url}" to {dst}\n')
    try:
        try:
            with fs.open(path, "rb", **opts) as src, open(tmp, "xb") as out, \
                    tqdm(total=total, disable=not progress, unit="B", unit_scale=True,
                         unit_divisor=1024, desc=os.path.basename(dst)) as bar:
                while True:
                    chunk = src.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    sha.update(chunk)
                    bar.update(len(chunk))
                out.flush()
                os.fsync(out.fileno())
        except Exception as e:   # noqa: BLE001 (any transport's error: say what failed, and why)
            raise DownloadError(url, dst, _reason(e, url), proto in _LOCAL_PROTOCOLS) from e
        digest = sha.hexdigest()
        if hash_prefix is not None and not digest.startswith(hash_prefix):
            raise HashMismatchError(
                f"invalid hash for {url}: expected sha256 starting with {hash_prefix}, got "
                f"{digest}; the download was removed")
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _file_name(url) -> str:
    parsed = urllib.parse.urlparse(os.fspath(url))
    name = os.path.basename(parsed.path if parsed.scheme else os.fspath(url))
    if not name:
        raise ValueError(f"cannot derive a file name from {url!r}: pass file_name=")
    return name


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, sha256=None):
    """Download ``url`` into ``<hub>/checkpoints/`` (once) and load it with ``ember.load``.

    ``model_dir`` overrides the folder, ``file_name`` the cached name (default: the URL's last
    path part). A cached file is used as is, without a new download or hash. A new download is
    checked against ``sha256`` (the full hex digest) or, with ``check_hash=True``, against the
    hex prefix embedded in the file name (``resnet50-0676ba61.pth`` -> ``0676ba61``). Works for
    ember checkpoints, safetensors files and PyTorch ``.pth`` files alike; ``map_location`` is
    passed to ``ember.load``.
    """
    from .serialization import load

    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    name = file_name or _file_name(url)
    cached = os.path.join(os.path.expanduser(os.fspath(model_dir)), name)
    if not os.path.exists(cached):
        expected = None
        if sha256 is not None:
            expected = str(sha256).lower()
            if not re.fullmatch(r"[0-9a-f]{64}", expected):
                raise ValueError(f"sha256 must be 64 hex digits, got {sha256!r}")
        elif check_hash:
            found = _HASH_IN_NAME.findall(name)
            if not found:
                raise ValueError(f"check_hash=True but the file name {name!r} holds no hash "
                                 "prefix (expected a name like 'model-0a1b2c3d.pth')")
            expected = found[-1]
        download_url_to_file(url, cached, expected, progress)
    return load(cached, map_location=map_location)
