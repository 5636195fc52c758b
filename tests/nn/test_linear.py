"""ember.nn.functional.linear / bilinear against torch 2.13 (forward, grads, double grads)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import Const, check_op

import ember
import ember.nn.functional as F


@pytest.mark.parametrize("xshape", [(5,), (3, 5), (2, 3, 5), (2, 1, 3, 5), (0, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(xshape, bias, device):
    shapes = [xshape, (4, 5)] + ([(4,)] if bias else [])
    check_op(F.linear, TF.linear, shapes, device=device)


def test_linear_noncontiguous_input_and_weight():
    check_op(F.linear, TF.linear, [(3, 6), (6, 6), (6,)], noncontig=True)


def test_linear_constant_weight_and_float64():
    w = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    check_op(lambda x, b: F.linear(x, ember.from_numpy(w), b),
             lambda x, b: TF.linear(x, torch.from_numpy(w), b), [(3, 5), (4,)],
             gradcheck=False)  # the constant weight stays float32
    check_op(F.linear, TF.linear, [(2, 3, 5), (4, 5), (4,)], dtype=np.float64, atol=1e-10,
             rtol=1e-8)


def test_linear_only_some_grads():
    x = ember.randn(3, 5)
    w = ember.randn(4, 5, requires_grad=True)
    b = ember.randn(4)
    F.linear(x, w, b).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (4, 1)), rtol=1e-5)
    assert b.grad is None and x.grad is None


@pytest.mark.parametrize("bshape", [(), (1,), (3, 4)])
def test_linear_broadcast_bias(bshape):
    check_op(F.linear, TF.linear, [(3, 5), (4, 5), bshape])


def test_linear_one_dim_weight():
    check_op(F.linear, TF.linear, [(3, 5), (5,)])


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(6x5 and 6x4\)"):
        F.linear(ember.ones(2, 3, 5), ember.ones(4, 6))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(ember.ones(3, 5), ember.ones(4, 5, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="at least 1D"):
        F.linear(ember.tensor(1.0), ember.ones(4, 5))
    with pytest.raises(RuntimeError, match="bias of shape"):
        F.linear(ember.ones(3, 5), ember.ones(4, 5), ember.ones(3))


def test_linear_in_place_modified_weight_is_caught():
    w = ember.randn(4, 5, requires_grad=True)
    x = ember.randn(3, 5, requires_grad=True)
    w2 = w * 1
    y = F.linear(x, w2)
    w2.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize("lead", [(3,), (2, 3), ()])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(lead, bias):
    shapes = [lead + (4,), lead + (5,), (6, 4, 5)] + ([(6,)] if bias else [])
    check_op(F.bilinear, TF.bilinear, shapes)


def test_bilinear_errors():
    w = ember.ones(6, 4, 5)
    with pytest.raises(RuntimeError, match="input dimensions do not match: got 2 and 1"):
        F.bilinear(ember.ones(3, 4), ember.ones(5), w)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match: got 3 and 2"):
        F.bilinear(ember.ones(3, 4), ember.ones(2, 5), w)
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 3"):
        F.bilinear(ember.ones(2, 3), ember.ones(2, 5), w)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 4"):
        F.bilinear(ember.ones(2, 4), ember.ones(2, 4), w)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 5"):
        F.bilinear(ember.ones(2, 4), ember.ones(2, 5), w, ember.ones(5))
    check_op(lambda a, b, c: F.bilinear(a, b, c, None), lambda a, b, c: TF.bilinear(a, b, c, None),
             [(2, 4), (2, 5), Const(np.ones((6, 4, 5), np.float32))], gradcheck=False)
