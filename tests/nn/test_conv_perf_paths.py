"""The convolution GEMM paths that split the images over ember's threads (1x1 convs without
im2col, grouped convs, the accumulated weight gradients): results equal torch's and equal
the single-threaded run of the same code, for float32/float64, odd shapes, strides, padding,
groups, dilation, non-contiguous inputs, and first and second order gradients."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F


@pytest.fixture
def threads2():
    old = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(old)


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if dt == np.float32 else dict(rtol=1e-10, atol=1e-10)


def _pair(x, w, b, kw):
    """ember's and torch's output and gradients (x, w, b) for the same random upstream."""
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    eb = None if b is None else ember.tensor(b, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    eo, to = F.conv2d(ex, ew, eb, **kw), TF.conv2d(tx, tw, tb, **kw)
    g = np.random.default_rng(7).standard_normal(to.shape).astype(x.dtype)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    mine = [eo.detach().numpy(), ex.grad.numpy(), ew.grad.numpy()] + ([] if b is None else [eb.grad.numpy()])
    ref = [to.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()] + (
        [] if b is None else [tb.grad.numpy()])
    return mine, ref


# shapes big enough that the work is split over 2 threads (N > 1, > 256K elements touched)
CASES = [
    # (N, C, H, W, Co, k, kw)
    (5, 24, 37, 41, 40, 1, {}),
    (4, 32, 59, 57, 48, 1, dict(stride=2)),
    (8, 32, 45, 33, 16, 1, dict(stride=(2, 1), padding=1)),
    (4, 32, 30, 29, 64, 1, dict(groups=4)),
    (4, 48, 61, 59, 24, 1, dict(groups=3, stride=2, bias=True)),
    (8, 384, 9, 11, 96, 1, dict(groups=2)),          # 1x1 on a small map: gathered batch
    (8, 96, 13, 13, 64, 1, dict(stride=2, bias=True)),
    (4, 24, 33, 31, 36, 3, dict(groups=3, padding=1)),          # grouped, per-image path
    (8, 96, 13, 11, 48, 3, dict(groups=8, stride=2, padding=2, dilation=2)),  # chunked path
    (5, 16, 41, 37, 24, 3, dict(padding=1, bias=True)),
    (4, 12, 45, 43, 20, 5, dict(stride=2, padding=(2, 1))),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[:6]}{c[6]}")
def test_conv_paths_match_torch_and_one_thread(case, dt, threads2):
    N, C, H, W, Co, k, kw = case
    kw = dict(kw)
    G = kw.get("groups", 1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W)).astype(dt)
    w = (rng.standard_normal((Co, C // G, k, k)) * 0.2).astype(dt)
    b = rng.standard_normal(Co).astype(dt) if kw.pop("bias", False) else None
    mine, ref = _pair(x, w, b, kw)
    for m, r in zip(mine, ref):
        np.testing.assert_allclose(m, r, **_tol(dt))
    ember.set_num_threads(1)  # the same code, unsplit: OpenBLAS's own threading
    single, _ = _pair(x, w, b, kw)
    for m, s in zip(mine, single):
        np.testing.assert_allclose(m, s, **_tol(dt))


@pytest.mark.parametrize("stride", [1, 2])
def test_conv1x1_noncontiguous_input_and_grad(stride, threads2):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((29, 36, 6, 40)).astype(np.float32)
    x = base.transpose(2, 1, 3, 0)  # (6, 36, 40, 29), no axis contiguous as NCHW expects
    w = (rng.standard_normal((44, 36, 1, 1)) * 0.2).astype(np.float32)
    ex = ember.from_numpy(base).permute(2, 1, 3, 0).requires_grad_()
    ew = ember.tensor(w, requires_grad=True)
    out = F.conv2d(ex, ew, stride=stride)
    g = rng.standard_normal(out.shape).astype(np.float32)
    gt = g.transpose(3, 1, 0, 2).copy().transpose(2, 1, 3, 0)  # non-contiguous upstream grad
    out.backward(ember.from_numpy(gt))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    to = TF.conv2d(tx, tw, stride=stride)
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), to.detach().numpy(), rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=2e-4, atol=2e-4)


def test_conv1x1_batch_of_one_and_unbatched(threads2):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 64, 45, 47)).astype(np.float32)
    w = (rng.standard_normal((96, 64, 1, 1)) * 0.2).astype(np.float32)
    mine, ref = _pair(x, w, None, dict(stride=2))
    for m, r in zip(mine, ref):
        np.testing.assert_allclose(m, r, rtol=2e-4, atol=2e-4)
    out = F.conv2d(ember.tensor(x[0]), ember.tensor(w))
    np.testing.assert_allclose(out.numpy(), TF.conv2d(torch.tensor(x[0]), torch.tensor(w)).numpy(),
                               rtol=2e-4, atol=2e-4)


def test_conv1x1_double_backward_matches_torch(threads2):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 24, 23, 25))
    w = rng.standard_normal((32, 12, 1, 1)) * 0.2
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ey = F.conv2d(ex, ew, stride=2, groups=2)
    ty = TF.conv2d(tx, tw, stride=2, groups=2)
    egx, egw = ember.autograd.grad((ey * ey).sum(), [ex, ew], create_graph=True)
    tgx, tgw = torch.autograd.grad((ty * ty).sum(), [tx, tw], create_graph=True)
    e2 = ember.autograd.grad((egx * egx).sum() + (egw * egw).sum(), [ex, ew])
    t2 = torch.autograd.grad((tgx * tgx).sum() + (tgw * tgw).sum(), [tx, tw])
    for m, r in zip(e2, t2):
        np.testing.assert_allclose(m.numpy(), r.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("k,kw", [(1, {}), (1, dict(stride=2)), (3, dict(stride=2)),
                                  (3, dict(padding=1, groups=2))])
def test_conv_empty_batch_gives_zero_weight_grad(k, kw, threads2):
    x = np.zeros((0, 8, 10, 10), np.float32)
    w = np.random.default_rng(4).standard_normal((6, 8 // kw.get("groups", 1), k, k)).astype(
        np.float32)
    mine, ref = _pair(x, w, None, kw)
    for m, r in zip(mine, ref):
        assert m.shape == r.shape
        np.testing.assert_array_equal(m, r)
