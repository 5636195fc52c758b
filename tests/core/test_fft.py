"""ember.fft against torch.fft: values and dtypes for every transform, n/s/dim/norm; and
gradients, double gradients and a float64 gradcheck through the adjoints (complex inputs and
outputs pass through view_as_real/view_as_complex so the harness sees real tensors)."""
import numpy as np
import pytest
import torch

import ember
from ember import fft as F
from ember.ops.complex import view_as_complex, view_as_real
from optest import assert_close, check_op

NORMS = [None, "ortho", "forward"]
REAL_IN = {"fft", "ifft", "rfft", "ihfft", "fftn", "ifftn", "rfftn", "ihfftn", "fft2", "ifft2",
           "rfft2", "ihfft2"}
COMPLEX_IN = {"fft", "ifft", "irfft", "hfft", "fftn", "ifftn", "irfftn", "hfftn", "fft2",
              "ifft2", "irfft2", "hfft2"}


def _lib(x):
    return (ember, F, view_as_real, view_as_complex) if isinstance(x, ember.Tensor) else \
        (torch, torch.fft, torch.view_as_real, torch.view_as_complex)


def wrapped(name, complex_in, **kw):
    """fn(real tensor) -> real tensor around the transform ``name``."""
    def f(x):
        lib, fft, vr, vc = _lib(x)
        if complex_in:
            x = vc(x)
        y = getattr(fft, name)(x, **kw)
        if y.is_complex():
            y = vr(y.resolve_conj()) if lib is torch else vr(y)
        return y
    f.__name__ = name
    return f


ONE_D = [("fft", {}), ("fft", {"n": 5}), ("fft", {"n": 11, "dim": 0}), ("ifft", {"n": 6}),
         ("rfft", {}), ("rfft", {"n": 7}), ("rfft", {"n": 10, "dim": 0}), ("ihfft", {"n": 9}),
         ("ihfft", {}), ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 4}),
         ("irfft", {"n": 12}), ("hfft", {}), ("hfft", {"n": 9}), ("hfft", {"n": 3})]


