"""ember.audio: streaming audio I/O on PyAV, differentiable DSP with torchaudio's numerics.

    >>> import ember.audio as ea
    >>> waveform, sr = ea.load("speech.flac")            # (channels, frames) float32
    >>> mel = ea.transforms.MelSpectrogram(sr, n_mels=80)(waveform)
    >>> ea.save("out.wav", waveform, sr, bits_per_sample=24)

- ``ember.audio.io``: ``load``/``save``/``info``, ``StreamReader``/``StreamWriter`` (also
  exported here).
- ``ember.audio.functional``: spectrograms, filterbanks, resampling, filters, effects.
- ``ember.audio.transforms``: the same as ``ember.nn.Module``s, with torchaudio's defaults.
"""
from . import functional, io, transforms  # noqa: F401
from .io import (AudioError, AudioMetaData, CodecConfig, StreamReader, StreamWriter,  # noqa
                 TruncatedAudioWarning, info, list_audio_backends, load, save)

__all__ = ["AudioError", "AudioMetaData", "CodecConfig", "StreamReader", "StreamWriter",
           "TruncatedAudioWarning", "functional", "info", "io", "list_audio_backends", "load",
           "save", "transforms"]
