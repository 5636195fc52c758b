"""vision.ops against reference implementations written here with plain loops (numpy), and the
focal loss against the same formula in torch."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.vision import ops


def _rand_boxes(n, seed, size=20.0):
    r = np.random.default_rng(seed)
    xy = r.uniform(0, size, (n, 2))
    wh = r.uniform(1, size / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1)


def _iou_ref(a, b):
    out = np.zeros((len(a), len(b)))
    g = np.zeros_like(out)
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            iw = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            ih = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = iw * ih
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
            out[i, j] = inter / union
            hull = (max(p[2], q[2]) - min(p[0], q[0])) * (max(p[3], q[3]) - min(p[1], q[1]))
            g[i, j] = inter / union - (hull - union) / hull
    return out, g


def test_box_iou_giou_area_convert():
    a, b = _rand_boxes(5, 0), _rand_boxes(4, 1)
    iou, giou = _iou_ref(a, b)
    ta, tb = ember.tensor(a.astype(np.float32)), ember.tensor(b.astype(np.float32))
    np.testing.assert_allclose(ops.box_iou(ta, tb).numpy(), iou, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.generalized_box_iou(ta, tb).numpy(), giou, rtol=1e-5, atol=1e-6)
    assert ops.box_iou(ta, tb).dtype == ember.float32
    np.testing.assert_allclose(ops.box_area(ta).numpy(), (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]),
                               rtol=1e-5)
    for f in ("xywh", "cxcywh"):
        c = ops.box_convert(ta, "xyxy", f)
        np.testing.assert_allclose(ops.box_convert(c, f, "xyxy").numpy(), a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ops.box_convert(ta, "xyxy", "cxcywh").numpy()[:, :2],
                               (a[:, :2] + a[:, 2:]) / 2, rtol=1e-5)
    with pytest.raises(ValueError, match="in_fmt"):
        ops.box_convert(ta, "xyz", "xyxy")
    # differentiable: d IoU / d boxes matches finite differences
    x = ember.tensor(a[:2], requires_grad=True)
    ember.autograd.gradcheck(lambda t: ops.generalized_box_iou(t, ember.tensor(b)), (x,))


def _nms_ref(b, s, thr):
    order = sorted(range(len(s)), key=lambda i: -s[i])
    keep = []
    for i in order:
        if all(_iou_ref(b[i:i + 1], b[k:k + 1])[0][0, 0] <= thr for k in keep):
            keep.append(i)
    return keep


@pytest.mark.parametrize("thr", [0.1, 0.3, 0.7])
def test_nms_and_batched_nms(thr):
    b = _rand_boxes(40, 2)
    s = np.random.default_rng(3).random(40).astype(np.float32)
    keep = ops.nms(ember.tensor(b.astype(np.float32)), ember.tensor(s), thr)
    assert keep.dtype == ember.int64
    assert keep.tolist() == _nms_ref(b, s, thr)
    cats = np.random.default_rng(4).integers(0, 3, 40)
    got = ops.batched_nms(ember.tensor(b.astype(np.float32)), ember.tensor(s), ember.tensor(cats),
                          thr).tolist()
    want = []
    for c in range(3):
        idx = np.nonzero(cats == c)[0]
        want += [int(idx[k]) for k in _nms_ref(b[idx], s[idx], thr)]
    assert got == sorted(want, key=lambda i: -s[i])


def test_clip_and_remove_small():
    b = ember.tensor([[-2.0, 1.0, 30.0, 8.0], [1.0, 1.0, 1.5, 9.0], [0.0, 0.0, 4.0, 4.0]])
    np.testing.assert_allclose(ops.clip_boxes_to_image(b, (6, 20)).numpy(),
                               [[0, 1, 20, 6], [1, 1, 1.5, 6], [0, 0, 4, 4]])
    assert ops.remove_small_boxes(b, 1.0).tolist() == [0, 2]


def _bilinear(f, y, x):
    H, W = f.shape
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0 = y1 = H - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= W - 1:
        x0 = x1 = W - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * f[y0, x0] + (1 - ly) * lx * f[y0, x1] +
            ly * (1 - lx) * f[y1, x0] + ly * lx * f[y1, x1])


def _roi_align_ref(x, rois, ph, pw, scale, sr, aligned):
    K, C = len(rois), x.shape[1]
    out = np.zeros((K, C, ph, pw))
    off = 0.5 if aligned else 0.0
    for k, (n, x1, y1, x2, y2) in enumerate(rois):
        sx, sy = x1 * scale - off, y1 * scale - off
        rw, rh = x2 * scale - off - sx, y2 * scale - off - sy
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sr if sr > 0 else math.ceil(rh / ph)
        gw = sr if sr > 0 else math.ceil(rw / pw)
        cnt = max(gh * gw, 1)
        for c in range(C):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for a in range(gh):
                        yy = sy + i * bh + (a + 0.5) * bh / gh
                        for b_ in range(gw):
                            xx = sx + j * bw + (b_ + 0.5) * bw / gw
                            acc += _bilinear(x[int(n), c], yy, xx)
                    out[k, c, i, j] = acc / cnt
    return out


ROIS = np.array([[0, 1.0, 1.0, 6.0, 7.0], [1, 0.0, 2.5, 11.0, 9.0], [0, 3.3, 0.2, 3.9, 0.8],
                 [1, -3.0, -2.0, 5.0, 14.0]])


@pytest.mark.parametrize("sr,aligned,scale", [(-1, False, 1.0), (2, True, 1.0), (-1, True, 0.5),
                                              (3, False, 0.5)])
def test_roi_align_reference_and_grad(sr, aligned, scale):
    x = np.random.default_rng(0).random((2, 3, 10, 12))
    want = _roi_align_ref(x, ROIS, 3, 2, scale, sr, aligned)
    t = ember.tensor(x.astype(np.float32))
    got = ops.roi_align(t, ember.tensor(ROIS.astype(np.float32)), (3, 2), scale, sr, aligned)
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    boxes_list = [ember.tensor(ROIS[ROIS[:, 0] == i, 1:]) for i in range(2)]
    order = np.argsort(ROIS[:, 0], kind="stable")
    np.testing.assert_allclose(ops.roi_align(t, boxes_list, (3, 2), scale, sr, aligned).numpy(),
                               want[order], rtol=1e-4, atol=1e-5)
    x64 = ember.tensor(x[:, :1, :6, :7], requires_grad=True)
    ember.autograd.gradcheck(lambda v: ops.roi_align(v, ember.tensor(ROIS[:2]), 2, scale, sr,
                                                     aligned), (x64,))


def _roi_pool_ref(x, rois, ph, pw, scale):
    K, C, H, W = len(rois), x.shape[1], x.shape[2], x.shape[3]
    out = np.zeros((K, C, ph, pw))
    rnd = lambda v: math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)  # noqa: E731
    for k, (n, x1, y1, x2, y2) in enumerate(rois):
        xs, ys, xe, ye = rnd(x1 * scale), rnd(y1 * scale), rnd(x2 * scale), rnd(y2 * scale)
        rw, rh = max(xe - xs + 1, 1), max(ye - ys + 1, 1)
        for i in range(ph):
            h0 = min(max(math.floor(i * rh / ph) + ys, 0), H)
            h1 = min(max(math.ceil((i + 1) * rh / ph) + ys, 0), H)
            for j in range(pw):
                w0 = min(max(math.floor(j * rw / pw) + xs, 0), W)
                w1 = min(max(math.ceil((j + 1) * rw / pw) + xs, 0), W)
                if h1 > h0 and w1 > w0:
                    out[k, :, i, j] = x[int(n), :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_roi_pool_reference_and_grad(scale):
    x = np.random.default_rng(1).random((2, 3, 10, 12))
    rois = np.concatenate([ROIS, [[0, 20.0, 20.0, 30.0, 30.0]]])     # one box off the image
    want = _roi_pool_ref(x, rois, 2, 3, scale)
    t = ember.tensor(x.astype(np.float32), requires_grad=True)
    got = ops.roi_pool(t, ember.tensor(rois), (2, 3), scale)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-6)
    got.sum().backward()
    # each bin passes its gradient to its argmax; a pixel that is the max of n bins gets n
    assert float(t.grad.sum()) == pytest.approx(float((want != 0).sum()))


def _focal_torch(x, t, alpha, gamma, reduction):
    p = torch.sigmoid(x)
    ce = torch.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * t + (1 - alpha) * (1 - t)) * loss
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


@pytest.mark.parametrize("alpha,gamma,reduction", [(0.25, 2.0, "none"), (-1, 1.5, "mean"),
                                                   (0.5, 0.0, "sum")])
def test_sigmoid_focal_loss_vs_torch(alpha, gamma, reduction):
    r = np.random.default_rng(5)
    x = r.normal(size=(4, 6)).astype(np.float32)
    t = (r.random((4, 6)) > 0.7).astype(np.float32)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    e = ops.sigmoid_focal_loss(ex, ember.tensor(t), alpha, gamma, reduction)
    w = _focal_torch(tx, torch.tensor(t), alpha, gamma, reduction)
    np.testing.assert_allclose(e.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-7)
    e.sum().backward()
    w.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-7)
    assert e.dtype == ember.float32


def test_blocks():
    m = ops.Conv2dNormActivation(3, 8, kernel_size=3, stride=2)
    assert list(m.state_dict())[:3] == ["0.weight", "1.weight", "1.bias"]
    assert m(ember.rand(2, 3, 9, 9)).shape == (2, 8, 5, 5)
    se = ops.SqueezeExcitation(8, 2)
    assert sorted(se.state_dict()) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    x = ember.rand(1, 8, 4, 4)
    with ember.no_grad():
        s = torch.sigmoid(torch.tensor(se.fc2(se.fc1(x.mean((2, 3), keepdim=True)).relu()).numpy()))
        np.testing.assert_allclose(se(x).numpy(), x.numpy() * s.numpy(), rtol=1e-5)
    mlp = ops.MLP(4, [8, 3], norm_layer=ember.nn.LayerNorm, dropout=0.1)
    assert sorted(mlp.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.weight", "4.bias",
                                        "4.weight"]
    sd = ops.StochasticDepth(0.5, "row")
    y = sd(ember.ones(64, 3))
    rows = y.numpy()[:, 0]
    assert set(np.unique(rows)) <= {0.0, 2.0} and 0 < (rows == 0).sum() < 64
    assert (y.numpy() == rows[:, None]).all()
    sd.eval()
    assert (sd(ember.ones(4, 3)).numpy() == 1).all()
