"""Shared pieces of the audio tests: short generated tones (no files shipped, no network)."""
import numpy as np
import pytest

SR = 16000


def make_tone(seconds=1.0, sr=SR, channels=2, freqs=(440.0, 660.0), amp=0.5, seed=0):
    """(channels, frames) float64 in [-amp, amp]: one sine per channel plus a little noise."""
    n = int(round(seconds * sr))
    t = np.arange(n) / sr
    rng = np.random.default_rng(seed)
    chans = [amp * 0.9 * np.sin(2 * np.pi * freqs[c % len(freqs)] * t)
             + amp * 0.1 * rng.uniform(-1, 1, n) for c in range(channels)]
    return np.stack(chans)


def quantize(x, dtype):
    """``x`` (float in [-1, 1)) as integer PCM of ``dtype`` (int16/int32/uint8), top bits
    only for ``bits`` < the dtype's width."""
    if dtype == np.uint8:
        return (np.round(x * 127) + 128).astype(np.uint8)
    info = np.iinfo(dtype)
    return np.round(x * info.max).astype(dtype)


@pytest.fixture
def tone():
    return make_tone


def snr_db(ref, est):
    """Signal-to-noise ratio of ``est`` against ``ref`` (same shape), in dB."""
    noise = np.sum((ref - est) ** 2)
    return 10 * np.log10(np.sum(ref ** 2) / max(noise, 1e-30))


def best_lag(ref, est, max_lag=3000):
    """The shift ``k`` (|k| <= max_lag) maximising sum_t ref[t] est[t + k] (1-D signals)."""
    n = min(len(ref), len(est))
    size = 2 * n
    corr = np.fft.irfft(np.conj(np.fft.rfft(ref[:n], size)) * np.fft.rfft(est[:n], size),
                        size)
    lags = np.r_[np.arange(0, max_lag + 1), np.arange(-max_lag, 0)]
    vals = corr[lags % size]
    return int(lags[np.argmax(vals)])


@pytest.fixture
def helpers():
    class H:
        pass
    h = H()
    h.make_tone, h.quantize, h.snr_db, h.best_lag, h.SR = make_tone, quantize, snr_db, \
        best_lag, SR
    return h
