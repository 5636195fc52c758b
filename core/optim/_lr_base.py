"""``LRScheduler``: the base of the learning-rate schedulers (see ``lr_scheduler.py``).

A scheduler owns ``base_lrs`` (each group's ``initial_lr``), ``last_epoch`` (-1 before the
first step) and writes ``group["lr"]`` on each ``step()``. Subclasses give ``get_lr()``, the
*chainable* (recursive) form that updates from the current ``group["lr"]``, so schedulers
compose; ``_get_closed_form_lr()``, where present, serves ``step(epoch)``.

``state_dict()`` is the scheduler's ``__dict__`` without the optimizer, with PyTorch's attribute
names, so the two layouts match.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")


def _copy(v):
    return v.clone() if isinstance(v, Tensor) else v


def format_param(name, optimizer, value):
    """One value per param group: ``value`` repeated, or a list of matching length."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return [_copy(v) for v in value]
    return [_copy(value)] * len(optimizer.param_groups)


def group_values(optimizer, key):
    return [_copy(g[key]) for g in optimizer.param_groups]


def set_group_value(group, key, value):
    """Write ``value`` into ``group[key]`` (in place when the group holds a Tensor)."""
    cur = group[key]
    if isinstance(cur, Tensor):
        cur.array[...] = float(value)
    else:
        group[key] = value


class LRScheduler:
    """Base of the schedulers. ``last_epoch=-1`` starts fresh (records each group's
    ``initial_lr``); a value >= 0 resumes and needs ``initial_lr`` in every group."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming a scheduler with last_epoch >= 0: load the "
                                   "optimizer's state first")
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # -- state --------------------------------------------------------------------------------
    def state_dict(self):
        """Everything but the optimizer (PyTorch's keys)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def get_lr(self):
        """The chainable form: next learning rates from the current ones (subclasses)."""
        raise RuntimeError(f"{type(self).__name__} does not define get_lr(): an LRScheduler "
                           "subclass must")

    def _warn_get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    # -- stepping -----------------------------------------------------------------------------
    def step(self, epoch=None):
        """Advance one epoch (or jump to ``epoch``, using the closed form where there is one)."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should "
                "call them in the opposite order: `optimizer.step()` before "
                "`lr_scheduler.step()`. Failure to do this will result in skipping the first "
                "value of the learning rate schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(f"{type(self).__name__}: {len(values)} learning rates for "
                             f"{len(groups)} param groups")
        for group, lr in zip(groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")
