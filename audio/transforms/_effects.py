"""Waveform transforms as modules: Resample, Vol, Fade, PitchShift, ComputeDeltas,
Preemphasis, Deemphasis, MuLawEncoding, MuLawDecoding, Vad, Convolve, FFTConvolve, and the
SpecAugment masks (FrequencyMasking, TimeMasking, SpecAugment)."""
from __future__ import annotations

import math

import ember
from ember import nn

from .. import functional as F
from ..functional._util import as_tensor, const
from ..functional.resample import ResampleKernel

__all__ = ["Resample", "Vol", "Fade", "PitchShift", "ComputeDeltas", "Preemphasis",
           "Deemphasis", "MuLawEncoding", "MuLawDecoding", "Vad", "Convolve", "FFTConvolve",
           "FrequencyMasking", "TimeMasking", "SpecAugment"]


class Resample(nn.Module):
    """Resample (..., time) from ``orig_freq`` to ``new_freq`` Hz; the kernel is built once
    (in float64, stored as ``dtype``, default float32) as the non-persistent buffer
    ``kernel``. See ``ember.audio.functional.resample``."""

    def __init__(self, orig_freq=16000, new_freq=16000, resampling_method="sinc_interp_hann",
                 lowpass_filter_width=6, rolloff=0.99, beta=None, *, dtype=None):
        super().__init__()
        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.gcd = math.gcd(int(orig_freq), int(new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        self._kernel = None
        if orig_freq != new_freq:
            self._kernel = ResampleKernel(orig_freq, new_freq, self.gcd, lowpass_filter_width,
                                          rolloff, resampling_method, beta)
            self.width = self._kernel.width
            dt = dtype if dtype is not None else ember.float32
            self.register_buffer("kernel", ember.from_numpy(self._kernel.weights.astype(dt)),
                                 persistent=False)

    def forward(self, waveform):
        x = as_tensor(waveform)
        if self.orig_freq == self.new_freq:
            return x
        kernel = self.kernel if self.kernel.dtype == x.dtype else self.kernel.to(x.dtype)
        return self._kernel.apply(x, kernel)


class Vol(nn.Module):
    """Scale the waveform by ``gain`` (``gain_type``: ``"amplitude"`` factor, ``"power"``
    factor, ``"db"``) and clip to [-1, 1]."""

    def __init__(self, gain, gain_type="amplitude"):
        super().__init__()
        if gain_type not in ("amplitude", "power", "db"):
            raise ValueError(f"gain_type must be 'amplitude', 'power' or 'db', got "
                             f"{gain_type!r}")
        if gain_type in ("amplitude", "power") and gain < 0:
            raise ValueError("If gain_type = amplitude or power, gain must be positive.")
        self.gain = gain
        self.gain_type = gain_type

    def forward(self, waveform):
        x = as_tensor(waveform)
        if self.gain_type == "amplitude":
            x = x * self.gain
        elif self.gain_type == "db":
            x = F.gain(x, self.gain)
        else:
            x = F.gain(x, 10 * math.log10(self.gain))
        return ember.clamp(x, -1, 1)


_SHAPES = ("linear", "exponential", "logarithmic", "quarter_sine", "half_sine")


class Fade(nn.Module):
    """Fade in over the first ``fade_in_len`` samples and out over the last ``fade_out_len``,
    with a ``fade_shape`` curve: linear, exponential, logarithmic, quarter_sine or half_sine."""

    def __init__(self, fade_in_len=0, fade_out_len=0, fade_shape="linear"):
        super().__init__()
        if fade_shape not in _SHAPES:
            raise ValueError(f"fade_shape must be one of {_SHAPES}, got {fade_shape!r}")
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def _curve(self, n, fade_in):
        import numpy as np

        t = np.linspace(0, 1, n)
        s = self.fade_shape
        if fade_in:
            c = {"linear": lambda: t,
                 "exponential": lambda: np.power(2.0, (t - 1) * 5),
                 "logarithmic": lambda: np.log10(0.1 + t) + 1,
                 "quarter_sine": lambda: np.sin(t * math.pi / 2),
                 "half_sine": lambda: np.sin(t * math.pi - math.pi / 2) / 2 + 0.5}[s]()
        else:
            c = {"linear": lambda: 1 - t,
                 "exponential": lambda: np.power(2.0, -t * 5),
                 "logarithmic": lambda: np.log10(1.1 - t) + 1,
                 "quarter_sine": lambda: np.sin(t * math.pi / 2 + math.pi / 2),
                 "half_sine": lambda: np.sin(t * math.pi + math.pi / 2) / 2 + 0.5}[s]()
        return c

    def forward(self, waveform):
        import numpy as np

        x = as_tensor(waveform)
        n = x.shape[-1]
        curve = np.ones(n)
        if self.fade_in_len:
            k = min(self.fade_in_len, n)
            curve[:k] *= self._curve(self.fade_in_len, True)[:k]
        if self.fade_out_len:
            k = min(self.fade_out_len, n)
            curve[n - k:] *= self._curve(self.fade_out_len, False)[self.fade_out_len - k:]
        return x * const(np.clip(curve, 0, 1), x)


class PitchShift(nn.Module):
    """Shift the pitch by ``n_steps`` of ``1 / bins_per_octave`` octave (see
    ``ember.audio.functional.pitch_shift``); the window is the buffer ``window``."""

    def __init__(self, sample_rate, n_steps, bins_per_octave=12, n_fft=512, win_length=None,
                 hop_length=None, window_fn=ember.hann_window, wkwargs=None):
        super().__init__()
        self.n_steps = n_steps
        self.bins_per_octave = bins_per_octave
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 4
        w = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length,
                                                                         **wkwargs)
        self.register_buffer("window", w)

    def forward(self, waveform):
        return F.pitch_shift(waveform, self.sample_rate, self.n_steps, self.bins_per_octave,
                             self.n_fft, self.hop_length, self.win_length, self.window)


class ComputeDeltas(nn.Module):
    """Delta coefficients along time (``ember.audio.functional.compute_deltas``)."""

    def __init__(self, win_length=5, mode="replicate"):
        super().__init__()
        self.win_length = win_length
        self.mode = mode

    def forward(self, specgram):
        return F.compute_deltas(specgram, self.win_length, self.mode)


class Preemphasis(nn.Module):
    """``y[t] = x[t] - coeff x[t - 1]``."""

    def __init__(self, coeff=0.97):
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform):
        return F.preemphasis(waveform, self.coeff)


