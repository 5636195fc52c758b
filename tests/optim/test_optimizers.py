"""Every optimizer over its option grid: 20 steps on the same MLP as torch, params within 1e-5,
and the same state_dict (layout and values)."""
import copy

import numpy as np
import pytest
import torch

import ember
import ember.optim
from optim_parity import Pair, assert_same_state_dict, ember_loss

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.1, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.9), eps=1e-3)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True, betas=(0.8, 0.95))),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.9), eps=1e-4)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.05, maximize=True, betas=(0.3, 0.99))),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.99), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.6, 0.95), maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, maximize=True, eps=1e-3)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, maximize=True, eps=1e-3)),
]


def _id(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("name,kw", CASES, ids=[_id(c) for c in CASES])
def test_matches_torch(name, kw):
    pair = Pair(name, kw)
    pair.step(20)
    assert pair.max_diff() < 1e-5
    assert_same_state_dict(pair.oe.state_dict(), pair.ot.state_dict())


GROUPS = [([0, 1], dict(lr=0.03)), ([2, 3], {})]


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True))])
def test_param_groups(name, kw):
    pair = Pair(name, kw, spec=GROUPS)
    pair.step(10)
    assert pair.max_diff() < 1e-5
    assert_same_state_dict(pair.oe.state_dict(), pair.ot.state_dict())
    assert pair.oe.param_groups[0]["lr"] == 0.03


ROUND_TRIP = [CASES[3], CASES[9], CASES[13], CASES[17], CASES[20], CASES[24], CASES[29],
              CASES[33], ("SGD", dict(lr=0.1))]


@pytest.mark.parametrize("name,kw", ROUND_TRIP, ids=[_id(c) for c in ROUND_TRIP])
def test_state_dict_round_trip(name, kw):
    """Save at step 10, load into a fresh optimizer, continue: the same params as the
    uninterrupted run (bit for bit) and as torch."""
    pair = Pair(name, kw, spec=GROUPS)
    pair.step(10)
    sd = copy.deepcopy(pair.oe.state_dict())
    fresh = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pair.pe]
    groups = [dict(params=[fresh[i] for i in idx], **o) for idx, o in GROUPS]
    opt = getattr(ember.optim, name)(groups, **kw)
    opt.load_state_dict(sd)
    # a second copy resumes from torch's own state dict (torch tensors are read with numpy)
    fresh_t = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pair.pe]
    opt_t = getattr(ember.optim, name)(
        [dict(params=[fresh_t[i] for i in idx], **o) for idx, o in GROUPS], **kw)
    opt_t.load_state_dict(pair.ot.state_dict())
    for _ in range(10):
        for o, ps in ((opt, fresh), (opt_t, fresh_t)):
            o.zero_grad()
            ember_loss(ps, pair.t).backward()
            o.step()
        pair.step()
    for a, b in zip(fresh, pair.pe):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert pair.max_diff() < 1e-5
    for a, b in zip(fresh_t, pair.pt):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)
    assert_same_state_dict(opt.state_dict(), pair.ot.state_dict())


def test_state_dict_loaded_tensors_are_owned():
    pair = Pair("Adam", dict(lr=0.01))
    pair.step(2)
    sd = pair.oe.state_dict()
    opt = ember.optim.Adam(pair.pe, lr=0.01)
    opt.load_state_dict(sd)
    for k, st in sd["state"].items():
        loaded = opt.state[pair.pe[k]]
        for key in st:
            assert loaded[key] is not st[key]
            assert not np.shares_memory(loaded[key].numpy(), st[key].numpy())


def test_load_state_dict_casts_and_validates():
    w = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.Adam([w])
    w.grad = ember.ones(3, dtype=ember.float64)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0]["exp_avg"] = ember.ones(3)  # float32 in the checkpoint
    sd["state"][0]["step"] = 5  # an old-style int step
    opt.load_state_dict(sd)
    assert opt.state[w]["exp_avg"].dtype == ember.float64
    assert isinstance(opt.state[w]["step"], ember.Tensor) and float(opt.state[w]["step"]) == 5
    two = ember.optim.Adam([{"params": [w]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two.load_state_dict(sd)
    other = ember.optim.Adam([w, ember.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="doesn't match the size"):
        other.load_state_dict(sd)


def test_step_skips_params_without_grad_and_adagrad_state_exists_early():
    a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([a, b], lr=0.1)
    a.grad = ember.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and len(opt.state) == 1
    ta = torch.ones(2, requires_grad=True)
    tsd = torch.optim.Adagrad([ta], initial_accumulator_value=0.25).state_dict()
    esd = ember.optim.Adagrad([ember.ones(2, requires_grad=True)],
                              initial_accumulator_value=0.25).state_dict()
    assert_same_state_dict(esd, tsd)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("AdamW", dict(lr=0.01)), ("Adamax", dict(lr=0.01)),
                                     ("NAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01)),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
                                     ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2))])
def test_complex_params_match_torch(name, kw):
    """Complex parameters update their real and imaginary parts as separate reals, as torch's
    view_as_real does (here with a transposed, non-contiguous gradient)."""
    rng = np.random.default_rng(5)
    w0 = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(np.complex64)
    we = ember.tensor(w0.copy(), requires_grad=True)
    wt = torch.tensor(w0.copy(), requires_grad=True)
    oe = getattr(ember.optim, name)([we], **kw)
    ot = getattr(torch.optim, name)([wt], **kw)
    for _ in range(8):
        g = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(
            np.complex64).T
        we.grad = ember.Tensor._make(g)
        wt.grad = torch.tensor(np.ascontiguousarray(g))
        oe.step()
        ot.step()
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    assert_same_state_dict(oe.state_dict(), ot.state_dict())
