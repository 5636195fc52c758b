"""The Emformer RNN-T ASR bundle, as torchaudio's ``RNNTBundle`` /
``EMFORMER_RNNT_BASE_LIBRISPEECH``: the model (``get_decoder()`` wraps it in an
``RNNTBeamSearch``), its feature extractors (whole utterance, and streaming) and the token
processor that turns token ids into text.

Features: 80-bin mel spectrogram (n_fft 400, hop 160 at 16 kHz) -> (frames, 80) -> scaled
by the gain of 2 x 20 log10(32767) dB -> piecewise linear/log compression (log x above e,
then / e at most e, as torchaudio's) -> global mean/inverse-std normalisation (a JSON file
of the bundle); the whole utterance extractor also appends ``right_padding`` zero frames
(the look-ahead of the last segment). The token processor reads the SentencePiece model's
pieces straight from its protobuf file (no sentencepiece library needed), drops the leading
blank and the unknown, end-of-sentence and padding pieces, and turns "\u2581" into spaces.

    >>> from ember.audio.pipelines import EMFORMER_RNNT_BASE_LIBRISPEECH as bundle
    >>> bundle.sample_rate, bundle.segment_length, bundle.right_context_length
    (16000, 16, 4)
    >>> # decoder = bundle.get_decoder()                 # fetched once through ember.hub
    >>> # features, length = bundle.get_feature_extractor()(waveform)
    >>> # text = bundle.get_token_processor()(decoder(features, length, 10)[0][0])
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, List, Optional

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ..models.rnnt import emformer_rnnt_base
from ..models.rnnt_decoder import RNNTBeamSearch
from ._bundle import Bundle

__all__ = ["RNNTBundle", "EMFORMER_RNNT_BASE_LIBRISPEECH"]

ASSET_URL = "https://download.pytorch.org/torchaudio/"
_DECIBEL = 2 * 20 * math.log10(32767)
_GAIN = 10 ** (0.05 * _DECIBEL)


def _fetch_asset(path, dl_kwargs=None):
    """Local path of a bundle asset (a name on torchaudio's host or any URL/path), fetched
    once into ``<hub>/checkpoints`` through ``ember.hub``."""
    from ember import hub

    if os.path.isfile(path):
        return path
    url = path if "://" in path else ASSET_URL + path
    kw = dict(dl_kwargs or {})
    folder = kw.get("model_dir") or os.path.join(hub.get_dir(), "checkpoints")
    local = os.path.join(folder, os.path.basename(url))
    if not os.path.exists(local):
        hub.download_url_to_file(url, local, progress=kw.get("progress", True))
    return local


class _PiecewiseLinearLog(nn.Module):
    """x * gain, then log where above e, then / e where (now) at most e. As torchaudio's
    in-place version, the second test sees the logs: values in (e, e^e] end as log(x) / e."""

    def forward(self, x):
        x = x * _GAIN
        x = ember.where(x > math.e, x.clamp(min=math.e).log(), x)
        return ember.where(x <= math.e, x / math.e, x)


class _GlobalStatsNormalization(nn.Module):
    """(x - mean) * invstddev, the statistics read from a JSON file
    {"mean": [...], "invstddev": [...]}."""

    def __init__(self, global_stats_path):
        super().__init__()
        try:
            with open(global_stats_path) as fh:
                blob = json.load(fh)
            mean, inv = blob["mean"], blob["invstddev"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"global stats file {global_stats_path!r}: expected JSON with "
                             f"'mean' and 'invstddev' lists ({e})") from e
        self.register_buffer("mean", ember.tensor(np.asarray(mean, np.float32)))
        self.register_buffer("invstddev", ember.tensor(np.asarray(inv, np.float32)))

    def forward(self, x):
        return (x - self.mean) * self.invstddev


class _FeatureExtractor(nn.Module):
    """waveform (time,) -> (features (frames [+ right_padding], n_mels), length (1,))."""

    def __init__(self, sample_rate, n_fft, n_mels, hop_length, stats_path, right_padding):
        super().__init__()
        from ..transforms import MelSpectrogram

        self.mel = MelSpectrogram(sample_rate=sample_rate, n_fft=n_fft, n_mels=n_mels,
                                  hop_length=hop_length)
        self.log = _PiecewiseLinearLog()
        self.norm = _GlobalStatsNormalization(stats_path)
        self.right_padding = right_padding

    def forward(self, input):
        if input.ndim != 1:
            raise ValueError(f"feature extractor input must be a 1-D waveform (time,), got "
                             f"shape {tuple(input.shape)}")
        x = self.norm(self.log(self.mel(input).transpose(1, 0)))
        if self.right_padding:
            x = F.pad(x, (0, 0, 0, self.right_padding))
        return x, ember.tensor([x.shape[0]])


def _varint(buf, i):
    out = shift = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return out, i


def _fields(buf):
    """(field number, wire type, value) of a protobuf message's top-level fields."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _varint(buf, i)
        elif wt == 1:
            val, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            val, i = buf[i:i + ln], i + ln
        elif wt == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        yield num, wt, val


def _read_sentencepiece(path):
    """[(piece, type)] of a SentencePiece ``.model`` file (ModelProto field 1: pieces, each
    with piece = 1 (string) and type = 3 (1 normal, 2 unknown, 3 control, ...))."""
    with open(path, "rb") as fh:
        buf = fh.read()
    pieces = []
    try:
        for num, wt, val in _fields(buf):
            if num == 1 and wt == 2:
                piece, typ = "", 1
                for n2, w2, v2 in _fields(val):
                    if n2 == 1 and w2 == 2:
                        piece = bytes(v2).decode("utf-8")
                    elif n2 == 3 and w2 == 0:
                        typ = v2
                pieces.append((piece, typ))
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path!r} is not a SentencePiece model file ({e})") from e
    if not pieces:
        raise ValueError(f"{path!r} is not a SentencePiece model file (no pieces found)")
    return pieces


