"""ember.nn.functional.ctc_loss against torch.nn.functional.ctc_loss (loss and the gradient
w.r.t. log_probs as torch computes it), a brute-force sum over alignments, and a float64
gradcheck through log_softmax."""
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import check_op

import ember
import ember.nn.functional as F


def _log_probs(T, N, C, seed=0, dtype=np.float32):
    x = np.random.default_rng(seed).standard_normal((T, N, C))
    x = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return x.astype(dtype)


def _compare(lp, targets, il, tl, *, device="cpu", atol=1e-5, **kw):
    """Loss and d(loss . v)/d(log_probs) of ember vs torch; returns ember's (loss, grad)."""
    el = ember.tensor(lp, device=device, requires_grad=True)
    tlp = torch.tensor(lp, requires_grad=True)
    def conv(v, lib):  # numpy lengths -> tensors of each library
        return v if not isinstance(v, np.ndarray) else (
            ember.tensor(v, device=device) if lib is ember else torch.tensor(v))

    eo = F.ctc_loss(el, ember.tensor(targets, device=device), conv(il, ember), conv(tl, ember),
                    **kw)
    to = TF.ctc_loss(tlp, torch.tensor(targets), conv(il, torch), conv(tl, torch), **kw)
    assert eo.dtype == getattr(ember, str(to.dtype).replace("torch.", ""))
    v = np.random.default_rng(5).standard_normal(to.shape).astype(lp.dtype)
    eo_np = eo.detach().cpu().numpy()
    np.testing.assert_allclose(eo_np, to.detach().numpy(), rtol=1e-5, atol=atol)
    (eg,) = ember.autograd.grad([eo], [el], [ember.tensor(v, device=device)])
    (tg,) = torch.autograd.grad([to], [tlp], [torch.tensor(v)])
    np.testing.assert_allclose(eg.cpu().numpy(), tg.numpy(), rtol=1e-4, atol=atol)
    return eo_np, eg.cpu().numpy()


T, N, C = 12, 4, 6
IL = [12, 10, 7, 12]
TL = [5, 3, 0, 4]
PADDED = np.array([[1, 2, 2, 3, 1, 0], [4, 4, 5, 0, 0, 0], [0, 0, 0, 0, 0, 0],
                   [5, 1, 5, 1, 0, 0]])  # repeats (2 2, 4 4) need a blank between them


def _concat(padded, tl):
    return np.concatenate([padded[b, :n] for b, n in enumerate(tl)])


@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_matches_torch(layout, reduction, zero_infinity, device):
    targets = PADDED if layout == "padded" else _concat(PADDED, TL)
    _compare(_log_probs(T, N, C), targets, IL, TL, reduction=reduction,
             zero_infinity=zero_infinity, device=device)


@pytest.mark.parametrize("blank", [0, 3, 5])
def test_ctc_blank_and_length_types(blank):
    targets = np.where(PADDED == blank, (blank + 1) % C, PADDED)  # no label equals blank
    lp = _log_probs(T, N, C, seed=1)
    _compare(lp, targets, IL, TL, blank=blank, reduction="none")
    a = F.ctc_loss(ember.tensor(lp), ember.tensor(targets), ember.tensor(IL, dtype=ember.int32),
                   ember.tensor(TL), blank=blank)
    b = F.ctc_loss(ember.tensor(lp), ember.tensor(targets).int(), tuple(IL), TL, blank=blank)
    assert a.item() == pytest.approx(b.item())


def test_ctc_float64_and_gradcheck_through_log_softmax():
    """The gradient w.r.t. the logits is exact: torch's comparison plus a numerical check."""
    tg = ember.tensor(PADDED[:, :5])
    ttg = torch.tensor(PADDED[:, :5])
    il, tl = [6, 5, 3, 6], [3, 2, 0, 2]
    check_op(lambda x: F.ctc_loss(x.log_softmax(2), tg, il, tl),
             lambda x: TF.ctc_loss(x.log_softmax(2), ttg, il, tl), [(6, N, C)], gradgrad=False)
    _compare(_log_probs(T, N, C, dtype=np.float64), PADDED, IL, TL, reduction="none")


def _brute_force(lp, target, blank):
    """-log of the summed probability of every alignment that collapses to ``target``."""
    Tn, Cn = lp.shape
    total = 0.0
    for path in itertools.product(range(Cn), repeat=Tn):
        out, prev = [], None
        for c in path:
            if c != prev and c != blank:
                out.append(c)
            prev = c
        if out == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


@pytest.mark.parametrize("target", [[1, 2], [2, 2], [1], []])
def test_ctc_brute_force(target):
    lp = _log_probs(5, 1, 3, seed=2, dtype=np.float64)[:, 0]
    got = F.ctc_loss(ember.tensor(lp), ember.tensor(np.array(target, np.int64)),
                     ember.tensor(5), ember.tensor(len(target)), reduction="none")
    assert got.shape == ()
    assert got.item() == pytest.approx(_brute_force(lp, target, 0), rel=1e-10)