class Deemphasis(nn.Module):
    """``y[t] = x[t] + coeff y[t - 1]`` (clamped to [-1, 1], as torchaudio's)."""

    def __init__(self, coeff=0.97):
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform):
        return F.deemphasis(waveform, self.coeff)


class MuLawEncoding(nn.Module):
    """Signal in [-1, 1] -> mu-law codes 0 .. quantization_channels - 1 (int64)."""

    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x):
        return F.mu_law_encoding(x, self.quantization_channels)


class MuLawDecoding(nn.Module):
    """mu-law codes -> signal in [-1, 1]."""

    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x_mu):
        return F.mu_law_decoding(x_mu, self.quantization_channels)


class Vad(nn.Module):
    """Trim leading silence (``ember.audio.functional.vad``; same arguments)."""

    def __init__(self, sample_rate, trigger_level=7.0, trigger_time=0.25, search_time=1.0,
                 allowed_gap=0.25, pre_trigger_time=0.0, boot_time=0.35, noise_up_time=0.1,
                 noise_down_time=0.01, noise_reduction_amount=1.35, measure_freq=20.0,
                 measure_duration=None, measure_smooth_time=0.4, hp_filter_freq=50.0,
                 lp_filter_freq=6000.0, hp_lifter_freq=150.0, lp_lifter_freq=2000.0):
        super().__init__()
        self.sample_rate = sample_rate
        self.kwargs = dict(
            trigger_level=trigger_level, trigger_time=trigger_time, search_time=search_time,
            allowed_gap=allowed_gap, pre_trigger_time=pre_trigger_time, boot_time=boot_time,
            noise_up_time=noise_up_time, noise_down_time=noise_down_time,
            noise_reduction_amount=noise_reduction_amount, measure_freq=measure_freq,
            measure_duration=measure_duration, measure_smooth_time=measure_smooth_time,
            hp_filter_freq=hp_filter_freq, lp_filter_freq=lp_filter_freq,
            hp_lifter_freq=hp_lifter_freq, lp_lifter_freq=lp_lifter_freq)

    def forward(self, waveform):
        return F.vad(waveform, self.sample_rate, **self.kwargs)


