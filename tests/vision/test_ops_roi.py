"""RoIAlign, PSRoIAlign and PSRoIPool against torchvision 0.29 (fixtures/ops_ref.npz, written
by fixtures/make_ops.py): outputs and input gradients in float32 and float64, odd output
sizes, boxes partly or wholly off the map, degenerate boxes, no boxes at all."""
import os

import numpy as np
import pytest

import ember
from ember.vision import ops
from ember.vision.ops import roi as roi_mod

REF = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ops_ref.npz"))
DTYPES = {"float32": (ember.float32, 2e-5), "float64": (ember.float64, 1e-12)}
# the cases make_ops.py recorded, in its order
ALIGN_CASES = [((3, 2), 1.0, -1), ((2, 2), 0.5, 2), ((1, 3), 1.0, 3), (2, 0.75, -1)]
POOL_CASES = [((3, 2), 1.0, "inner"), ((2, 3), 0.5, "rois"), (2, 1.0, "rois"),
              ((1, 1), 2.0, "inner")]


def close(got, want, tol):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def run(fn, x, boxes, up, *args):
    """Output and input gradient of ``(fn(x, boxes, *args) * up).sum()``."""
    xt = ember.tensor(x, requires_grad=True)
    out = fn(xt, boxes, *args)
    (out * ember.tensor(up, dtype=xt.dtype)).sum().backward()
    return out.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ALIGN_CASES)))
def test_roi_align_vs_torchvision(case, dtype, aligned):
    dt, tol = DTYPES[dtype]
    osz, scale, sr = ALIGN_CASES[case]
    x = REF["roi/x"].astype(dtype)
    rois = ember.tensor(REF["roi/rois"], dtype=dt)
    out, g = run(ops.roi_align, x, rois, REF[f"roi_align/{case}/up"], osz, scale, sr, aligned)
    key = f"roi_align/{case}/{dtype}/{int(aligned)}"
    close(out, REF[key + "/out"], tol)
    close(g, REF[key + "/g"], tol)
    # the same boxes as one list entry per image give the same rows, image by image
    r = REF["roi/rois"]
    per_image = [ember.tensor(r[r[:, 0] == i, 1:], dtype=dt) for i in range(2)]
    order = np.argsort(r[:, 0], kind="stable")
    got = ops.roi_align(ember.tensor(x), per_image, osz, scale, sr, aligned).numpy()
    close(got, REF[key + "/out"][order], tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ALIGN_CASES)))
