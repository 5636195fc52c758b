"""Band-limited resampling by windowed-sinc polyphase filtering, with torchaudio's kernel.

With ``g = gcd(orig_freq, new_freq)``, ``o = orig_freq / g`` input samples give ``n =
new_freq / g`` output samples. Output phase ``j`` (j = 0..n-1) of every block is a dot product
of the input around it with its own kernel row:

    t[j, k] = (k - width) / o - j / n          k = 0 .. 2 width + o - 1   (input time, s * o)
    base = min(o, n) * rolloff                 (cut-off, below the lower Nyquist)
    x = clamp(t * base, -lowpass_filter_width, lowpass_filter_width)
    kernel[j, k] = sinc(pi x) * window(x) * base / o
    window: hann  cos(pi x / (2 lpw))^2,  kaiser  I0(beta sqrt(1 - (x / lpw)^2)) / I0(beta)

with ``width = ceil(lowpass_filter_width * o / base)``. The signal is padded with ``width``
zeros before and ``width + o`` after, cut into frames of ``2 width + o`` samples every ``o``
(a strided view), and multiplied by the (n, 2 width + o) kernel matrix: one GEMM, then the
phases are interleaved and ``ceil(n * length / o)`` samples kept. The kernel is built in
float64 and cast to the waveform's dtype. Differentiable (ember ops). When the reduced ratio
is large (the kernel matrix would exceed 4M entries), only the 2 width + 1 taps of each row
that can be non-zero are kept and gathered (same values, far less work and memory).

    >>> y = resample(ember.randn(2, 44100), 44100, 16000)
    >>> y.shape
    (2, 16000)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember
import ember.nn.functional as NF

from ._util import as_tensor, const

__all__ = ["resample", "sinc_resample_kernel", "ResampleKernel"]

KAISER_BETA = 14.769656459379492  # torchaudio's default beta for "sinc_interp_kaiser"


def _method(resampling_method):
    if resampling_method in ("sinc_interpolation", "kaiser_window"):
        new = "sinc_interp_hann" if resampling_method == "sinc_interpolation" else \
            "sinc_interp_kaiser"
        warnings.warn(f'resampling_method "{resampling_method}" is deprecated: use "{new}"',
                      DeprecationWarning, stacklevel=3)
        return new
    if resampling_method not in ("sinc_interp_hann", "sinc_interp_kaiser"):
        raise ValueError(f"Invalid resampling method: {resampling_method}")
    return resampling_method


class ResampleKernel:
    """The reduced frequencies ``o``/``n``, the ``width``, and the kernel in one of two
    layouts: dense, (n, 2 width + o) rows laid over frames of the padded input every ``o``
    samples (one GEMM); or, when that matrix would be large (a ratio like 20158:16000
    reduces to o = 10079, n = 8000), sparse: only the 2 width + 1 taps of each row that
    can be non-zero (the window vanishes beyond ``lowpass_filter_width``), ``taps`` (n,
    2 width + 1) starting at column ``starts[j] = floor(j o / n)``. Both hold the same
    values, computed by the same expression, in float64."""

    DENSE_MAX = 1 << 22   # entries of the dense kernel beyond which the sparse form is used

    def __init__(self, orig_freq, new_freq, gcd=None, lowpass_filter_width=6, rolloff=0.99,
                 resampling_method="sinc_interp_hann", beta=None, sparse=None):
        if int(orig_freq) != orig_freq or int(new_freq) != new_freq:
            raise ValueError("Frequencies must be of integer type to ensure quality "
                             "resampling computation. To work around this, manually convert "
                             "both frequencies to integer values that maintain their "
                             "resampling rate ratio before passing them into the function.")
        self.method = _method(resampling_method)
        if lowpass_filter_width <= 0:
            raise ValueError("Low pass filter width should be positive.")
        gcd = gcd or math.gcd(int(orig_freq), int(new_freq))
        o, n = int(orig_freq) // gcd, int(new_freq) // gcd
        self.o, self.n, self.lpw = o, n, lowpass_filter_width
        self.base = min(o, n) * rolloff
        self.width = math.ceil(lowpass_filter_width * o / self.base)
        self.beta = KAISER_BETA if beta is None else float(beta)
        K = 2 * self.width + o
        self.sparse = (n * K > self.DENSE_MAX) if sparse is None else bool(sparse)
        j = np.arange(n)[:, None]
        if self.sparse:
            self.starts = (np.arange(n) * o) // n
            k = self.starts[:, None] + np.arange(2 * self.width + 1)[None, :]
        else:
            self.starts = None
            k = np.arange(K)[None, :]
        self.weights = self._values(j, k)

    def _values(self, j, k):
        """Kernel entries at output phases ``j`` and input columns ``k`` (broadcast)."""
        lpw, o, n = self.lpw, self.o, self.n
        t = (-j.astype(np.float64)) / n + (k - self.width).astype(np.float64) / o
        t = np.clip(t * self.base, -lpw, lpw)
        if self.method == "sinc_interp_hann":
            window = np.cos(t * math.pi / lpw / 2) ** 2
        else:
            window = np.i0(self.beta * np.sqrt(1 - (t / lpw) ** 2)) / np.i0(self.beta)
        t = t * math.pi
        with np.errstate(invalid="ignore", divide="ignore"):
            kernel = np.where(t == 0, 1.0, np.sin(t) / t)
        return kernel * window * (self.base / o)

    def apply(self, waveform, weights=None):
        """Resample (..., time); ``weights``: the kernel as a tensor in the waveform's dtype
        and device (default: made from ``self.weights``)."""
        x = as_tensor(waveform)
        if not x.is_floating_point():
            raise TypeError(f"Expected floating point type for waveform tensor, but received "
                            f"{x.dtype}.")
        w = weights if weights is not None else const(self.weights, x)
        o, n, width = self.o, self.n, self.width
        shape = tuple(x.shape)
        x = x.reshape(-1, shape[-1])
        length = shape[-1]
        K = 2 * width + o
        padded = NF.pad(x, (width, width + o))
        n_frames = (padded.shape[-1] - K) // o + 1
        if not self.sparse:
            frames = padded.unfold(-1, K, o)                    # (N, frames, K), a view
            out = ember.matmul(frames, w.transpose(0, 1))       # (N, frames, n)
        else:
            taps = w.shape[1]
            cols = const((self.starts[:, None] + np.arange(taps)[None, :]).reshape(-1), x,
                         np.int64)
            step = max(1, (1 << 22) // max(1, x.shape[0] * n * taps))
            parts = []
            for f0 in range(0, n_frames, step):
                f1 = min(n_frames, f0 + step)
                sub = padded.narrow(-1, f0 * o, (f1 - f0 - 1) * o + K).unfold(-1, K, o)
                g = sub.index_select(-1, cols).reshape(x.shape[0], f1 - f0, n, taps)
                parts.append((g * w).sum(-1))                  # (N, frames, n)
            out = parts[0] if len(parts) == 1 else ember.cat(parts, dim=1)
        out = out.reshape(out.shape[0], -1)
        target = math.ceil(n * length / o)
        out = out[..., :target]
        return out.reshape(shape[:-1] + (out.shape[-1],))


def sinc_resample_kernel(orig_freq, new_freq, gcd=None, lowpass_filter_width=6, rolloff=0.99,
                         resampling_method="sinc_interp_hann", beta=None):
    """(dense kernel (n, 2 width + o) float64 numpy array, width) for the reduced
    frequencies, as torchaudio lays it out."""
    k = ResampleKernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                       resampling_method, beta, sparse=False)
    return k.weights, k.width


def resample(waveform, orig_freq, new_freq, lowpass_filter_width=6, rolloff=0.99,
             resampling_method="sinc_interp_hann", beta=None):
    """Resample ``waveform`` (..., time) from ``orig_freq`` to ``new_freq`` Hz (integers) with
    a windowed-sinc kernel: ``lowpass_filter_width`` zero crossings each side (sharper, slower
    when larger), cut-off at ``rolloff`` times the lower Nyquist frequency, a Hann or Kaiser
    (``beta``) window."""
    if orig_freq <= 0.0 or new_freq <= 0.0:
        raise ValueError("Original frequency and desired frequecy should be positive")
    x = as_tensor(waveform)
    if orig_freq == new_freq:
        return x
    kernel = ResampleKernel(orig_freq, new_freq, None, lowpass_filter_width, rolloff,
                            resampling_method, beta)
    return kernel.apply(x)
