"""YESNO: 60 recordings of one speaker saying eight Hebrew words, each "yes" or "no"; the
file name is the label sequence (``0_1_0_0_1_0_1_1.wav``). 8 kHz mono.

    waves_yesno/0_0_0_0_1_1_1_1.wav ...
"""
from __future__ import annotations

import os
from pathlib import Path

from ember.data.pipe import MapDataPipe

from ._util import fetch_and_extract, load_clip, missing

__all__ = ["YESNO"]

_URL = "http://www.openslr.org/resources/1/waves_yesno.tar.gz"
_SHA256 = "c3f49e0cca421f96b75b41640749167b52118f232498667ca7a5f9416aef8e73"


class YESNO(MapDataPipe):
    """Items ``(waveform, sample_rate, labels)``, ``labels`` the eight 0/1 words, sorted by
    file name (torchaudio's order)."""

    def __init__(self, root, url=_URL, folder_in_archive="waves_yesno", download=False):
        root = os.fspath(root)
        self._path = os.path.join(root, folder_in_archive)
        if download and not os.path.isdir(self._path):
            fetch_and_extract(url, root, _SHA256 if url == _URL else None)
        if not os.path.isdir(self._path):
            raise missing(self._path, "YESNO")
        self._walker = sorted(p.stem for p in Path(self._path).glob("*.wav"))
        for stem in self._walker:
            parts = stem.split("_")
            if not all(p in ("0", "1") for p in parts):
                raise ValueError(f"{os.path.join(self._path, stem)}.wav: a YESNO file name is "
                                 f"its labels, 0s and 1s joined by '_'")

    def __getitem__(self, n):
        stem = self._walker[n]
        waveform, rate = load_clip(os.path.join(self._path, stem + ".wav"))
        return waveform, rate, [int(c) for c in stem.split("_")]

    def __len__(self):
        return len(self._walker)
