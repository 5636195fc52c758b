"""ember.audio: streaming audio I/O on PyAV, differentiable DSP with torchaudio's numerics.

    >>> import ember.audio as ea
    >>> waveform, sr = ea.load("speech.flac")            # (channels, frames) float32
    >>> mel = ea.transforms.MelSpectrogram(sr, n_mels=80)(waveform)
    >>> ea.save("out.wav", waveform, sr, bits_per_sample=24)

- ``ember.audio.io``: ``load``/``save``/``info``, ``StreamReader``/``StreamWriter`` (also
  exported here).
- ``ember.audio.functional``: spectrograms, filterbanks, resampling, filters, effects.
- ``ember.audio.transforms``: the same as ``ember.nn.Module``s, with torchaudio's defaults.
- ``ember.audio.models``: Wav2Vec2/HuBERT/WavLM, Wav2Letter, DeepSpeech, Conformer, Emformer
  and the Emformer RNN-T (torchaudio's state-dict keys), ``RNNTBeamSearch``, and CTC decoders
  in ``ember.audio.models.decoder``.
- ``ember.audio.pipelines``: bundles of published checkpoints (``WAV2VEC2_ASR_BASE_960H``,
  ``HUBERT_ASR_LARGE``, ``EMFORMER_RNNT_BASE_LIBRISPEECH``, ...).
- ``ember.audio.datasets``: SPEECHCOMMANDS, LIBRISPEECH, YESNO, LJSPEECH, VCTK_092.

The last three load on first use.
"""
import importlib as _importlib

from . import functional, io, transforms  # noqa: F401
from .io import (AudioError, AudioMetaData, CodecConfig, StreamReader, StreamWriter,  # noqa
                 TruncatedAudioWarning, info, list_audio_backends, load, save)

__all__ = ["AudioError", "AudioMetaData", "CodecConfig", "StreamReader", "StreamWriter",
           "TruncatedAudioWarning", "functional", "info", "io", "list_audio_backends", "load",
           "save", "transforms", "models", "pipelines", "datasets"]

_LAZY = ("datasets", "models", "pipelines")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
