"""deform_conv2d / DeformConv2d against torchvision 0.29 (fixtures/ops_ref.npz, written by
fixtures/make_ops.py): outputs and gradients w.r.t. input, offset, mask, weight and bias, with
groups, offset groups, stride, padding, dilation, non-square kernels and offsets that leave
the image."""
import os

import numpy as np
import pytest

import ember
from ember.nn import functional as F
from ember.vision import ops

REF = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ops_ref.npz"))
DTYPES = {"float32": (ember.float32, 2e-5), "float64": (ember.float64, 1e-12)}
# (stride, padding, dilation) of the cases make_ops.py recorded, in its order
CASES = [(1, 1, 1), (2, (0, 1), (2, 1)), ((1, 2), 2, 1), (1, 0, 1)]
NAMES = ("x", "offset", "weight", "bias", "mask")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_deform_conv2d_vs_torchvision(case, dtype):
    dt, tol = DTYPES[dtype]
    s, p, d = CASES[case]
    t = {k: ember.tensor(REF[f"deform/{case}/{k}"], dtype=dt, requires_grad=True)
         for k in NAMES if f"deform/{case}/{k}" in REF}
    out = ops.deform_conv2d(t["x"], t["offset"], t["weight"], t.get("bias"), stride=s,
                            padding=p, dilation=d, mask=t.get("mask"))
    assert out.dtype == dt
    (out * ember.tensor(REF[f"deform/{case}/up"], dtype=dt)).sum().backward()
    key = f"deform/{case}/{dtype}"
    np.testing.assert_allclose(out.detach().numpy(), REF[key + "/out"], rtol=tol, atol=tol)
    for k, v in t.items():
        np.testing.assert_allclose(v.grad.numpy(), REF[f"{key}/g_{k}"], rtol=tol, atol=tol,
                                   err_msg=f"gradient w.r.t. {k}")


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2),
                                                            ((1, 2), (2, 1), (2, 1), 4)])
def test_zero_offset_is_a_plain_convolution(stride, padding, dilation, groups):
    r = np.random.default_rng(0)
    x = ember.tensor(r.normal(size=(2, 4, 7, 6)).astype(np.float32))
    w = ember.tensor(r.normal(size=(8, 4 // groups, 3, 2)).astype(np.float32))
    b = ember.tensor(r.normal(size=8).astype(np.float32))
    want = F.conv2d(x, w, b, stride, padding, dilation, groups)
    off = ember.zeros(2, 2 * 3 * 2, *want.shape[2:])
    got = ops.deform_conv2d(x, off, w, b, stride, padding, dilation)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    # a mask of ones changes nothing; a mask of 0.5 halves the response (bias aside)
    ones = ember.ones(2, 3 * 2, *want.shape[2:])
    np.testing.assert_allclose(ops.deform_conv2d(x, off, w, b, stride, padding, dilation,
                                                 mask=ones).numpy(), want.numpy(), rtol=1e-5,
                               atol=1e-5)
    half = ops.deform_conv2d(x, off, w, None, stride, padding, dilation, mask=ones * 0.5)
    np.testing.assert_allclose(half.numpy() * 2, (want - b.reshape(1, -1, 1, 1)).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_integer_offset_shifts_the_input():
    x = ember.arange(30.0).reshape(1, 1, 5, 6)
    off = ember.zeros(1, 2, 5, 6)
    off[:, 0] = 1.0                                   # every tap reads one row lower
    got = ops.deform_conv2d(x, off, ember.ones(1, 1, 1, 1))[0, 0].numpy()
    want = np.zeros((5, 6))
    want[:4] = x.numpy()[0, 0, 1:]                    # the last row reads outside: 0
    np.testing.assert_array_equal(got, want)


def test_gradcheck_all_inputs():
    r = np.random.default_rng(1)
    x = ember.tensor(r.normal(size=(1, 2, 4, 5)), requires_grad=True)
    off = ember.tensor(r.normal(size=(1, 2 * 2 * 4, 3, 4)) * 1.3, requires_grad=True)
    w = ember.tensor(r.normal(size=(3, 2, 2, 2)), requires_grad=True)
    b = ember.tensor(r.normal(size=3), requires_grad=True)
    m = ember.tensor(r.random((1, 2 * 4, 3, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda *a: ops.deform_conv2d(a[0], a[1], a[2], a[3], padding=(0, 0), mask=a[4]),
        (x, off, w, b, m))


def test_double_backward():
    r = np.random.default_rng(2)
    x = ember.tensor(r.normal(size=(1, 1, 4, 4)), requires_grad=True)
    off = ember.tensor(r.normal(size=(1, 2, 4, 4)) * 0.8, requires_grad=True)
    w = ember.tensor(r.normal(size=(1, 1, 1, 1)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, o, k: ops.deform_conv2d(a, o, k), (x, off, w))


def test_empty_batch_and_errors():
    w = ember.rand(4, 2, 3, 3)
    out = ops.deform_conv2d(ember.rand(0, 2, 5, 5), ember.zeros(0, 18, 3, 3), w)
    assert out.shape == (0, 4, 3, 3)
    x = ember.rand(1, 2, 5, 5)
    with pytest.raises(ValueError, match="offset.shape"):
        ops.deform_conv2d(x, ember.zeros(1, 17, 3, 3), w)
    with pytest.raises(ValueError, match="offset should have shape"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 4, 4), w)
    with pytest.raises(ValueError, match="mask should have shape"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), w, mask=ember.ones(1, 18, 3, 3))
    with pytest.raises(ValueError, match="multiple of weight"):
        ops.deform_conv2d(ember.rand(1, 3, 5, 5), ember.zeros(1, 18, 3, 3), w)


def test_module_state_dict_repr_and_forward():
    d = ops.DeformConv2d(4, 6, (3, 2), groups=2)
    sd = d.state_dict()
    assert list(sd) == REF["deform/module/keys"].tolist()
    assert [list(v.shape) + [0] * (4 - v.ndim) for v in sd.values()] == \
        REF["deform/module/shapes"].tolist()
    assert repr(ops.DeformConv2d(4, 6, 3)) == str(REF["repr/DeformConv2d"])
    full = ops.DeformConv2d(4, 6, (3, 2), stride=2, padding=1, dilation=2, groups=2, bias=False)
    assert repr(full) == str(REF["repr/DeformConv2d_full"]) and full.bias is None
    x = ember.rand(2, 4, 8, 7)
    off = ember.randn(2, 2 * 6, 8 - 2, 7 - 1)
    np.testing.assert_array_equal(d(x, off).detach().numpy(),
                                  ops.deform_conv2d(x, off, d.weight, d.bias).detach().numpy())
    with pytest.raises(ValueError, match="divisible by groups"):
        ops.DeformConv2d(4, 6, 3, groups=4)


def test_deform_conv2d_on_device(device):
    key = "deform/0"
    args = {k: REF[f"{key}/{k}"] for k in NAMES if f"{key}/{k}" in REF}
    on = {k: ember.tensor(v, device=device, requires_grad=True) for k, v in args.items()}
    out = ops.deform_conv2d(on["x"], on["offset"], on["weight"], on["bias"], padding=1,
                            mask=on["mask"])
    assert out.device == on["x"].device
    (out * ember.tensor(REF[f"{key}/up"], device=device)).sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), REF[f"{key}/float32/out"],
                               rtol=2e-5, atol=2e-5)
    for k, v in on.items():
        np.testing.assert_allclose(v.grad.cpu().numpy(), REF[f"{key}/float32/g_{k}"],
                                   rtol=2e-5, atol=2e-5)
