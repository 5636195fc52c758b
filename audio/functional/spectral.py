"""Spectrograms and what is done with them: ``spectrogram``/``inverse_spectrogram`` (on
``ember.stft``/``istft``), ``griffinlim``, ``phase_vocoder``, ``amplitude_to_DB``/
``DB_to_amplitude``, ``compute_deltas`` and the SpecAugment masks.

Every function is written with ember ops, so gradients flow to the waveform (and the window)
through spectrogram, mel and MFCC; shapes follow torchaudio: a waveform (..., time) gives a
spectrogram (..., freq, frames) with ``freq = n_fft // 2 + 1`` when one-sided.

    >>> x = ember.randn(2, 16000, requires_grad=True)
    >>> spec = spectrogram(x, 0, ember.hann_window(400), 400, 200, 400, 2.0, False)
    >>> spec.shape
    (2, 201, 81)
"""
from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as NF

from ._util import as_tensor, const, float_dtype

__all__ = ["spectrogram", "inverse_spectrogram", "griffinlim", "phase_vocoder",
           "amplitude_to_DB", "DB_to_amplitude", "compute_deltas", "mask_along_axis",
           "mask_along_axis_iid"]


def _spec_norms(normalized):
    """(normalise each frame by sqrt(n_fft) (stft's ``normalized``), divide by the window's
    L2 norm): ``True``/``"window"`` is the latter, ``"frame_length"`` the former."""
    if isinstance(normalized, str):
        if normalized == "window":
            return False, True
        if normalized == "frame_length":
            return True, False
        raise ValueError(f'normalized must be a bool, "window" or "frame_length", got '
                         f'{normalized!r}')
    return False, bool(normalized)


def power_of(spec, power):
    """``|spec| ** power`` of a complex spectrogram (power 2 as re^2 + im^2: no square root,
    and a zero gradient at 0)."""
    if power == 2.0:
        re, im = ember.real(spec), ember.imag(spec)
        return re * re + im * im
    mag = spec.abs()
    return mag if power == 1.0 else mag.pow(power)


_NP_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge",
           "circular": "wrap"}


