"""Normalization functionals against PyTorch: forward, grads of input and parameters,
double backward and a float64 gradcheck (check_op), running-stat updates, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from optest import Const, check_op


def lib_of(x):
    return F if isinstance(x, ember.Tensor) else TF


def _c(shape, lo=0.5, hi=1.5, seed=1):
    """A constant (non-grad) float32 array, e.g. running statistics."""
    return Const(np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32))


# --------------------------------------------------------------------------- batch norm

@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 3, 2), (2, 2, 2, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, affine, training, device):
    c = shape[1]

    def f(x, *p):
        lib = lib_of(x)
        mk = (lambda a: ember.tensor(a, device=x.device)) if lib is F else torch.from_numpy
        rm, rv = mk(RM[:c].copy()), mk(RV[:c].copy())
        w, b = p if p else (None, None)
        return lib.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2, eps=1e-3)

    params = [(c,), (c,)] if affine else []
    check_op(f, f, [shape, *params], device=device, atol=2e-5)


RM = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
RV = np.array([0.9, 1.2, 0.7, 1.5], np.float32)


def test_batch_norm_running_stats_match_torch():
    rng = np.random.default_rng(0)
    erm, erv = ember.zeros(3), ember.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    w = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    for step in range(4):
        x = rng.standard_normal((5, 3, 4, 2)).astype(np.float32) * (step + 1) + step
        eo = F.batch_norm(ember.tensor(x), erm, erv, ember.tensor(w), None, True, 0.3)
        to = TF.batch_norm(torch.from_numpy(x), trm, trv, torch.from_numpy(w), None, True, 0.3)
        np.testing.assert_allclose(eo.numpy(), to.numpy(), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), atol=1e-5, rtol=1e-5)
    assert erm._version_count == 4
    # eval mode uses (and does not change) the running statistics
    x = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    eo = F.batch_norm(ember.tensor(x), erm, erv, training=False)
    to = TF.batch_norm(torch.from_numpy(x), trm, trv, training=False)
    np.testing.assert_allclose(eo.numpy(), to.numpy(), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), atol=1e-5, rtol=1e-5)


def test_batch_norm_training_without_running_stats():
    check_op(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
             lambda x, w, b: TF.batch_norm(x, None, None, w, b, True), [(6, 4), (4,), (4,)])


def test_batch_norm_weight_only_and_bias_only():
    x = np.random.default_rng(3).standard_normal((4, 3, 5)).astype(np.float32)
    check_op(lambda x, w: F.batch_norm(x, None, None, w, None, True),
             lambda x, w: TF.batch_norm(x, None, None, w, None, True), [x, (3,)])
    check_op(lambda x, b: F.batch_norm(x, None, None, None, b, True),
             lambda x, b: TF.batch_norm(x, None, None, None, b, True), [x, (3,)])


def test_batch_norm_float64_and_dtype():
    x = ember.randn(4, 3, dtype=ember.float64)
    assert F.batch_norm(x, None, None, training=True).dtype == ember.float64
    x = ember.randn(4, 3, requires_grad=True)
    y = F.batch_norm(x, ember.zeros(3), ember.ones(3), training=True)
    y.sum().backward()
    assert y.dtype == ember.float32 and x.grad.dtype == ember.float32


# --------------------------------------------------------------------------- instance norm

@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 3, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm(shape, affine, device):
    c = shape[1]

    def f(x, *p):
        w, b = p if p else (None, None)
        return lib_of(x).instance_norm(x, weight=w, bias=b, eps=1e-3)

    check_op(f, f, [shape, *([(c,), (c,)] if affine else [])], device=device)


def test_instance_norm_running_stats_and_eval():
    rng = np.random.default_rng(1)
    erm, erv = ember.zeros(3), ember.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 6)).astype(np.float32) * 2 + 1
        eo = F.instance_norm(ember.tensor(x), erm, erv, momentum=0.3)
        to = TF.instance_norm(torch.from_numpy(x), trm, trv, momentum=0.3)
        np.testing.assert_allclose(eo.numpy(), to.numpy(), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), atol=1e-5, rtol=1e-5)
    rm, rv = _c((3,), -0.5, 0.5), _c((3,), 0.5, 2.0, seed=2)
    check_op(lambda x, w, b, m, v: lib_of(x).instance_norm(x, m, v, w, b, use_input_stats=False),
             lambda x, w, b, m, v: TF.instance_norm(x, m, v, w, b, use_input_stats=False),
             [(2, 3, 4), (3,), (3,), rm, rv])
    # only the input needs a gradient: the backward skips xhat
    check_op(lambda x, w, b, m, v: lib_of(x).instance_norm(x, m, v, w, b, use_input_stats=False),
             lambda x, w, b, m, v: TF.instance_norm(x, m, v, w, b, use_input_stats=False),
             [(2, 3, 4), _c((3,), seed=4), _c((3,), seed=5), rm, rv])


# --------------------------------------------------------------------------- layer / rms norm

@pytest.mark.parametrize("shape,ns", [((3, 5), (5,)), ((2, 3, 4), (3, 4)), ((6,), (6,))])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm(shape, ns, affine, device):
    def f(x, *p):
        w = p[0] if p else None
        b = p[1] if len(p) > 1 else None
        return lib_of(x).layer_norm(x, ns, w, b, eps=1e-4)

    params = {"both": [ns, ns], "weight": [ns], "none": []}[affine]
    check_op(f, f, [shape, *params], device=device)


@pytest.mark.parametrize("shape,ns", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(shape, ns, affine, eps, device):
    def f(x, *p):
        return lib_of(x).rms_norm(x, ns, p[0] if p else None, eps=eps)

    check_op(f, f, [shape, *([ns] if affine else [])], device=device)


# --------------------------------------------------------------------------- group norm

@pytest.mark.parametrize("shape,groups", [((2, 6, 4), 3), ((2, 6, 4), 1), ((2, 6, 4), 6),
                                          ((3, 5, 2, 2), 5), ((2, 9, 3), 3), ((3, 4), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(shape, groups, affine, device):
    c = shape[1]

    def f(x, *p):
        w, b = p if p else (None, None)
        return lib_of(x).group_norm(x, groups, w, b, eps=1e-4)

    check_op(f, f, [shape, *([(c,), (c,)] if affine else [])], device=device)


# --------------------------------------------------------------------------- lrn, normalize

@pytest.mark.parametrize("shape", [(2, 6, 3), (1, 5, 2, 3), (1, 4, 2, 2, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm(shape, size):
    f = (lambda x: lib_of(x).local_response_norm(x, size, alpha=0.3, beta=0.75, k=1.5))
    check_op(f, f, [shape])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_normalize(p, dim, device):
    f = (lambda x: lib_of(x).normalize(x, p=p, dim=dim))
    check_op(f, f, [(3, 4, 2)], device=device)


def test_normalize_zero_row():
    x = np.array([[0.0, 0.0], [3.0, 4.0]], np.float32)
    f = (lambda x: lib_of(x).normalize(x, dim=1))
    check_op(f, f, [x], gradcheck=False, gradgrad=False)


# --------------------------------------------------------------------------- errors

def _raises(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


X = ember.zeros(4, 3, 5)


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: F.batch_norm(X, None, None), RuntimeError, "running_mean must be defined"),
    (lambda: F.batch_norm(X, ember.zeros(4), ember.ones(4)), RuntimeError,
     "running_mean should contain 3 elements not 4"),
    (lambda: F.batch_norm(X, None, None, ember.ones(4), training=True), RuntimeError,
     "weight should contain 3 elements not 4"),
    (lambda: F.batch_norm(X, ember.zeros(3), None, training=True), ValueError,
     "both be None or neither"),
    (lambda: F.batch_norm(ember.zeros(1, 3), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training"),
    (lambda: F.batch_norm(X, None, None, training=True, eps=0.0), ValueError,
     "eps must be positive"),
    (lambda: F.instance_norm(X, use_input_stats=False), RuntimeError,
     "Expected running_mean and running_var to be defined"),
    (lambda: F.instance_norm(ember.zeros(4, 3, 1)), ValueError,
     "Expected more than 1 spatial element"),
    (lambda: F.layer_norm(X, (4,)), RuntimeError,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"),
    (lambda: F.layer_norm(X, (5,), ember.ones(4)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape"),
    (lambda: F.layer_norm(X, ()), RuntimeError, "at least 1-dimensional"),
    (lambda: F.rms_norm(X, (4,)), RuntimeError, r"Given normalized_shape=\[4\]"),
    (lambda: F.group_norm(X, 2), RuntimeError, "divisible by num_groups"),
    (lambda: F.group_norm(X, 3, ember.ones(4)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels"),
    (lambda: F.group_norm(ember.zeros(3), 3), RuntimeError, "Expected at least 2 dimensions"),
    (lambda: F.group_norm(ember.zeros(1, 3), 3), ValueError, "more than 1 value per channel"),
    (lambda: F.local_response_norm(ember.zeros(3, 4), 2), ValueError,
     r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"),
    (lambda: F.normalize(X, dim=5), IndexError, "Dimension out of range"),
])
def test_errors(fn, exc, match):
    _raises(fn, exc, match)


def test_no_graph_without_grad():
    x = ember.randn(4, 3)
    w = ember.ones(3)
    assert F.batch_norm(x, None, None, w, None, True).grad_fn is None
    with ember.no_grad():
        x.requires_grad_(True)
        assert F.layer_norm(x, (3,)).grad_fn is None


def test_inplace_modified_input_is_caught():
    x = ember.randn(4, 3, requires_grad=True)
    h = x * 1.0
    y = F.batch_norm(h, None, None, training=True)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


# the raw-array backward (no create_graph) against torch in float32
@pytest.mark.parametrize("name", ["batch_train", "batch_eval", "instance", "layer", "group", "rms"])
def test_fast_backward_matches_torch(name):
    rm, rv = _c((3,), -0.5, 0.5), _c((3,), 0.5, 2.0, seed=2)
    fns = {
        "batch_train": lambda x, w, b, m, v: lib_of(x).batch_norm(x, m, v, w, b, True),
        "batch_eval": lambda x, w, b, m, v: lib_of(x).batch_norm(x, m, v, w, b, False),
        "instance": lambda x, w, b, m, v: lib_of(x).instance_norm(x, None, None, w, b),
        "layer": lambda x, w, b, m, v: lib_of(x).layer_norm(x, (4,)) * w.sum() + b.sum(),
        "group": lambda x, w, b, m, v: lib_of(x).group_norm(x, 3, w, b),
        "rms": lambda x, w, b, m, v: lib_of(x).rms_norm(x, (4,), None) * w.sum() + b.sum(),
    }
    f = fns[name]
    check_op(f, f, [(5, 3, 4), (3,), (3,), rm, rv], gradgrad=False, gradcheck=False)


@pytest.mark.parametrize("name", ["layer", "rms", "group"])
def test_fast_backward_affine_matches_torch(name):
    fns = {"layer": lambda x, w, b: lib_of(x).layer_norm(x, (2, 4), w, b),
           "rms": lambda x, w, b: lib_of(x).rms_norm(x, (2, 4), w) + b,
           "group": lambda x, w, b: lib_of(x).group_norm(x, 1, w[:, 0], b[:, 1])}
    f = fns[name]
    check_op(f, f, [(3, 2, 4), (2, 4), (2, 4)], gradgrad=False, gradcheck=False)


@pytest.mark.parametrize("name", ["batch", "layer", "group", "rms", "instance_eval"])
def test_gradgradcheck(name):
    rng = np.random.default_rng(9)
    x = ember.tensor(rng.standard_normal((3, 4, 2)), requires_grad=True)
    w = ember.tensor(rng.uniform(0.5, 1.5, 4), requires_grad=True)
    b = ember.tensor(rng.standard_normal(4), requires_grad=True)
    rm, rv = ember.tensor(rng.standard_normal(4)), ember.tensor(rng.uniform(0.5, 2, 4))
    fns = {"batch": lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
           "layer": lambda x, w, b: F.layer_norm(x, (2,), w[:2], b[2:]),
           "group": lambda x, w, b: F.group_norm(x, 2, w, b),
           "rms": lambda x, w, b: F.rms_norm(x, (4, 2), w.reshape(4, 1).expand(4, 2)) + b[0],
           "instance_eval": lambda x, w, b: F.instance_norm(x, rm, rv, w, b, False)}
    assert ember.autograd.gradgradcheck(fns[name], [x, w, b])
