"""Every scheduler's lr (and momentum) sequence against torch's over 30 steps, with a
state_dict round trip halfway; closed forms for step(epoch); the ordering warning."""
import math
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.optim
from ember.optim import lr_scheduler as EL
from torch.optim import lr_scheduler as TL


class Scale:
    """A callable object: its __dict__ is saved with LambdaLR's state."""

    def __init__(self, g):
        self.g = g

    def __call__(self, e):
        return self.g ** e


SCHEDULERS = {
    "lambda": lambda L, o: L.LambdaLR(o, lambda e: 0.95 ** e),
    "lambda_list": lambda L, o: L.LambdaLR(o, [Scale(0.9), lambda e: 1.0 / (1 + e)]),
    "multiplicative": lambda L, o: L.MultiplicativeLR(o, lambda e: 0.93),
    "step": lambda L, o: L.StepLR(o, step_size=7, gamma=0.5),
    "multistep": lambda L, o: L.MultiStepLR(o, milestones=[5, 12, 12, 20], gamma=0.5),
    "constant": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=8),
    "linear_up": lambda L, o: L.LinearLR(o, start_factor=0.2, total_iters=10),
    "linear_down": lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12),
    "exponential": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "polynomial": lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0),
    "cosine": lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "warm_restarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2,
                                                                eta_min=0.001),
    "warm_restarts_1": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4),
    "cyclic_tri": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "cyclic_tri2": lambda L, o: L.CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=3,
                                           step_size_down=5, mode="triangular2"),
    "cyclic_exp": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range",
                                          gamma=0.9, base_momentum=0.7, max_momentum=0.95),
    "cyclic_fn": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4,
                                         scale_fn=lambda x: 0.5 ** x,
                                         scale_mode="iterations", cycle_momentum=False),
    "onecycle_cos": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.3], total_steps=31),
    "onecycle_linear": lambda L, o: L.OneCycleLR(o, max_lr=0.5, epochs=3, steps_per_epoch=11,
                                                 anneal_strategy="linear", pct_start=0.25),
    "onecycle_3phase": lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=31,
                                                 three_phase=True, div_factor=10.0),
    "sequential": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.CosineAnnealingLR(o, T_max=20),
            L.StepLR(o, 3)], milestones=[5, 22]),
    "chained": lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4),
                                                L.ExponentialLR(o, gamma=0.9)]),
}


def _optimizers(kind):
    w = [np.zeros(2, np.float32), np.zeros(3, np.float32)]
    groups_e = [dict(params=[ember.tensor(w[0], requires_grad=True)]),
                dict(params=[ember.tensor(w[1], requires_grad=True)], lr=0.05)]
    groups_t = [dict(params=[torch.tensor(w[0], requires_grad=True)]),
                dict(params=[torch.tensor(w[1], requires_grad=True)], lr=0.05)]
    if kind == "adam":
        return ember.optim.Adam(groups_e, lr=0.1), torch.optim.Adam(groups_t, lr=0.1)
    return (ember.optim.SGD(groups_e, lr=0.1, momentum=0.9),
            torch.optim.SGD(groups_t, lr=0.1, momentum=0.9))


def _record(opt):
    out = []
    for g in opt.param_groups:
        out.append(g["lr"])
        out.append(g["betas"][0] if "betas" in g else g["momentum"])
    return out