def _fast_power(x, window, n_fft, hop, win_length, power, frame_norm, window_norm, center,
                pad_mode):
    """A power spectrogram (N, frames, freq) computed straight in numpy when no gradient is
    wanted: the window's support framed as a strided view, windowed, transformed by a
    zero-padded real FFT and reduced to power in blocks of frames spread over ember's
    threads (numpy's FFT releases the GIL). The frame's zero margins are put after the
    windowed samples rather than around them: a circular shift inside the frame, which
    changes phases only, so magnitudes equal ``stft``'s. None when the inputs are outside
    what it handles (the general path then runs, with its errors)."""
    a = x.array
    w = window.array
    if not isinstance(a, np.ndarray) or not isinstance(w, np.ndarray) or a.ndim != 2 or \
            a.dtype not in (np.float32, np.float64) or w.dtype.kind != "f" or \
            pad_mode not in _NP_PAD or w.shape != (win_length,) or not 0 < hop or \
            not 0 < win_length <= n_fft:
        return None
    from ember._parallel import parallel_for

    if center:
        p = n_fft // 2
        if pad_mode == "reflect" and a.shape[1] <= p:
            return None
        a = np.pad(a, ((0, 0), (p, p)), mode=_NP_PAD[pad_mode])
    N, L = a.shape
    if L < n_fft:
        return None
    frames = 1 + (L - n_fft) // hop
    left = (n_fft - win_length) // 2
    view = np.lib.stride_tricks.as_strided(
        a[:, left:], (N, frames, win_length), (a.strides[0], hop * a.strides[1], a.strides[1]),
        writeable=False)
    w = w.astype(a.dtype, copy=False)
    nf = n_fft // 2 + 1
    out = np.empty((N, frames, nf), a.dtype)
    scale = 1.0
    if frame_norm:
        scale /= n_fft
    if window_norm:
        scale /= float(np.sum(w.astype(np.float64) ** 2))
    block = max(1, (1 << 16) // n_fft)

    def run(lo, hi):
        for f0 in range(lo, hi, block):
            f1 = min(hi, f0 + block)
            spec = np.fft.rfft(view[:, f0:f1] * w, n=n_fft, axis=-1)
            dst = out[:, f0:f1]
            if power == 2.0:
                np.multiply(spec.real, spec.real, out=dst)
                dst += spec.imag * spec.imag
            else:
                np.abs(spec, out=dst)
                if power != 1.0:
                    np.power(dst, power, out=dst)
            if scale != 1.0:
                dst *= dst.dtype.type(scale ** (power / 2.0))

    parallel_for(run, frames, work=N * frames * n_fft * 8)
    return ember.Tensor._make(out)


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized,
                center=True, pad_mode="reflect", onesided=True, return_complex=None):
    """Spectrogram of ``waveform`` (..., time) -> (..., freq, frames).

    ``pad``: zeros added on both sides first; ``window``: (win_length,) tensor; ``power``:
    exponent of the magnitude (1 energy, 2 power), or None for the complex STFT;
    ``normalized``: True/``"window"`` divides by the window's L2 norm, ``"frame_length"`` uses
    the orthonormal FFT; ``center``/``pad_mode``/``onesided`` as ``ember.stft``."""
    x = as_tensor(waveform)
    if pad > 0:
        x = NF.pad(x, (pad, pad), "constant")
    frame_norm, window_norm = _spec_norms(normalized)
    shape = tuple(x.shape)
    x = x.reshape(-1, shape[-1])
    if power is not None and onesided and window is not None and not (
            ember.is_grad_enabled() and (x.requires_grad or window.requires_grad)):
        hop = n_fft // 4 if hop_length is None else int(hop_length)
        win = n_fft if win_length is None else int(win_length)
        fast = _fast_power(x, window, int(n_fft), hop, win, power, frame_norm, window_norm,
                           center, pad_mode)
        if fast is not None:
            # (N, frames, freq) in memory, returned as the (..., freq, frames) view
            return fast.transpose(1, 2).reshape(shape[:-1] + (fast.shape[2], fast.shape[1]))
    spec = ember.stft(x, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                      window=window, center=center, pad_mode=pad_mode, normalized=frame_norm,
                      onesided=onesided, return_complex=True)
    spec = spec.reshape(shape[:-1] + tuple(spec.shape[-2:]))
    if window_norm:
        spec = spec / window.pow(2.0).sum().sqrt()
    if power is None:
        return spec
    return power_of(spec, power)


def inverse_spectrogram(spectrogram, length, pad, window, n_fft, hop_length, win_length,
                        normalized, center=True, pad_mode="reflect", onesided=True):
    """Waveform (..., time) from a complex spectrogram (..., freq, frames): the inverse of
    ``spectrogram(power=None)`` with the same arguments. ``length``: samples wanted (before
    ``pad`` is removed), or None."""
    spec = as_tensor(spectrogram, "spectrogram")
    if not spec.is_complex():
        raise ValueError("Expected `spectrogram` to be complex dtype.")
    frame_norm, window_norm = _spec_norms(normalized)
    if window_norm:
        spec = spec * window.pow(2.0).sum().sqrt()
    shape = tuple(spec.shape)
    spec = spec.reshape(-1, shape[-2], shape[-1])
    x = ember.istft(spec, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                    window=window, center=center, normalized=frame_norm, onesided=onesided,
                    length=length + 2 * pad if length is not None else None,
                    return_complex=False)
    if length is not None and pad > 0:
        x = x[:, pad:-pad]
    return x.reshape(shape[:-2] + tuple(x.shape[-1:]))


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum,
               length, rand_init):
    """Waveform whose spectrogram magnitude is ``specgram`` (..., freq, frames), by the
    Griffin-Lim iteration with fast-Griffin-Lim ``momentum`` (in [0, 1)). ``power``: the
    exponent ``specgram`` was taken with; ``rand_init``: random initial phases (from
    ``ember.manual_seed``'s generator), else zero phases."""
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in range [0, 1). Found: {momentum}")
    momentum = momentum / (1 + momentum)
    S = as_tensor(specgram, "specgram")
    shape = tuple(S.shape)
    S = S.reshape(-1, shape[-2], shape[-1])
    S = S.pow(1 / power)
    cdt = ember.complex64 if S.dtype == np.float32 else ember.complex128
    if rand_init:
        angles = ember.complex(ember.rand(S.shape, dtype=S.dtype, device=S.device),
                               ember.rand(S.shape, dtype=S.dtype, device=S.device))
    else:
        angles = ember.full(S.shape, 1, dtype=cdt, device=S.device)
    tprev = None
    kw = dict(n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window)
    for _ in range(n_iter):
        inverse = ember.istft(S * angles, length=length, **kw)
        rebuilt = ember.stft(inverse, center=True, pad_mode="reflect", normalized=False,
                             onesided=True, return_complex=True, **kw)
        angles = rebuilt
        if momentum and tprev is not None:
            angles = angles - tprev * momentum
        angles = angles / (angles.abs() + 1e-16)
        tprev = rebuilt
    x = ember.istft(S * angles, length=length, **kw)
    return x.reshape(shape[:-2] + tuple(x.shape[-1:]))


