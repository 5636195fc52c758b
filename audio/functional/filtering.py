"""Linear filters: ``lfilter`` (IIR, differentiable in the signal and both coefficient
vectors), the biquads built on it, ``preemphasis``/``deemphasis``, and ``convolve``/
``fftconvolve``.

``lfilter`` runs ``a[0] y[t] = sum_k b[k] x[t-k] - sum_{k>=1} a[k] y[t-k]`` from rest. The
moving-average part is a sum of shifted signals; the recursive part (``_IIR``) is computed a
block of ``L`` samples at a time, all blocks at once and without a Python loop over samples:

- within a block, the response from rest is ``x_block @ H.T``, ``H`` the (L, L) lower
  triangular Toeplitz matrix of the recursion's impulse response (one GEMM for every block of
  every channel);
- the state carried into a block (its previous ``p`` outputs) adds ``G @ state``, ``G`` the
  (L, p) response of the recursion to each unit state; states are passed from block to block
  in a loop over blocks (T / L steps of a tiny (p, p) product, vectorised over channels).

That is exact (up to rounding) for any filter; for stable filters it is as accurate as the
sample-by-sample recursion. Its gradient is the same filter run backwards in time (the adjoint
of a causal filter) and, for ``a[k]``, ``-sum_t g'[t] y[t - k]``; the backward is written with
ember ops calling the same recursion, so double gradients work too.
"""
from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as NF
from ember.autograd import Function

from ember import _backend as B

from ._util import as_tensor

__all__ = ["lfilter", "filtfilt", "biquad", "lowpass_biquad", "highpass_biquad",
           "bandpass_biquad", "bandreject_biquad", "allpass_biquad", "equalizer_biquad",
           "preemphasis", "deemphasis", "convolve", "fftconvolve"]


# --------------------------------------------------------------------------- the recursion

def _block_len(T, p, C=1):
    """Block length: about sqrt(T) (balances the GEMM's work, T * L, against the T / L state
    steps), at least 8 p, at most 512, and small enough that the C (L, L) response matrices
    stay within 32 MiB."""
    L = min(512, max(32, 2 ** round(math.log2(max(math.sqrt(T), 1)))))
    while L > 32 and C * L * L * 8 > (32 << 20):
        L //= 2
    return int(max(L, 8 * p))


def _responses(a, L):
    """For normalised denominators ``a`` (C, p + 1) (a[:, 0] == 1): the impulse responses
    h (C, L) and the responses to unit initial states G (C, L, p) (state j: y[-1-j] = 1),
    in float64."""
    C, q = a.shape
    p = q - 1
    h = np.zeros((C, L))
    G = np.zeros((C, L, p))
    hist_h = np.zeros((C, L + p))          # y history for the impulse response
    hist_g = np.zeros((C, L + p, p))       # and for each unit state
    for j in range(p):
        hist_g[:, p - 1 - j, j] = 1.0
    hist_h[:, p] = 1.0                     # x[0] = 1 (the recursion adds it below)
    ak = a[:, 1:]                           # (C, p): a[k] multiplies y[t - k]
    for t in range(L):
        if p:
            past_h = hist_h[:, t:t + p][:, ::-1]          # y[t-1], ..., y[t-p]
            hist_h[:, t + p] -= (ak * past_h).sum(1)
            past_g = hist_g[:, t:t + p][:, ::-1]          # (C, p, p)
            hist_g[:, t + p] = -(ak[:, :, None] * past_g).sum(1)
    h[:] = hist_h[:, p:]
    G[:] = hist_g[:, p:]
    return h, G