def test_ps_roi_align_vs_torchvision(case, dtype):
    dt, tol = DTYPES[dtype]
    osz, scale, sr = ALIGN_CASES[case]
    x = REF["roi/x"].astype(dtype)
    out, g = run(ops.ps_roi_align, x, ember.tensor(REF["roi/rois"], dtype=dt),
                 REF[f"ps_roi_align/{case}/up"], osz, scale, sr)
    assert out.dtype == np.dtype(dtype)
    # NaN where torchvision gives NaN (the zero-width box with an adaptive grid), and the
    # NaN carries no gradient
    close(out, REF[f"ps_roi_align/{case}/{dtype}/out"], tol)
    close(g, REF[f"ps_roi_align/{case}/{dtype}/g"], tol)
    assert np.isfinite(g).all()
    assert np.isnan(out).any() == (sr <= 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_ps_roi_pool_vs_torchvision(case, dtype):
    dt, tol = DTYPES[dtype]
    osz, scale, which = POOL_CASES[case]
    x = REF["roi/x"].astype(dtype)
    rois = ember.tensor(REF[f"roi/{which}"], dtype=dt)
    out, g = run(ops.ps_roi_pool, x, rois, REF[f"ps_roi_pool/{case}/up"], osz, scale)
    close(out, REF[f"ps_roi_pool/{case}/{dtype}/out"], tol)
    if REF[f"ps_roi_pool/{case}/same_bins"]:
        close(g, REF[f"ps_roi_pool/{case}/{dtype}/g"], tol)
    else:
        # torchvision's backward pools bins clipped at H/W while its forward clips at
        # H-1/W-1; ours is the gradient of the forward, so it differs here (by design)
        assert not np.allclose(g, REF[f"ps_roi_pool/{case}/{dtype}/g"], atol=1e-3)


def test_ps_roi_pool_gradient_is_its_forwards():
    # boxes that reach the last row and column, where torchvision's backward disagrees
    x = ember.tensor(REF["roi/x"][:, :4, :6, :7].astype(np.float64), requires_grad=True)
    rois = ember.tensor([[0, 0.0, 0.0, 6.6, 5.4], [1, 2.2, 1.0, 9.0, 9.0]], dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda t: ops.ps_roi_pool(t, rois, 2, 1.0), (x,))


@pytest.mark.parametrize("sr", [-1, 2])
def test_ps_roi_align_gradcheck(sr):
    x = ember.tensor(REF["roi/x"][:, :8, :5, :6].astype(np.float64), requires_grad=True)
    rois = ember.tensor([[0, 0.3, 0.6, 4.1, 3.7], [1, -1.2, 1.1, 3.3, 6.9]], dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda t: ops.ps_roi_align(t, rois, (2, 1), 0.8, sr), (x,))


@pytest.mark.parametrize("fn,extra", [(ops.roi_align, (1.0, 2)), (ops.roi_pool, (1.0,)),
                                      (ops.ps_roi_align, (1.0, 2)), (ops.ps_roi_pool, (1.0,))])
def test_no_boxes(fn, extra):
    x = ember.rand(2, 12, 9, 11, requires_grad=True)
    cout = 12 if fn in (ops.roi_align, ops.roi_pool) else 2
    for boxes in (ember.zeros(0, 5), [ember.zeros(0, 4), ember.zeros(0, 4)], []):
        out = fn(x, boxes, (3, 2), *extra)
        assert out.shape == (0, cout, 3, 2) and out.dtype == ember.float32
        out.sum().backward()
        assert x.grad.shape == x.shape and float(x.grad.abs().sum()) == 0.0


def test_argument_errors():
    x = ember.rand(1, 10, 5, 5)
    with pytest.raises(ValueError, match="multiple of output_size"):
        ops.ps_roi_align(x, ember.tensor([[0, 0.0, 0.0, 2.0, 2.0]]), 2)
    with pytest.raises(ValueError, match=r"\(K, 5\)"):
        ops.ps_roi_pool(x, ember.zeros(3, 4), 1)
    with pytest.raises(ValueError, match=r"\(L, 4\)"):
        ops.roi_align(x, [ember.zeros(3, 5)], 1)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        ops.roi_align(x[0], ember.zeros(0, 5), 1)


@pytest.mark.parametrize("fn,extra", [(ops.roi_align, (0.5, -1, True)), (ops.roi_pool, (0.5,)),
                                      (ops.ps_roi_align, (0.5, 2)), (ops.ps_roi_pool, (0.5,))])
def test_chunked_boxes_give_the_same_result(fn, extra, monkeypatch):
    """Boxes are processed in chunks bounded by _CHUNK elements; tiny chunks change nothing."""
    x = ember.tensor(REF["roi/x"])
    rois = ember.tensor(np.concatenate([REF["roi/rois"]] * 3))
    whole = fn(x, rois, (2, 3), *extra).numpy()
    monkeypatch.setattr(roi_mod, "_CHUNK", 50)
    np.testing.assert_array_equal(fn(x, rois, (2, 3), *extra).numpy(), whole)


def test_module_reprs_and_forward():
    want = {k.split("/", 1)[1]: str(REF[k]) for k in REF.files if k.startswith("repr/")}
    mods = {"RoIAlign": ops.RoIAlign((7, 7), 0.25, 2),
            "RoIAlign_int": ops.RoIAlign(5, 1.0, -1, aligned=True),
            "RoIPool": ops.RoIPool((3, 4), 0.5), "PSRoIAlign": ops.PSRoIAlign(7, 0.0625, 2),
            "PSRoIPool": ops.PSRoIPool((2, 3), 1.0)}
    for name, m in mods.items():
        assert repr(m) == want[name]
    assert repr(mods["RoIAlign"]) == \
        "RoIAlign(output_size=(7, 7), spatial_scale=0.25, sampling_ratio=2, aligned=False)"
    x, rois = ember.tensor(REF["roi/x"]), ember.tensor(REF["roi/rois"])
    np.testing.assert_array_equal(ops.PSRoIAlign((2, 3), 0.5, 2)(x, rois).numpy(),
                                  ops.ps_roi_align(x, rois, (2, 3), 0.5, 2).numpy())
    np.testing.assert_array_equal(ops.PSRoIPool(2, 0.5)(x, rois).numpy(),
                                  ops.ps_roi_pool(x, rois, 2, 0.5).numpy())


def test_roi_ops_on_device(device):
    x = ember.tensor(REF["roi/x"], device=device, requires_grad=True)
    rois = ember.tensor(REF["roi/rois"], device=device)
    for fn, args in ((ops.roi_align, ((3, 2), 0.5, -1, True)), (ops.roi_pool, (2, 0.5)),
                     (ops.ps_roi_align, ((3, 2), 0.5, 2)), (ops.ps_roi_pool, (2, 0.5))):
        out = fn(x, rois, *args)
        assert out.device == x.device
        out.sum().backward()
        cpu_x = ember.tensor(REF["roi/x"], requires_grad=True)
        want = fn(cpu_x, ember.tensor(REF["roi/rois"]), *args)
        want.sum().backward()
        np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(x.grad.cpu().numpy(), cpu_x.grad.numpy(), rtol=1e-5,
                                   atol=1e-5)
        x.grad = None