def phase_vocoder(complex_specgrams, rate, phase_advance):
    """Speed a complex spectrogram (..., freq, frames) up by ``rate`` without changing pitch:
    ``ceil(frames / rate)`` frames, magnitudes interpolated linearly between neighbouring
    frames, phases advanced by the measured instantaneous frequency. ``phase_advance``:
    (freq, 1), the expected advance per hop (``linspace(0, pi * hop, freq)``)."""
    if rate == 1.0:
        return complex_specgrams
    spec = as_tensor(complex_specgrams, "complex_specgrams")
    shape = tuple(spec.shape)
    spec = spec.reshape(-1, shape[-2], shape[-1])
    rdt = float_dtype(spec)
    steps = np.arange(0, shape[-1], rate, dtype=np.float64).astype(rdt)
    alphas = const(steps % 1.0, spec, rdt)
    phase_0 = spec[..., :1].angle()
    spec = NF.pad(spec, (0, 2))
    idx = steps.astype(np.int64)
    s0 = spec.index_select(-1, const(idx, spec, np.int64))
    s1 = spec.index_select(-1, const(idx + 1, spec, np.int64))
    angle_0, angle_1 = s0.angle(), s1.angle()
    norm_0, norm_1 = s0.abs(), s1.abs()
    phase = angle_1 - angle_0 - phase_advance
    phase = phase - 2 * math.pi * ember.round(phase / (2 * math.pi))
    phase = phase + phase_advance
    phase = ember.cat([phase_0, phase[..., :-1]], dim=-1)
    phase_acc = ember.cumsum(phase, -1)
    mag = alphas * norm_1 + (1 - alphas) * norm_0
    out = ember.polar(mag, phase_acc)
    return out.reshape(shape[:-2] + tuple(out.shape[1:]))


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    """``multiplier * log10(max(x, amin)) - multiplier * db_multiplier`` (multiplier 10 for
    power, 20 for amplitude), floored at ``top_db`` below the maximum of each spectrogram
    (the max is over (channel, freq, time) of each item of a batch (..., channel, freq,
    time); over (freq, time) for a 2-D input)."""
    x = as_tensor(x, "x")
    x_db = multiplier * ember.log10(ember.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = tuple(x_db.shape)
        packed = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed, shape[-2], shape[-1])
        floor = (x_db.amax(dim=(-3, -2, -1)) - top_db).reshape(-1, 1, 1, 1)
        x_db = ember.maximum(x_db, floor)
        x_db = x_db.reshape(shape)
    return x_db


def DB_to_amplitude(x, ref, power):
    """Inverse of ``amplitude_to_DB``: ``ref * (10 ** (x / 10)) ** power`` (power 1 for power
    spectrograms, 0.5 for amplitudes)."""
    x = as_tensor(x, "x")
    return ref * ember.pow(ember.pow(10.0, 0.1 * x), power)