def _iir(x, a):
    """y with y[t] = x[t] - sum_{k=1}^{p} a[k] y[t - k] from rest, for x (B, C, T) and
    normalised a (C, p + 1), as arrays of x's backend and dtype."""
    xp = B.namespace(x)
    B_, C, T = x.shape
    p = a.shape[1] - 1
    if p == 0 or T == 0:
        return x.copy()
    L = _block_len(T, p, C)
    nb = -(-T // L)
    a64 = np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64)
    h, G = _responses(a64, L)
    idx = np.arange(L)
    H = np.where(idx[:, None] >= idx[None, :], h[:, np.clip(idx[:, None] - idx[None, :], 0,
                                                                L - 1)], 0.0)  # (C, L, L)
    dt = x.dtype
    Hx = xp.asarray(H.transpose(0, 2, 1).astype(dt))            # (C, L(m), L(n)) = H^T
    Gx = xp.asarray(G.astype(dt))                               # (C, L, p)
    xb = x
    if nb * L != T:
        xb = xp.concatenate([x, xp.zeros((B_, C, nb * L - T), dt)], axis=2)
    xb = xb.reshape(B_, C, nb, L)
    # zero-state response of every block: (B, C, nb, L) @ (C, L, L) per channel
    y0 = xp.matmul(xb.transpose(1, 0, 2, 3).reshape(C, B_ * nb, L), Hx)
    y0 = y0.reshape(C, B_, nb, L).transpose(1, 0, 2, 3)          # (B, C, nb, L)
    # carry the state (last p outputs, newest first) across blocks
    tail_G = Gx[:, L - p:, :][:, ::-1, :]                       # rows for y[L-1], ..., y[L-p]
    states = xp.zeros((B_, C, nb, p), dt)
    s = xp.zeros((B_, C, p), dt)
    y0_tail = y0[:, :, :, L - p:][:, :, :, ::-1]                 # (B, C, nb, p)
    for j in range(1, nb):
        s = y0_tail[:, :, j - 1] + xp.einsum("cij,bcj->bci", tail_G, s)
        states[:, :, j] = s
    y = y0 + xp.einsum("clp,bcnp->bcnl", Gx, states)
    return xp.ascontiguousarray(y.reshape(B_, C, nb * L)[:, :, :T])


class _IIR(Function):
    """The recursive half of ``lfilter`` on (B, C, T) signals with normalised (C, p + 1)
    denominators; a[:, 0] gets no gradient (it is fixed at 1 by the normalisation)."""

    @staticmethod
    def forward(ctx, x, a):
        y = ember.Tensor._make(_iir(x.array, a.array))
        ctx.save_for_backward(y, a)
        return y

    @staticmethod
    def backward(ctx, g):
        y, a = ctx.saved_tensors
        # adjoint of a causal filter: the same filter on the time-reversed gradient
        gx = _IIR.apply(g.flip(-1), a).flip(-1)
        ga = None
        if ctx.needs_input_grad[1]:
            p = a.shape[1] - 1
            T = y.shape[-1]
            cols = [ember.zeros(a.shape[0], dtype=y.dtype, device=y.device)]
            for k in range(1, p + 1):
                if k < T:
                    term = -(gx.narrow(-1, k, T - k) * y.narrow(-1, 0, T - k)).sum((0, 2))
                else:
                    term = ember.zeros(a.shape[0], dtype=y.dtype, device=y.device)
                cols.append(term)
            ga = ember.stack(cols, dim=1)
        return gx, ga


def _fir(x, b):
    """sum_k b[c, k] x[..., c, t - k] from rest, for x (B, C, T) and b (C, q)."""
    B_, C, T = x.shape
    q = b.shape[1]
    if q <= 16:
        out = None
        for k in range(q):
            shifted = x if k == 0 else NF.pad(x.narrow(-1, 0, T - k), (k, 0)) if k < T else \
                ember.zeros_like(x)
            term = shifted * b[:, k:k + 1]
            out = term if out is None else out + term
        return out
    # long numerators: frames of q samples times the reversed taps
    xp_ = NF.pad(x, (q - 1, 0))
    frames = xp_.unfold(-1, q, 1)                       # (B, C, T, q)
    return (frames * b.flip(-1)[None, :, None, :]).sum(-1)


