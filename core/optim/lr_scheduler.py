"""Learning-rate schedulers, PyTorch's semantics: call ``scheduler.step()`` after
``optimizer.step()``, once per epoch (or per batch for OneCycleLR/CyclicLR).

This module holds the multiplicative family (Lambda, Multiplicative, Step, MultiStep, Constant,
Linear, Exponential, Polynomial, CosineAnnealing); the cyclic ones live in ``_lr_cyclic.py``,
the composing ones and ReduceLROnPlateau in ``_lr_compose.py``; all are exported here.

    >>> import ember
    >>> from ember.optim.lr_scheduler import StepLR
    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
"""
from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter

from ._lr_base import LRScheduler, group_values

_LRScheduler = LRScheduler  # the old name, still used by third-party schedulers

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau"]


class _LambdaBase(LRScheduler):
    """Schedulers driven by one user function per group; the functions are not saved (only the
    ``__dict__`` of callable objects is, as in PyTorch)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fns = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for own, saved in zip(self.lr_lambdas, fns):
            if saved is not None:
                own.__dict__.update(saved)


class LambdaLR(_LambdaBase):
    """``lr = initial_lr * lr_lambda(epoch)``."""

    def get_lr(self):
        self._warn_get_lr()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """``lr *= lr_lambda(epoch)`` on every step after the first."""

    def get_lr(self):
        self._warn_get_lr()
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """``lr = initial_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr *= gamma`` at each milestone epoch (repeated milestones multiply)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return group_values(self.optimizer, "lr")
        k = self.milestones[self.last_epoch]
        return [g["lr"] * self.gamma ** k for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = initial_lr * factor`` until ``total_iters``, then ``initial_lr``."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return group_values(self.optimizer, "lr")
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self):
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, "lr")
        d = self.end_factor - self.start_factor
        f = 1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d)
        return [g["lr"] * f for g in groups]

    def _get_closed_form_lr(self):
        d = self.end_factor - self.start_factor
        f = self.start_factor + d * min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * f for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = initial_lr * gamma ** epoch``."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power``."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, "lr")
        f = ((1.0 - self.last_epoch / self.total_iters)
             / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * f for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [b * f for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from ``initial_lr`` down to ``eta_min`` over ``T_max`` epochs (and back up, as
    PyTorch's recursive form does past ``T_max``); ``step(epoch)`` uses the closed form
    ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self):
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


from ._lr_cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: E402
from ._lr_compose import ChainedScheduler, ReduceLROnPlateau, SequentialLR  # noqa: E402
