"""nn.Sequential runs an eval-mode BatchNorm followed by ReLU/ReLU6/Hardswish/Hardsigmoid/
SiLU as one fused kernel pass when no gradient is recorded: same values as the modules one
by one and as torch; hooks, training mode and recorded gradients keep the unfused path."""
import numpy as np
import pytest
import torch

import ember
from ember.nn.functional import normalization as N

from .test_kernels import needs_numba

ACTS = ["ReLU", "ReLU6", "Hardswish", "Hardsigmoid", "SiLU"]


def _pair(act, bn="BatchNorm2d", conv=True):
    rng = np.random.default_rng(0)
    layers = lambda lib: ([lib.nn.Conv2d(3, 6, 3, padding=1)] if conv else []) + [  # noqa: E731
        getattr(lib.nn, bn)(6), getattr(lib.nn, act)()]
    tm = torch.nn.Sequential(*layers(torch))
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)))
        b = tm[-2]
        b.running_mean.copy_(torch.from_numpy(rng.standard_normal(6).astype(np.float32)))
        b.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2, 6).astype(np.float32)))
    em = ember.nn.Sequential(*layers(ember))
    em.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in tm.state_dict().items()})
    return em.eval(), tm.eval()


@pytest.fixture
def fused_calls(monkeypatch):
    calls = []
    real = N._batch_norm_act

    def spy(*a):
        out = real(*a)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(N, "_batch_norm_act", spy)
    return calls


@needs_numba
@pytest.mark.parametrize("act", ACTS)
def test_eval_conv_bn_act_is_fused_and_matches_torch(act, fused_calls):
    em, tm = _pair(act)
    x = np.random.default_rng(1).standard_normal((2, 3, 9, 11)).astype(np.float32)
    with ember.no_grad():
        y = em(ember.from_numpy(x)).numpy()
        unfused = x_ = ember.from_numpy(x)
        for m in em:
            x_ = m(x_)
        unfused = x_.numpy()
    assert fused_calls == [True]
    np.testing.assert_allclose(y, unfused, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        np.testing.assert_allclose(y, tm(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)


@needs_numba
@pytest.mark.parametrize("bn,shape", [("BatchNorm1d", (4, 6)), ("BatchNorm1d", (4, 6, 5)),
                                      ("BatchNorm3d", (2, 6, 3, 4, 5))])
def test_other_batch_norms_fuse(bn, shape, fused_calls):
    em, tm = _pair("ReLU", bn, conv=False)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    with ember.no_grad():
        y = em(ember.from_numpy(x)).numpy()
    assert fused_calls == [True]
    np.testing.assert_allclose(y, tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_no_fusion_with_grad_training_or_hooks(fused_calls):
    em, tm = _pair("ReLU")
    x = ember.randn(2, 3, 5, 5)
    # a gradient to record: the unfused path, and backward works
    y = em(x)
    y.sum().backward()
    assert em[0].weight.grad is not None
    assert fused_calls == [False]  # asked, declined: a gradient is recorded
    fused_calls.clear()
    seen = []
    em[2].register_forward_hook(lambda m, i, o: seen.append(1))
    with ember.no_grad():
        em(x)
    assert seen == [1] and fused_calls == []
    em2, _ = _pair("SiLU")
    em2.train()
    with ember.no_grad():
        em2(x)
    assert fused_calls == []


def test_bad_input_still_named():
    em, _ = _pair("ReLU", conv=False)
    with ember.no_grad(), pytest.raises(ValueError, match="expected 4D input"):
        em(ember.randn(2, 6, 3))
