"""Gradients through the DSP: spectrogram, mel, MFCC, resampling and lfilter, against torch
twins written from the published formulas (and finite differences for double backward)."""
import math

import numpy as np
import pytest
import torch

import ember
import ember.audio.functional as F
import ember.audio.transforms as T
from ember.audio.functional.resample import sinc_resample_kernel
from ember.autograd import gradcheck, gradgradcheck

SR = 16000


def _pair(x):
    return ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _check(e_out, t_out, e_in, t_in, seed=0, rtol=1e-4):
    """Backward a random cotangent through both and compare the input gradients."""
    g = np.random.default_rng(seed).standard_normal(tuple(t_out.shape)).astype(
        t_out.detach().numpy().dtype)
    (e_out * ember.from_numpy(g)).sum().backward()
    (t_out * torch.from_numpy(g)).sum().backward()
    for e, t in zip(e_in, t_in):
        ref = t.grad.numpy()
        np.testing.assert_allclose(e.grad.numpy(), ref, rtol=rtol,
                                   atol=rtol * np.abs(ref).max())


def _torch_mel_fb(n_freqs, f_min, f_max, n_mels, sr, htk=True):
    """torchaudio's melscale_fbanks formula (HTK scale, no norm), in torch."""
    all_freqs = torch.linspace(0, sr // 2, n_freqs, dtype=torch.float64)
    to_mel = lambda f: 2595.0 * math.log10(1.0 + f / 700.0)  # noqa: E731
    m_pts = torch.linspace(to_mel(f_min), to_mel(f_max), n_mels + 2, dtype=torch.float64)
    f_pts = 700.0 * (10.0 ** (m_pts / 2595.0) - 1.0)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.min(down, up), min=0).float()


def test_spectrogram_gradients_to_signal_and_window():
    x = np.random.default_rng(0).standard_normal((2, 3000)).astype(np.float32) * 0.3
    w = torch.hann_window(400).numpy()
    for power in (2.0, 1.0, None):
        ex, tx = _pair(x)
        ew, tw = _pair(w)
        e = F.spectrogram(ex, 0, ew, 512, 160, 400, power, False)
        t = torch.stft(tx, 512, 160, 400, tw, return_complex=True)
        if power is not None:
            t = t.abs().pow(power)
        else:
            e, t = ember.view_as_real(e), torch.view_as_real(t)
        _check(e, t, (ex, ew), (tx, tw), rtol=2e-4)


def test_mel_spectrogram_gradient():
    x = np.random.default_rng(1).standard_normal((1, 4000)).astype(np.float32) * 0.3
    mel = T.MelSpectrogram(SR, n_fft=512, hop_length=128, n_mels=40)
    tfb = _torch_mel_fb(257, 0.0, SR / 2, 40, SR)
    np.testing.assert_allclose(mel.mel_scale.fb.numpy(), tfb.numpy(), atol=1e-6)
    ex, tx = _pair(x)
    spec = torch.stft(tx, 512, 128, 512, torch.hann_window(512), return_complex=True)
    t = torch.matmul(spec.abs().pow(2).transpose(-1, -2), tfb).transpose(-1, -2)
    _check(mel(ex), t, (ex,), (tx,))


@pytest.mark.parametrize("log_mels", [False, True])
def test_mfcc_gradient(log_mels):
    x = np.random.default_rng(2).standard_normal((2, 4000)).astype(np.float32) * 0.3
    m = T.MFCC(SR, n_mfcc=13, log_mels=log_mels,
               melkwargs=dict(n_fft=512, hop_length=128, n_mels=40))
    tfb = _torch_mel_fb(257, 0.0, SR / 2, 40, SR)
    tdct = torch.from_numpy(m.dct_mat.numpy())
    ex, tx = _pair(x)
    spec = torch.stft(tx, 512, 128, 512, torch.hann_window(512), return_complex=True)
    mel = torch.matmul(spec.abs().pow(2).transpose(-1, -2), tfb).transpose(-1, -2)
    if log_mels:
        db = torch.log(mel + 1e-6)
    else:  # AmplitudeToDB("power", top_db=80): floor per item over (freq, time)
        db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        db = torch.max(db, db.amax(dim=(-2, -1), keepdim=True) - 80.0)
    t = torch.matmul(db.transpose(-1, -2), tdct).transpose(-1, -2)
    e = m(ex)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=2e-3)
    _check(e, t, (ex,), (tx,), rtol=5e-4)


