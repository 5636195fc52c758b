"""ember.audio.functional.rnnt_loss against a float64 cell-by-cell loop written here (with
torch autograd for its gradient), finite differences, and torchaudio's own values (fixture
written by tests/audio/fixtures/make_rnnt.py)."""
import os

import numpy as np
import pytest
import torch

import ember
from ember.audio.functional import rnnt_loss

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "rnnt_ref.npz")


def loop_reference(logits, targets, tl, ul, blank, fused=True):
    """The RNN-T loss per sample by the textbook recursion over every lattice cell (float64
    torch, so autograd gives the reference gradient)."""
    lp = torch.log_softmax(logits, -1) if fused else logits
    costs = []
    for b in range(logits.shape[0]):
        T, U = int(tl[b]), int(ul[b])
        alpha = [[None] * (U + 1) for _ in range(T)]
        for t in range(T):
            for u in range(U + 1):
                if t == 0 and u == 0:
                    alpha[t][u] = lp.new_zeros(())
                    continue
                terms = []
                if t > 0:
                    terms.append(alpha[t - 1][u] + lp[b, t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[t][u - 1] + lp[b, t, u - 1, int(targets[b, u - 1])])
                alpha[t][u] = torch.logsumexp(torch.stack(terms), 0)
        costs.append(-(alpha[T - 1][U] + lp[b, T - 1, U, blank]))
    return torch.stack(costs)


def make_case(seed, B=3, T=6, U=4, C=5, dtype=np.float64, blank=-1):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(B, T, U + 1, C)).astype(dtype) * 2
    tl = rng.integers(1, T + 1, B)
    tl[0] = T
    ul = rng.integers(0, U + 1, B)
    ul[-1] = U
    b = blank % C
    choices = [c for c in range(C) if c != b]
    targets = rng.choice(choices, size=(B, U)).astype(np.int32)
    return logits, targets, tl.astype(np.int32), ul.astype(np.int32)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("blank", [-1, 0])
