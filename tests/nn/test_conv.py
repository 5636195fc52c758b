"""conv1d/2d/3d, conv_transpose1d/2d/3d, unfold/fold against PyTorch: forward, input/weight/
bias gradients, double backward and a float64 gradcheck over the option grid."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import check_op

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")

import ember
import ember.nn.functional as F


def _conv(nd, **kw):
    e, t = getattr(F, f"conv{nd}d"), getattr(TF, f"conv{nd}d")
    return (lambda x, w, b=None: e(x, w, b, **kw)), (lambda x, w, b=None: t(x, w, b, **kw))


def _convT(nd, **kw):
    e, t = getattr(F, f"conv_transpose{nd}d"), getattr(TF, f"conv_transpose{nd}d")
    return (lambda x, w, b=None: e(x, w, b, **kw)), (lambda x, w, b=None: t(x, w, b, **kw))


CONV2D = [  # x shape, weight shape, kwargs
    ((2, 4, 6, 6), (3, 4, 3, 3), dict(padding=1)),
    ((2, 3, 7, 6), (4, 3, 2, 2), dict(stride=2)),  # even kernel
    ((1, 2, 7, 8), (3, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ((2, 3, 6, 6), (2, 3, 4, 4), dict(padding="same")),  # even kernel: extra pad bottom/right
    ((2, 3, 7, 7), (2, 3, 3, 2), dict(padding="same", dilation=2)),
    ((2, 3, 6, 5), (2, 3, 3, 3), dict(padding="valid")),
    ((2, 4, 6, 6), (6, 2, 3, 3), dict(groups=2, padding=1)),  # grouped
    ((2, 3, 6, 6), (3, 1, 3, 3), dict(groups=3, padding=1)),  # depthwise
    ((2, 3, 7, 7), (6, 1, 3, 3), dict(groups=3, stride=2, padding=1)),  # depthwise, multiplier 2
    ((1, 2, 9, 8), (4, 1, 2, 3), dict(groups=2, dilation=2, padding=(1, 2))),  # even dw, dilated
    ((2, 4, 5, 5), (3, 4, 1, 1), {}),  # 1x1: a plain GEMM
    ((2, 4, 5, 5), (6, 2, 1, 1), dict(stride=2, groups=2)),
    ((6, 5, 6), (4, 3, 3, 3), dict(padding=1, groups=2)),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", CONV2D)
def test_conv2d_grid(xs, ws, kw):
    e, t = _conv(2, **kw)
    check_op(e, t, [xs, ws, (ws[0],)])


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 9), (4, 3, 3), dict(padding=1)),
    ((2, 4, 10), (4, 2, 4), dict(stride=3, groups=2, padding="valid")),
    ((2, 4, 10), (4, 2, 4), dict(padding="same", groups=2)),
    ((2, 3, 11), (3, 1, 3), dict(groups=3, dilation=3, padding=2)),
    ((3, 8), (2, 3, 3), {}),
])
def test_conv1d_grid(xs, ws, kw):
    e, t = _conv(1, **kw)
    check_op(e, t, [xs, ws, (ws[0],)])


@pytest.mark.parametrize("xs,ws,kw", [
    ((1, 2, 4, 5, 4), (3, 2, 3, 2, 3), dict(padding=1, stride=(1, 2, 1))),
    ((1, 2, 5, 4, 4), (4, 1, 3, 3, 3), dict(groups=2, padding="same")),
])
def test_conv3d_grid(xs, ws, kw):
    e, t = _conv(3, **kw)
    check_op(e, t, [xs, ws, (ws[0],)])


def test_conv_without_bias_and_noncontiguous(device):
    e, t = _conv(2, padding=1, stride=2)
    check_op(e, t, [(2, 3, 6, 7), (4, 3, 3, 3)], noncontig=True, device=device)


def test_conv_large_map_per_image_path():
    # enough output positions for the per-image GEMM path (and the depthwise blocks)
    e, t = _conv(1, padding=2, dilation=2)
    check_op(e, t, [(2, 3, 1500), (4, 3, 3), (4,)], gradcheck=False)
    e, t = _conv(2, padding=1, groups=4)
    check_op(e, t, [(2, 4, 40, 40), (8, 1, 3, 3), (8,)], gradcheck=False)


def test_conv_winograd_path(monkeypatch):
    # 3x3 stride-1 convs with many channels run as Winograd F(2x2, 3x3); force it on small
    # shapes (odd and even maps, asymmetric padding), forward and both gradients
    from ember.nn.functional import conv as C

    calls = []

    def use(x, w, O, s, d, G):
        ok = G == 1 and w.shape[2:] == (3, 3) and s == (1, 1) and d == (1, 1)
        calls.append(ok)
        return ok
    monkeypatch.setattr(C, "_use_winograd", use)
    e, t = _conv(2, padding=1)
    check_op(e, t, [(2, 5, 5, 6), (4, 5, 3, 3), (4,)])
    e, t = _conv(2, padding=(0, 2))
    check_op(e, t, [(1, 3, 6, 5), (2, 3, 3, 3)], gradgrad=False)
    assert any(calls)
    x, w = ember.randn(8, 256, 14, 14), ember.randn(256, 256, 3, 3)
    monkeypatch.undo()
    assert C._use_winograd(x.array, w.array, (14, 14), (1, 1), (1, 1), 1)
    assert not C._use_winograd(x.array, w.array, (7, 7), (1, 1), (1, 1), 1)  # odd small map
    ref = TF.conv2d(torch.from_numpy(x.numpy()), torch.from_numpy(w.numpy()), padding=1)
    np.testing.assert_allclose(F.conv2d(x, w, padding=1).numpy(), ref.numpy(), rtol=1e-4,
                               atol=2e-4)


def test_conv_chunked_batches(monkeypatch):
    # tiny chunks: every batched path (im2col, col2im, weight grad, Winograd) splits the batch
    from ember.nn.functional import conv as C

    monkeypatch.setattr(C, "_CHUNK", 300)
    e, t = _conv(2, padding=1, stride=(1, 2))
    check_op(e, t, [(3, 3, 5, 6), (4, 3, 3, 3), (4,)], gradcheck=False)
    e, t = _convT(2, stride=2)
    check_op(e, t, [(3, 4, 3, 3), (4, 2, 3, 3)], gradcheck=False)
    monkeypatch.setattr(C, "_use_winograd", lambda x, w, O, s, d, G: s == d == (1, 1) and G == 1)
    e, t = _conv(2, padding=1)
    check_op(e, t, [(3, 6, 3, 4), (5, 6, 3, 3)], gradcheck=False)


CONVT2D = [
    ((2, 4, 4, 3), (4, 3, 3, 3), dict(stride=2, output_padding=1)),
    ((2, 4, 3, 4), (4, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                       groups=2)),
    ((1, 3, 4, 4), (3, 2, 3, 3), dict(dilation=2, padding=1, output_padding=1)),
    ((2, 3, 4, 4), (3, 1, 3, 3), dict(groups=3, stride=2, padding=1)),  # depthwise
    ((2, 4, 3, 3), (4, 3, 2, 2), dict(stride=2)),  # no overlap (U-Net style)
    ((2, 4, 3, 3), (4, 5, 1, 1), {}),
    ((4, 3, 3), (4, 2, 3, 3), dict(stride=2)),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", CONVT2D)
def test_conv_transpose2d_grid(xs, ws, kw):
    e, t = _convT(2, **kw)
    out_ch = ws[1] * kw.get("groups", 1)
    check_op(e, t, [xs, ws, (out_ch,)])


@pytest.mark.parametrize("nd,xs,ws,kw", [
    (1, (2, 4, 5), (4, 3, 3), dict(stride=3, output_padding=2, padding=1)),
    (1, (2, 4, 5), (4, 1, 4), dict(groups=2, dilation=2)),
    (3, (1, 2, 3, 2, 3), (2, 2, 2, 3, 2), dict(stride=2, padding=(0, 1, 0), output_padding=1)),
])
def test_conv_transpose_1d_3d(nd, xs, ws, kw):
    e, t = _convT(nd, **kw)
    check_op(e, t, [xs, ws, (ws[1] * kw.get("groups", 1),)])


def test_conv_matches_torch_float64_and_float16():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8))
    w = rng.standard_normal((4, 3, 3, 3))
    ref = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    out = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1)
    assert out.dtype == ember.float64
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    h = F.conv2d(ember.tensor(x.astype(np.float16)), ember.tensor(w.astype(np.float16)), padding=1)
    assert h.dtype == ember.float16
    np.testing.assert_allclose(h.numpy().astype(np.float64), ref, rtol=2e-2, atol=3e-2)
    xi, wi = rng.integers(-3, 4, (1, 2, 5, 5)), rng.integers(-3, 4, (3, 2, 2, 2))
    ref = TF.conv2d(torch.from_numpy(xi), torch.from_numpy(wi)).numpy()
    np.testing.assert_array_equal(F.conv2d(ember.tensor(xi), ember.tensor(wi)).numpy(), ref)


def test_conv_float32_grads_stay_float32():
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    w = ember.randn(6, 1, 3, 3, requires_grad=True)
    b = ember.randn(6, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1, groups=3)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == w.grad.dtype == b.grad.dtype == ember.float32


def test_unfold_fold_against_torch():
    check_op(lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
             lambda x: TF.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
             [(2, 3, 5, 7)])
    check_op(lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=(2, 1)),
             lambda x: TF.fold(x, (5, 6), (2, 3), padding=1, stride=(2, 1)), [(2, 18, 18)])
    check_op(lambda x: F.fold(x, 4, 2), lambda x: TF.fold(x, 4, 2), [(8, 9)])  # unbatched


def test_fold_unfold_round_trip():
    x = ember.randn(2, 3, 7, 6)
    kw = dict(kernel_size=3, padding=1, stride=2)
    cols = F.unfold(x, **kw)
    assert tuple(cols.shape) == (2, 27, 12)
    counts = F.fold(F.unfold(ember.ones(2, 3, 7, 6), **kw), (7, 6), **kw)
    back = F.fold(cols, (7, 6), **kw) / counts
    np.testing.assert_allclose(back.numpy(), x.numpy(), rtol=1e-6, atol=1e-6)


def _raises(match, fn, exc=RuntimeError):
    with pytest.raises(exc, match=match):
        fn()


def test_conv_errors():
    x, w = ember.randn(2, 4, 8, 8), ember.randn(6, 4, 3, 3)
    _raises(r"expected input\[2, 4, 8, 8\] to have 3 channels, but got 4 channels",
            lambda: F.conv2d(x, ember.randn(6, 3, 3, 3)))
    _raises(r"expected input\[1, 4, 8, 8\] to have 3 channels",
            lambda: F.conv2d(ember.randn(4, 8, 8), ember.randn(6, 3, 3, 3)))
    _raises(r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of "
            r"size: \[2, 8\]", lambda: F.conv2d(ember.randn(2, 8), w))
    _raises("4D weight", lambda: F.conv2d(x, ember.randn(6, 4, 3)))
    _raises("expected weight to be divisible by 4 at dimension 0",
            lambda: F.conv2d(x, ember.randn(6, 1, 3, 3), groups=4))
    _raises(r"expected bias to be 1-dimensional with 6 elements, but got bias of size \[6, 1\]",
            lambda: F.conv2d(x, w, ember.randn(6, 1)))
    _raises("padding='same' is not supported for strided convolutions",
            lambda: F.conv2d(x, w, stride=2, padding="same"))
    _raises("Invalid padding string: 'foo'", lambda: F.conv2d(x, w, padding="foo"))
    _raises("negative padding is not supported", lambda: F.conv2d(x, w, padding=-1))
    _raises("non-positive stride is not supported", lambda: F.conv2d(x, w, stride=0))
    _raises("non-positive dilation is not supported", lambda: F.conv2d(x, w, dilation=0))
    _raises("non-positive groups is not supported", lambda: F.conv2d(x, w, groups=0))
    _raises(r"Kernel size: \(9 x 9\). Kernel size can't be greater than actual input size",
            lambda: F.conv2d(x, w, dilation=4))
    _raises("list of 2 values", lambda: F.conv2d(x, w, padding=(1, 1, 1)))
    _raises("stride", lambda: F.conv2d(x, w, stride=2.0), TypeError)
    _raises(r"Input type \(Double\) and weight type \(Float\) should be the same",
            lambda: F.conv2d(x.double(), w))
    _raises(r"Given transposed=1, weight of size \[5, 3, 3, 3\], expected input\[2, 4, 8, 8\] "
            "to have 5 channels", lambda: F.conv_transpose2d(x, ember.randn(5, 3, 3, 3)))
    _raises("output padding must be smaller than either stride or dilation",
            lambda: F.conv_transpose2d(x, ember.randn(4, 3, 3, 3), stride=2, output_padding=2))
    _raises("padding", lambda: F.conv_transpose2d(x, ember.randn(4, 3, 3, 3), padding="same"),
            TypeError)
    _raises(r"divisible by the product of kernel_size, but got input.size\(1\)=10",
            lambda: F.fold(ember.randn(1, 10, 9), (4, 4), 2))
    _raises("calculated number of sliding blocks 3 \\* 3 = 9, but got input.size\\(2\\)=8",
            lambda: F.fold(ember.randn(1, 8, 8), (4, 4), 2))
    _raises("Only 3D or 4D input Tensors are supported", lambda: F.unfold(ember.randn(4, 4), 2))


@pytest.mark.cuda
def test_conv_cuda_paths():
    for e, t, ins in [(*_conv(2, padding=1, groups=3), [(2, 3, 6, 6), (6, 1, 3, 3), (6,)]),
                      (*_convT(2, stride=2, output_padding=1), [(2, 4, 3, 3), (4, 2, 3, 3), (2,)]),
                      (*_conv(1, stride=2), [(2, 3, 1100), (2, 3, 3), (2,)])]:
        check_op(e, t, ins, device="cuda", gradcheck=False)
