"""LIBRISPEECH: read English audiobooks, 16 kHz FLAC, one transcript file per chapter.

    LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac
    LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt
        "<speaker>-<chapter>-<utterance> TRANSCRIPT IN CAPITALS" per line
"""
from __future__ import annotations

import os
from pathlib import Path

from ember.data.pipe import MapDataPipe

from ._util import DatasetFormatError, fetch_and_extract, load_clip, missing

__all__ = ["LIBRISPEECH"]

SAMPLE_RATE = 16000
_BASE_URL = "http://www.openslr.org/resources/12/"
_SHA256 = {
    "dev-clean": "76f87d090650617fca0cac8f88b9416e0ebf80350acb97b343a85fa903728ab3",
    "dev-other": "12661c48e8c3fe1de2c1caa4c3e135193bfb1811584f11f569dd12645aa84365",
    "test-clean": "39fde525e59672dc6d1551919b1478f724438a95aa55f874b576be21967e6c23",
    "test-other": "d09c181bba5cf717b3dee7d4d592af11a3ee3a09e08ae025c5506f6ebe961c29",
    "train-clean-100": "d4ddd1d5a6ab303066f14971d768ee43278a5f2a0aa43dc716b0e64ecbbbf6e2",
    "train-clean-360": "146a56496217e96c14334a160df97fffedd6e0a04e66b9c5af0d40be3c792ecf",
    "train-other-500": "ddb22f27f96ec163645d53215559df6aa36515f26e01dd70798188350adcb6d2",
}


def read_transcripts(path):
    """``{utterance id: transcript}`` of one ``*.trans.txt`` file; a line without an id and a
    transcript is an error naming the file and line."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            parts = line.split(" ", 1)
            if len(parts) != 2:
                raise DatasetFormatError(f"{path}, line {i}: expected '<utterance id> "
                                         f"<transcript>', got {line!r}", path=path, line=i)
            out[parts[0]] = parts[1]
    return out


class LIBRISPEECH(MapDataPipe):
    """Items ``(waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id)``
    sorted by utterance id. ``url``: the subset (``"train-clean-100"``, ``"dev-clean"``, ...).
    ``get_metadata(n)`` gives the same tuple with the audio path (relative to
    ``root/folder_in_archive``) in place of the waveform, without decoding."""

    _ext_audio, _ext_txt = ".flac", ".trans.txt"

    def __init__(self, root, url="train-clean-100", folder_in_archive="LibriSpeech",
                 download=False):
        if url not in _SHA256:
            raise ValueError(f"LIBRISPEECH: unknown subset {url!r}; one of {sorted(_SHA256)}")
        root = os.fspath(root)
        self._url = url
        self._archive = os.path.join(root, folder_in_archive)
        self._path = os.path.join(self._archive, url)
        if download and not os.path.isdir(self._path):
            fetch_and_extract(_BASE_URL + url + ".tar.gz", root, _SHA256[url])
        if not os.path.isdir(self._path):
            raise missing(self._path, "LIBRISPEECH")
        self._walker = sorted(p.name[:-len(self._ext_audio)]
                              for p in Path(self._path).glob("*/*/*" + self._ext_audio))
        self._texts = {}

    def _transcript(self, speaker, chapter, fileid):
        key = (speaker, chapter)
        if key not in self._texts:
            path = os.path.join(self._path, speaker, chapter,
                                f"{speaker}-{chapter}{self._ext_txt}")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"LIBRISPEECH: {path} (the transcripts of chapter "
                                        f"{chapter}) is missing")
            self._texts[key] = read_transcripts(path)
        try:
            return self._texts[key][fileid]
        except KeyError:
            raise DatasetFormatError(f"LIBRISPEECH: no transcript for {fileid} in "
                                     f"{speaker}-{chapter}{self._ext_txt}") from None

    def get_metadata(self, n):
        fileid = self._walker[n]
        speaker, chapter, utterance = fileid.split("-")
        rel = os.path.join(self._url, speaker, chapter, fileid + self._ext_audio)
        return (rel, SAMPLE_RATE, self._transcript(speaker, chapter, fileid), int(speaker),
                int(chapter), int(utterance))

    def __getitem__(self, n):
        meta = self.get_metadata(n)
        waveform, _ = load_clip(os.path.join(self._archive, meta[0]), SAMPLE_RATE)
        return (waveform,) + meta[1:]

    def __len__(self):
        return len(self._walker)
