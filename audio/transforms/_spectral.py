"""Spectral transforms as modules: Spectrogram, InverseSpectrogram, GriffinLim, MelScale,
InverseMelScale, MelSpectrogram, MFCC, LFCC, AmplitudeToDB, TimeStretch.

Each keeps torchaudio's constructor arguments, defaults and buffer names (``window``, ``fb``,
``dct_mat``, ``filter_mat``, ``phase_advance``), so state dicts carry over.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember import nn

from .. import functional as F
from ..functional._util import as_tensor

__all__ = ["Spectrogram", "InverseSpectrogram", "GriffinLim", "AmplitudeToDB", "MelScale",
           "InverseMelScale", "MelSpectrogram", "MFCC", "LFCC", "TimeStretch"]


def _window(window_fn, win_length, wkwargs):
    return window_fn(win_length) if wkwargs is None else window_fn(win_length, **wkwargs)


def _set_frames(module, n_fft, win_length, hop_length, window_fn=None, wkwargs=None):
    """The STFT framing every spectral transform keeps, with torchaudio's defaults:
    ``win_length`` = ``n_fft``, ``hop_length`` = ``win_length // 2``; and the ``window`` buffer
    when ``window_fn`` is given."""
    module.n_fft = n_fft
    module.win_length = win_length if win_length is not None else n_fft
    module.hop_length = hop_length if hop_length is not None else module.win_length // 2
    if window_fn is not None:
        module.register_buffer("window", _window(window_fn, module.win_length, wkwargs))


class Spectrogram(nn.Module):
    """Waveform (..., time) -> spectrogram (..., n_fft // 2 + 1, frames): ``|STFT|^power``,
    or the complex STFT with ``power=None``.

    ``win_length`` defaults to ``n_fft``, ``hop_length`` to ``win_length // 2``; ``pad``
    zeros are added on both sides; ``normalized`` True (or ``"window"``) divides by the
    window's L2 norm, ``"frame_length"`` uses the orthonormal FFT."""

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window_fn=ember.hann_window, power=2.0, normalized=False, wkwargs=None,
                 center=True, pad_mode="reflect", onesided=True, return_complex=None):
        super().__init__()
        _set_frames(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided
        if return_complex is not None:
            warnings.warn("return_complex is deprecated (and ignored): use power=None for a "
                          "complex spectrogram", DeprecationWarning, stacklevel=2)

    def forward(self, waveform):
        return F.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length,
                             self.win_length, self.power, self.normalized, self.center,
                             self.pad_mode, self.onesided)

    def extra_repr(self):
        return (f"n_fft={self.n_fft}, win_length={self.win_length}, "
                f"hop_length={self.hop_length}, power={self.power}")


class InverseSpectrogram(nn.Module):
    """Complex spectrogram (..., freq, frames) -> waveform (..., time); the inverse of
    ``Spectrogram(power=None)`` with the same arguments. ``forward(spec, length=None)``."""

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window_fn=ember.hann_window, normalized=False, wkwargs=None, center=True,
                 pad_mode="reflect", onesided=True):
        super().__init__()
        _set_frames(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        self.pad = pad
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, spectrogram, length=None):
        return F.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft,
                                     self.hop_length, self.win_length, self.normalized,
                                     self.center, self.pad_mode, self.onesided)


class GriffinLim(nn.Module):
    """Magnitude spectrogram (..., freq, frames) -> waveform, by ``n_iter`` Griffin-Lim
    iterations with ``momentum`` (fast Griffin-Lim; 0.99 default)."""

    def __init__(self, n_fft=400, n_iter=32, win_length=None, hop_length=None,
                 window_fn=ember.hann_window, power=2.0, wkwargs=None, momentum=0.99,
                 length=None, rand_init=True):
        super().__init__()
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in the range [0, 1). Found: {momentum}")
        self.n_iter = n_iter
        _set_frames(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        self.length = length
        self.power = power
        self.momentum = momentum
        self.rand_init = rand_init

    def forward(self, specgram):
        return F.griffinlim(specgram, self.window, self.n_fft, self.hop_length,
                            self.win_length, self.power, self.n_iter, self.momentum,
                            self.length, self.rand_init)


class AmplitudeToDB(nn.Module):
    """Power (``stype="power"``, 10 log10) or amplitude (``"magnitude"``, 20 log10)
    spectrogram to decibels, floored ``top_db`` below each spectrogram's maximum."""

    def __init__(self, stype="power", top_db=None):
        super().__init__()
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return F.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier,
                                 self.top_db)