def test_matches_loop_reference_value_and_grad(seed, fused, blank):
    logits, targets, tl, ul = make_case(seed, blank=blank)
    if not fused:  # log-probabilities given by the caller
        logits = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    x = ember.tensor(logits, requires_grad=True)
    loss = rnnt_loss(x, ember.tensor(targets), ember.tensor(tl), ember.tensor(ul),
                     blank=blank, reduction="none", fused_log_softmax=fused)
    tx = torch.tensor(logits, requires_grad=True)
    ref = loop_reference(tx, targets, tl, ul, blank % logits.shape[-1], fused)
    np.testing.assert_allclose(loss.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    up = np.random.default_rng(seed + 10).normal(size=loss.shape)
    (loss * ember.tensor(up)).sum().backward()
    (ref * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_float32_and_reductions():
    logits, targets, tl, ul = make_case(5, B=4, T=9, U=5, C=7, dtype=np.float32)
    ref = loop_reference(torch.tensor(logits, dtype=torch.float64), targets, tl, ul, 6)
    args = (ember.tensor(targets), ember.tensor(tl), ember.tensor(ul))
    none = rnnt_loss(ember.tensor(logits), *args, reduction="none")
    assert none.dtype == ember.float32 and none.shape == (4,)
    np.testing.assert_allclose(none.numpy(), ref.numpy(), rtol=1e-5)
    np.testing.assert_allclose(rnnt_loss(ember.tensor(logits), *args).item(),
                               ref.mean().item(), rtol=1e-5)
    np.testing.assert_allclose(rnnt_loss(ember.tensor(logits), *args, reduction="sum").item(),
                               ref.sum().item(), rtol=1e-5)


def test_finite_differences():
    logits, targets, tl, ul = make_case(7, B=2, T=4, U=3, C=4)
    x = ember.tensor(logits, requires_grad=True)
    args = (ember.tensor(targets), ember.tensor(tl), ember.tensor(ul))
    rnnt_loss(x, *args, reduction="sum").backward()
    g = x.grad.numpy()
    rng = np.random.default_rng(0)
    eps = 1e-6
    for _ in range(12):
        idx = tuple(int(rng.integers(0, s)) for s in logits.shape)
        p, m = logits.copy(), logits.copy()
        p[idx] += eps
        m[idx] -= eps
        fp = rnnt_loss(ember.tensor(p), *args, reduction="sum").item()
        fm = rnnt_loss(ember.tensor(m), *args, reduction="sum").item()
        assert abs((fp - fm) / (2 * eps) - g[idx]) < 1e-6


def test_clamp_clips_the_gradient():
    logits, targets, tl, ul = make_case(3)
    args = (ember.tensor(targets), ember.tensor(tl), ember.tensor(ul))
    x = ember.tensor(logits, requires_grad=True)
    rnnt_loss(x, *args, reduction="sum").backward()
    y = ember.tensor(logits, requires_grad=True)
    rnnt_loss(y, *args, reduction="sum", clamp=0.1).backward()
    np.testing.assert_allclose(y.grad.numpy(), np.clip(x.grad.numpy(), -0.1, 0.1))


def test_padding_gets_zero_gradient_and_batch_independence():
    logits, targets, tl, ul = make_case(4)
    x = ember.tensor(logits, requires_grad=True)
    loss = rnnt_loss(x, ember.tensor(targets), ember.tensor(tl), ember.tensor(ul),
                     reduction="none")
    loss.sum().backward()
    g = x.grad.numpy()
    for b in range(len(tl)):
        assert not g[b, tl[b]:].any() and not g[b, :, ul[b] + 1:].any()
        one = rnnt_loss(ember.tensor(logits[b:b + 1, :tl[b], :ul[b] + 1]),
                        ember.tensor(targets[b:b + 1, :max(ul[b], 1)]), ember.tensor(tl[b:b + 1]),
                        ember.tensor(ul[b:b + 1]), reduction="none")
        np.testing.assert_allclose(one.numpy()[0], loss.detach().numpy()[b], rtol=1e-12)


def test_bad_inputs_have_clear_errors():
    logits, targets, tl, ul = make_case(0)
    t, a, b = ember.tensor(targets), ember.tensor(tl), ember.tensor(ul)
    with pytest.raises(ValueError, match="logits must be 4-D"):
        rnnt_loss(ember.tensor(logits[0]), t, a, b)
    with pytest.raises(ValueError, match="logit_lengths must be in"):
        rnnt_loss(ember.tensor(logits), t, ember.tensor(tl + 10), b)
    with pytest.raises(ValueError, match="target_lengths must be in"):
        rnnt_loss(ember.tensor(logits), t, a, ember.tensor(ul + 5))
    with pytest.raises(TypeError, match="targets must hold integers"):
        rnnt_loss(ember.tensor(logits), ember.tensor(targets.astype(np.float32)), a, b)
    with pytest.raises(ValueError, match="class indices"):
        rnnt_loss(ember.tensor(logits), ember.tensor(targets + 10), a, b)
    with pytest.raises(ValueError, match="reduction"):
        rnnt_loss(ember.tensor(logits), t, a, b, reduction="avg")
    with pytest.raises(ValueError, match="blank"):
        rnnt_loss(ember.tensor(logits), t, a, b, blank=9)


def test_transform_module():
    from ember.audio.transforms import RNNTLoss

    logits, targets, tl, ul = make_case(1)
    args = (ember.tensor(targets), ember.tensor(tl), ember.tensor(ul))
    m = RNNTLoss(blank=-1, reduction="sum")
    np.testing.assert_allclose(m(ember.tensor(logits), *args).item(),
                               rnnt_loss(ember.tensor(logits), *args, reduction="sum").item())


@pytest.mark.skipif(not os.path.exists(FIXTURE), reason="torchaudio fixture not generated")
def test_matches_torchaudio_fixture():
    ref = np.load(FIXTURE)
    for case in sorted({k.split("/")[0] for k in ref.files if k.startswith("loss")}):
        g = {k.split("/", 1)[1]: ref[k] for k in ref.files if k.startswith(case + "/")}
        x = ember.tensor(g["logits"], requires_grad=True)
        loss = rnnt_loss(x, ember.tensor(g["targets"]), ember.tensor(g["logit_lengths"]),
                         ember.tensor(g["target_lengths"]), blank=int(g["blank"]),
                         clamp=float(g["clamp"]), reduction="none",
                         fused_log_softmax=bool(g["fused"]))
        np.testing.assert_allclose(loss.detach().numpy(), g["costs"], rtol=1e-5, atol=1e-5,
                                   err_msg=case)
        (loss * ember.tensor(g["up"])).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), g["grad"], rtol=1e-4, atol=1e-6,
                                   err_msg=case)