class _SentencePieceTokenProcessor:
    """Token ids (the first one, the start blank, skipped) -> text."""

    def __init__(self, sp_model_path):
        self.pieces = [p for p, _ in _read_sentencepiece(sp_model_path)]
        types = [t for _, t in _read_sentencepiece(sp_model_path)]
        self.remove = {i for i, (p, t) in enumerate(zip(self.pieces, types))
                       if t == 2 or (t == 3 and p in ("</s>", "<pad>"))}

    def __call__(self, tokens: List[int], lstrip: bool = True) -> str:
        ids = [int(t) for t in tokens[1:] if int(t) not in self.remove]
        bad = [t for t in ids if not 0 <= t < len(self.pieces)]
        if bad:
            raise ValueError(f"token ids {bad} are out of range for {len(self.pieces)} pieces")
        text = "".join(self.pieces[t] for t in ids).replace("\u2581", " ")
        return text.lstrip() if lstrip else text


@dataclass
class RNNTBundle(Bundle):
    """Components of an RNN-T ASR pipeline: ``get_decoder()``, ``get_feature_extractor()``,
    ``get_streaming_feature_extractor()``, ``get_token_processor()`` and the properties
    ``sample_rate``, ``n_fft``, ``n_mels``, ``hop_length``, ``segment_length``,
    ``right_context_length``. Streaming: feed ``segment_length + right_context_length``
    feature frames (from ``hop_length * segment_length`` new samples plus the look-ahead)
    to ``decoder.infer`` per step, carrying its state and hypotheses."""

    _path: str
    _rnnt_factory_func: Callable
    _global_stats_path: str
    _sp_model_path: str
    _right_padding: int
    _blank: int
    _sample_rate: int
    _n_fft: int
    _n_mels: int
    _hop_length: int
    _segment_length: int
    _right_context_length: int
    _sha256: Optional[str] = field(default=None, kw_only=True)

    sample_rate = property(lambda self: self._sample_rate)
    n_fft = property(lambda self: self._n_fft)
    n_mels = property(lambda self: self._n_mels)
    hop_length = property(lambda self: self._hop_length)
    segment_length = property(lambda self: self._segment_length)
    right_context_length = property(lambda self: self._right_context_length)

    def _get_model(self, dl_kwargs=None):
        state = self._fetch_state_dict(dl_kwargs)
        model = self._rnnt_factory_func()
        model.load_state_dict(state)
        return model.eval()

    def get_decoder(self, *, dl_kwargs=None) -> RNNTBeamSearch:
        """``RNNTBeamSearch`` over the pretrained model (eval mode)."""
        return RNNTBeamSearch(self._get_model(dl_kwargs), self._blank)

    def _extractor(self, right_padding, dl_kwargs):
        stats = _fetch_asset(self._global_stats_path, dl_kwargs)
        return _FeatureExtractor(self._sample_rate, self._n_fft, self._n_mels,
                                 self._hop_length, stats, right_padding).eval()

    def get_feature_extractor(self, *, dl_kwargs=None):
        """Whole-utterance features: waveform (time,) -> ((frames + right_padding, n_mels),
        (1,) length)."""
        return self._extractor(self._right_padding, dl_kwargs)

    def get_streaming_feature_extractor(self, *, dl_kwargs=None):
        """Streaming features (no right padding): waveform segment -> (frames, n_mels)."""
        return self._extractor(0, dl_kwargs)

    def get_token_processor(self, *, dl_kwargs=None):
        """Token ids -> text, from the bundle's SentencePiece model."""
        return _SentencePieceTokenProcessor(_fetch_asset(self._sp_model_path, dl_kwargs))


EMFORMER_RNNT_BASE_LIBRISPEECH = RNNTBundle(
    _path="emformer_rnnt_base_librispeech.pt",
    _rnnt_factory_func=partial(emformer_rnnt_base, num_symbols=4097),
    _global_stats_path="pipeline-assets/global_stats_rnnt_librispeech.json",
    _sp_model_path="pipeline-assets/spm_bpe_4096_librispeech.model",
    _right_padding=4, _blank=4096, _sample_rate=16000, _n_fft=400, _n_mels=80,
    _hop_length=160, _segment_length=16, _right_context_length=4)
EMFORMER_RNNT_BASE_LIBRISPEECH.__doc__ = (
    "Emformer RNN-T ASR pipeline trained on LibriSpeech (torchaudio's checkpoint): "
    "streaming and whole-utterance inference; see RNNTBundle.")