class MelScale(nn.Module):
    """Linear-frequency spectrogram (..., n_stft, time) -> mel spectrogram (..., n_mels,
    time) through the triangular filterbank ``fb`` (n_stft, n_mels)."""

    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201,
                 norm=None, mel_scale="htk"):
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        self.norm = norm
        self.mel_scale = mel_scale
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max,
                                                     self.n_mels, self.sample_rate,
                                                     self.norm, self.mel_scale))

    def forward(self, specgram):
        return ember.matmul(as_tensor(specgram, "specgram").transpose(-1, -2),
                            self.fb).transpose(-1, -2)


class InverseMelScale(nn.Module):
    """Mel spectrogram (..., n_mels, time) -> linear spectrogram (..., n_stft, time): the
    non-negative least-squares-like solution ``relu(lstsq(fb.T, mel))``."""

    def __init__(self, n_stft, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None,
                 norm=None, mel_scale="htk", driver="gels"):
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max or float(sample_rate // 2)
        self.f_min = f_min
        self.driver = driver
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        if driver not in ("gels", "gelsy", "gelsd", "gelss"):
            raise ValueError(f'driver must be one of ["gels", "gelsy", "gelsd", "gelss"]. '
                             f'Found {driver}.')
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max,
                                                     self.n_mels, self.sample_rate, norm,
                                                     mel_scale))

    def forward(self, melspec):
        mel = as_tensor(melspec, "melspec")
        shape = tuple(mel.shape)
        if shape[-2] != self.n_mels:
            raise ValueError(f"Expected an input with {self.n_mels} mel bins. Found: "
                             f"{shape[-2]}")
        mel = mel.reshape(-1, shape[-2], shape[-1])
        A = self.fb.transpose(-1, -2).unsqueeze(0)
        A = A.expand(mel.shape[0], *A.shape[1:])
        sol = ember.linalg.lstsq(A, mel).solution
        spec = ember.relu(sol)
        return spec.reshape(shape[:-2] + (self.fb.shape[0], shape[-1]))


