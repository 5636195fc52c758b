"""SPEECHCOMMANDS: one-second clips of 35 spoken command words (v0.02; 30 in v0.01), 16 kHz,
one folder per word; the file name holds the speaker and the repetition.

    SpeechCommands/speech_commands_v0.02/<word>/<speaker>_nohash_<n>.wav
    SpeechCommands/speech_commands_v0.02/validation_list.txt   "<word>/<file>.wav" per line
    SpeechCommands/speech_commands_v0.02/testing_list.txt
    SpeechCommands/speech_commands_v0.02/_background_noise_/*.wav   (never an item)

``subset="training"`` is every clip in neither list, as the corpus's README defines the split.
"""
from __future__ import annotations

import os
from pathlib import Path

from ember.data.pipe import MapDataPipe

from ._util import DatasetFormatError, archive_stem, fetch_and_extract, load_clip, missing

__all__ = ["SPEECHCOMMANDS"]

SAMPLE_RATE = 16000
HASH_DIVIDER = "_nohash_"
_BASE_URL = "http://download.tensorflow.org/data/"
_SHA256 = {
    "speech_commands_v0.01": "743935421bb51cccdb6bdd152e04c5c70274e935c82119ad7faeec31780d811d",
    "speech_commands_v0.02": "af14739ee7dc311471de98f5f9d2c9191b18aedfe957f4a6ff791c709868ff58",
}
_SUBSETS = (None, "training", "validation", "testing")


def _read_list(folder, name):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"SPEECHCOMMANDS: {path} is missing (the split lists ship with "
                                f"the corpus)")
    with open(path) as f:
        return {os.path.normpath(ln.strip()) for ln in f if ln.strip()}


class SPEECHCOMMANDS(MapDataPipe):
    """Items ``(waveform, sample_rate, label, speaker_id, utterance_number)``, sorted by path.
    ``url``: ``"speech_commands_v0.02"`` (default), ``"speech_commands_v0.01"`` or a URL of an
    archive in the same layout. ``subset``: None (every clip), ``"training"``,
    ``"validation"`` or ``"testing"``. ``get_metadata(n)`` gives the path relative to the
    corpus folder in place of the waveform."""

    def __init__(self, root, url="speech_commands_v0.02", folder_in_archive="SpeechCommands",
                 download=False, subset=None):
        if subset not in _SUBSETS:
            raise ValueError(f"SPEECHCOMMANDS: subset must be one of {_SUBSETS}, got {subset!r}")
        sha = _SHA256.get(url)
        if sha is not None:
            url = _BASE_URL + url + ".tar.gz"
        root = os.fspath(root)
        self._path = os.path.join(root, folder_in_archive, archive_stem(url))
        if download and not os.path.isdir(self._path):
            fetch_and_extract(url, os.path.join(root, folder_in_archive), sha,
                              extract_to=self._path)
        if not os.path.isdir(self._path):
            raise missing(self._path, "SPEECHCOMMANDS")
        clips = sorted(os.path.relpath(str(p), self._path)
                       for p in Path(self._path).glob("*/*.wav") if HASH_DIVIDER in p.name)
        if subset == "validation":
            keep = _read_list(self._path, "validation_list.txt")
            clips = [c for c in clips if c in keep]
        elif subset == "testing":
            keep = _read_list(self._path, "testing_list.txt")
            clips = [c for c in clips if c in keep]
        elif subset == "training":
            drop = (_read_list(self._path, "validation_list.txt")
                    | _read_list(self._path, "testing_list.txt"))
            clips = [c for c in clips if c not in drop]
        self._walker = clips

    def get_metadata(self, n):
        rel = self._walker[n]
        label, filename = os.path.split(rel)
        stem = os.path.splitext(filename)[0]
        speaker, sep, number = stem.partition(HASH_DIVIDER)
        if not sep or not number.isdigit():
            raise DatasetFormatError(f"{os.path.join(self._path, rel)}: expected a file name "
                                     f"'<speaker>{HASH_DIVIDER}<number>.wav'",
                                     path=os.path.join(self._path, rel))
        return rel, SAMPLE_RATE, label, speaker, int(number)

    def __getitem__(self, n):
        meta = self.get_metadata(n)
        waveform, _ = load_clip(os.path.join(self._path, meta[0]), SAMPLE_RATE)
        return (waveform,) + meta[1:]

    def __len__(self):
        return len(self._walker)
