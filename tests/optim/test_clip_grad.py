"""ember.nn.utils: gradient clipping and parameter/vector conversion against torch."""
import math

import numpy as np
import pytest
import torch

import ember
import ember.nn.utils as U
from ember.sparse import RowSparseGrad

SHAPES = [(4, 3), (5,), (2, 2, 2)]


def _params(scale=1.0, grads=True):
    rng = np.random.default_rng(0)
    vals = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    gs = [(rng.standard_normal(s) * scale).astype(np.float32) for s in SHAPES]
    pe = [ember.tensor(v, requires_grad=True) for v in vals]
    pt = [torch.tensor(v, requires_grad=True) for v in vals]
    if grads:
        for e, t, g in zip(pe[:2], pt[:2], gs[:2]):  # the last parameter has no gradient
            e.grad = ember.tensor(g.copy())
            t.grad = torch.tensor(g.copy())
    return pe, pt


def _grads_equal(pe, pt, **tol):
    for e, t in zip(pe, pt):
        if t.grad is None:
            assert e.grad is None
        else:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **tol)


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, -math.inf, 0, 0.5, 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(norm_type, max_norm):
    pe, pt = _params()
    te = U.clip_grad_norm_(pe, max_norm, norm_type=norm_type)
    tt = torch.nn.utils.clip_grad_norm_(pt, max_norm, norm_type=norm_type)
    assert isinstance(te, ember.Tensor) and te.shape == () and te.dtype == ember.float32
    np.testing.assert_allclose(float(te), float(tt), rtol=1e-6)
    _grads_equal(pe, pt, rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_single_tensor_float64_and_generator():
    w = ember.tensor(np.array([3.0, 4.0]), requires_grad=True)
    w.grad = ember.tensor(np.array([3.0, 4.0]))
    total = U.clip_grad_norm_(w, 1.0)
    assert total.dtype == ember.float64 and float(total) == 5.0
    np.testing.assert_allclose(w.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    with pytest.warns(UserWarning, match="empty generator"):
        assert float(U.clip_grad_norm_((p for p in []), 1.0)) == 0.0


def test_nonfinite():
    pe, pt = _params()
    pe[0].grad.array[0, 0] = np.nan
    pt[0].grad[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="non-finite"):
        U.clip_grad_norm_(pe, 1.0, error_if_nonfinite=True)
    te = U.clip_grad_norm_(pe, 1.0)
    tt = torch.nn.utils.clip_grad_norm_(pt, 1.0)
    assert math.isnan(float(te)) and math.isnan(float(tt))
    _grads_equal(pe, pt)


def test_total_norm_then_clip_with_norm():
    pe, pt = _params(scale=3.0)
    ge = [p.grad for p in pe if p.grad is not None]
    gt = [p.grad for p in pt if p.grad is not None]
    ne = U.get_total_norm(ge, norm_type=3.0)
    nt = torch.nn.utils.get_total_norm(gt, norm_type=3.0)
    np.testing.assert_allclose(float(ne), float(nt), rtol=1e-6)
    U.clip_grads_with_norm_(pe, 2.0, ne)
    torch.nn.utils.clip_grads_with_norm_(pt, 2.0, nt)
    _grads_equal(pe, pt, rtol=1e-6)
    assert float(U.get_total_norm([])) == 0.0
    with pytest.raises(RuntimeError, match="infinity norm of an empty"):
        U.get_total_norm([ember.zeros(0)], math.inf)


def test_clip_grad_value():
    pe, pt = _params(scale=2.0)
    v0 = pe[0].grad._version_count
    U.clip_grad_value_(pe, 0.7)
    torch.nn.utils.clip_grad_value_(pt, 0.7)
    _grads_equal(pe, pt)
    assert pe[0].grad._version_count == v0 + 1


def test_sparse_gradients():
    rng = np.random.default_rng(3)
    ids = np.array([4, 1, 4, 0])
    vals = rng.standard_normal((4, 3)).astype(np.float32) * 3
    w = ember.zeros(6, 3, requires_grad=True)
    w.grad = RowSparseGrad(ids, vals, (6, 3))
    dense = w.grad.to_dense().numpy()
    total = U.clip_grad_norm_([w], 1.0)
    np.testing.assert_allclose(float(total), np.linalg.norm(dense), rtol=1e-6)
    np.testing.assert_allclose(w.grad.to_dense().numpy(), dense / (float(total) + 1e-6),
                               rtol=1e-5)
    w.grad = RowSparseGrad(ids, vals, (6, 3))
    U.clip_grad_value_([w], 0.5)
    assert w.grad.is_sparse and np.abs(w.grad.values).max() <= 0.5


def test_parameters_to_vector_and_back():
    pe, pt = _params(grads=False)
    ve = U.parameters_to_vector(pe)
    vt = torch.nn.utils.parameters_to_vector(pt)
    np.testing.assert_array_equal(ve.detach().numpy(), vt.detach().numpy())
    coef = np.arange(ve.shape[0], dtype=np.float32)
    (ve * ember.tensor(coef)).sum().backward()  # differentiable, like torch.cat of views
    np.testing.assert_array_equal(pe[1].grad.numpy(), coef[12:17])
    new = np.linspace(-1, 1, ve.shape[0]).astype(np.float32)
    vec = ember.tensor(new)
    U.vector_to_parameters(vec, pe)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), pt)
    for e, t in zip(pe, pt):
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
        assert np.shares_memory(e.detach().numpy(), vec.numpy())  # views, as in torch
    with pytest.raises(TypeError, match="expected ember.Tensor"):
        U.vector_to_parameters(new, pe)
    with pytest.raises(ValueError, match="1-D with 25 elements"):
        U.vector_to_parameters(ember.zeros(3), pe)


def test_deprecated_alias():
    pe, _ = _params()
    with pytest.warns(FutureWarning):
        U.clip_grad_norm(pe, 1.0)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_half_precision_norm_does_not_overflow(norm_type):
    g = (np.random.default_rng(0).standard_normal(4000) * 20).astype(np.float16)
    ne = U.get_total_norm([ember.tensor(g)], norm_type)
    nt = torch.nn.utils.get_total_norm([torch.tensor(g)], norm_type)
    assert ne.dtype == ember.float16 and math.isfinite(float(ne))
    assert float(ne) == float(nt)