def lfilter(waveform, a_coeffs, b_coeffs, clamp=True, batching=True):
    """IIR filter ``a[0] y[t] = sum_k b[k] x[t - k] - sum_{k>=1} a[k] y[t - k]`` along the
    last dim of ``waveform`` (..., time).

    ``a_coeffs``/``b_coeffs``: (order + 1,) for one filter, or (num_filters, order + 1): with
    ``batching`` filter i runs on ``waveform[..., i, :]``, without it every filter runs on the
    whole waveform (output (..., num_filters, time)). ``clamp``: clip the output to [-1, 1].
    Differentiable in all three tensors."""
    x = as_tensor(waveform)
    a = as_tensor(a_coeffs, "a_coeffs").to(x.dtype)
    b = as_tensor(b_coeffs, "b_coeffs").to(x.dtype)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"Expected coeffs to be the same size. Found a_coeffs size: "
                         f"{tuple(a.shape)}, b_coeffs size: {tuple(b.shape)}")
    if a.dim() > 2:
        raise ValueError(f"Expected coeffs to be 1D or 2D tensor. Found: {a.dim()}")
    if a.dim() > 1:
        if batching:
            if x.dim() < 2:
                raise ValueError("Expected waveform to be at least 2D with batching")
            if x.shape[-2] != a.shape[0]:
                raise ValueError(f"Expected number of batches in waveform and coeffs to be the "
                                 f"same. Found: waveform: {x.shape[-2]}, coeffs: {a.shape[0]}")
        else:
            x = ember.stack([x] * a.shape[0], -2)
    else:
        a, b = a.unsqueeze(0), b.unsqueeze(0)
    shape = tuple(x.shape)
    x = x.reshape(-1, a.shape[0], shape[-1])
    a0 = a[:, :1]
    y = _IIR.apply(_fir(x, b / a0), a / a0)
    if clamp:
        y = ember.clamp(y, min=-1.0, max=1.0)
    return y.reshape(shape)


def filtfilt(waveform, a_coeffs, b_coeffs, clamp=True):
    """Zero-phase filtering: ``lfilter`` forwards, then backwards on the result."""
    fwd = lfilter(waveform, a_coeffs, b_coeffs, clamp=False, batching=True)
    bwd = lfilter(fwd.flip(-1), a_coeffs, b_coeffs, clamp=clamp, batching=True).flip(-1)
    return bwd


# --------------------------------------------------------------------------- biquads

def _num(v):
    return v if isinstance(v, ember.Tensor) else float(v)


def biquad(waveform, b0, b1, b2, a0, a1, a2):
    """Second-order IIR section ``(b0 + b1 z^-1 + b2 z^-2) / (a0 + a1 z^-1 + a2 z^-2)``
    (coefficients: floats or 0-d tensors, differentiable)."""
    x = as_tensor(waveform)
    co = [_num(v) for v in (a0, a1, a2, b0, b1, b2)]
    if any(isinstance(v, ember.Tensor) for v in co):
        co = [v.to(x.dtype).reshape(()) if isinstance(v, ember.Tensor)
              else ember.tensor(v, dtype=x.dtype, device=x.device) for v in co]
        a = ember.stack(co[:3])
        b = ember.stack(co[3:])
    else:
        a = ember.tensor(co[:3], dtype=x.dtype, device=x.device)
        b = ember.tensor(co[3:], dtype=x.dtype, device=x.device)
    return lfilter(x, a, b)


def _w0_alpha(sample_rate, freq, Q):
    w0 = 2 * math.pi * freq / sample_rate
    return w0, math.sin(w0) / 2 / Q


def lowpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """Two-pole low-pass (RBJ audio EQ cookbook): -3 dB at ``cutoff_freq`` for Q = 0.707."""
    w0, alpha = _w0_alpha(sample_rate, cutoff_freq, Q)
    c = math.cos(w0)
    return biquad(waveform, (1 - c) / 2, 1 - c, (1 - c) / 2, 1 + alpha, -2 * c, 1 - alpha)


def highpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """Two-pole high-pass (RBJ audio EQ cookbook)."""
    w0, alpha = _w0_alpha(sample_rate, cutoff_freq, Q)
    c = math.cos(w0)
    return biquad(waveform, (1 + c) / 2, -1 - c, (1 + c) / 2, 1 + alpha, -2 * c, 1 - alpha)


def bandpass_biquad(waveform, sample_rate, central_freq, Q=0.707, const_skirt_gain=False):
    """Two-pole band-pass around ``central_freq``: peak gain 0 dB, or peak gain Q with
    ``const_skirt_gain`` (constant skirt)."""
    w0, alpha = _w0_alpha(sample_rate, central_freq, Q)
    c = math.cos(w0)
    g = math.sin(w0) / 2 if const_skirt_gain else alpha
    return biquad(waveform, g, 0.0, -g, 1 + alpha, -2 * c, 1 - alpha)


def bandreject_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """Two-pole band-reject (notch) at ``central_freq``."""
    w0, alpha = _w0_alpha(sample_rate, central_freq, Q)
    c = math.cos(w0)
    return biquad(waveform, 1.0, -2 * c, 1.0, 1 + alpha, -2 * c, 1 - alpha)