def test_resample_gradient():
    x = np.random.default_rng(3).standard_normal((2, 1500)).astype(np.float32)
    ex, tx = _pair(x)
    k, width = sinc_resample_kernel(44100, 16000)
    g = math.gcd(44100, 16000)
    o, n = 44100 // g, 16000 // g
    tk = torch.from_numpy(k.astype(np.float32))[:, None, :]
    t = torch.nn.functional.conv1d(torch.nn.functional.pad(tx[:, None], (width, width + o)),
                                   tk, stride=o).transpose(1, 2).reshape(2, -1)
    t = t[..., :math.ceil(n * 1500 / o)]
    _check(F.resample(ex, 44100, 16000), t, (ex,), (tx,))


def _torch_lfilter(x, a, b):
    """The recursion written out in torch (differentiable in x, a and b)."""
    a0 = a[..., :1]
    a, b = a / a0, b / a0
    ys = []
    p = a.shape[-1]
    for t in range(x.shape[-1]):
        acc = sum(b[..., k] * x[..., t - k] for k in range(p) if t - k >= 0)
        acc = acc - sum(a[..., k] * ys[t - k] for k in range(1, p) if t - k >= 0)
        ys.append(acc)
    return torch.stack(ys, -1)


def test_lfilter_gradients_to_signal_and_coefficients():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, 300)) * 0.2
    a = np.array([[1.5, -1.2, 0.5], [1.0, 0.4, 0.1]])
    b = np.array([[0.3, 0.2, 0.1], [0.5, -0.4, 0.2]])
    (ex, tx), (ea, ta), (eb, tb) = _pair(x), _pair(a), _pair(b)
    e = F.lfilter(ex, ea, eb, clamp=False)
    t = torch.stack([_torch_lfilter(tx[:, c], ta[c], tb[c]) for c in range(2)], 1)
    _check(e, t, (ex, ea, eb), (tx, ta, tb), rtol=1e-8)


def test_biquad_gradient_to_a_tensor_coefficient():
    x = np.random.default_rng(5).standard_normal((1, 200)) * 0.2
    ex, tx = _pair(x)
    eg, tg = _pair(np.array(-1.2))
    e = F.biquad(ex, 0.2, 0.3, 0.1, 1.0, eg, 0.5)
    t = _torch_lfilter(tx, torch.stack([torch.tensor(1.0, dtype=torch.float64), tg,
                                        torch.tensor(0.5, dtype=torch.float64)]),
                       torch.tensor([0.2, 0.3, 0.1], dtype=torch.float64)).clamp(-1, 1)
    _check(e, t, (ex, eg), (tx, tg), rtol=1e-8)


def test_lfilter_double_backward():
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((1, 40)) * 0.3, requires_grad=True)
    a = ember.tensor([1.0, -0.7, 0.2], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.5, 0.1, -0.2], dtype=ember.float64, requires_grad=True)

    def fn(x, a, b):
        return F.lfilter(x, a, b, clamp=False)
    assert gradcheck(fn, (x, a, b))
    assert gradgradcheck(fn, (x, a, b))


def test_inverse_spectrogram_and_deltas_gradcheck():
    rng = np.random.default_rng(7)
    spec = ember.tensor(rng.standard_normal((9, 6, 2)), requires_grad=True)
    w = ember.hann_window(16, dtype=ember.float64)

    def inv(s):
        return F.inverse_spectrogram(ember.view_as_complex(s), None, 0, w, 16, 4, 16, False)
    assert gradcheck(inv, (spec,))
    d = ember.tensor(rng.standard_normal((2, 3, 12)), requires_grad=True)
    assert gradcheck(lambda v: F.compute_deltas(v, 5), (d,))


@pytest.mark.cuda
def test_dsp_on_cuda_matches_cpu():
    """The same ops on a cupy array: one code path, numbers equal to the CPU's."""
    x = np.random.default_rng(8).standard_normal((2, 4000)).astype(np.float32) * 0.3
    cpu = ember.from_numpy(x)
    gpu = cpu.to("cuda")
    mel = T.MelSpectrogram(SR, n_fft=512, hop_length=128, n_mels=40)
    np.testing.assert_allclose(mel.to("cuda")(gpu).cpu().numpy(), mel.to("cpu")(cpu).numpy(),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(F.resample(gpu, SR, 8000).cpu().numpy(),
                               F.resample(cpu, SR, 8000).numpy(), atol=1e-5)
    a = ember.tensor([1.0, -1.6, 0.64])
    b = ember.tensor([0.1, 0.2, 0.1])
    np.testing.assert_allclose(F.lfilter(gpu, a.to("cuda"), b.to("cuda")).cpu().numpy(),
                               F.lfilter(cpu, a, b).numpy(), atol=1e-4)
