"""ember.audio.transforms: the DSP of ``ember.audio.functional`` as ``ember.nn.Module``s,
with torchaudio's constructor arguments, defaults and buffer names.

    >>> mfcc = MFCC(sample_rate=16000, n_mfcc=13, melkwargs={"n_mels": 40, "hop_length": 160})
    >>> mfcc(waveform).shape            # waveform (channels, time) -> (channels, 13, frames)
"""
from ._effects import (ComputeDeltas, Convolve, Deemphasis, Fade, FFTConvolve,  # noqa: F401
                       FrequencyMasking, MuLawDecoding, MuLawEncoding, PitchShift, Preemphasis,
                       Resample, SpecAugment, TimeMasking, Vad, Vol)
from ._rnnt import RNNTLoss  # noqa: F401
from ._spectral import (AmplitudeToDB, GriffinLim, InverseMelScale,  # noqa: F401
                        InverseSpectrogram, LFCC, MelScale, MelSpectrogram, MFCC, Spectrogram,
                        TimeStretch)

__all__ = ["AmplitudeToDB", "ComputeDeltas", "Convolve", "Deemphasis", "FFTConvolve", "Fade",
           "FrequencyMasking", "GriffinLim", "InverseMelScale", "InverseSpectrogram", "LFCC",
           "MFCC", "MelScale", "MelSpectrogram", "MuLawDecoding", "MuLawEncoding",
           "PitchShift", "Preemphasis", "RNNTLoss", "Resample", "SpecAugment", "Spectrogram",
           "TimeMasking", "TimeStretch", "Vad", "Vol"]
