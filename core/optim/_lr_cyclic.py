"""Cyclic schedulers: CosineAnnealingWarmRestarts (SGDR), CyclicLR and OneCycleLR (exported by
``ember.optim.lr_scheduler``). CyclicLR and OneCycleLR are stepped once per batch and also cycle
the momentum (``momentum``, or ``betas[0]`` for Adam-like optimizers) inversely to the lr.

    >>> import ember
    >>> from ember.optim.lr_scheduler import OneCycleLR
    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> round(sched.get_last_lr()[0], 4), opt.param_groups[0]["momentum"]
    (0.04, 0.95)
"""
from __future__ import annotations

import math
import types
from functools import partial

from ._lr_base import LRScheduler, format_param, group_values, set_group_value
from .optimizer import Optimizer

__all__ = ["CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR"]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, ``T_0`` first, each cycle ``T_mult``
    times longer. ``step(epoch)`` accepts fractional epochs (``step(epoch + i / iters)``)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or go to ``epoch`` (may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            lrs = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, lrs):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")


def _set_momentum(group, use_beta1, value):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _init_momentum(sched, optimizer, base_momentum, max_momentum, last_epoch, keep):
    """Set up momentum cycling; ``keep`` stores the per-group lists on the scheduler."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option "
                         "enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    bases = format_param("base_momentum", optimizer, base_momentum)
    maxes = format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for mx, bs, group in zip(maxes, bases, optimizer.param_groups):
            _set_momentum(group, sched.use_beta1, mx)
            group["max_momentum"] = mx
            group["base_momentum"] = bs
    if keep:
        sched.base_momentums = bases
        sched.max_momentums = maxes


class CyclicLR(LRScheduler):
    """Cyclical learning rate (Smith) between ``base_lr`` and ``max_lr``: ``triangular``,
    ``triangular2`` (amplitude halves each cycle), ``exp_range`` (scaled by ``gamma**iter``), or
    a custom ``scale_fn`` with ``scale_mode`` "cycle"/"iterations"."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                set_group_value(group, "lr", lr)
        self.max_lrs = format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch, keep=True)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = _one
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = _halving
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(_power, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self):
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            f = x / self.step_ratio
        else:
            f = (x - 1) / (self.step_ratio - 1)
        s = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * f * s for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b, m in zip(self.optimizer.param_groups, self.base_momentums,
                                   self.max_momentums):
                _set_momentum(group, self.use_beta1, m - (m - b) * f * s)
        return lrs

    def state_dict(self):
        sd = super().state_dict()
        sd.pop("_scale_fn_ref", None)
        fn = sd.pop("_scale_fn_custom")
        sd["_scale_fn_custom"] = (fn.__dict__.copy() if fn is not None
                                  and not isinstance(fn, types.FunctionType) else None)
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _one(x):
    return 1.0


def _halving(x):
    return 1 / (2.0 ** (x - 1))


def _power(gamma, x):
    return gamma ** x


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): warm up from ``max_lr / div_factor`` to ``max_lr``
    over ``pct_start`` of ``total_steps``, then anneal to ``initial_lr / final_div_factor``
    (``anneal_strategy`` "cos" or "linear"); ``three_phase`` returns to ``initial_lr`` before
    the final decay. Momentum (or beta1) cycles between ``max_momentum`` and
    ``base_momentum`` inversely."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        warm = float(pct_start * n) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(warm, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"),
                _phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._schedule_phases = [
                _phase(warm, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for mx, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = mx / div_factor
                group["max_lr"] = mx
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch, keep=False)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        self._warn_get_lr()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if step <= end or i == last:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[ph["start_momentum"]],
                                           group[ph["end_momentum"]], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, mom)
        return lrs


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}