def close(e, t, tol=1e-5):
    """Complex-aware comparison (value, shape, dtype) of an ember and a torch result."""
    ta = t.resolve_conj().numpy()
    ea = e.numpy()
    assert ea.dtype == ta.dtype and ea.shape == ta.shape, (ea.dtype, ta.dtype, ea.shape, ta.shape)
    np.testing.assert_allclose(ea, ta, rtol=tol, atol=tol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,kw", [c for c in ONE_D if c[0] in REAL_IN])
def test_1d_real_input(name, kw, norm):
    check_op(wrapped(name, False, norm=norm, **kw), wrapped(name, False, norm=norm, **kw),
             [(4, 8)])


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,kw", [c for c in ONE_D if c[0] in COMPLEX_IN])
def test_1d_complex_input(name, kw, norm):
    check_op(wrapped(name, True, norm=norm, **kw), wrapped(name, True, norm=norm, **kw),
             [(3, 6, 2)], rtol=2e-4)


N_D = [("fftn", {}), ("fftn", {"s": (4, 7)}), ("ifftn", {"dim": (0, 2)}),
       ("rfftn", {}), ("rfftn", {"s": (3, 6), "dim": (2, 0)}), ("ihfftn", {"dim": (1, 2)}),
       ("irfftn", {}), ("irfftn", {"s": (4, 7)}), ("irfftn", {"s": (5, 6), "dim": (0, 1)}),
       ("hfftn", {"dim": (0, 2)}), ("hfftn", {"s": (3, 5)}), ("fft2", {}), ("ifft2", {}),
       ("rfft2", {"s": (4, 4)}), ("irfft2", {}), ("hfft2", {}), ("ihfft2", {}),
       ("irfft2", {"s": (3, 9)})]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,kw", N_D)
def test_nd(name, kw, norm):
    if name in REAL_IN:
        check_op(wrapped(name, False, norm=norm, **kw), wrapped(name, False, norm=norm, **kw),
                 [(3, 4, 5)], dtype=np.float64, rtol=1e-7, atol=1e-8)
    if name in COMPLEX_IN:
        check_op(wrapped(name, True, norm=norm, **kw), wrapped(name, True, norm=norm, **kw),
                 [(3, 4, 5, 2)], dtype=np.float64, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", ["fft", "rfft", "ihfft", "fftn", "rfft2"])
def test_dtypes(name):
    for dt, want in [(np.float32, ember.complex64), (np.float64, ember.complex128),
                     (np.int64, ember.complex64)]:
        x = np.arange(24).reshape(4, 6).astype(dt)
        e = getattr(F, name)(ember.tensor(x))
        t = getattr(torch.fft, name)(torch.from_numpy(x))
        assert e.dtype == want
        close(e, t, 1e-4)
    c = ember.tensor(np.ones((2, 4), np.complex128))
    assert F.irfft(c).dtype == ember.float64 and F.fft(c).dtype == ember.complex128
    assert F.hfft(c.to(ember.complex64)).dtype == ember.float32


def test_errors():
    x = ember.randn(4, 6)
    with pytest.raises(ValueError, match="normalization"):
        F.fft(x, norm="bogus")
    with pytest.raises(RuntimeError, match="real input"):
        F.rfft(F.fft(x))
    with pytest.raises(RuntimeError, match="data points"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match="same length"):
        F.fftn(x, s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="unique"):
        F.fftn(x, dim=(1, 1))
    with pytest.raises(IndexError):
        F.fft(x, dim=2)


def test_complex_values_direct():
    rng = np.random.default_rng(5)
    c = (rng.standard_normal((3, 7)) + 1j * rng.standard_normal((3, 7))).astype(np.complex64)
    for name, kw in ONE_D:
        if name not in COMPLEX_IN:
            with pytest.raises(RuntimeError):
                getattr(F, name)(ember.tensor(c), **kw)
            continue
        e = getattr(F, name)(ember.tensor(c), **kw)
        t = getattr(torch.fft, name)(torch.from_numpy(c), **kw)
        close(e, t, 2e-5)


def test_roundtrips_and_gradient_flow():
    x = ember.randn(2, 16, dtype=ember.float64, requires_grad=True)
    y = F.irfft(F.rfft(x), n=16)
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy(), atol=1e-12)
    (g,) = ember.autograd.grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), np.ones((2, 16)), atol=1e-12)
    z = F.ifft(F.fft(x))  # real in: its gradient is real
    (g,) = ember.autograd.grad(view_as_real(z).sum(), [x])
    assert g.dtype == ember.float64
    np.testing.assert_allclose(g.numpy(), np.ones((2, 16)), atol=1e-12)


def test_freqs_and_shifts():
    for n in [1, 4, 7]:
        for d in [1.0, 0.1]:
            assert_close(F.fftfreq(n, d), torch.fft.fftfreq(n, d), 1e-7, 1e-6, "fftfreq")
            assert_close(F.rfftfreq(n, d), torch.fft.rfftfreq(n, d), 1e-7, 1e-6, "rfftfreq")
    assert F.fftfreq(5, dtype=ember.float64).dtype == ember.float64
    assert F.rfftfreq(4, requires_grad=True).requires_grad
    for dim in [None, 0, (0, 1), -1]:
        check_op(lambda x: F.fftshift(x, dim), lambda x: torch.fft.fftshift(x, dim), [(5, 6)])
        check_op(lambda x: F.ifftshift(x, dim), lambda x: torch.fft.ifftshift(x, dim), [(5, 7)])


def test_noncontiguous_and_batched():
    check_op(wrapped("rfft", False, dim=0), wrapped("rfft", False, dim=0), [(6, 5)],
             noncontig=True)
    check_op(wrapped("fft2", False), wrapped("fft2", False), [(2, 3, 4, 5)], noncontig=True)


def test_window_weighted_spectrum_loss():
    """A typical training use: loss on |rfft(x * w)| with a learnable window."""
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((4, 32)).astype(np.float32)
    wa = rng.uniform(0.5, 1.0, 32).astype(np.float32)

    def f(x, w):
        lib, fft, vr, _ = _lib(x)
        s = fft.rfft(x * w, norm="ortho")
        return (vr(s) ** 2).sum(-1).sqrt().mean()
    check_op(f, f, [xa, wa], rtol=2e-4)
