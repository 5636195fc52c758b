"""ember.audio.functional and transforms against references computed here: torch.stft /
istft, librosa (filterbanks, MFCC, dB, resampling quality), torchaudio's published formulas
written out in torch (Resample's kernel, deltas, phase vocoder, mu-law), and plain loops
(lfilter)."""
import math

import numpy as np
import pytest
import torch

import ember
import ember.audio.functional as F
import ember.audio.transforms as T

SR = 16000
RNG = np.random.default_rng(1234)


def _x(*shape, scale=0.3, dtype=np.float32):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def _tone(seconds=0.5, sr=SR, freqs=(440.0, 1234.5)):
    t = np.arange(int(seconds * sr)) / sr
    return sum(0.4 * np.sin(2 * np.pi * f * t) for f in freqs).astype(np.float32)


def _e(a):
    return ember.from_numpy(np.ascontiguousarray(a))


# --------------------------------------------------------------------------- spectrogram

@pytest.mark.parametrize("kw", [
    dict(center=True, pad_mode="reflect"),
    dict(center=False),
    dict(center=True, pad_mode="constant"),
    dict(center=True, pad_mode="replicate", onesided=False),
])
@pytest.mark.parametrize("power", [None, 1.0, 2.0, 0.5])
def test_spectrogram_matches_torch_stft(kw, power):
    x = _x(2, 3, 4000)
    n_fft, hop, win = 512, 128, 400
    w = torch.hann_window(win)
    ref = torch.stft(torch.from_numpy(x).reshape(-1, 4000), n_fft, hop, win, w,
                     return_complex=True, **kw)
    ref = ref.reshape(2, 3, *ref.shape[-2:])
    if power is not None:
        ref = ref.abs().pow(power)
    got = F.spectrogram(_e(x), 0, ember.hann_window(win), n_fft, hop, win, power, False, **kw)
    assert tuple(got.shape) == tuple(ref.shape)
    r = ref.numpy()
    np.testing.assert_allclose(got.numpy(), r, atol=1e-5 * np.abs(r).max(), rtol=1e-4)


@pytest.mark.parametrize("kw", [
    dict(n_fft=400, win_length=400, hop_length=160, power=2.0, normalized=False),
    dict(n_fft=512, win_length=300, hop_length=128, power=1.0, normalized=True),
    dict(n_fft=256, win_length=256, hop_length=64, power=0.7, normalized="frame_length",
         center=False),
    dict(n_fft=512, win_length=400, hop_length=100, power=2.0, normalized=False,
         pad_mode="constant"),
])
def test_spectrogram_fast_path_equals_the_stft_path(kw):
    # without a gradient to track, power spectrograms take a numpy path (threaded FFT);
    # it must give the autograd path's numbers
    x = _x(3, 5000, dtype=np.float64)
    spec = T.Spectrogram(window_fn=lambda n: ember.hann_window(n, dtype=ember.float64),
                         **kw)
    fast = spec(_e(x)).numpy()
    slow = spec(ember.tensor(x, requires_grad=True)).detach().numpy()
    assert fast.shape == slow.shape
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12 * np.abs(slow).max())


@pytest.mark.parametrize("normalized", [True, "window", "frame_length"])
def test_spectrogram_normalizations_and_pad(normalized):
    x = _x(1, 3000)
    w = torch.hann_window(256)
    tx = torch.nn.functional.pad(torch.from_numpy(x), (7, 7))
    ref = torch.stft(tx, 256, 64, 256, w, normalized=(normalized == "frame_length"),
                     return_complex=True)
    if normalized in (True, "window"):
        ref = ref / w.pow(2).sum().sqrt()
    ref = ref.abs().pow(2).numpy()
    got = T.Spectrogram(256, hop_length=64, pad=7, normalized=normalized)(_e(x)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6 * ref.max())


@pytest.mark.parametrize("center,win,wname", [(True, 400, "hann"), (False, 512, "hamming")])
def test_inverse_spectrogram_matches_torch_istft(center, win, wname):
    x = _x(2, 4096)
    n_fft, hop = 512, 128
    w = getattr(torch, f"{wname}_window")(win)     # (no zero at the ends without centring)
    spec = torch.stft(torch.from_numpy(x), n_fft, hop, win, w, center=center,
                      return_complex=True)
    ref = torch.istft(spec, n_fft, hop, win, w, center=center, length=4000).numpy()
    got = F.inverse_spectrogram(_e(spec.numpy()), 4000, 0,
                                getattr(ember, f"{wname}_window")(win), n_fft, hop, win,
                                False, center=center).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)
    # the transform pair is an identity (padding included)
    fwd = T.Spectrogram(n_fft, win, hop, pad=5, power=None, normalized=True)
    inv = T.InverseSpectrogram(n_fft, win, hop, pad=5, normalized=True)
    back = inv(fwd(_e(x)), length=4096).numpy()
    np.testing.assert_allclose(back, x, atol=1e-5)
    with pytest.raises(ValueError, match="complex"):
        inv(_e(np.abs(spec.numpy())))


