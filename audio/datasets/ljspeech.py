"""LJSPEECH: 13,100 clips of one speaker reading non-fiction, 22.05 kHz, with the raw and the
normalized (numbers spelled out) transcript.

    LJSpeech-1.1/metadata.csv   "<id>|<transcript>|<normalized transcript>" per line, no quoting
    LJSpeech-1.1/wavs/<id>.wav
"""
from __future__ import annotations

import os

from ember.data.pipe import MapDataPipe

from ._util import DatasetFormatError, archive_stem, fetch_and_extract, load_clip, missing

__all__ = ["LJSPEECH"]

_URL = "https://data.keithito.com/data/speech/LJSpeech-1.1.tar.bz2"
_SHA256 = "be1a30453f28eb8dd26af4101ae40cbf2c50413b1bb21936cbcdc6fae3de8aa5"


def read_metadata(path):
    """The rows of ``metadata.csv``: ``[id, transcript, normalized]``; a row with another
    number of fields is an error naming the file and line. ``|`` separates; quotes are text."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for i, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            parts = line.split("|")
            if len(parts) != 3:
                raise DatasetFormatError(f"{path}, line {i}: expected 3 '|'-separated fields "
                                         f"(id, transcript, normalized), got {len(parts)}",
                                         path=path, line=i)
            rows.append(parts)
    return rows


class LJSPEECH(MapDataPipe):
    """Items ``(waveform, sample_rate, transcript, normalized_transcript)`` in
    ``metadata.csv`` order."""

    def __init__(self, root, url=_URL, folder_in_archive="wavs", download=False):
        root = os.fspath(root)
        base = archive_stem(url)
        self._path = os.path.join(root, base, folder_in_archive)
        if download and not os.path.isdir(self._path):
            fetch_and_extract(url, root, _SHA256 if url == _URL else None)
        if not os.path.isdir(self._path):
            raise missing(self._path, "LJSPEECH")
        self._flist = read_metadata(os.path.join(root, base, "metadata.csv"))

    def __getitem__(self, n):
        fileid, transcript, normalized = self._flist[n]
        waveform, rate = load_clip(os.path.join(self._path, fileid + ".wav"))
        return waveform, rate, transcript, normalized

    def __len__(self):
        return len(self._flist)