def allpass_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """Two-pole all-pass: phase turns by 180 degrees around ``central_freq``."""
    w0, alpha = _w0_alpha(sample_rate, central_freq, Q)
    c = math.cos(w0)
    return biquad(waveform, 1 - alpha, -2 * c, 1 + alpha, 1 + alpha, -2 * c, 1 - alpha)


def equalizer_biquad(waveform, sample_rate, center_freq, gain, Q=0.707):
    """Peaking equaliser: ``gain`` dB at ``center_freq``."""
    w0, alpha = _w0_alpha(sample_rate, center_freq, Q)
    A = math.exp(gain / 40.0 * math.log(10))
    c = math.cos(w0)
    return biquad(waveform, 1 + alpha * A, -2 * c, 1 - alpha * A, 1 + alpha / A, -2 * c,
                  1 - alpha / A)


# --------------------------------------------------------------------------- emphasis

def preemphasis(waveform, coeff=0.97):
    """``y[t] = x[t] - coeff * x[t - 1]`` along the last dim (y[0] = x[0])."""
    x = as_tensor(waveform)
    T = x.shape[-1]
    if T < 2:
        return x.clone()
    head = x.narrow(-1, 0, 1)
    return ember.cat([head, x.narrow(-1, 1, T - 1) - coeff * x.narrow(-1, 0, T - 1)], dim=-1)


def deemphasis(waveform, coeff=0.97):
    """Inverse of ``preemphasis``: ``y[t] = x[t] + coeff * y[t - 1]``, through ``lfilter``
    (so clamped to [-1, 1], as torchaudio's)."""
    x = as_tensor(waveform)
    a = ember.tensor([1.0, -coeff], dtype=x.dtype, device=x.device)
    b = ember.tensor([1.0, 0.0], dtype=x.dtype, device=x.device)
    return lfilter(x, a, b)


# --------------------------------------------------------------------------- convolution

def _check_conv(x, y, mode):
    if x.dim() != y.dim():
        raise ValueError(f"x and y must have the same number of dimensions, but got {x.dim()} "
                         f"and {y.dim()}.")
    for i in range(x.dim() - 1):
        xs, ys = x.shape[i], y.shape[i]
        if xs != ys and xs != 1 and ys != 1:
            raise ValueError(f"Leading dimensions of x and y are not broadcast-able (got "
                             f"{tuple(x.shape)} and {tuple(y.shape)}).")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"Unrecognized mode value '{mode}'. Please specify one of 'full', "
                         f"'valid', 'same'.")


def _mode(result, n, m, mode):
    if mode == "full":
        return result
    if mode == "valid":
        target = max(n, m) - min(n, m) + 1
        start = (result.shape[-1] - target) // 2
        return result.narrow(-1, start, target)
    start = (result.shape[-1] - n) // 2
    return result.narrow(-1, start, n)


def convolve(x, y, mode="full"):
    """Direct convolution of ``x`` (..., N) and ``y`` (..., M) along the last dim (leading dims
    broadcast). ``mode``: ``"full"`` (N + M - 1), ``"valid"`` (max - min + 1), ``"same"``
    (N, centred)."""
    x, y = as_tensor(x, "x"), as_tensor(y, "y")
    _check_conv(x, y, mode)
    n, m = x.shape[-1], y.shape[-1]
    a, k = (x, y) if n >= m else (y, x)
    lead = tuple(max(i, j) for i, j in zip(a.shape[:-1], k.shape[:-1]))
    a = a.expand(*lead, a.shape[-1])
    k = k.expand(*lead, k.shape[-1])
    K = k.shape[-1]
    frames = NF.pad(a, (K - 1, K - 1)).unfold(-1, K, 1)      # (..., N + K - 1, K)
    out = ember.matmul(frames, k.flip(-1).unsqueeze(-1)).squeeze(-1)
    return _mode(out, n, m, mode)


def fftconvolve(x, y, mode="full"):
    """``convolve`` by FFT: O((N + M) log(N + M)), for long signals and kernels."""
    x, y = as_tensor(x, "x"), as_tensor(y, "y")
    _check_conv(x, y, mode)
    n = x.shape[-1] + y.shape[-1] - 1
    fx = ember.fft.rfft(x, n=n)
    fy = ember.fft.rfft(y, n=n)
    out = ember.fft.irfft(fx * fy, n=n)
    return _mode(out, x.shape[-1], y.shape[-1], mode)
