"""Filterbanks and transforms as matrices: ``melscale_fbanks``, ``linear_fbanks``,
``create_dct``, and the Hz <-> mel conversions.

Filterbanks are triangles over the linear frequency axis ``linspace(0, sample_rate // 2,
n_freqs)`` (the bins of a one-sided FFT): filter ``m`` rises from edge ``f[m]`` to 1 at
``f[m + 1]`` and falls to 0 at ``f[m + 2]``, the ``n + 2`` edges spaced evenly on the mel
scale (``melscale_fbanks``) or in Hz (``linear_fbanks``). With ``norm="slaney"`` each triangle
is scaled by ``2 / (f[m + 2] - f[m])`` (equal area). Mel scales:

- ``"htk"``: ``mel = 2595 log10(1 + hz / 700)``;
- ``"slaney"``: linear below 1 kHz (``mel = 3 hz / 200``), logarithmic above it
  (``mel = 15 + 27 ln(hz / 1000) / ln(6.4)``), as the Auditory Toolbox and librosa.

They are computed in float64 and returned as float32 tensors shaped as torchaudio's
(``(n_freqs, n_filters)``, ``create_dct``: ``(n_mels, n_mfcc)``), so that ``spec.T @ fb``
applies them.

    >>> fb = melscale_fbanks(201, 0.0, 8000.0, 80, 16000, norm="slaney", mel_scale="slaney")
    >>> fb.shape
    (201, 80)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember

__all__ = ["hz_to_mel", "mel_to_hz", "melscale_fbanks", "linear_fbanks", "create_dct"]

_F_SP = 200.0 / 3          # slaney: Hz per mel below the break
_BREAK_HZ = 1000.0
_BREAK_MEL = _BREAK_HZ / _F_SP
_LOGSTEP = math.log(6.4) / 27.0


def _check_scale(mel_scale):
    if mel_scale not in ("htk", "slaney"):
        raise ValueError(f'mel_scale should be one of "htk" or "slaney", got {mel_scale!r}')


def hz_to_mel(freq, mel_scale="htk"):
    """Hz -> mels (scalar or numpy array)."""
    _check_scale(mel_scale)
    f = np.asarray(freq, dtype=np.float64)
    if mel_scale == "htk":
        out = 2595.0 * np.log10(1.0 + f / 700.0)
    else:
        lin = f / _F_SP
        with np.errstate(divide="ignore"):
            log = _BREAK_MEL + np.log(np.maximum(f, 1e-300) / _BREAK_HZ) / _LOGSTEP
        out = np.where(f >= _BREAK_HZ, log, lin)
    return float(out) if out.ndim == 0 else out


def mel_to_hz(mels, mel_scale="htk"):
    """mels -> Hz (scalar or numpy array)."""
    _check_scale(mel_scale)
    m = np.asarray(mels, dtype=np.float64)
    if mel_scale == "htk":
        out = 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    else:
        out = np.where(m >= _BREAK_MEL, _BREAK_HZ * np.exp(_LOGSTEP * (m - _BREAK_MEL)),
                       _F_SP * m)
    return float(out) if out.ndim == 0 else out


def _triangles(all_freqs, f_pts):
    """(n_freqs, n_filters) triangles with edges ``f_pts`` (n_filters + 2)."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts[None, :] - all_freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


def _tensor(a, device=None):
    t = ember.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    return t.to(device) if device is not None else t


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk",
                    *, device=None):
    """Triangular mel filterbank, (n_freqs, n_mels): ``mel = spec.T @ fb`` for a one-sided
    power spectrogram ``spec`` (n_freqs, time).

    ``norm``: None or ``"slaney"`` (area normalisation); ``mel_scale``: ``"htk"`` or
    ``"slaney"``. Warns when a filter gets no FFT bin (too many mels for ``n_freqs``)."""
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')
    _check_scale(mel_scale)
    all_freqs = np.linspace(0, sample_rate // 2, int(n_freqs))
    m_pts = np.linspace(hz_to_mel(f_min, mel_scale), hz_to_mel(f_max, mel_scale),
                        int(n_mels) + 2)
    f_pts = mel_to_hz(m_pts, mel_scale)
    fb = _triangles(all_freqs, f_pts)
    if norm == "slaney":
        fb *= (2.0 / (f_pts[2:int(n_mels) + 2] - f_pts[:int(n_mels)]))[None, :]
    if (fb.max(axis=0) == 0.0).any():
        warnings.warn(f"at least one mel filter has all zero values: n_mels ({n_mels}) is set "
                      f"too high, or n_freqs ({n_freqs}) too low", UserWarning, stacklevel=2)
    return _tensor(fb, device)


def linear_fbanks(n_freqs, f_min, f_max, n_filter, sample_rate, *, device=None):
    """Triangular filterbank with edges evenly spaced in Hz, (n_freqs, n_filter)."""
    all_freqs = np.linspace(0, sample_rate // 2, int(n_freqs))
    f_pts = np.linspace(f_min, f_max, int(n_filter) + 2)
    return _tensor(_triangles(all_freqs, f_pts), device)


def create_dct(n_mfcc, n_mels, norm, *, device=None):
    """DCT-II matrix (n_mels, n_mfcc): ``coeffs = x @ dct`` over the last dim of ``x``
    (n_mels). ``norm``: None (unscaled, 2 cos(...)) or ``"ortho"`` (orthonormal)."""
    if norm is not None and norm != "ortho":
        raise ValueError('norm must be either "ortho" or None')
    n = np.arange(float(n_mels))
    k = np.arange(float(n_mfcc))[:, None]
    dct = np.cos(math.pi / float(n_mels) * (n + 0.5) * k)  # (n_mfcc, n_mels)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return _tensor(dct.T, device)
