"""Box ops and box losses of ember.vision.ops against torchvision 0.29 (outputs and gradients
recorded in fixtures/ops_ref.npz by fixtures/make_ops.py)."""
import os

import numpy as np
import pytest

import ember
from ember.vision import ops

REF = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ops_ref.npz"))
DTYPES = {"float32": (ember.float32, 2e-6), "float64": (ember.float64, 1e-12)}


def close(got, want, tol):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_fixture_records_its_versions():
    assert str(REF["meta/torchvision"]).startswith("0.29")
    assert str(REF["meta/torch"]).startswith("2.")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["distance_box_iou", "complete_box_iou", "generalized_box_iou",
                                "box_iou"])
def test_pairwise_iou_family_vs_torchvision(fn, dtype):
    dt, tol = DTYPES[dtype]
    a = ember.tensor(REF[f"{fn}/a"], dtype=dt, requires_grad=True)
    b = ember.tensor(REF[f"{fn}/b"], dtype=dt, requires_grad=True)
    out = getattr(ops, fn)(a, b)
    assert out.dtype == dt and out.shape == (5, 4)
    (out * ember.tensor(REF[f"{fn}/up"], dtype=dt)).sum().backward()
    close(out.detach().numpy(), REF[f"{fn}/{dtype}/out"], tol)
    close(a.grad.numpy(), REF[f"{fn}/{dtype}/ga"], tol)
    close(b.grad.numpy(), REF[f"{fn}/{dtype}/gb"], tol)


def test_pairwise_leading_batch_dims_and_eps():
    a = ember.tensor(REF["batched/a"], dtype=ember.float64)
    b = ember.tensor(REF["batched/b"], dtype=ember.float64)
    d = ops.distance_box_iou(a, b, eps=1e-3)
    c = ops.complete_box_iou(a, b, eps=1e-3)
    assert d.shape == c.shape == (2, 3, 5)
    close(d.numpy(), REF["batched/diou"], 1e-12)
    close(c.numpy(), REF["batched/ciou"], 1e-12)
    # each batch entry is the unbatched result
    close(ops.distance_box_iou(a[1], b[1], eps=1e-3).numpy(), REF["batched/diou"][1], 1e-12)


def test_pairwise_empty_and_identity():
    e = ember.zeros(0, 4)
    b = ember.tensor([[0.0, 0.0, 2.0, 3.0], [1.0, 1.0, 4.0, 2.0]])
    for fn in (ops.distance_box_iou, ops.complete_box_iou):
        assert fn(e, b).shape == (0, 2) and fn(b, e).shape == (2, 0)
        # a box against itself: IoU 1, centres equal, same aspect -> exactly 1 (up to eps)
        np.testing.assert_allclose(np.diag(fn(b, b).numpy()), [1.0, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"\(\.\.\., N, 4\)"):
        ops.distance_box_iou(ember.zeros(3, 5), b)


@pytest.mark.parametrize("eps", [1e-7, 0.5])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["generalized_box_iou_loss", "distance_box_iou_loss",
                                "complete_box_iou_loss"])
def test_box_losses_vs_torchvision(fn, dtype, reduction, eps):
    dt, tol = DTYPES[dtype]
    a = ember.tensor(REF["losses/a"], dtype=dt, requires_grad=True)
    b = ember.tensor(REF["losses/b"], dtype=dt, requires_grad=True)
    out = getattr(ops, fn)(a, b, reduction=reduction, eps=eps)
    assert out.dtype == dt and out.shape == ((6,) if reduction == "none" else ())
    up = REF["losses/up"] if reduction == "none" else REF["losses/up"][0]
    (out * ember.tensor(up, dtype=dt)).sum().backward()
    key = f"{fn}/{dtype}/{reduction}/{eps}"
    close(out.detach().numpy(), REF[key + "/out"], tol)
    close(a.grad.numpy(), REF[key + "/ga"], tol)
    close(b.grad.numpy(), REF[key + "/gb"], tol)


@pytest.mark.parametrize("fn", [ops.generalized_box_iou_loss, ops.distance_box_iou_loss,
                                ops.complete_box_iou_loss])
def test_box_losses_empty_ints_and_errors(fn):
    e = ember.zeros(0, 4, requires_grad=True)
    assert fn(e, e).shape == (0,)
    m = fn(e, e, reduction="mean")          # mean of nothing: 0 with a graph, not NaN
    assert m.item() == 0.0
    m.backward()
    assert e.grad.shape == (0, 4)
    assert fn(e, e, reduction="sum").item() == 0.0
    ints = ember.tensor([[0, 0, 4, 4], [1, 2, 5, 9]])
    got = fn(ints, ints + 1)
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.numpy(), fn(ints.float(), ints.float() + 1).numpy())
    with pytest.raises(ValueError, match="reduction"):
        fn(ints, ints, reduction="max")


@pytest.mark.parametrize("fn", [ops.generalized_box_iou_loss, ops.distance_box_iou_loss])
def test_box_losses_gradcheck(fn):
    # (CIoU holds alpha constant on purpose, so finite differences would not match it)
    a = ember.tensor(REF["losses/a"][2:5], dtype=ember.float64, requires_grad=True)
    b = ember.tensor(REF["losses/b"][2:5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, y: fn(x, y, reduction="sum"), (a, b))


def test_masks_to_boxes_vs_torchvision():
    m = REF["masks_to_boxes/masks"]
    for arr, key in ((m, "out"), (m.astype(np.uint8), "out_u8"), (m.astype(np.float32), "out")):
        got = ops.masks_to_boxes(ember.tensor(arr))
        assert got.dtype == ember.float32
        np.testing.assert_array_equal(got.numpy(), REF["masks_to_boxes/" + key])
    assert ops.masks_to_boxes(ember.zeros(0, 5, 6)).shape == (0, 4)
    with pytest.raises(ValueError, match="N, H, W"):
        ops.masks_to_boxes(ember.ones(5, 6))