def test_ctc_unbatched():
    lp = _log_probs(T, 1, C, seed=3)[:, 0]
    tg = np.array([1, 3, 3, 2])
    got = {}
    for red in ("none", "mean", "sum"):
        got[red], _ = _compare(lp, tg, np.array(10), np.array(4), reduction=red)
        assert got[red].shape == ()
    assert got["mean"] == pytest.approx(got["none"] / 4)
    e = F.ctc_loss(ember.tensor(lp), ember.tensor(tg), 10, 4)  # plain ints are fine too
    assert e.item() == pytest.approx(float(got["mean"]))


def test_ctc_impossible_alignments():
    """Targets that no alignment of the input can produce: inf loss (NaN grads, as torch),
    zeroed with zero_infinity."""
    tg = np.array([[1, 1, 1, 1], [1, 2, 3, 4], [1, 2, 1, 2]])
    il, tl = [6, 3, 4], [4, 4, 4]  # 1 1 1 1 needs 7 frames; 4 labels can't fit in 3
    lp = _log_probs(6, 3, 5)
    loss, grad = _compare(lp, tg, il, tl, reduction="none")
    assert np.isinf(loss[:2]).all() and np.isfinite(loss[2])
    assert np.isnan(grad[:il[1], 1]).all() and np.isfinite(grad[:, 2]).all()
    for red in ("none", "mean", "sum"):
        loss, grad = _compare(lp, tg, il, tl, reduction=red, zero_infinity=True)
        assert np.isfinite(loss).all() and np.all(grad[:, :2] == 0)


def test_ctc_empty_inputs_and_targets():
    lp = _log_probs(T, N, C, seed=4)
    _compare(lp, PADDED, [12, 0, 5, 0], [5, 0, 0, 2], reduction="none")  # 0 frames
    _compare(lp, PADDED, IL, [0, 0, 0, 0], reduction="mean")


def test_ctc_double_backward_unsupported():
    lp = ember.tensor(_log_probs(6, 2, 4), requires_grad=True)
    loss = F.ctc_loss(lp, ember.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2])
    (g,) = ember.autograd.grad([loss], [lp], create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="double backward through ctc_loss is unsupported"):
        g.sum().backward()


def test_ctc_errors():
    lp = ember.tensor(_log_probs(6, 3, 5))
    tg = ember.randint(1, 5, (3, 4))
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, but "
                                           "got value 7"):
        F.ctc_loss(lp, tg, [6, 5, 7], [4, 2, 0])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at least 0"):
        F.ctc_loss(lp, tg, [6, -5, 4], [4, 2, 0])
    with pytest.raises(RuntimeError, match="Expected target_lengths to have value at least 0"):
        F.ctc_loss(lp, tg, [6, 5, 4], [4, -2, 0])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 5 at "
                                           "dimension 1, but got size 4"):
        F.ctc_loss(lp, tg, [6, 5, 4], [4, 2, 5])
    with pytest.raises(RuntimeError, match="Expected tensor to have size 6 at dimension 0, but "
                                           "got size 5"):
        F.ctc_loss(lp, tg.reshape(-1)[:5], [6, 5, 4], [4, 2, 0])
    with pytest.raises(RuntimeError, match="Expected tensor to have size 3 at dimension 0"):
        F.ctc_loss(lp, tg[:2], [6, 5, 4], [4, 2, 0])
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg, [6, 5], [4, 2, 0])
    with pytest.raises(RuntimeError, match="target_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg, [6, 5, 4], [4, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, [6, 5, 4], [4, 2, 0], blank=5)
    with pytest.raises(RuntimeError, match="Expected 3-dimensional tensor, but got 4"):
        F.ctc_loss(lp.unsqueeze(2), tg, [6, 5, 4], [4, 2, 0])
    with pytest.raises(RuntimeError, match="Expected 1 to 2 dimensions, but got 3"):
        F.ctc_loss(lp, tg.unsqueeze(2), [6, 5, 4], [4, 2, 0])
    with pytest.raises(IndexError, match=r"targets must be class indices in \[0, 4\], got 7"):
        F.ctc_loss(lp, ember.full((3, 4), 7), [6, 5, 4], [4, 2, 1])
    with pytest.raises(RuntimeError, match="integer dtype"):
        F.ctc_loss(lp, tg.float(), [6, 5, 4], [4, 2, 0])
    with pytest.raises(TypeError, match="sequence of ints"):
        F.ctc_loss(lp, tg, [6.0, 5, 4], [4, 2, 0])
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(lp, tg, [6, 5, 4], [4, 2, 0], reduction="foo")