# --------------------------------------------------------------------------- filterbanks

@pytest.mark.parametrize("htk,norm", [(True, None), (True, "slaney"), (False, None),
                                      (False, "slaney")])
@pytest.mark.parametrize("n_fft,n_mels,fmin,fmax", [(512, 40, 0.0, 8000.0),
                                                    (1024, 80, 60.0, 7600.0)])
def test_melscale_fbanks_match_librosa(htk, norm, n_fft, n_mels, fmin, fmax):
    librosa = pytest.importorskip("librosa")
    ref = librosa.filters.mel(sr=SR, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax,
                              htk=htk, norm=norm).T
    got = F.melscale_fbanks(n_fft // 2 + 1, fmin, fmax, n_mels, SR, norm=norm,
                            mel_scale="htk" if htk else "slaney")
    assert tuple(got.shape) == (n_fft // 2 + 1, n_mels) and got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-6 * ref.max(), rtol=1e-5)


def test_filterbank_arguments():
    with pytest.raises(ValueError, match="norm"):
        F.melscale_fbanks(201, 0, 8000, 40, SR, norm="l2")
    with pytest.raises(ValueError, match="mel_scale"):
        F.melscale_fbanks(201, 0, 8000, 40, SR, mel_scale="bark")
    with pytest.warns(UserWarning, match="all zero"):
        F.melscale_fbanks(65, 0, 8000, 128, SR)


def test_linear_fbanks_and_dct_formulas():
    fb = F.linear_fbanks(201, 100.0, 7000.0, 30, SR).numpy()
    freqs = np.linspace(0, SR // 2, 201)
    edges = np.linspace(100.0, 7000.0, 32)
    for m in range(30):                     # each filter: a unit triangle on its edges
        lo, c, hi = edges[m:m + 3]
        tri = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
        np.testing.assert_allclose(fb[:, m], tri, atol=1e-6)
    dct = F.create_dct(13, 40, "ortho").numpy()
    n, k = np.arange(40), np.arange(13)[:, None]
    ref = np.cos(np.pi / 40 * (n + 0.5) * k) * np.sqrt(2 / 40)
    ref[0] /= np.sqrt(2)
    np.testing.assert_allclose(dct, ref.T, atol=1e-6)
    full = F.create_dct(40, 40, "ortho").numpy()
    np.testing.assert_allclose(full.T @ full, np.eye(40), atol=1e-5)   # orthonormal
    np.testing.assert_allclose(F.create_dct(5, 8, None).numpy(),
                               (2 * np.cos(np.pi / 8 * (np.arange(8) + 0.5)
                                           * np.arange(5)[:, None])).T, atol=1e-6)


# --------------------------------------------------------------------------- dB, mel, MFCC

def test_amplitude_to_db_matches_librosa():
    librosa = pytest.importorskip("librosa")
    spec = np.abs(_x(1, 64, 50)) ** 2 * 100
    spec[0, :10, :10] = 0
    got = T.AmplitudeToDB("power", top_db=80)(_e(spec)).numpy()
    ref = librosa.power_to_db(spec[0], ref=1.0, amin=1e-10, top_db=80.0)
    np.testing.assert_allclose(got[0], ref, atol=1e-4)
    mag = np.sqrt(spec)
    got = T.AmplitudeToDB("magnitude")(_e(mag)).numpy()
    np.testing.assert_allclose(got[0], librosa.amplitude_to_db(mag[0], ref=1.0, amin=1e-10,
                                                               top_db=None), atol=1e-4)
    # top_db is per item of a batch (channel, freq, time)
    batch = np.stack([spec, spec * 1e-3])             # (2, 1, 64, 50)
    db = F.amplitude_to_DB(_e(batch), 10.0, 1e-10, 0.0, 80.0).numpy()
    for i in range(2):                                 # each floored 80 dB below its own max
        assert db[i].min() == pytest.approx(max(db[i].max() - 80, -100.0), abs=1e-3)
    assert db[1].max() == pytest.approx(db[0].max() - 30, abs=1e-3)
    back = F.DB_to_amplitude(_e(F.amplitude_to_DB(_e(spec), 10.0, 1e-10, 0.0).numpy()),
                             1.0, 1.0).numpy()
    np.testing.assert_allclose(back, np.maximum(spec, 1e-10), rtol=1e-4)


def test_mel_spectrogram_matches_librosa():
    librosa = pytest.importorskip("librosa")
    y = _tone(0.5) + _x(8000, scale=0.01)
    ref = librosa.feature.melspectrogram(y=y, sr=SR, n_fft=512, hop_length=160, n_mels=40,
                                         center=True, pad_mode="constant", power=2.0)
    got = T.MelSpectrogram(SR, n_fft=512, hop_length=160, n_mels=40, pad_mode="constant",
                           mel_scale="slaney", norm="slaney")(_e(y)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-5 * ref.max())


@pytest.mark.parametrize("htk", [False, True])
def test_mfcc_matches_librosa(htk):
    librosa = pytest.importorskip("librosa")
    y = _tone(0.5) + _x(8000, scale=0.01)
    ref = librosa.feature.mfcc(y=y, sr=SR, n_mfcc=20, n_fft=512, hop_length=160, n_mels=40,
                               htk=htk, center=True, pad_mode="constant", dct_type=2,
                               norm="ortho", mel_norm=None if htk else "slaney")
    melkw = dict(n_fft=512, hop_length=160, n_mels=40, pad_mode="constant",
                 mel_scale="htk" if htk else "slaney", norm=None if htk else "slaney")
    m = T.MFCC(SR, 20, melkwargs=melkw)
    assert (m.dct_type, m.norm, m.log_mels, m.top_db) == (2, "ortho", False, 80.0)
    got = m(_e(y)).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=2e-3 * np.abs(ref).max())


def test_mfcc_lfcc_defaults_and_checks():
    y = _e(_x(2, 8000))
    assert tuple(T.MFCC()(y).shape) == (2, 40, 41)
    assert tuple(T.MFCC(log_mels=True)(y).shape) == (2, 40, 41)
    assert tuple(T.LFCC()(y).shape) == (2, 40, 41)
    with pytest.raises(ValueError, match="DCT type"):
        T.MFCC(dct_type=3)
    with pytest.raises(ValueError, match="more MFCC"):
        T.MFCC(n_mfcc=200)
    assert sorted(T.MFCC().state_dict()) == ["MelSpectrogram.mel_scale.fb",
                                              "MelSpectrogram.spectrogram.window", "dct_mat"]
    assert sorted(T.LFCC().state_dict()) == ["Spectrogram.window", "dct_mat", "filter_mat"]


def test_lfcc_composition():
    x = _x(1, 6000)
    m = T.LFCC(SR, n_filter=64, n_lfcc=20, speckwargs=dict(n_fft=512, hop_length=128))
    w = torch.hann_window(512)
    spec = torch.stft(torch.from_numpy(x), 512, 128, 512, w, return_complex=True).abs() ** 2
    lin = torch.from_numpy(m.filter_mat.numpy())
    s = torch.matmul(spec.transpose(-1, -2), lin).transpose(-1, -2)
    db = 10 * torch.log10(torch.clamp(s, min=1e-10))
    db = torch.max(db, db.amax() - 80)
    ref = torch.matmul(db.transpose(-1, -2), torch.from_numpy(m.dct_mat.numpy()))
    np.testing.assert_allclose(m(_e(x)).numpy(), ref.transpose(-1, -2).numpy(), atol=2e-3)


def test_inverse_mel_scale_recovers_the_spectrogram():
    spec = np.abs(_x(2, 129, 20)) + 0.1
    mel = T.MelScale(32, SR, n_stft=129)
    inv = T.InverseMelScale(129, 32, SR)
    m = mel(_e(spec))
    back = inv(m)
    assert tuple(back.shape) == spec.shape and float(back.min().item()) >= 0
    err = np.linalg.norm(mel(back).numpy() - m.numpy()) / np.linalg.norm(m.numpy())
    assert err < 1e-2          # a least-squares solution, clipped at zero


# --------------------------------------------------------------------------- resample

def _ta_kernel(orig, new, lpw, rolloff, method, beta):
    """torchaudio's published kernel construction, in float64, as its transform builds it."""
    g = math.gcd(orig, new)
    orig, new = orig // g, new // g
    base = min(orig, new) * rolloff
    width = math.ceil(lpw * orig / base)
    idx = torch.arange(-width, width + orig, dtype=torch.float64)[None, None] / orig
    t = torch.arange(0, -new, -1, dtype=torch.float64)[:, None, None] / new + idx
    t = (t * base).clamp(-lpw, lpw)
    if method == "sinc_interp_hann":
        window = torch.cos(t * math.pi / lpw / 2) ** 2
    else:
        b = torch.tensor(14.769656459379492 if beta is None else float(beta),
                         dtype=torch.float64)
        window = torch.i0(b * torch.sqrt(1 - (t / lpw) ** 2)) / torch.i0(b)
    t = t * math.pi
    k = torch.where(t == 0, torch.tensor(1.0, dtype=torch.float64), t.sin() / t)
    return (k * window * base / orig).float(), width, orig, new


def _ta_resample(x, orig, new, lpw=6, rolloff=0.99, method="sinc_interp_hann", beta=None):
    k, width, o, n = _ta_kernel(orig, new, lpw, rolloff, method, beta)
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    y = torch.nn.functional.conv1d(torch.nn.functional.pad(x[:, None], (width, width + o)),
                                   k, stride=o)
    y = y.transpose(1, 2).reshape(x.shape[0], -1)[..., :math.ceil(n * shape[-1] / o)]
    return y.reshape(*shape[:-1], -1)


@pytest.mark.parametrize("orig,new", [(16000, 8000), (8000, 16000), (44100, 16000),
                                      (16000, 44100), (48000, 32000), (22050, 16000)])
@pytest.mark.parametrize("method", ["sinc_interp_hann", "sinc_interp_kaiser"])
def test_resample_matches_torchaudio_formula(orig, new, method):
    x = _x(2, 1, 3001)
    ref = _ta_resample(torch.from_numpy(x), orig, new, method=method).numpy()
    got = F.resample(_e(x), orig, new, resampling_method=method).numpy()
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1e-5
    mod = T.Resample(orig, new, method)
    np.testing.assert_allclose(mod(_e(x)).numpy(), ref, atol=1e-5, rtol=0)
    assert "kernel" not in mod.state_dict()            # non-persistent, as torchaudio's


@pytest.mark.parametrize("lpw,rolloff,beta", [(16, 0.85, 8.555), (3, 0.95, None)])
def test_resample_filter_options_match(lpw, rolloff, beta):
    x = _x(1, 2000)
    for method in ("sinc_interp_hann", "sinc_interp_kaiser"):
        ref = _ta_resample(torch.from_numpy(x), 44100, 16000, lpw, rolloff, method,
                           beta).numpy()
        got = F.resample(_e(x), 44100, 16000, lpw, rolloff, method, beta).numpy()
        assert np.abs(got - ref).max() <= 1e-5


@pytest.mark.parametrize("orig,new", [(44100, 16000), (16000, 44100), (22050, 16000)])
def test_resample_sparse_taps_equal_the_dense_kernel(orig, new):
    from ember.audio.functional.resample import ResampleKernel

    x = _e(_x(2, 3000))
    for method in ("sinc_interp_hann", "sinc_interp_kaiser"):
        dense = ResampleKernel(orig, new, resampling_method=method, sparse=False)
        sparse = ResampleKernel(orig, new, resampling_method=method, sparse=True)
        assert sparse.weights.shape == (dense.n, 2 * dense.width + 1)
        np.testing.assert_allclose(sparse.apply(x).numpy(), dense.apply(x).numpy(),
                                   atol=2e-6)
    # a ratio that reduces to large o and n (pitch shifting's 20158:16000 -> 10079:8000)
    # takes the sparse form on its own, and still resamples a tone to the same tone
    k = ResampleKernel(20158, 16000)
    assert k.sparse and k.weights.shape == (8000, 2 * k.width + 1)
    tone = _tone(0.5, 20158, (500.0,))
    out = k.apply(_e(tone)).numpy()
    ref = _tone(0.5, 16000, (500.0,))[:len(out)]
    assert np.abs(out[100:-100] - ref[100:-100]).max() < 1e-3


def test_resample_quality_against_librosa():
    librosa = pytest.importorskip("librosa")
    pytest.importorskip("soxr")
    sr0, sr1 = 44100, 16000
    x = _tone(1.0, sr0, (440.0, 3000.0))
    got = F.resample(_e(x), sr0, sr1).numpy()
    ref = librosa.resample(x, orig_sr=sr0, target_sr=sr1, res_type="soxr_hq")
    assert got.shape == ref.shape
    mid = slice(200, len(ref) - 200)
    snr = 10 * np.log10(np.sum(ref[mid] ** 2) / np.sum((ref[mid] - got[mid]) ** 2))
    assert snr > 60
    # a tone above the new Nyquist frequency is filtered out, not aliased
    hi = _tone(1.0, sr0, (10000.0,))
    out = F.resample(_e(hi), sr0, sr1).numpy()[200:-200]
    assert 20 * np.log10(np.sqrt(np.mean(hi ** 2)) / np.sqrt(np.mean(out ** 2))) > 40


def test_resample_arguments():
    x = _e(_x(1, 100))
    assert F.resample(x, 16000, 16000) is x
    with pytest.raises(ValueError, match="integer"):
        F.resample(x, 16000.5, 8000)
    with pytest.raises(ValueError, match="positive"):
        F.resample(x, -1, 8000)
    with pytest.raises(ValueError, match="Invalid resampling method"):
        F.resample(x, 16000, 8000, resampling_method="linear")
    with pytest.warns(DeprecationWarning):
        F.resample(x, 16000, 8000, resampling_method="kaiser_window")
    with pytest.raises(TypeError, match="floating"):
        F.resample(ember.arange(100).reshape(1, 100), 16000, 8000)


# --------------------------------------------------------------------------- filters

def _lfilter_loop(x, a, b):
    """y[t] = (sum_k b[k] x[t-k] - sum_{k>=1} a[k] y[t-k]) / a[0], in float64."""
    x = np.asarray(x, np.float64)
    y = np.zeros_like(x)
    p = len(a)
    for t in range(x.shape[-1]):
        acc = sum(b[k] * x[..., t - k] for k in range(p) if t - k >= 0)
        acc = acc - sum(a[k] * y[..., t - k] for k in range(1, p) if t - k >= 0)
        y[..., t] = acc / a[0]
    return y


def _lfilter_loop32(x, a, b):
    """The same recursion in float32 arithmetic (vectorised over the leading dims)."""
    y = np.zeros_like(x)
    for t in range(x.shape[-1]):
        acc = np.zeros(x.shape[:-1], np.float32)
        for k in range(len(b)):
            if t - k >= 0:
                acc += b[k] * x[..., t - k]
        for k in range(1, len(a)):
            if t - k >= 0:
                acc -= a[k] * y[..., t - k]
        y[..., t] = acc / a[0]
    return y


@pytest.mark.parametrize("a,b", [
    ([1.0, -1.8, 0.81], [0.25, 0.5, 0.25]),                # a double pole at 0.9
    ([2.0, -0.5], [1.0, 0.3]),                              # first order, a0 != 1
    ([1.0, -0.2, 0.05, -0.01, 0.3], [0.1, 0.2, 0.3, 0.2, 0.1]),
    ([1.0, -1.99, 0.9901], [1.0, 0.0, 0.0]),                # slow decay (poles r = 0.995)
])
def test_lfilter_matches_the_recursion(a, b):
    x = _x(2, 3, 3000, dtype=np.float64)
    ref = _lfilter_loop(x, a, b)
    got = F.lfilter(_e(x), ember.tensor(a, dtype=ember.float64),
                    ember.tensor(b, dtype=ember.float64), clamp=False).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-9 * max(1, np.abs(ref).max()))
    got32 = F.lfilter(_e(x.astype(np.float32)), ember.tensor(a), ember.tensor(b),
                      clamp=False).numpy()
    # float32: within the error of the float32 recursion itself (poles near the unit
    # circle amplify rounding by about 1 / (1 - r)^2)
    ref32 = _lfilter_loop32(x.astype(np.float32), np.float32(a), np.float32(b))
    tol = 4 * np.abs(ref32 - ref).max() + 1e-5 * max(1, np.abs(ref).max())
    np.testing.assert_allclose(got32, ref, atol=tol)
    clamped = F.lfilter(_e(x), ember.tensor(a, dtype=ember.float64),
                        ember.tensor(b, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(clamped, np.clip(ref, -1, 1),
                               atol=1e-9 * max(1, np.abs(ref).max()))


def test_lfilter_per_channel_and_unbatched_filters():
    x = _x(4, 2, 500, dtype=np.float64)
    a = np.array([[1.0, -0.5, 0.1], [1.0, 0.3, 0.0]])
    b = np.array([[0.5, 0.2, 0.1], [1.0, -1.0, 0.25]])
    got = F.lfilter(_e(x), _e(a), _e(b), clamp=False).numpy()
    for c in range(2):
        np.testing.assert_allclose(got[:, c], _lfilter_loop(x[:, c], a[c], b[c]), atol=1e-10)
    mono = x[:, 0]
    got = F.lfilter(_e(mono), _e(a), _e(b), clamp=False, batching=False).numpy()
    assert got.shape == (4, 2, 500)
    for c in range(2):
        np.testing.assert_allclose(got[:, c], _lfilter_loop(mono, a[c], b[c]), atol=1e-10)
    with pytest.raises(ValueError, match="same size"):
        F.lfilter(_e(x), _e(a), _e(b[:, :2]))
    with pytest.raises(ValueError, match="number of batches"):
        F.lfilter(_e(x[:, :1]), _e(a), _e(b))


def _cookbook(kind, sr, f, Q, gain=0.0):
    w0 = 2 * math.pi * f / sr
    alpha = math.sin(w0) / 2 / Q
    c = math.cos(w0)
    A = 10 ** (gain / 40)
    return {
        "lowpass": ([(1 - c) / 2, 1 - c, (1 - c) / 2], [1 + alpha, -2 * c, 1 - alpha]),
        "highpass": ([(1 + c) / 2, -1 - c, (1 + c) / 2], [1 + alpha, -2 * c, 1 - alpha]),
        "bandpass": ([alpha, 0.0, -alpha], [1 + alpha, -2 * c, 1 - alpha]),
        "bandreject": ([1.0, -2 * c, 1.0], [1 + alpha, -2 * c, 1 - alpha]),
        "allpass": ([1 - alpha, -2 * c, 1 + alpha], [1 + alpha, -2 * c, 1 - alpha]),
        "equalizer": ([1 + alpha * A, -2 * c, 1 - alpha * A],
                      [1 + alpha / A, -2 * c, 1 - alpha / A]),
    }[kind]


@pytest.mark.parametrize("kind", ["lowpass", "highpass", "bandpass", "bandreject", "allpass",
                                  "equalizer"])
def test_biquads(kind):
    x = _x(2, 2000, dtype=np.float64)
    b, a = _cookbook(kind, SR, 1000.0, 0.707, 6.0)
    ref = np.clip(_lfilter_loop(x, a, b), -1, 1)
    fn = getattr(F, f"{kind}_biquad")
    got = fn(_e(x), SR, 1000.0, 6.0, 0.707) if kind == "equalizer" else \
        fn(_e(x), SR, 1000.0, 0.707)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-9)


def test_lowpass_attenuates_high_frequencies():
    x = _tone(0.5, SR, (200.0, 6000.0))
    y = F.lowpass_biquad(_e(x), SR, 1000.0).numpy()
    spec = np.abs(np.fft.rfft(y[2000:]))
    freqs = np.fft.rfftfreq(len(y) - 2000, 1 / SR)
    low = spec[np.argmin(np.abs(freqs - 200))]
    high = spec[np.argmin(np.abs(freqs - 6000))]
    assert 20 * np.log10(low / high) > 25


def test_emphasis_pair_and_filtfilt():
    x = _x(2, 1000, scale=0.05)
    pre = F.preemphasis(_e(x), 0.97).numpy()
    np.testing.assert_allclose(pre[:, 1:], x[:, 1:] - 0.97 * x[:, :-1], atol=1e-7)
    np.testing.assert_array_equal(pre[:, 0], x[:, 0])
    back = F.deemphasis(_e(pre), 0.97).numpy()
    np.testing.assert_allclose(back, x, atol=1e-5)
    np.testing.assert_allclose(T.Deemphasis()(T.Preemphasis()(_e(x))).numpy(), x, atol=1e-5)
    a, b = [1.0, -0.6], [0.4, 0.0]
    y = F.filtfilt(_e(x.astype(np.float64)), ember.tensor(a, dtype=ember.float64),
                   ember.tensor(b, dtype=ember.float64), clamp=False).numpy()
    ref = _lfilter_loop(_lfilter_loop(x, a, b)[..., ::-1], a, b)[..., ::-1]
    np.testing.assert_allclose(y, ref, atol=1e-9)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_and_fftconvolve(mode):
    x = _x(3, 2, 400, dtype=np.float64)
    y = _x(1, 2, 37, dtype=np.float64)
    ref = np.stack([[np.convolve(x[i, j], y[0, j], mode) for j in range(2)]
                    for i in range(3)])
    np.testing.assert_allclose(F.convolve(_e(x), _e(y), mode).numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(F.fftconvolve(_e(x), _e(y), mode).numpy(), ref, atol=1e-10)
    # the shorter signal first: "same" keeps the first argument's length (torchaudio's rule)
    full = np.stack([[np.convolve(y[0, j], x[i, j]) for j in range(2)] for i in range(3)])
    n = {"full": full.shape[-1], "valid": 400 - 37 + 1, "same": 37}[mode]
    start = (full.shape[-1] - n) // 2
    np.testing.assert_allclose(T.Convolve(mode)(_e(y), _e(x)).numpy(),
                               full[..., start:start + n], atol=1e-10)
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.convolve(_e(x), _e(y[0]))
    with pytest.raises(ValueError, match="mode"):
        F.fftconvolve(_e(x), _e(y), "circular")


# --------------------------------------------------------------------------- spectral misc

def test_compute_deltas_matches_the_conv_formula():
    x = _x(2, 10, 30)
    for win in (3, 5, 9):
        n = (win - 1) // 2
        tx = torch.nn.functional.pad(torch.from_numpy(x).reshape(1, -1, 30), (n, n),
                                     mode="replicate")
        kernel = torch.arange(-n, n + 1, dtype=torch.float32).repeat(tx.shape[1], 1, 1)
        ref = torch.nn.functional.conv1d(tx, kernel, groups=tx.shape[1])
        ref = (ref / (n * (n + 1) * (2 * n + 1) / 3)).reshape(x.shape).numpy()
        np.testing.assert_allclose(F.compute_deltas(_e(x), win).numpy(), ref, atol=1e-5)
    with pytest.raises(ValueError, match="greater than or equal to 3"):
        F.compute_deltas(_e(x), 2)


def _torch_phase_vocoder(spec, rate, phase_advance):
    steps = torch.arange(0, spec.size(-1), rate, dtype=torch.float32)
    alphas = steps % 1.0
    phase_0 = spec[..., :1].angle()
    spec = torch.nn.functional.pad(spec, [0, 2])
    s0 = spec.index_select(-1, steps.long())
    s1 = spec.index_select(-1, (steps + 1).long())
    phase = s1.angle() - s0.angle() - phase_advance
    phase = phase - 2 * math.pi * torch.round(phase / (2 * math.pi))
    phase = torch.cat([phase_0, (phase + phase_advance)[..., :-1]], dim=-1)
    return torch.polar(alphas * s1.abs() + (1 - alphas) * s0.abs(), torch.cumsum(phase, -1))


@pytest.mark.parametrize("rate", [1.3, 0.8])
def test_phase_vocoder_and_time_stretch(rate):
    x = _x(2, 4000)
    spec = torch.stft(torch.from_numpy(x), 512, 128, window=torch.hann_window(512),
                      return_complex=True)
    adv = torch.linspace(0, math.pi * 128, 257)[..., None]
    ref = _torch_phase_vocoder(spec, rate, adv).numpy()
    got = T.TimeStretch(128, 257, fixed_rate=rate)(_e(spec.numpy())).numpy()
    assert got.shape == ref.shape == (2, 257, math.ceil(spec.shape[-1] / rate))
    np.testing.assert_allclose(np.abs(got), np.abs(ref), rtol=1e-4, atol=1e-5)
    # accumulated phases reach 1e4 rad: float32 rounding moves them by ~1e-3 rad
    np.testing.assert_allclose(got, ref, atol=1e-2 * np.abs(ref).max())
    with pytest.raises(ValueError, match="fixed_rate"):
        T.TimeStretch(128, 257)(_e(spec.numpy()))


def test_griffinlim_converges():
    x = _tone(0.5)
    spec_t = T.Spectrogram(512, hop_length=128)
    S = spec_t(_e(x))
    ember.manual_seed(0)
    y2 = T.GriffinLim(512, n_iter=2, hop_length=128, length=len(x))(S)
    ember.manual_seed(0)
    y32 = T.GriffinLim(512, n_iter=32, hop_length=128, length=len(x))(S)
    assert tuple(y32.shape) == x.shape

    def err(y):
        s = spec_t(y).numpy() ** 0.5
        r = S.numpy() ** 0.5
        return np.linalg.norm(s - r) / np.linalg.norm(r)
    assert err(y32) < err(y2) and err(y32) < 0.1
    ember.manual_seed(3)
    a = F.griffinlim(S, ember.hann_window(512), 512, 128, 512, 2.0, 4, 0.99, None, True)
    ember.manual_seed(3)
    b = F.griffinlim(S, ember.hann_window(512), 512, 128, 512, 2.0, 4, 0.99, None, True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="momentum"):
        T.GriffinLim(momentum=1.0)


def test_masks():
    spec = np.abs(_x(3, 2, 40, 60)) + 1.0
    ember.manual_seed(0)
    out = T.TimeMasking(20, iid_masks=True)(_e(spec)).numpy()
    masked = (out == 0)
    for i in range(3):
        for c in range(2):
            cols = np.where(masked[i, c].all(0))[0]
            assert len(cols) < 20 and np.all(masked[i, c][:, cols])
            if len(cols):
                assert cols.max() - cols.min() + 1 == len(cols)   # one contiguous band
    ember.manual_seed(1)
    out = T.FrequencyMasking(15)(_e(spec), mask_value=-1.0).numpy()
    rows = np.where((out == -1.0).all(-1))
    # a shared mask: the same rows for every example
    assert all(set(rows[2][(rows[0] == i) & (rows[1] == c)]) ==
               set(rows[2][(rows[0] == 0) & (rows[1] == 0)]) for i in range(3) for c in range(2))
    ember.manual_seed(2)
    aug = T.SpecAugment(2, 10, 2, 8, zero_masking=True)(_e(spec)).numpy()
    assert (aug == 0).any() and (aug[aug != 0] == spec[aug != 0]).all()
    with pytest.raises(ValueError, match="axis"):
        F.mask_along_axis(_e(spec), 5, 0.0, 1)
    with pytest.raises(ValueError, match="p must be"):
        T.TimeMasking(5, p=1.5)
    assert F.mask_along_axis(_e(spec), 0, 0.0, 3) is not None


def test_mu_law_matches_the_formula():
    x = np.linspace(-1, 1, 1001).astype(np.float32)
    tx = torch.from_numpy(x)
    mu = torch.tensor(255.0)
    ref = ((torch.sign(tx) * torch.log1p(mu * tx.abs()) / torch.log1p(mu) + 1) / 2 * mu
           + 0.5).to(torch.int64)
    q = T.MuLawEncoding()(_e(x))
    assert q.dtype == np.int64
    np.testing.assert_array_equal(q.numpy(), ref.numpy())
    dec = T.MuLawDecoding()(q).numpy()
    r = ref.float() / mu * 2 - 1.0
    r = (torch.sign(r) * (torch.exp(r.abs() * torch.log1p(mu)) - 1.0) / mu).numpy()
    np.testing.assert_allclose(dec, r, atol=1e-6)
    assert np.abs(dec - x).max() < 0.03                 # the coarsest step, near +-1


def test_pitch_shift_moves_the_tone():
    x = _tone(1.0, SR, (440.0,))
    y = T.PitchShift(SR, 12)(_e(x[None])).numpy()[0]        # an octave up
    assert y.shape == x.shape
    spec = np.abs(np.fft.rfft(y[2000:-2000] * np.hanning(len(y) - 4000)))
    peak = np.fft.rfftfreq(len(y) - 4000, 1 / SR)[np.argmax(spec)]
    assert abs(peak - 880) < 10
    for steps, hz in ((-12, 220.0), (3, 440.0 * 2 ** 0.25)):
        y = F.pitch_shift(_e(x), SR, steps).numpy()
        spec = np.abs(np.fft.rfft(y[2000:-2000] * np.hanning(len(y) - 4000)))
        assert abs(np.fft.rfftfreq(len(y) - 4000, 1 / SR)[np.argmax(spec)] - hz) < 10


def test_vad_trims_leading_silence():
    rng = np.random.default_rng(0)
    silence = 0.001 * rng.standard_normal(SR)                 # 1 s of faint noise
    t = np.arange(SR) / SR
    voice = 0.5 * np.sin(2 * np.pi * 300 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t)) \
        + 0.3 * np.sin(2 * np.pi * 900 * t)
    x = np.concatenate([silence, voice, silence]).astype(np.float32)
    out = T.Vad(SR)(_e(x[None])).numpy()
    cut = x.shape[0] - out.shape[-1]
    assert 0.5 * SR < cut <= 1.05 * SR                        # starts shortly before voice
    np.testing.assert_array_equal(out[0], x[cut:])
    assert F.vad(_e(silence.astype(np.float32)), SR).shape[-1] == 0


def test_fade_vol_gain():
    x = np.ones((1, 1000), np.float32) * 0.5
    y = T.Fade(100, 200, "linear")(_e(x)).numpy()[0]
    np.testing.assert_allclose(y[:100], 0.5 * np.linspace(0, 1, 100), atol=1e-6)
    np.testing.assert_allclose(y[-200:], 0.5 * np.linspace(1, 0, 200), atol=1e-6)
    np.testing.assert_allclose(y[100:800], 0.5)
    for shape in ("exponential", "logarithmic", "quarter_sine", "half_sine"):
        z = T.Fade(100, 100, shape)(_e(x)).numpy()[0]
        assert z[0] < 0.5 * 0.2 and z[500] == 0.5 and z[-1] < 0.5 * 0.2
    np.testing.assert_allclose(T.Vol(3.0)(_e(x)).numpy(), 1.0)          # clipped
    np.testing.assert_allclose(T.Vol(-6.0, "db")(_e(x)).numpy(), 0.5 * 10 ** (-6 / 20),
                               rtol=1e-6)
    np.testing.assert_allclose(T.Vol(0.25, "power")(_e(x)).numpy(), 0.25, rtol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        T.Vol(-1.0)


def test_numpy_inputs_and_module_defaults():
    x = _x(2, 3000)
    np.testing.assert_allclose(F.preemphasis(x).numpy(), F.preemphasis(_e(x)).numpy())
    s = T.Spectrogram()
    assert (s.n_fft, s.win_length, s.hop_length, s.power) == (400, 400, 200, 2.0)
    m = T.MelSpectrogram()
    assert (m.n_mels, m.mel_scale.fb.shape) == (128, (201, 128))
    assert sorted(m.state_dict()) == ["mel_scale.fb", "spectrogram.window"]
    r = T.Resample(16000, 8000)
    assert (r.lowpass_filter_width, r.rolloff, r.resampling_method) == \
        (6, 0.99, "sinc_interp_hann")
