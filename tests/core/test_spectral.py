"""Windows, stft and istft (core/spectral.py) against torch: values and shapes over the
argument space (hop, win_length, center/pad_mode, normalized, onesided, align_to_window,
length, batched or not, real or complex), gradients to signal and window, double gradients
and float64 gradchecks; plus the errors torch raises."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import spectral as SP
from ember.ops.complex import view_as_complex, view_as_real
from optest import assert_close, check_op

pytestmark = pytest.mark.filterwarnings("ignore:.*window:UserWarning")

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows(name):
    for L in [0, 1, 2, 3, 8, 31, 400]:
        for periodic in [True, False]:
            for dt, edt in [(None, None), (torch.float64, ember.float64)]:
                e = getattr(SP, name)(L, periodic, dtype=edt)
                t = getattr(torch, name)(L, periodic, dtype=dt)
                assert_close(e, t, 2e-7 if dt is None else 1e-12, 1e-6, f"{name}({L}, {periodic})")
    assert getattr(SP, name)(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        getattr(SP, name)(4, dtype=ember.int64)


def test_window_parameters():
    assert_close(SP.hamming_window(9, False, 0.6, 0.3), torch.hamming_window(9, False, 0.6, 0.3),
                 1e-7, 1e-6, "hamming alpha/beta")
    for beta in [0.0, 5.0, 30.0]:
        assert_close(SP.kaiser_window(10, True, beta), torch.kaiser_window(10, True, beta),
                     1e-6, 1e-5, f"kaiser beta={beta}")


def _lib(x):
    return (ember, SP, view_as_real) if isinstance(x, ember.Tensor) else \
        (torch, torch, torch.view_as_real)


STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, win_length=12),
    dict(n_fft=15, hop_length=4, center=False),
    dict(n_fft=16, normalized=True, onesided=False),
    dict(n_fft=16, hop_length=3, pad_mode="constant"),
    dict(n_fft=12, hop_length=4, pad_mode="replicate"),
    dict(n_fft=12, hop_length=4, pad_mode="circular"),
    dict(n_fft=16, win_length=10, hop_length=4, center=False, align_to_window=True),
    dict(n_fft=16, win_length=9, hop_length=4, center=False, align_to_window=False),
]


@pytest.mark.parametrize("kw", STFT_CASES, ids=[str(k) for k in STFT_CASES])
@pytest.mark.parametrize("batched", [True, False])
def test_stft_grads(kw, batched):
    wl = kw.get("win_length", kw["n_fft"])
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 1.0, wl).astype(np.float32)

    def f(x, win):
        lib, sp, vr = _lib(x)
        return vr(sp.stft(x, window=win, return_complex=True, **kw))
    check_op(f, f, [(2, 60) if batched else (53,), w], rtol=2e-4)


@pytest.mark.parametrize("kw", STFT_CASES[:4], ids=[str(k) for k in STFT_CASES[:4]])
def test_stft_complex_input(kw):
    kw = {k: v for k, v in kw.items() if k != "onesided"}
    wl = kw.get("win_length", kw["n_fft"])
    w = np.hanning(wl + 2)[1:-1].astype(np.float64)

    def f(x, win):
        lib, sp, vr = _lib(x)
        vc = view_as_complex if lib is ember else torch.view_as_complex
        return vr(sp.stft(vc(x), window=win, **kw))  # return_complex defaults to True
    check_op(f, f, [(2, 40, 2), w], dtype=np.float64, rtol=1e-7, atol=1e-8)


def test_stft_return_complex_false_and_defaults():
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    with pytest.warns(UserWarning, match="deprecated"):
        e = SP.stft(ember.tensor(x), 16, window=SP.hann_window(16), return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.stft(torch.tensor(x), 16, window=torch.hann_window(16), return_complex=False)
    assert_close(e, t, 1e-4, 1e-4, "return_complex=False")
    with pytest.warns(UserWarning, match="rectangular"):
        e = SP.stft(ember.tensor(x), 16, return_complex=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.stft(torch.tensor(x), 16, return_complex=True)
    assert_close(view_as_real(e), torch.view_as_real(t), 1e-4, 1e-4, "no window")
    ei = SP.stft(ember.tensor(np.arange(40)), 8, window=SP.hann_window(8), return_complex=True)
    assert ei.dtype == ember.complex64


def test_stft_errors():
    x = ember.randn(50)
    w = SP.hann_window(16)
    with pytest.raises(RuntimeError, match="return_complex"):
        SP.stft(x, 16, window=w)
    with pytest.raises(RuntimeError, match="n_fft"):
        SP.stft(x, 100, window=SP.hann_window(100), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="hop_length"):
        SP.stft(x, 16, 0, window=w, return_complex=True)
    with pytest.raises(RuntimeError, match="win_length"):
        SP.stft(x, 16, 4, 20, window=SP.hann_window(20), return_complex=True)
    with pytest.raises(RuntimeError, match="window"):
        SP.stft(x, 16, 4, window=SP.hann_window(8), return_complex=True)
    with pytest.raises(RuntimeError, match="align_to_window"):
        SP.stft(x, 16, window=w, return_complex=True, align_to_window=True)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        SP.stft(ember.randn(2, 2, 50), 16, window=w, return_complex=True)


ISTFT_CASES = [
    dict(n_fft=16, hop_length=4),
    dict(n_fft=16, hop_length=5, win_length=12),
    dict(n_fft=15, hop_length=4, center=False),
    dict(n_fft=16, hop_length=4, normalized=True),
    dict(n_fft=16, hop_length=4, onesided=False),
]


@pytest.mark.parametrize("kw", ISTFT_CASES, ids=[str(k) for k in ISTFT_CASES])
@pytest.mark.parametrize("length", [None, 70, 61, 90])
def test_istft_grads(kw, length):
    wl = kw.get("win_length", kw["n_fft"])
    n_freq = kw["n_fft"] if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
    rng = np.random.default_rng(2)
    w = rng.uniform(0.5, 1.0, wl).astype(np.float32)
    frames = 17 if kw.get("center", True) else 14

    def f(spec, win):
        lib, sp, vr = _lib(spec)
        vc = view_as_complex if lib is ember else torch.view_as_complex
        return sp.istft(vc(spec), window=win, length=length, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "padded with zeros" warning
        spec = rng.standard_normal((2, n_freq, frames, 2)).astype(np.float32)
        try:
            f(torch.from_numpy(spec), torch.from_numpy(w))
        except RuntimeError as err:  # the window envelope vanishes inside ``length``
            assert "overlap add" in str(err)
            with pytest.raises(RuntimeError, match="overlap add"):
                f(ember.tensor(spec), ember.tensor(w))
            return
        check_op(f, f, [(2, n_freq, frames, 2), w], rtol=2e-4)


def test_istft_roundtrip_and_complex_output():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 200))
    w = SP.hann_window(64, dtype=ember.float64)
    X = SP.stft(ember.tensor(x), 64, 16, window=w, return_complex=True)
    y = SP.istft(X, 64, 16, window=w, length=200)
    np.testing.assert_allclose(y.numpy(), x, atol=1e-10)
    xc = rng.standard_normal((100, 2))

    def f(z, win):
        lib, sp, vr = _lib(z)
        vc = view_as_complex if lib is ember else torch.view_as_complex
        spec = sp.stft(vc(z), 16, 4, window=win, return_complex=True)
        return vr(sp.istft(spec, 16, 4, window=win, return_complex=True, length=100))
    check_op(f, f, [xc, np.hanning(18)[1:-1]], dtype=np.float64, rtol=1e-7, atol=1e-8)


def test_istft_errors():
    X = SP.stft(ember.randn(64), 16, 4, window=SP.hann_window(16), return_complex=True)
    w = SP.hann_window(16)
    with pytest.raises(RuntimeError, match="complex-valued"):
        SP.istft(view_as_real(X), 16, 4, window=w)
    with pytest.raises(RuntimeError, match="NOLA|overlap add"):
        SP.istft(X, 16, 4, window=ember.zeros(16))
    with pytest.raises(RuntimeError, match="hop_length"):
        SP.istft(X, 16, 20, window=w)
    with pytest.raises(RuntimeError, match="n_fft / 2"):
        SP.istft(X, 18, 4, window=SP.hann_window(18), onesided=True)
    with pytest.raises(RuntimeError, match="onesided"):
        SP.istft(X, 16, 4, window=w, return_complex=True)


def test_tensor_methods_mixin():
    x = ember.tensor(np.random.default_rng(6).standard_normal(80).astype(np.float32))
    w = SP.hann_window(16)
    X = SP.SpectralOps.stft(x, 16, 4, window=w, return_complex=True)
    Xt = torch.tensor(x.numpy()).stft(16, 4, window=torch.hann_window(16), return_complex=True)
    assert_close(view_as_real(X), torch.view_as_real(Xt), 1e-4, 1e-4, "Tensor.stft")
    y = SP.SpectralOps.istft(X, 16, 4, window=w, length=80)
    assert_close(y, Xt.istft(16, 4, window=torch.hann_window(16), length=80), 1e-5, 1e-5,
                 "Tensor.istft")