def _run(make, kind, steps=30, save_at=14):
    oe, ot = _optimizers(kind)
    se, st = make(EL, oe), make(TL, ot)
    seq_e, seq_t = [_record(oe) + se.get_last_lr()], [_record(ot) + st.get_last_lr()]
    for i in range(steps):
        oe.step()
        ot.step()
        se.step()
        st.step()
        seq_e.append(_record(oe) + se.get_last_lr())
        seq_t.append(_record(ot) + st.get_last_lr())
        if i == save_at:  # resume: fresh optimizer and scheduler, state loaded into both
            osd, ssd = oe.state_dict(), se.state_dict()
            assert set(ssd) == set(st.state_dict())
            oe, _ = _optimizers(kind)
            se = make(EL, oe)
            oe.load_state_dict(osd)
            se.load_state_dict(ssd)
    return seq_e, seq_t


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_sequence_matches_torch(name):
    kinds = ["sgd", "adam"] if name.startswith(("onecycle", "cyclic_exp")) else ["sgd"]
    for kind in kinds:
        seq_e, seq_t = _run(SCHEDULERS[name], kind)
        np.testing.assert_allclose(np.array(seq_e), np.array(seq_t), rtol=1e-12, atol=1e-15)


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.7, 0.7,
               0.7, 0.7, 0.7, 0.7, 0.7, 0.6999, 0.7, 0.7, 0.7, 0.7, 0.7]
    configs = [dict(patience=2), dict(mode="max", patience=1, factor=0.5),
               dict(patience=1, threshold=0.05, threshold_mode="abs", cooldown=2),
               dict(mode="max", threshold_mode="abs", patience=0, min_lr=[0.02, 0.01]),
               dict(patience=0, factor=0.5, min_lr=0.03, eps=1e-3)]
    for cfg in configs:
        oe, ot = _optimizers("sgd")
        se, st = EL.ReduceLROnPlateau(oe, **cfg), TL.ReduceLROnPlateau(ot, **cfg)
        for i, m in enumerate(metrics):
            se.step(ember.tensor(m) if i % 2 else m)
            st.step(m)
            assert se.get_last_lr() == st.get_last_lr(), (cfg, i)
            if i == 10:
                sd = se.state_dict()
                assert set(sd) == set(st.state_dict())
                se = EL.ReduceLROnPlateau(oe, **cfg)
                se.load_state_dict(sd)
        assert se.num_bad_epochs == st.num_bad_epochs and se.best == st.best


CLOSED = ["step", "multistep", "constant", "linear_up", "linear_down", "exponential",
          "polynomial", "cosine"]


@pytest.mark.parametrize("name", CLOSED)
def test_step_with_epoch_uses_closed_form(name):
    oe, ot = _optimizers("sgd")
    se, st = SCHEDULERS[name](EL, oe), SCHEDULERS[name](TL, ot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in [1, 3, 7, 2, 15, 25, 9, 0]:
            oe.step()
            ot.step()
            se.step(e)
            st.step(e)
            assert se.get_last_lr() == pytest.approx(st.get_last_lr(), rel=1e-12)
            assert se.last_epoch == st.last_epoch


def test_warm_restarts_fractional_epochs():
    for t_mult in (1, 2, 3):
        oe, ot = _optimizers("sgd")
        se = EL.CosineAnnealingWarmRestarts(oe, T_0=3, T_mult=t_mult, eta_min=0.01)
        st = TL.CosineAnnealingWarmRestarts(ot, T_0=3, T_mult=t_mult, eta_min=0.01)
        iters = 4
        for epoch in range(12):
            for i in range(iters):
                oe.step()
                ot.step()
                se.step(epoch + i / iters)
                st.step(epoch + i / iters)
                assert se.get_last_lr() == pytest.approx(st.get_last_lr(), rel=1e-12)
                assert (se.T_i, se.last_epoch) == (st.T_i, st.last_epoch)
        with pytest.raises(ValueError, match="non-negative epoch"):
            se.step(-1)


def test_scheduler_before_optimizer_warns():
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    sched = EL.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    sched2 = EL.StepLR(opt2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        sched2.step()
        sched2.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


def test_scheduler_errors_and_resume():
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        EL.StepLR(object(), 2)
    with pytest.raises(KeyError, match="initial_lr"):
        EL.StepLR(opt, 2, last_epoch=3)
    with pytest.raises(ValueError, match="total_steps"):
        EL.OneCycleLR(opt, 0.1)
    with pytest.raises(ValueError, match="at least one scheduler"):
        EL.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        EL.ChainedScheduler([EL.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        EL.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="T_0"):
        EL.CosineAnnealingWarmRestarts(opt, T_0=0)
    adagrad = ember.optim.Adagrad([ember.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="momentum or beta1"):
        EL.OneCycleLR(adagrad, 0.1, total_steps=10)
    sched = EL.OneCycleLR(opt, 1.0, total_steps=2)
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()
    # resuming with last_epoch uses the recorded initial_lr
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    EL.ExponentialLR(opt, 0.5)
    s = EL.ExponentialLR(opt, 0.5, last_epoch=4)
    assert s.base_lrs == [1.0] and math.isclose(s.get_last_lr()[0], 1.0)


def test_tensor_lr_is_updated_in_place():
    lr = ember.tensor(0.1)
    opt = ember.optim.Adam([ember.zeros(1, requires_grad=True)], lr=lr)
    sched = EL.ExponentialLR(opt, 0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and math.isclose(float(lr), 0.05, rel_tol=1e-6)
