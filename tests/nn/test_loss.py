"""ember.nn.functional losses against torch.nn.functional (forward, grads, double grads, and a
float64 gradcheck through check_op), over each loss's option grid; plus error messages."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import Const, check_op

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(1234)


def _kw(kw, lib):
    """numpy arrays among the keyword args -> ember / torch tensors (a 0-d target is passed
    this way: ``Const`` would give torch a (1,) array)."""
    out = {}
    for k, v in kw.items():
        if isinstance(v, np.ndarray):
            v = ember.tensor(v) if lib == "ember" else torch.from_numpy(v)
        out[k] = v
    return out


def check_loss(name, inputs, *, kw=None, torch_name=None, **opts):
    kw = kw or {}
    ef, tf = getattr(F, name), getattr(TF, torch_name or name)
    ek, tk = _kw(kw, "ember"), _kw(kw, "torch")
    check_op(lambda *a: ef(*a, **ek), lambda *a: tf(*a, **tk), inputs, **opts)


def _targets(shape, C, ignore=False, seed=0):
    t = np.random.default_rng(seed).integers(0, C, shape)
    if ignore:
        t.reshape(-1)[::3] = -100
    return t


W5 = RNG.uniform(0.2, 2.0, 5).astype(np.float32)

# ====================================================================== cross_entropy, nll_loss

SHAPES = [(6, 5), (3, 5, 2, 3), (5,)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_class_indices(shape, reduction, weight, smoothing, ignore):
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = _targets(tshape, 5, ignore and len(shape) > 1)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weight:
        kw["weight"] = W5
    check_loss("cross_entropy", [shape], kw=dict(kw, target=t))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignore_index_custom(reduction, device):
    t = np.array([0, 2, 2, 4, 1, 2])
    check_loss("cross_entropy", [(6, 5), Const(t)], device=device,
               kw=dict(ignore_index=2, weight=W5, reduction=reduction, label_smoothing=0.1))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weight", [False, True])
def test_cross_entropy_all_ignored(smoothing, weight):
    kw = dict(label_smoothing=smoothing, weight=W5 if weight else None)
    t = np.full(4, -100)
    check_loss("cross_entropy", [(4, 5), Const(t)], kw=dict(kw), gradcheck=False)  # nan, 0 grads
    x = ember.randn(4, 5, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor(t), **_kw(kw, "ember"))
    assert np.isnan(loss.item())
    loss.backward()
    assert np.all(x.grad.numpy() == 0)
    assert F.cross_entropy(x, ember.tensor(t), reduction="sum").item() == 0


@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3), (5,)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_probabilities(shape, reduction, weight, smoothing):
    q = RNG.uniform(0, 1, shape).astype(np.float32)
    q /= q.sum(axis=0 if len(shape) == 1 else 1, keepdims=True)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weight:
        kw["weight"] = W5
    check_loss("cross_entropy", [shape, q], kw=kw)  # grads for input and target


def test_cross_entropy_probabilities_weight_grad():
    q = RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    check_op(lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.1),
             lambda x, t, w: TF.cross_entropy(x, t, weight=w, label_smoothing=0.1),
             [(4, 5), q, W5])


def test_cross_entropy_float64_and_dtype_promotion():
    t = _targets((4,), 5)
    check_loss("cross_entropy", [(4, 5), Const(t)], dtype=np.float64)
    x = ember.randn(3, 4, dtype=ember.float64)
    q = ember.rand(3, 4)
    assert F.cross_entropy(x, q).dtype == ember.float64
    assert F.cross_entropy(x.float(), ember.tensor([0, 1, 2])).dtype == ember.float32


def test_cross_entropy_uint8_targets_and_fused_grad_fn():
    x = ember.randn(4, 3, requires_grad=True)
    t = ember.tensor(np.array([0, 2, 1, 1], np.uint8))
    loss = F.cross_entropy(x, t)
    assert type(loss.grad_fn).__name__ == "CrossEntropyBackward"  # one fused node
    tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_()
    tl = TF.cross_entropy(tx, torch.from_numpy(t.numpy()))
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-6)
    loss.backward()
    tl.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-7)


def test_cross_entropy_extreme_logits():
    x = np.array([[1000.0, -1000.0, 0.0], [-50.0, 50.0, 49.0]], np.float32)
    check_loss("cross_entropy", [x, Const(np.array([1, 2]))], gradcheck=False)


def test_cross_entropy_empty_batch():
    x = ember.zeros(0, 4, requires_grad=True)
    t = ember.zeros(0, dtype=ember.int64)
    assert np.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0
    assert F.cross_entropy(x, t, reduction="none").shape == (0,)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_nll_loss(shape, reduction, weight, ignore):
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = _targets(tshape, 5, ignore and len(shape) > 1, seed=3)
    kw = dict(reduction=reduction, weight=W5 if weight else None)
    check_loss("nll_loss", [shape], kw=dict(kw, target=t))


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_unbatched_target_of_size_one(name, device):
    """(C,) input with a (1,) target: torch computes the forward (its backward fails); ember
    gives the same loss and the same grads as with a 0-d target."""
    check_loss(name, [(5,), Const(np.array([3]))], kw=dict(reduction="none"), device=device,
               grad=False)
    x = ember.randn(5, requires_grad=True, device=device)
    fn = getattr(F, name)
    (g1,) = ember.autograd.grad([fn(x, ember.tensor([3], device=device))], [x])
    (g0,) = ember.autograd.grad([fn(x, ember.tensor(3, device=device))], [x])
    np.testing.assert_allclose(g1.cpu().numpy(), g0.cpu().numpy())


def test_nll_loss_all_ignored():
    x = ember.randn(3, 4, requires_grad=True)
    t = ember.tensor([-100, -100, -100])
    loss = F.nll_loss(x, t)
    assert np.isnan(loss.item())
    loss.backward()
    assert np.all(x.grad.numpy() == 0)


def test_class_index_errors():
    x = ember.randn(4, 5)
    with pytest.raises(IndexError, match=r"Target 5 is out of bounds.*\[0, 4\]"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 5]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(x, ember.tensor([0, 1, 2, -1]))
    F.nll_loss(x, ember.tensor([0, 1, 2, -1]), ignore_index=-1)  # ignored: fine
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target "
                                         r"batch_size \(3\)"):
        F.cross_entropy(x, ember.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[4, 3\], got \[4, 2\]"):
        F.cross_entropy(ember.randn(4, 5, 3), ember.zeros(4, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.nll_loss(ember.randn(5, 3), ember.zeros(5, 1, dtype=ember.int64))
    with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1"):
        F.nll_loss(ember.randn(5), ember.tensor([2, 1]))
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(ember.randn(()), ember.tensor(0))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 "
                                           r"classes or no classes but got weight tensor of "
                                           r"shape: \[3\]"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.cross_entropy(x, ember.tensor([0.0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class "
                                           "probabilities, got int64"):
        F.cross_entropy(x, ember.zeros(4, 5, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        F.cross_entropy(x, ember.rand(4, 5), ignore_index=1)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, ember.rand(4, 5), label_smoothing=1.01)
    q = ember.rand(4, 5)  # a negative smoothing is ignored, as in torch
    assert F.cross_entropy(x, q, label_smoothing=-0.1).item() == F.cross_entropy(x, q).item()
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), reduction="foo")
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), weight=ember.ones(5, requires_grad=True))
    with pytest.raises(RuntimeError, match="floating point input"):
        F.cross_entropy(ember.zeros(4, 5, dtype=ember.int64), ember.tensor([0, 1, 2, 3]))


def test_legacy_size_average_reduce():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    t = np.array([0, 1, 4, 2])
    for sa, rd, want in [(False, None, "sum"), (None, False, "none"), (True, True, "mean")]:
        with pytest.warns(DeprecationWarning, match=f"reduction='{want}'"):
            e = F.cross_entropy(ember.tensor(x), ember.tensor(t), size_average=sa, reduce=rd)
        r = TF.cross_entropy(torch.tensor(x), torch.tensor(t), reduction=want)
        np.testing.assert_allclose(e.numpy(), r.numpy(), rtol=1e-6)
        with pytest.warns(DeprecationWarning):
            e = F.mse_loss(ember.tensor(x), ember.zeros(4, 5), size_average=sa, reduce=rd)
        assert e.shape == ((4, 5) if want == "none" else ())
    with pytest.warns(DeprecationWarning, match="elementwise_mean"):
        F.l1_loss(ember.tensor(x), ember.zeros(4, 5), reduction="elementwise_mean")


# ================================================================================ regression

@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [False, True])
def test_mse_l1(name, reduction, weight):
    kw = dict(reduction=reduction)
    if weight:
        kw["weight"] = RNG.uniform(0.1, 1, (3, 4)).astype(np.float32)
    check_loss(name, [(3, 4), (3, 4)], kw=kw)


def test_pointwise_broadcast_warns():
    with pytest.warns(UserWarning, match="different to the input size"):
        check_loss("mse_loss", [(3, 4), (4,)])
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(ember.randn(3, 4), ember.randn(3, 4), weight=ember.ones(4))


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_smooth_l1(beta, reduction):
    check_loss("smooth_l1_loss", [(4, 5), (4, 5)], kw=dict(beta=beta, reduction=reduction))


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("weight", [False, True])
def test_huber(delta, reduction, weight):
    kw = dict(delta=delta, reduction=reduction)
    if weight:
        kw["weight"] = RNG.uniform(0.1, 1, (4, 5)).astype(np.float32)
    check_loss("huber_loss", [(4, 5), (4, 5)], kw=kw)


def test_smooth_l1_huber_errors():
    with pytest.raises(RuntimeError, match="does not support negative values for beta"):
        F.smooth_l1_loss(ember.randn(3), ember.randn(3), beta=-1)
    with pytest.raises(RuntimeError, match="does not support non-positive values for delta"):
        F.huber_loss(ember.randn(3), ember.randn(3), delta=0)


# ==================================================================================== binary

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("wshape", [None, (4, 3), (4, 1), (3,)])
def test_binary_cross_entropy(reduction, wshape, device):
    kw = dict(reduction=reduction)
    if wshape:
        kw["weight"] = RNG.uniform(0.2, 2, wshape).astype(np.float32)
    check_loss("binary_cross_entropy", [(4, 3), (4, 3)], kw=kw, low=0.05, high=0.95,
               device=device)


def test_binary_cross_entropy_saturated_inputs():
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.3], np.float32)
    check_loss("binary_cross_entropy", [x, Const(t)], kw=dict(reduction="sum"), gradcheck=False,
               gradgrad=False)  # log clamped at -100, finite grads, as torch
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.5]), ember.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(ember.rand(4), ember.rand(3))


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("pw", [None, (3,), (4, 1), ()])
@pytest.mark.parametrize("weight", [None, (3,), (4, 3)])
def test_bce_with_logits(reduction, pw, weight):
    kw = dict(reduction=reduction)
    if pw is not None:
        kw["pos_weight"] = RNG.uniform(0.5, 3, pw).astype(np.float32)
    if weight is not None:
        kw["weight"] = RNG.uniform(0.5, 2, weight).astype(np.float32)
    t = RNG.uniform(0, 1, (4, 3)).astype(np.float32)
    check_loss("binary_cross_entropy_with_logits", [(4, 3), t], kw=kw, low=-4, high=4)


def test_bce_with_logits_stable_and_errors():
    x = np.array([-200.0, -30.0, 0.5, 30.0, 200.0], np.float32)
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.0], np.float32)
    check_loss("binary_cross_entropy_with_logits", [x, Const(t)], kw=dict(reduction="none"),
               gradcheck=False)
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.randn(4, 3), ember.rand(4, 2))


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_soft_margin(reduction):
    y = np.sign(RNG.standard_normal((4, 3))).astype(np.float32)
    check_loss("soft_margin_loss", [(4, 3), Const(y)], kw=dict(reduction=reduction))


@pytest.mark.parametrize("shape", [(4, 3), (2, 4, 3), (3,)])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_soft_margin(shape, weight, reduction):
    y = (RNG.uniform(0, 1, shape) > 0.5).astype(np.float32)
    kw = dict(reduction=reduction)
    if weight:
        kw["weight"] = RNG.uniform(0.5, 2, (3,)).astype(np.float32)
    check_loss("multilabel_soft_margin_loss", [shape, y], kw=kw)


# ============================================================================= distributions

@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    lo, hi = (-3.0, 0.0) if log_target else (0.05, 1.0)
    t = RNG.uniform(lo, hi, (4, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_loss("kl_div", [(4, 3), t], kw=dict(reduction=reduction, log_target=log_target))
    if reduction == "mean":
        with pytest.warns(UserWarning, match="batchmean"):
            F.kl_div(ember.randn(2), ember.rand(2))


@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_poisson_nll(log_input, full, reduction):
    t = np.array([[0.0, 1.0, 2.0, 5.0], [0.5, 3.0, 1.5, 7.0]], np.float32)
    lo = -1.0 if log_input else 0.2
    check_loss("poisson_nll_loss", [(2, 4), Const(t)], low=lo, high=2.0,
               kw=dict(log_input=log_input, full=full, reduction=reduction))
    if not full:  # target grads (torch has them too)
        check_loss("poisson_nll_loss", [(2, 4), (2, 4)], low=0.2, high=2.0,
                   kw=dict(log_input=log_input, reduction=reduction))


@pytest.mark.parametrize("vshape", [(4, 3), (4,), (4, 1), (1, 3)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_nll(vshape, full, reduction):
    var = RNG.uniform(0.2, 2, vshape).astype(np.float32)
    check_op(lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=full, reduction=reduction),
             lambda x, t, v: TF.gaussian_nll_loss(x, t, v, full=full, reduction=reduction),
             [(4, 3), (4, 3), var])


def test_gaussian_nll_clamped_var_and_errors():
    var = np.array([[1e-9, 0.5, 2.0]], np.float32)  # first entry clamped to eps: grad still flows
    check_op(lambda x, t, v: F.gaussian_nll_loss(x, t, v, eps=1e-3),
             lambda x, t, v: TF.gaussian_nll_loss(x, t, v, eps=1e-3),
             [(1, 3), (1, 3), var], gradcheck=False)
    check_op(lambda x, t: F.gaussian_nll_loss(x, t, 0.7, reduction="none"),
             lambda x, t: TF.gaussian_nll_loss(x, t, 0.7, reduction="none"), [(2, 3), (2, 3)])
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(ember.randn(4, 3), ember.randn(4, 3), ember.ones(4, 2))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(ember.randn(4, 3), ember.randn(4, 3), -ember.ones(4, 3))
    with pytest.raises(ValueError, match="x is not valid"):
        F.gaussian_nll_loss(ember.randn(4, 3), ember.randn(4, 3), ember.ones(4, 3), reduction="x")


# ================================================================= ranking and embeddings

@pytest.mark.parametrize("margin", [0.0, 0.5])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_margin_ranking(margin, reduction):
    y = np.sign(RNG.standard_normal(6)).astype(np.float32)
    check_loss("margin_ranking_loss", [(6,), (6,), Const(y)],
               kw=dict(margin=margin, reduction=reduction))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(ember.randn(4), ember.randn(4), ember.ones(4, 1))


@pytest.mark.parametrize("margin", [1.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_hinge_embedding(margin, reduction):
    y = np.sign(RNG.standard_normal((4, 3))).astype(np.float32)
    check_loss("hinge_embedding_loss", [(4, 3), Const(y)], low=0, high=2,
               kw=dict(margin=margin, reduction=reduction))


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("margin", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cosine_embedding(batched, margin, reduction):
    shape, y = ((5, 4), np.array([1, -1, 1, -1, -1])) if batched else ((4,), np.array(-1))
    check_loss("cosine_embedding_loss", [shape, shape],
               kw=dict(target=y, margin=margin, reduction=reduction))


def test_cosine_embedding_errors():
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cosine_embedding_loss(ember.randn(4, 3), ember.randn(4, 3), ember.ones(4, 1))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(ember.randn(4, 3), ember.randn(4, 3), ember.ones(()))


@pytest.mark.parametrize("p", [1, 2, 3.0])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 3, 4)])
def test_triplet_margin(p, swap, shape):
    check_loss("triplet_margin_loss", [shape, shape, shape],
               kw=dict(p=p, swap=swap, margin=0.7, reduction="none" if len(shape) == 3 else "mean"))


def test_triplet_margin_with_distance():
    def l1(a, b):
        return (a - b).abs().sum(-1)

    for swap in (False, True):
        check_op(lambda a, p, n: F.triplet_margin_with_distance_loss(
                     a, p, n, distance_function=l1, swap=swap, margin=2.0),
                 lambda a, p, n: TF.triplet_margin_with_distance_loss(
                     a, p, n, distance_function=l1, swap=swap, margin=2.0),
                 [(5, 4), (5, 4), (5, 4)])
        check_loss("triplet_margin_with_distance_loss", [(5, 4), (5, 4), (5, 4)],
                   kw=dict(swap=swap, reduction="sum"))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(ember.randn(3), ember.randn(3), ember.randn(3), margin=0)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D"):
        F.triplet_margin_loss(ember.randn(4, 3), ember.randn(4, 3), ember.randn(3))


# ====================================================================== multi-class margins

@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin(p, weight, reduction):
    kw = dict(p=p, margin=0.8, reduction=reduction)
    if weight:
        kw["weight"] = W5
    check_loss("multi_margin_loss", [(4, 5), Const(np.array([0, 4, 2, 2]))], kw=kw,
               gradgrad=False)  # torch has no double backward here
    check_loss("multi_margin_loss", [(5,)], kw=dict(kw, target=np.array(3)), gradgrad=False)


def test_multi_margin_errors():
    x = ember.randn(4, 5)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2, 7]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[4\], but got \[3\]"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multi_margin_loss(ember.randn(2, 3, 4), ember.tensor([1, 1]))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 5 but got \[4\]"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2, 3]), weight=ember.ones(4))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2, 3]), p=3)
    assert F.multi_margin_loss(ember.randn(5), ember.tensor([1]), reduction="none").shape == (1,)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin(reduction):
    t = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 2, 2, 2], [0, 1, 2, 3, 4]])
    check_loss("multilabel_margin_loss", [(4, 5), Const(t)], kw=dict(reduction=reduction),
               gradgrad=False)
    check_loss("multilabel_margin_loss", [(5,), Const(t[0])], kw=dict(reduction=reduction),
               gradgrad=False)


def test_multilabel_margin_errors():
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(ember.randn(4, 5), ember.zeros(4, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(ember.randn(1, 5), ember.tensor([[0, 9, -1, 2, 3]]))


def test_every_public_loss_is_exported():
    for name in F.loss.__all__:
        assert callable(getattr(F, name)), name
