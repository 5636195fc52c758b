"""ember.nn.functional activations and distances against torch 2.13: forward, grads, double
grads (check_op), PyTorch's subgradients at the kinks, in-place variants and errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import Const, check_op

import ember
import ember.nn.functional as F


def _both(name, **kw):
    return (lambda x: getattr(F, name)(x, **kw)), (lambda x: getattr(TF, name)(x, **kw))


SMOOTH = [
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 1.7}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 1.5}), ("logsigmoid", {}),
    ("softsign", {}), ("tanhshrink", {}), ("sigmoid", {}), ("tanh", {}), ("hardswish", {}),
]
PIECEWISE = [
    ("relu", {}), ("relu6", {}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.3}), ("hardsigmoid", {}),
    ("softshrink", {}), ("softshrink", {"lambd": 1.0}), ("hardshrink", {"lambd": 0.3}),
    ("rrelu", {}),
]


@pytest.mark.parametrize("name,kw", SMOOTH + PIECEWISE)
def test_activation_matches_torch(name, kw, device):
    ef, tf = _both(name, **kw)
    low, high = (-4.0, 4.0) if name in ("hardswish", "hardsigmoid", "relu6") else (-2.5, 2.5)
    check_op(ef, tf, [(4, 5)], low=low, high=high, device=device)


@pytest.mark.parametrize("name,kw", [("gelu", {}), ("silu", {}), ("elu", {}), ("softplus", {})])
def test_activation_3d_and_float64(name, kw):
    ef, tf = _both(name, **kw)
    check_op(ef, tf, [(2, 3, 4)], dtype=np.float64, atol=1e-10, rtol=1e-8)


def test_threshold_matches_torch():
    check_op(lambda x: F.threshold(x, 0.3, -2.0), lambda x: TF.threshold(x, 0.3, -2.0), [(3, 4)])


KINKS = np.array([-6.5, -6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0], np.float32)


@pytest.mark.parametrize("name,kw", PIECEWISE + [
    ("hardswish", {}), ("elu", {"alpha": 2.0}), ("celu", {"alpha": 2.0}), ("selu", {}),
    ("silu", {}), ("softsign", {}), ("softplus", {"beta": 2.0, "threshold": 1.0}),
    ("threshold", {"threshold": 1.0, "value": 5.0}),
    ("hardtanh", {"min_val": -3.0, "max_val": 3.0}),
    ("softshrink", {"lambd": 0.5}), ("hardshrink", {"lambd": 0.5})])
def test_subgradients_at_kinks_match_torch(name, kw):
    ef, tf = _both(name, **kw)
    check_op(ef, tf, [KINKS.copy()], gradgrad=False, gradcheck=False)


def test_gelu_accuracy_float32():
    x = np.linspace(-10, 10, 200001).astype(np.float32)
    ref = TF.gelu(torch.from_numpy(x.astype(np.float64))).numpy()
    got = F.gelu(ember.from_numpy(x)).numpy()
    assert got.dtype == np.float32
    assert np.abs(got - ref).max() < 1e-6
    xt = ember.tensor(x, requires_grad=True)
    F.gelu(xt).sum().backward()
    x64 = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    TF.gelu(x64).sum().backward()
    assert xt.grad.dtype == ember.float32
    assert np.abs(xt.grad.numpy() - x64.grad.numpy()).max() < 5e-7


def test_low_precision_keeps_dtype():
    x = ember.tensor([-1.0, 0.5, 2.0], dtype=ember.float16, requires_grad=True)
    y = F.gelu(x)
    assert y.dtype == ember.float16
    y.sum().backward()
    assert x.grad.dtype == ember.float16
    np.testing.assert_allclose(y.detach().numpy().astype(np.float32),
                               TF.gelu(torch.tensor([-1.0, 0.5, 2.0])).numpy(), atol=2e-3)


def test_gelu_bad_approximate_and_int_inputs():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(ember.ones(2), approximate="fast")
    for name in ("gelu", "silu", "elu", "mish", "softplus", "logsigmoid", "hardswish"):
        with pytest.raises(TypeError, match="floating point"):
            getattr(F, name)(ember.tensor([1, 2]))
    # relu6 / hardtanh / threshold work on integers like torch
    assert F.relu6(ember.tensor([-1, 3, 9])).tolist() == [0, 3, 6]


@pytest.mark.parametrize("name,args", [
    ("relu", ()), ("relu6", ()), ("leaky_relu", (0.2,)), ("elu", (0.7,)), ("selu", ()),
    ("celu", (1.3,)), ("hardtanh", (-0.5, 0.5)), ("silu", ()), ("mish", ()), ("hardswish", ()),
    ("hardsigmoid", ()), ("threshold", (0.1, 3.0))])
def test_inplace_flag_matches_torch(name, args):
    x = np.random.default_rng(1).uniform(-3, 3, (3, 4)).astype(np.float32)
    g = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    ea = ember.tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    eb, tb = ea * 1.0, ta * 1.0  # non-leaf, so in-place is allowed
    er = getattr(F, name)(eb, *args, inplace=True)
    tr = getattr(TF, name)(tb, *args, inplace=True)
    assert er is eb
    np.testing.assert_allclose(eb.detach().numpy(), tb.detach().numpy(), rtol=1e-5, atol=1e-6)
    (er * ember.from_numpy(g)).sum().backward()
    (tr * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,args", [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.1,)),
                                       ("hardtanh_", ()), ("threshold_", (0.0, -1.0)),
                                       ("celu_", ()), ("selu_", ()), ("rrelu_", ())])
def test_underscore_inplace_functions(name, args):
    x = np.random.default_rng(3).uniform(-2, 2, (5,)).astype(np.float32)
    e, t = ember.tensor(x), torch.tensor(x)
    with torch.no_grad():
        getattr(TF, name)(t, *args)
    assert getattr(F, name)(e, *args) is e
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_inplace_on_leaf_that_requires_grad_raises():
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(ember.ones(3, requires_grad=True), inplace=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.silu(ember.ones(3, requires_grad=True), inplace=True)


def test_modified_input_is_caught_at_backward():
    x = ember.randn(4, requires_grad=True)
    h = x * 2
    y = F.gelu(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_no_graph_when_not_needed():
    x = ember.randn(3, requires_grad=True)
    with ember.no_grad():
        assert F.gelu(x).grad_fn is None
    assert F.gelu(ember.randn(3)).grad_fn is None
    assert F.gelu(x).grad_fn is not None


def test_rrelu_training_is_random_within_bounds():
    x = -ember.rand(2000) - 0.1
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3
    assert abs(slope.mean() - 0.2) < 0.01 and slope.std() > 0.04
    xg = ember.tensor([-1.0, -2.0, 3.0], requires_grad=True)
    yg = F.rrelu(xg, training=True)
    yg.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), (yg / xg).detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu(x, 0.5, 0.1)


def test_glu_matches_torch_and_errors():
    check_op(lambda x: F.glu(x), lambda x: TF.glu(x), [(3, 4)])
    check_op(lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), [(4, 3)])
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is"):
        F.glu(ember.ones(3, 5))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(ember.tensor(1.0))


@pytest.mark.parametrize("wshape,xshape", [((1,), (2, 3, 4)), ((3,), (2, 3, 4)), ((3,), (2, 3)),
                                            ((1,), (5,)), ((), (2, 3))])
def test_prelu_matches_torch(wshape, xshape):
    w = np.random.default_rng(0).uniform(0.1, 0.5, wshape).astype(np.float32)
    check_op(F.prelu, TF.prelu, [xshape, w])


def test_prelu_errors():
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 4"):
        F.prelu(ember.ones(3, 4), ember.ones(3))
    with pytest.raises(RuntimeError, match="channel size = 1"):
        F.prelu(ember.ones(4), ember.ones(4))


def test_softshrink_and_hardtanh_errors():
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(ember.ones(2), -1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(ember.ones(2), 2.0, 1.0)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(fn, dim):
    ef = lambda x: getattr(F, fn)(x, dim)  # noqa: E731
    tf = lambda x: getattr(TF, fn)(x, dim)  # noqa: E731
    check_op(ef, tf, [(3, 4)])
    ef = lambda x: getattr(F, fn)(x, dim, dtype=ember.float64)  # noqa: E731
    tf = lambda x: getattr(TF, fn)(x, dim, dtype=torch.float64)  # noqa: E731
    check_op(ef, tf, [(3, 4)], gradgrad=False, gradcheck=False)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_softmax_implicit_dim_warns_and_matches(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for fn in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {fn}"):
            got = getattr(F, fn)(ember.from_numpy(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(TF, fn)(torch.from_numpy(x))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_gumbel_softmax():
    logits = ember.tensor([[1.0, 2.0, 0.5]] * 4000, requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), 1.0, rtol=1e-5)
    h = F.gumbel_softmax(logits, hard=True)
    hd = h.detach().numpy()
    assert set(np.unique(hd)) <= {0.0, 1.0} and (hd.sum(-1) == 1).all()
    freq = hd.mean(0)
    p = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    np.testing.assert_allclose(freq, p, atol=0.03)  # argmax of Gumbel-perturbed logits ~ softmax
    (h * ember.tensor([1.0, 2.0, 3.0])).sum().backward()  # straight-through gradient exists
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0


# ----------------------------------------------------------------------------- distances

@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((2, 3, 4), (2, 3, 4)), -1),
                                         (((3, 4), (4,)), -1), (((2, 3, 4), (1, 3, 4)), 0)])
def test_cosine_similarity(shapes, dim):
    check_op(lambda a, b: F.cosine_similarity(a, b, dim),
             lambda a, b: TF.cosine_similarity(a, b, dim), list(shapes))


def test_cosine_similarity_zero_vector_uses_eps():
    a = np.zeros((2, 3), np.float32)
    b = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    check_op(lambda x, y: F.cosine_similarity(x, y, eps=1e-3),
             lambda x, y: TF.cosine_similarity(x, y, eps=1e-3), [a, b], gradcheck=False,
             gradgrad=False)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf, 0.5])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    check_op(lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim),
             lambda a, b: TF.pairwise_distance(a, b, p, keepdim=keepdim), [(4, 5), (4, 5)])
    check_op(lambda a, b: F.pairwise_distance(a, b, p, eps=0.1, keepdim=keepdim),
             lambda a, b: TF.pairwise_distance(a, b, p, eps=0.1, keepdim=keepdim),
             [(5,), (3, 5)], gradgrad=False)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((2, 4, 3), (2, 5, 3)),
                                    ((2, 1, 4, 3), (3, 5, 3)), ((27, 2), (3, 2))])
def test_cdist_euclidean(mode, shapes):
    mm = mode == "use_mm_for_euclid_dist" or (mode.endswith("necessary") and
                                              max(shapes[0][-2], shapes[1][-2]) > 25)
    check_op(lambda a, b: F.cdist(a, b, 2.0, mode), lambda a, b: torch.cdist(a, b, 2.0, mode),
             list(shapes), gradgrad=mm, atol=1e-5 if not mm else 2e-5)


@pytest.mark.parametrize("p", [0.0, 1.0, 0.5, 3.0, math.inf])
def test_cdist_other_p(p):
    # torch has no double backward for these (_cdist_backward); check first order + gradcheck
    check_op(lambda a, b: F.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p),
             [(2, 4, 3), (2, 5, 3)], gradgrad=False, gradcheck=p != 0.0)


def test_cdist_zero_distance_has_zero_gradient():
    a = np.array([[1.0, 2.0], [0.0, 0.0]], np.float32)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        check_op(lambda x, y: F.cdist(x, y, compute_mode=mode),
                 lambda x, y: torch.cdist(x, y, compute_mode=mode), [a, a.copy()],
                 gradgrad=False, gradcheck=False, atol=1e-4)


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        F.cdist(ember.ones(2, 3), ember.ones(2, 4))
    with pytest.raises(RuntimeError, match="at least 2D"):
        F.cdist(ember.ones(3), ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="non-negative p"):
        F.cdist(ember.ones(2, 3), ember.ones(2, 3), p=-1)
    with pytest.raises(ValueError, match="not a valid value for compute_mode"):
        F.cdist(ember.ones(2, 3), ember.ones(2, 3), compute_mode="mm")


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf])
def test_pdist(p):
    check_op(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), [(5, 3)], gradgrad=False)
    assert F.pdist(ember.ones(1, 3)).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(ember.ones(2, 2, 2))


def test_distances_take_constant_args():
    check_op(lambda a: F.cdist(a, ember.ones(2, 3)), lambda a: torch.cdist(a, torch.ones(2, 3)),
             [(3, 3)], gradgrad=False)
    check_op(lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b),
             [(3, 3), Const(np.ones((3, 3), np.float32))])


@pytest.mark.parametrize("name,kw", [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
                                     ("mish", {}), ("elu", {}), ("softplus", {}),
                                     ("logsigmoid", {})])
def test_large_inputs_run_in_chunks(name, kw):
    x = np.random.default_rng(4).uniform(-6, 6, (300, 301)).astype(np.float32)  # > 2 chunks
    x[0, :3] = [-100.0, 100.0, 0.0]
    g = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey = getattr(F, name)(ex, **kw)
    ty = getattr(TF, name)(tx, **kw)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=2e-6)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    # (gelu-tanh: numpy's float32 tanh can sit 1 ulp off -1 where torch's is exactly -1, a
    # gradient of ~4e-6 instead of 0 far in the left tail)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
