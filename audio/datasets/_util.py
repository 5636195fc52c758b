"""What the audio datasets share: fetching and unpacking a published archive once, reading a
clip with the sample rate the corpus promises, and the transcript-file errors.

Every dataset is a ``MapDataPipe`` (``ds[i]``, ``len(ds)``, and ``.map``/``.shuffle``/... to
chain), built from the files already under ``root`` or, with ``download=True``, from the
publisher's archive checked against its published sha256 (``ember.data.download``).
"""
from __future__ import annotations

import os

from ember.data.download import DatasetFormatError, download_url, extract_archive

__all__ = ["fetch_and_extract", "archive_stem", "load_clip", "DatasetFormatError", "missing"]


def missing(path, name):
    """The error for a corpus that is not on disk: where it was looked for, how to get it."""
    return RuntimeError(f"{name}: dataset not found at {path}; pass download=True to download "
                        f"it, or place the extracted corpus there")


def archive_stem(url):
    """The file name of an archive's URL without its archive extension
    (``.../LJSpeech-1.1.tar.bz2`` -> ``LJSpeech-1.1``)."""
    name = os.path.basename(url.rstrip("/"))
    for ext in (".tar.bz2", ".tar.gz", ".tgz", ".tar", ".zip"):
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def fetch_and_extract(url, root, sha256=None, extract_to=None):
    """Download ``url`` into ``root`` (kept: a second call reuses it; sha256-checked when the
    hash is known) and unpack it into ``extract_to`` (default ``root``)."""
    root = os.fspath(root)
    filename = os.path.basename(url.rstrip("/"))
    archive = os.path.join(root, filename)
    if not os.path.isfile(archive):
        download_url(url, root, filename, sha256=sha256)
    extract_archive(archive, extract_to or root)
    return archive


def load_clip(path, sample_rate=None):
    """(waveform (channels, frames) float32, rate) of the audio file ``path``; with
    ``sample_rate``, a file at another rate is an error naming the file and both rates."""
    from ember.audio import load

    waveform, rate = load(os.fspath(path))
    if sample_rate is not None and rate != sample_rate:
        raise ValueError(f"{path}: sample rate should be {sample_rate} Hz, but the file has "
                         f"{rate} Hz")
    return waveform, rate