class MelSpectrogram(nn.Module):
    """Waveform (..., time) -> mel spectrogram (..., n_mels, frames): ``Spectrogram`` then
    ``MelScale`` (torchaudio's defaults: n_fft 400, hop 200, 128 HTK mels, power 2, no
    filter normalisation)."""

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None,
                 f_min=0.0, f_max=None, pad=0, n_mels=128, window_fn=ember.hann_window,
                 power=2.0, normalized=False, wkwargs=None, center=True, pad_mode="reflect",
                 onesided=None, norm=None, mel_scale="htk"):
        super().__init__()
        if onesided is not None:
            warnings.warn("onesided is deprecated (and ignored): the spectrogram is always "
                          "one-sided here", DeprecationWarning, stacklevel=2)
        self.sample_rate = sample_rate
        _set_frames(self, n_fft, win_length, hop_length)
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.n_mels = n_mels
        self.f_max = f_max
        self.f_min = f_min
        self.spectrogram = Spectrogram(n_fft=self.n_fft, win_length=self.win_length,
                                       hop_length=self.hop_length, pad=self.pad,
                                       window_fn=window_fn, power=self.power,
                                       normalized=self.normalized, wkwargs=wkwargs,
                                       center=center, pad_mode=pad_mode, onesided=True)
        self.mel_scale = MelScale(self.n_mels, self.sample_rate, self.f_min, self.f_max,
                                  self.n_fft // 2 + 1, norm, mel_scale)

    def forward(self, waveform):
        return self.mel_scale(self.spectrogram(waveform))


def _check_dct(dct_type):
    if dct_type != 2:
        raise ValueError(f"DCT type not supported: {dct_type} (only type 2 is)")


class MFCC(nn.Module):
    """Waveform (..., time) -> MFCC (..., n_mfcc, frames): DCT-II (``norm="ortho"``) of the
    log mel spectrogram, the log being ``AmplitudeToDB("power", top_db=80)`` or, with
    ``log_mels``, ``log(mel + 1e-6)``. ``melkwargs`` go to ``MelSpectrogram``."""

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm="ortho",
                 log_mels=False, melkwargs=None):
        super().__init__()
        _check_dct(dct_type)
        self.sample_rate = sample_rate
        self.n_mfcc = n_mfcc
        self.dct_type = dct_type
        self.norm = norm
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.MelSpectrogram = MelSpectrogram(sample_rate=self.sample_rate, **(melkwargs or {}))
        if self.n_mfcc > self.MelSpectrogram.n_mels:
            raise ValueError("Cannot select more MFCC coefficients than # mel bins")
        self.register_buffer("dct_mat", F.create_dct(self.n_mfcc, self.MelSpectrogram.n_mels,
                                                     self.norm))
        self.log_mels = log_mels

    def forward(self, waveform):
        mel = self.MelSpectrogram(waveform)
        if self.log_mels:
            mel = ember.log(mel + 1e-6)
        else:
            mel = self.amplitude_to_DB(mel)
        return ember.matmul(mel.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class LFCC(nn.Module):
    """Waveform (..., time) -> linear-frequency cepstral coefficients (..., n_lfcc, frames):
    as ``MFCC`` with ``n_filter`` triangles evenly spaced in Hz over [f_min, f_max].
    ``speckwargs`` go to ``Spectrogram``."""

    def __init__(self, sample_rate=16000, n_filter=128, f_min=0.0, f_max=None, n_lfcc=40,
                 dct_type=2, norm="ortho", log_lf=False, speckwargs=None):
        super().__init__()
        _check_dct(dct_type)
        self.sample_rate = sample_rate
        self.f_min = f_min
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.n_filter = n_filter
        self.n_lfcc = n_lfcc
        self.dct_type = dct_type
        self.norm = norm
        self.log_lf = log_lf
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.Spectrogram = Spectrogram(**(speckwargs or {}))
        if self.n_lfcc > self.Spectrogram.n_fft:
            raise ValueError("Cannot select more LFCC coefficients than # fft bins")
        self.register_buffer("filter_mat", F.linear_fbanks(
            self.Spectrogram.n_fft // 2 + 1, self.f_min, self.f_max, self.n_filter,
            self.sample_rate))
        self.register_buffer("dct_mat", F.create_dct(self.n_lfcc, self.n_filter, self.norm))

    def forward(self, waveform):
        spec = self.Spectrogram(waveform)
        spec = ember.matmul(spec.transpose(-1, -2), self.filter_mat).transpose(-1, -2)
        spec = ember.log(spec + 1e-6) if self.log_lf else self.amplitude_to_DB(spec)
        return ember.matmul(spec.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class TimeStretch(nn.Module):
    """Speed a complex spectrogram (..., freq, frames) up by ``rate`` (``fixed_rate``, or
    ``forward(spec, overriding_rate)``) with the phase vocoder; pitch unchanged."""

    def __init__(self, hop_length=None, n_freq=201, fixed_rate=None):
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.register_buffer("phase_advance", ember.from_numpy(
            np.linspace(0, math.pi * hop_length, n_freq)[..., None].astype(np.float32)))

    def forward(self, complex_specgrams, overriding_rate=None):
        if overriding_rate is None:
            if self.fixed_rate is None:
                raise ValueError("If no fixed_rate is specified, must pass a valid rate to the "
                                 "forward method.")
            rate = self.fixed_rate
        else:
            rate = overriding_rate
        return F.phase_vocoder(complex_specgrams, rate, self.phase_advance)