class Convolve(nn.Module):
    """``ember.audio.functional.convolve(x, y, mode)``."""

    def __init__(self, mode="full"):
        super().__init__()
        if mode not in ("full", "valid", "same"):
            raise ValueError(f"Unrecognized mode value '{mode}'.")
        self.mode = mode

    def forward(self, x, y):
        return F.convolve(x, y, self.mode)


class FFTConvolve(Convolve):
    """``ember.audio.functional.fftconvolve(x, y, mode)``."""

    def forward(self, x, y):
        return F.fftconvolve(x, y, self.mode)


class _AxisMasking(nn.Module):
    def __init__(self, mask_param, axis, iid_masks, p=1.0):
        super().__init__()
        self.mask_param = mask_param
        self.axis = axis
        self.iid_masks = iid_masks
        self.p = p

    def forward(self, specgram, mask_value=0.0):
        x = as_tensor(specgram, "specgram")
        axis = self.axis + x.dim() - 3
        if self.iid_masks and x.dim() >= 3:
            return F.mask_along_axis_iid(x, self.mask_param, mask_value, axis, p=self.p)
        return F.mask_along_axis(x, self.mask_param, mask_value, axis, p=self.p)


class FrequencyMasking(_AxisMasking):
    """Mask ``[f0, f0 + f)`` frequency rows, ``f ~ U(0, freq_mask_param)`` (SpecAugment);
    ``iid_masks``: a separate mask per example of a batch."""

    def __init__(self, freq_mask_param, iid_masks=False):
        super().__init__(freq_mask_param, 1, iid_masks)


class TimeMasking(_AxisMasking):
    """Mask ``[t0, t0 + t)`` time columns, ``t ~ U(0, min(time_mask_param, p * frames))``."""

    def __init__(self, time_mask_param, iid_masks=False, p=1.0):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
        super().__init__(time_mask_param, 2, iid_masks, p=p)


class SpecAugment(nn.Module):
    """``n_time_masks`` time masks and ``n_freq_masks`` frequency masks (Park et al. 2019),
    filled with the spectrogram's mean (or 0 with ``zero_masking``)."""

    def __init__(self, n_time_masks, time_mask_param, n_freq_masks, freq_mask_param,
                 iid_masks=True, p=1.0, zero_masking=False):
        super().__init__()
        self.n_time_masks = n_time_masks
        self.time_mask_param = time_mask_param
        self.n_freq_masks = n_freq_masks
        self.freq_mask_param = freq_mask_param
        self.iid_masks = iid_masks
        self.p = p
        self.zero_masking = zero_masking

    def forward(self, specgram):
        x = as_tensor(specgram, "specgram")
        mask_value = 0.0 if self.zero_masking else float(x.mean().item())
        t_dim = x.dim() - 1
        f_dim = t_dim - 1
        fn = F.mask_along_axis_iid if (x.dim() > 2 and self.iid_masks) else F.mask_along_axis
        for _ in range(self.n_time_masks):
            x = fn(x, self.time_mask_param, mask_value, t_dim, p=self.p)
        for _ in range(self.n_freq_masks):
            x = fn(x, self.freq_mask_param, mask_value, f_dim, p=self.p)
        return x
