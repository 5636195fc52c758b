"""VCTK_092: 110 English speakers with various accents, each reading ~400 sentences, recorded
on two microphones; 48 kHz FLAC with silences trimmed.

    VCTK-Corpus-0.92/txt/<speaker>/<speaker>_<utt>.txt
    VCTK-Corpus-0.92/wav48_silence_trimmed/<speaker>/<speaker>_<utt>_mic1.flac (and _mic2)

As the corpus is published: speaker p315 has no transcripts (so no items), p280 has no mic2
recordings (skipped for ``mic_id="mic2"``), and some p362 recordings are missing (those
utterances are skipped).
"""
from __future__ import annotations

import os

from ember.data.pipe import MapDataPipe

from ._util import fetch_and_extract, load_clip, missing

__all__ = ["VCTK_092"]

_URL = "https://datashare.is.ed.ac.uk/bitstream/handle/10283/3443/VCTK-Corpus-0.92.zip"
_SHA256 = "f96258be9fdc2cbff6559541aae7ea4f59df3fcaf5cf963aae5ca647357e359c"


class VCTK_092(MapDataPipe):
    """Items ``(waveform, sample_rate, transcript, speaker_id, utterance_id)``, by speaker
    then utterance. ``mic_id``: ``"mic1"`` or ``"mic2"``; ``audio_ext``: for a corpus
    converted to another format (e.g. ``".wav"``)."""

    def __init__(self, root, mic_id="mic2", download=False, url=_URL, audio_ext=".flac"):
        if mic_id not in ("mic1", "mic2"):
            raise ValueError(f"VCTK_092: mic_id must be 'mic1' or 'mic2', got {mic_id!r}")
        root = os.fspath(root)
        self._path = os.path.join(root, "VCTK-Corpus-0.92")
        self._txt_dir = os.path.join(self._path, "txt")
        self._audio_dir = os.path.join(self._path, "wav48_silence_trimmed")
        self._mic_id, self._audio_ext = mic_id, audio_ext
        if download and not os.path.isdir(self._path):
            fetch_and_extract(url, root, _SHA256 if url == _URL else None,
                              extract_to=self._path)
        if not os.path.isdir(self._txt_dir):
            raise missing(self._txt_dir, "VCTK_092")
        self._sample_ids = []
        for speaker in sorted(os.listdir(self._txt_dir)):
            if speaker == "p280" and mic_id == "mic2":
                continue
            folder = os.path.join(self._txt_dir, speaker)
            for fn in sorted(f for f in os.listdir(folder) if f.endswith(".txt")):
                utt = fn[:-4]
                if speaker == "p362" and not os.path.isfile(self._audio_path(speaker, utt)):
                    continue
                self._sample_ids.append((speaker, utt.split("_", 1)[1]))

    def _audio_path(self, speaker, utt):
        return os.path.join(self._audio_dir, speaker, f"{utt}_{self._mic_id}{self._audio_ext}")

    def __getitem__(self, n):
        speaker, utt = self._sample_ids[n]
        with open(os.path.join(self._txt_dir, speaker, f"{speaker}_{utt}.txt"),
                  encoding="utf-8") as f:
            transcript = f.readline()
        waveform, rate = load_clip(self._audio_path(speaker, f"{speaker}_{utt}"))
        return waveform, rate, transcript, speaker, utt

    def __len__(self):
        return len(self._sample_ids)
