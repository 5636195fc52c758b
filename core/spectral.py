"""Windows and the short-time Fourier transform: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``, ``stft`` and ``istft``, as torch's.

``stft`` frames the (optionally centre-padded) signal with ``unfold``, weights each frame by
the window and transforms it with ``ember.fft``; ``istft`` inverts each frame, weights it by
the window again and overlap-adds, dividing by the overlap-added squared window (the
least-squares inverse of Griffin and Lim). Both are built from differentiable ember ops, so
gradients (to the signal and to the window) and double gradients work.

    >>> x = ember.randn(2, 16000)
    >>> w = ember.hann_window(400)
    >>> X = ember.stft(x, 512, hop_length=160, win_length=400, window=w, return_complex=True)
    >>> X.shape                                  # (batch, n_fft // 2 + 1, frames)
    (2, 257, 101)
    >>> y = ember.istft(X, 512, hop_length=160, win_length=400, window=w, length=16000)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import dtypes as D
from . import fft as _fft
from .ops import _specfun
from .ops._util import to_tensor
from .ops.complex import complex as _complex, imag, real, view_as_real
from .ops.shape import pad as _pad

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]


# --------------------------------------------------------------------------- windows

def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    """``fn(n, N)`` evaluated in float64 at n = 0..N-1 of the symmetric window of length N
    (N = window_length + 1 when ``periodic``, the last sample then dropped)."""
    from .factories import _dt, _finish, _xp

    dt = _dt(dtype)
    if not (dt.kind == "f" or dt == D.bfloat16):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {D.name(dt)}")
    L = int(window_length)
    if L < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got window_length={L}")
    xp, _ = _xp(device)
    if L == 0:
        vals = np.zeros(0)
    elif L == 1:
        vals = np.ones(1)
    else:
        N = L + 1 if periodic else L
        vals = fn(np.arange(N, dtype=np.float64), N)[:L]
    return _finish(xp.asarray(vals.astype(dt)), requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * math.pi * n / (N - 1)))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)) (sin^2 of pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * math.pi * n / (N - 1)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.42 - 0.5 * np.cos(2 * math.pi * n / (N - 1))
                   + 0.08 * np.cos(4 * math.pi * n / (N - 1)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The triangle 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1.0 - np.abs(2.0 * n / (N - 1) - 1.0))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    def fn(n, N):
        a = (N - 1) / 2.0
        r = np.clip(1.0 - ((n - a) / a) ** 2, 0.0, None)
        return _specfun.i0(beta * np.sqrt(r)) / _specfun.i0(np.array(float(beta)))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, fn)


# --------------------------------------------------------------------------- helpers

def _mul(a, b):
    """a * b where either may be complex, through real and imaginary parts (real products
    only, so both gradients follow torch's complex convention)."""
    ac, bc = a.is_complex(), b.is_complex()
    if not ac and not bc:
        return a * b
    if ac and bc:
        ar, ai, br, bi = real(a), imag(a), real(b), imag(b)
        return _complex(ar * br - ai * bi, ar * bi + ai * br)
    z, r = (a, b) if ac else (b, a)
    return _complex(real(z) * r, imag(z) * r)


def _div(a, b):
    """a / b where either may be complex (real quotients only, as ``_mul``)."""
    if not b.is_complex():
        return _complex(real(a) / b, imag(a) / b) if a.is_complex() else a / b
    br, bi = real(b), imag(b)
    d = br * br + bi * bi
    return _mul(a, _complex(br / d, -bi / d))


def _window_for(window, win_length, dtype, device, name):
    """The given window after shape checks, or ones(win_length) when None."""
    if window is None:
        from .factories import ones

        warnings.warn(f"{name}: no window given, a rectangular window is used (it causes "
                      "spectral leakage); pass e.g. window=ember.hann_window(win_length), or "
                      "window=ember.ones(win_length) to keep it", UserWarning, stacklevel=3)
        return ones(win_length, dtype=dtype, device=device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, "
            f"but got window with size {list(window.shape)}")
    return window.to(device)


def _overlap_add(frames, hop, out_len):
    """Sum frames (B, T, n) placed every ``hop`` samples into signals (B, out_len), with
    reshapes and constant pads only (differentiable)."""
    B, T, n = frames.shape
    r = -(-n // hop)
    f = _pad(frames, (0, r * hop - n)) if r * hop != n else frames
    f = f.reshape(B, T, r, hop)
    total = None
    for j in range(r):
        piece = _pad(f.select(2, j), (0, 0, j, r - 1 - j))  # shift frame chunks by j hops
        total = piece if total is None else total + piece
    return total.reshape(B, (T + r - 1) * hop).narrow(1, 0, out_len)


# --------------------------------------------------------------------------- stft / istft

def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform of a signal (L,) or batch (B, L): (B?, N, T) complex, N =
    n_fft // 2 + 1 when ``onesided`` (default for real input and window) else n_fft."""
    input = to_tensor(input)
    n_fft = int(n_fft)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    cplx = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not cplx:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated: pass return_complex=True "
                      "and use view_as_real on the result", UserWarning, stacklevel=2)
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if x.dtype.kind in "iub":
        x = x._cast(D.get_default_dtype())
    if center:
        p = n_fft // 2
        x = _pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    L = x.shape[-1]
    if not 0 < n_fft <= L:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {L}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(
            f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    window = _window_for(window, win_length, real(x).dtype, x.device, "stft")
    left = (n_fft - win_length) // 2
    # only the window's support is framed; the zero margins come back as constant pads
    if align_to_window:
        start, frames_n = 0, 1 + (L - win_length) // hop
    else:
        start, frames_n = left, 1 + (L - n_fft) // hop
    seg = x.narrow(1, start, (frames_n - 1) * hop + win_length)
    frames = _mul(seg.unfold(1, win_length, hop), window)  # (B, T, win_length)
    if win_length != n_fft:
        frames = _pad(frames, (left, n_fft - win_length - left))
    if onesided is None:
        onesided = not cplx
    if onesided and cplx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    out = _fft.rfft(frames, norm=norm) if onesided else _fft.fft(frames, norm=norm)
    out = out.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    return out if return_complex else view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of ``stft`` (B?, N, T) -> (B?, length): inverse FFT of each frame, window,
    overlap-add, divided by the overlap-added squared window."""
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True.")
    n_fft = int(n_fft)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    if input.numel() == 0:
        raise RuntimeError("istft input tensor cannot be empty")
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"Expected a 2D or 3D tensor, but got {nd}D")
    x = input if nd == 3 else input.unsqueeze(0)
    T, fft_size = x.shape[-1], x.shape[-2]
    x = x.transpose(1, 2)  # (B, T, N)
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(
            f"istft expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(
            f"istft expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win_length:
        raise RuntimeError("istft expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError("istft expected 0 < win_length <= n_fft")
    rdt = real(x).dtype
    window = _window_for(window, win_length, rdt, x.device, "istft")
    left = (n_fft - win_length) // 2
    if win_length != n_fft:
        window = _pad(window, (left, n_fft - win_length - left))
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(x, norm=norm)
    else:
        if window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(x, n=n_fft, norm=norm)
    expected = n_fft + hop * (T - 1)
    y = _overlap_add(_mul(frames, window.reshape(1, 1, n_fft)), hop, expected)
    w2 = _mul(window, window)  # squared as torch does (z**2 for a complex window)
    env = _overlap_add(w2.reshape(1, 1, n_fft).expand(1, T, n_fft), hop, expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    elif center:
        end = expected - n_fft // 2
    else:
        end = expected
    stop = min(end, expected)
    y = y.narrow(1, start, max(0, stop - start))
    env = env.narrow(1, start, max(0, stop - start))
    if env.numel() and float(env.abs().min().item()) < 1e-11:
        raise RuntimeError(
            f"window overlap add min: {float(env.abs().min().item())} (the window and hop "
            f"length must satisfy the NOLA condition: the overlap-added squared window must "
            f"be nonzero everywhere)")
    y = _div(y, env)
    if nd == 2:
        y = y.squeeze(0)
    if end > expected:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = _pad(y, (0, end - expected))
    return y


class SpectralOps:
    """``Tensor.stft`` and ``Tensor.istft`` (mixed into Tensor)."""

    __slots__ = ()

    def stft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
             pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
             align_to_window=None):
        return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
                    onesided, return_complex, align_to_window)

    def istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True,
              normalized=False, onesided=None, length=None, return_complex=False):
        return istft(self, n_fft, hop_length, win_length, window, center, normalized,
                     onesided, length, return_complex)