def compute_deltas(specgram, win_length=5, mode="replicate"):
    """Delta (time-derivative) coefficients along the last dim, by the regression formula
    ``d[t] = sum_{n=1}^{N} n (c[t+n] - c[t-n]) / (2 sum n^2)`` with N = (win_length - 1) // 2,
    the ends padded with ``mode``."""
    x = as_tensor(specgram, "specgram")
    if win_length < 3:
        raise ValueError(f"Window length should be greater than or equal to 3. Found "
                         f"win_length {win_length}")
    shape = tuple(x.shape)
    n = (win_length - 1) // 2
    denom = n * (n + 1) * (2 * n + 1) / 3
    x = x.reshape(1, -1, shape[-1])
    x = NF.pad(x, (n, n), mode=mode)
    T = shape[-1]
    out = None
    for k in range(1, n + 1):  # antisymmetric kernel: k * (x[t + k] - x[t - k])
        term = (x.narrow(-1, n + k, T) - x.narrow(-1, n - k, T)) * float(k)
        out = term if out is None else out + term
    return (out / denom).reshape(shape)


def _mask_param(mask_param, p, axis_length):
    return mask_param if p == 1.0 else min(mask_param, int(axis_length * p))


def _check_mask(dim, axis, p, least):
    if dim < least:
        raise ValueError(f"Spectrogram must have at least {least} dimensions ({dim} given).")
    if axis not in (dim - 2, dim - 1):
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and "
                         f"axis {dim - 1} supported; {axis} given).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")


def _fill(x, mask, mask_value):
    if isinstance(mask_value, ember.Tensor):
        return ember.where(mask, mask_value.to(x.dtype), x)
    return x.masked_fill(mask, mask_value)


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis, p=1.0):
    """SpecAugment mask, drawn independently for every example of a batch (..., freq, time)
    (at least 3 dims): columns ``[v0, v0 + v)`` of ``axis`` set to ``mask_value``, with
    ``v ~ U(0, mask_param)`` (capped at ``p`` of the axis) and ``v0 ~ U(0, size - v)``."""
    x = as_tensor(specgrams, "specgrams")
    dim = x.dim()
    axis = axis + dim if axis < 0 else axis
    _check_mask(dim, axis, p, 3)
    mask_param = _mask_param(mask_param, p, x.shape[axis])
    if mask_param < 1:
        return x
    batch = tuple(x.shape[:dim - 2])
    dt = float_dtype(x)
    value = ember.rand(batch, dtype=dt, device=x.device) * mask_param
    min_value = ember.rand(batch, dtype=dt, device=x.device) * (x.shape[axis] - value)
    start = min_value.long()[..., None, None]
    end = (min_value.long() + value.long())[..., None, None]
    pos = ember.arange(0, x.shape[axis], device=x.device)
    x = x.transpose(axis, -1)
    x = _fill(x, (pos >= start) & (pos < end), mask_value)
    return x.transpose(axis, -1)


def mask_along_axis(specgram, mask_param, mask_value, axis, p=1.0):
    """As ``mask_along_axis_iid`` with one mask shared by every example (..., freq, time)."""
    x = as_tensor(specgram, "specgram")
    dim = x.dim()
    axis = axis + dim if axis < 0 else axis
    _check_mask(dim, axis, p, 2)
    mask_param = _mask_param(mask_param, p, x.shape[axis])
    if mask_param < 1:
        return x
    shape = tuple(x.shape)
    x = x.reshape(-1, shape[-2], shape[-1])
    value = float(ember.rand(1).item()) * mask_param
    min_value = float(ember.rand(1).item()) * (shape[axis] - value)
    start = int(min_value)
    end = start + int(value)
    pos = np.arange(shape[axis])
    mask = (pos >= start) & (pos < end)
    mask = mask[:, None] if axis == dim - 2 else mask[None, :]
    x = _fill(x, const(mask, x, np.bool_), mask_value)
    return x.reshape(shape)
