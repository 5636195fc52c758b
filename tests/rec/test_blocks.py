"""MLP, SwishLayerNorm, cross networks and the DeepFM blocks against torch twins."""
import numpy as np
import pytest
import torch

import ember
from ember.rec.modules import (MLP, CrossNet, DeepFM, FactorizationMachine, LowRankCrossNet,
                               SwishLayerNorm, VectorCrossNet)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _state_to_torch(m):
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in m.state_dict().items()}


def _check(em, torch_fn, x, params, rtol=1e-5, atol=1e-6):
    """Forward equal, and the gradients of the input and of every parameter equal."""
    ex = ember.from_numpy(x).requires_grad_()
    tx = torch.from_numpy(x).requires_grad_()
    tp = {k: v.clone().requires_grad_() for k, v in params.items()}
    out_e, out_t = em(ex), torch_fn(tx, tp)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=rtol,
                               atol=atol)
    g = _x(*out_t.shape, seed=1)
    (out_e * ember.from_numpy(g)).sum().backward()
    (out_t * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol)
    named = dict(em.named_parameters())
    for k, v in tp.items():
        np.testing.assert_allclose(named[k].grad.numpy(), v.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


def test_swish_layernorm():
    m = SwishLayerNorm(6)
    with ember.no_grad():
        m.norm[0].weight.array[:] = _x(6, seed=2)
        m.norm[0].bias.array[:] = _x(6, seed=3)
    assert sorted(m.state_dict()) == ["norm.0.bias", "norm.0.weight"]

    def twin(x, p):
        return x * torch.sigmoid(torch.nn.functional.layer_norm(
            x, (6,), p["norm.0.weight"], p["norm.0.bias"]))
    _check(m, twin, _x(4, 6), _state_to_torch(m))


@pytest.mark.parametrize("act", ["relu", "sigmoid", "swish_layernorm"])
def test_mlp(act):
    m = MLP(5, [7, 3], activation=act)
    p = _state_to_torch(m)
    assert "_mlp.0._linear.weight" in p and "_mlp.1._linear.bias" in p

    def twin(x, p):
        for i, n in enumerate([7, 3]):
            x = torch.nn.functional.linear(x, p[f"_mlp.{i}._linear.weight"],
                                           p[f"_mlp.{i}._linear.bias"])
            if act == "relu":
                x = torch.relu(x)
            elif act == "sigmoid":
                x = torch.sigmoid(x)
            else:
                x = x * torch.sigmoid(torch.nn.functional.layer_norm(
                    x, (n,), p[f"_mlp.{i}._activation_fn.norm.0.weight"],
                    p[f"_mlp.{i}._activation_fn.norm.0.bias"]))
        return x
    _check(m, twin, _x(4, 5), p)


def test_crossnet():
    m = CrossNet(5, num_layers=3)
    with ember.no_grad():
        for i, b in enumerate(m.bias):
            b.array[:] = _x(5, 1, seed=10 + i)
    p = _state_to_torch(m)
    assert sorted(p) == ["bias.0", "bias.1", "bias.2", "kernels.0", "kernels.1", "kernels.2"]

    def twin(x, p):
        x0 = x.unsqueeze(2)
        xl = x0
        for i in range(3):
            xl = x0 * (torch.matmul(p[f"kernels.{i}"], xl) + p[f"bias.{i}"]) + xl
        return xl.squeeze(2)
    _check(m, twin, _x(4, 5), p)


def test_low_rank_crossnet():
    m = LowRankCrossNet(6, num_layers=2, low_rank=2)
    with ember.no_grad():
        for i, b in enumerate(m.bias):
            b.array[:] = _x(6, 1, seed=20 + i)
    p = _state_to_torch(m)
    assert p["W_kernels.0"].shape == (6, 2) and p["V_kernels.1"].shape == (2, 6)

    def twin(x, p):
        x0 = x.unsqueeze(2)
        xl = x0
        for i in range(2):
            xw = torch.matmul(p[f"W_kernels.{i}"], torch.matmul(p[f"V_kernels.{i}"], xl))
            xl = x0 * (xw + p[f"bias.{i}"]) + xl
        return xl.squeeze(2)
    _check(m, twin, _x(3, 6), p)
    with pytest.raises(ValueError, match="low_rank must be >= 1"):
        LowRankCrossNet(6, 1, low_rank=0)


def test_vector_crossnet():
    m = VectorCrossNet(4, num_layers=2)
    p = _state_to_torch(m)

    def twin(x, p):
        x0 = x.unsqueeze(2)
        xl = x0
        for i in range(2):
            s = torch.tensordot(xl, p[f"kernels.{i}"], dims=([1], [0]))
            xl = torch.matmul(x0, s) + p[f"bias.{i}"] + xl
        return xl.squeeze(2)
    _check(m, twin, _x(3, 4), p)


def test_factorization_machine_and_deepfm():
    a, b = _x(4, 2, 3, seed=5), _x(4, 5, seed=6)
    ea, eb = ember.from_numpy(a).requires_grad_(), ember.from_numpy(b).requires_grad_()
    ta, tb = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    out = FactorizationMachine()([ea, eb])
    v = torch.cat([ta.flatten(1), tb.flatten(1)], 1)
    ref = 0.5 * (v.sum(1, keepdim=True) ** 2 - (v * v).sum(1, keepdim=True))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)
    lin = ember.nn.Linear(11, 2)
    deep = DeepFM(lin)
    w = torch.from_numpy(lin.weight.detach().numpy().copy())
    bias = torch.from_numpy(lin.bias.detach().numpy().copy())
    np.testing.assert_allclose(deep([ea, eb]).detach().numpy(),
                               torch.nn.functional.linear(v, w, bias).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
