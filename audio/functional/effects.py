"""Effects on waveforms: ``gain``, mu-law companding, ``pitch_shift`` and the ``vad`` trimmer.

    >>> x = ember.randn(1, 16000) * 0.1
    >>> pitch_shift(x, 16000, n_steps=4).shape        # a major third up, same length
    (1, 16000)
    >>> mu_law_encoding(x, 256).dtype                 # codes 0..255
    dtype('int64')
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember
import ember.nn.functional as NF

from ._util import as_tensor, const, float_dtype
from .resample import resample
from .spectral import phase_vocoder

__all__ = ["gain", "mu_law_encoding", "mu_law_decoding", "pitch_shift", "vad"]


def gain(waveform, gain_db=1.0):
    """``waveform * 10 ** (gain_db / 20)`` (no clipping)."""
    x = as_tensor(waveform)
    if gain_db == 0:
        return x
    return x * (10 ** (gain_db / 20))


def mu_law_encoding(x, quantization_channels):
    """mu-law companding of a signal in [-1, 1] to int64 codes 0 .. quantization_channels - 1:
    ``floor((sign(x) log1p(mu |x|) / log1p(mu) + 1) / 2 * mu + 0.5)``, mu = channels - 1."""
    x = as_tensor(x, "x")
    mu = quantization_channels - 1.0
    if not x.is_floating_point():
        warnings.warn("mu_law_encoding expects a floating point input; it is converted to "
                      "float32", UserWarning, stacklevel=2)
        x = x.float()
    log1p_mu = math.log1p(mu) if x.dtype == np.float64 else float(np.log1p(np.float32(mu)))
    x_mu = ember.sign(x) * ember.log1p(mu * x.abs()) / log1p_mu
    return ((x_mu + 1) / 2 * mu + 0.5).long()


def mu_law_decoding(x_mu, quantization_channels):
    """Inverse of ``mu_law_encoding``: codes -> signal in [-1, 1] (float32 for integer
    codes)."""
    x_mu = as_tensor(x_mu, "x_mu")
    mu = quantization_channels - 1.0
    if not x_mu.is_floating_point():
        x_mu = x_mu.float()
    log1p_mu = math.log1p(mu) if x_mu.dtype == np.float64 else float(np.log1p(np.float32(mu)))
    x = x_mu / mu * 2 - 1.0
    return ember.sign(x) * (ember.exp(x.abs() * log1p_mu) - 1.0) / mu


def _stretch(x, n_steps, bins_per_octave, n_fft, win_length, hop_length, window):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if window is None:
        window = ember.hann_window(win_length, dtype=float_dtype(x), device=x.device)
    shape = tuple(x.shape)
    x = x.reshape(-1, shape[-1])
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    spec = ember.stft(x, n_fft, hop_length, win_length, window, center=True,
                      pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    advance = const(np.linspace(0, math.pi * hop_length, spec.shape[-2])[:, None], x)
    stretched = phase_vocoder(spec, rate, advance)
    return ember.istft(stretched, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                       window=window, length=int(round(shape[-1] / rate)))


def pitch_shift(waveform, sample_rate, n_steps, bins_per_octave=12, n_fft=512,
                hop_length=None, win_length=None, window=None):
    """Shift the pitch of ``waveform`` (..., time) by ``n_steps`` steps of ``1 /
    bins_per_octave`` octave, keeping its length: time-stretch by the phase vocoder, then
    resample back (``hop_length`` default ``n_fft // 4``, ``win_length`` default ``n_fft``,
    Hann window)."""
    x = as_tensor(waveform)
    shape = tuple(x.shape)
    stretched = _stretch(x, n_steps, bins_per_octave, n_fft, win_length, hop_length, window)
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    shifted = resample(stretched, int(sample_rate / rate), sample_rate)
    n = shape[-1]
    if shifted.shape[-1] > n:
        shifted = shifted[..., :n]
    else:
        shifted = NF.pad(shifted, (0, n - shifted.shape[-1]))
    return shifted.reshape(shape[:-1] + (n,))


# --------------------------------------------------------------------------- vad

def _hann(n):
    return 0.5 - 0.5 * np.cos(2 * math.pi * np.arange(n) / n)  # periodic, as torch's


def vad(waveform, sample_rate, trigger_level=7.0, trigger_time=0.25, search_time=1.0,
        allowed_gap=0.25, pre_trigger_time=0.0, boot_time=0.35, noise_up_time=0.1,
        noise_down_time=0.01, noise_reduction_amount=1.35, measure_freq=20.0,
        measure_duration=None, measure_smooth_time=0.4, hp_filter_freq=50.0,
        lp_filter_freq=6000.0, hp_lifter_freq=150.0, lp_lifter_freq=2000.0):
    """Trim silence and quiet background noise from the start of a recording (SoX's ``vad``
    as torchaudio ports it). ``waveform``: (time,) or (channels, time), channels treated as
    one recording (cut at the earliest activity in any).

    Every ``1 / measure_freq`` s, a Hann-windowed ``measure_duration`` (default two periods)
    excerpt is transformed; its band [hp_filter_freq, lp_filter_freq] is smoothed over time,
    an adaptive noise floor (learned over ``boot_time``, then following ``noise_up_time`` /
    ``noise_down_time``) is subtracted ``noise_reduction_amount`` times, and the power of the
    cepstrum between the lifter frequencies gives the measure. Activity is declared when its
    ``trigger_time`` average reaches ``trigger_level``; quieter bursts up to ``search_time``
    before (with gaps up to ``allowed_gap``) and ``pre_trigger_time`` s are kept too. Returns
    the waveform from there (empty if nothing triggers). The decision is not differentiable;
    the returned slice is."""
    x = as_tensor(waveform)
    if x.dim() > 2:
        warnings.warn(f"vad expects (time,) or (channels, time), got {x.dim()} dims: all "
                      f"leading dims are treated as channels of one recording", UserWarning,
                      stacklevel=2)
    measure_duration = 2.0 / measure_freq if measure_duration is None else measure_duration
    m_len = int(sample_rate * measure_duration + 0.5)
    dft_len = 16
    while dft_len < m_len:
        dft_len *= 2
    period = int(sample_rate / measure_freq + 0.5)
    n_meas = math.ceil(search_time * measure_freq)
    search_pre = n_meas * period
    gap_len = int(allowed_gap * measure_freq + 0.5)
    fixed_pre = int(pre_trigger_time * sample_rate + 0.5)
    keep_len = fixed_pre + search_pre + m_len

    spec_win = (2.0 / math.sqrt(m_len)) * _hann(m_len)
    s_start = max(int(hp_filter_freq / sample_rate * dft_len + 0.5), 1)
    s_end = min(int(lp_filter_freq / sample_rate * dft_len + 0.5), dft_len // 2)
    ceps_win = (2.0 / math.sqrt(s_end - s_start)) * _hann(s_end - s_start)
    c_start = math.ceil(sample_rate * 0.5 / lp_lifter_freq)
    c_end = min(math.floor(sample_rate * 0.5 / hp_lifter_freq), dft_len // 4)
    if c_end <= c_start:
        raise ValueError(f"Expected cepstrum_start to be smaller than cepstrum_end. Found: "
                         f"cepstrum_start: {c_start}, cepstrum_end: {c_end}.")
    up = math.exp(-1.0 / (noise_up_time * measure_freq))
    down = math.exp(-1.0 / (noise_down_time * measure_freq))
    smooth = math.exp(-1.0 / (measure_smooth_time * measure_freq))
    trig_mult = math.exp(-1.0 / (trigger_time * measure_freq))
    boot_max = int(boot_time * measure_freq - 0.5)

    shape = tuple(x.shape)
    flat = x.reshape(-1, shape[-1])
    arr = flat.detach().array
    arr = np.asarray(arr.get() if hasattr(arr, "get") else arr, dtype=np.float32)
    C, n = arr.shape
    spectrum = np.zeros((C, dft_len), np.float32)
    noise = np.zeros((C, dft_len), np.float32)
    measures = np.zeros((C, n_meas), np.float32)
    mean = np.zeros(C, np.float32)
    boot, index, flushed, to_flush, triggered = 0, 0, 0, 0, False
    pos = 0
    band = slice(s_start, s_end)
    for pos in range(m_len, n, period):
        buf = np.zeros((C, dft_len), np.float32)
        buf[:, :m_len] = arr[:, pos - m_len:pos] * spec_win
        mag = np.abs(np.fft.rfft(buf, axis=1))[:, band]
        mult = boot / (1.0 + boot) if boot >= 0 else smooth
        spectrum[:, band] = spectrum[:, band] * mult + mag * (1 - mult)
        d = spectrum[:, band] ** 2
        nm = 0.0 if boot >= 0 else np.where(d > noise[:, band], up, down)
        noise[:, band] = noise[:, band] * nm + d * (1 - nm)
        d = np.sqrt(np.maximum(0.0, d - noise_reduction_amount * noise[:, band]))
        ceps = np.zeros((C, dft_len >> 1), np.float32)
        ceps[:, s_start:s_end] = d * ceps_win
        power = (np.abs(np.fft.rfft(ceps, axis=1))[:, c_start:c_end] ** 2).sum(1)
        with np.errstate(divide="ignore"):
            meas = np.where(power > 0, np.log(np.where(power > 0, power, 1.0)
                                              / (c_end - c_start)), -np.inf)
        meas = np.maximum(0.0, 21 + meas)
        for i in range(C):
            measures[i, index] = meas[i]
            mean[i] = mean[i] * trig_mult + meas[i] * (1.0 - trig_mult)
            triggered = triggered or bool(mean[i] >= trigger_level)
            if triggered:
                k, j_trig, j_zero = index, n_meas, n_meas
                for j in range(n_meas):
                    if measures[i, k] >= trigger_level and j <= j_trig + gap_len:
                        j_zero = j_trig = j
                    elif measures[i, k] == 0 and j_trig >= j_zero:
                        j_zero = j
                    k = (k + n_meas - 1) % n_meas
                # torchaudio's port ends this scan at j = n - 1 (SoX's at n); kept as theirs
                to_flush = min(max(to_flush, min(n_meas - 1, j_zero)), n_meas)
        index = (index + 1) % n_meas
        if boot >= 0:
            boot = -1 if boot == boot_max else boot + 1
        if triggered:
            flushed = (n_meas - to_flush) * period
            break
    if not triggered:
        return flat[..., :0].reshape(shape[:-1] + (0,))
    start = max(pos - keep_len + flushed, 0)  # (torchaudio's slice wraps round when < 0)
    res = flat[:, start:]
    return res.reshape(shape[:-1] + (res.shape[-1],))
