"""Helpers shared by the losses, with torchrl's names: ``distance_loss``, the
``ValueEstimators`` enum with ``default_value_kwargs``, and the target-network updaters
``SoftUpdate`` (Polyak averaging) and ``HardUpdate`` (a copy every N steps).

    >>> from ember import nn
    >>> from ember.rl.modules import ValueOperator, QValueActor
    >>> from ember.rl.objectives import DQNLoss, SoftUpdate
    >>> loss = DQNLoss(QValueActor(nn.Linear(4, 2), action_space="categorical"))
    >>> updater = SoftUpdate(loss, tau=0.01)     # target <- 0.99 * target + 0.01 * online
    >>> updater.step()
"""
from __future__ import annotations

import enum

import numpy as np

import ember
from ember.nn import functional as F

__all__ = ["distance_loss", "ValueEstimators", "default_value_kwargs", "SoftUpdate",
           "HardUpdate", "TargetNetUpdater"]


def distance_loss(v1, v2, loss_function="l2", strict_shape=True):
    """Element-wise distance between ``v1`` and ``v2``: ``"l2"`` (squared error), ``"l1"``
    (absolute error) or ``"smooth_l1"`` (Huber with delta 1). No reduction."""
    if strict_shape and tuple(v1.shape) != tuple(v2.shape):
        raise RuntimeError(f"distance_loss: the inputs have different shapes "
                           f"{list(v1.shape)} and {list(v2.shape)}")
    if loss_function == "l2":
        return F.mse_loss(v1, v2, reduction="none")
    if loss_function == "l1":
        return F.l1_loss(v1, v2, reduction="none")
    if loss_function == "smooth_l1":
        return F.smooth_l1_loss(v1, v2, reduction="none")
    raise ValueError(f"distance_loss: unknown loss_function {loss_function!r}; "
                     "expected 'l1', 'l2' or 'smooth_l1'")


def reduce(tensor, reduction):
    """Reduce a loss tensor: ``"mean"``, ``"sum"`` or ``"none"``."""
    if reduction == "mean":
        return tensor.mean()
    if reduction == "sum":
        return tensor.sum()
    if reduction == "none":
        return tensor
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


class ValueEstimators(enum.Enum):
    """The value estimators a loss can use (``loss.make_value_estimator(...)``)."""

    TD0 = "Bootstrapped TD (1-step return)"
    TD1 = "TD(1) (infinity-step return)"
    TDLambda = "TD(lambda)"
    GAE = "Generalized advantage estimate"


def default_value_kwargs(value_type: ValueEstimators) -> dict:
    """The default hyperparameters of ``value_type``."""
    if value_type in (ValueEstimators.TD0, ValueEstimators.TD1):
        return {"gamma": 0.99, "differentiable": True}
    if value_type is ValueEstimators.TDLambda:
        return {"gamma": 0.99, "lmbda": 0.95, "differentiable": True}
    if value_type is ValueEstimators.GAE:
        return {"gamma": 0.99, "lmbda": 0.95}
    raise ValueError(f"unknown value estimator {value_type!r}")


# ----------------------------------------------------------------------------- updaters
class TargetNetUpdater:
    """Base of the target-network updaters: finds the (online, target) pairs of a loss
    module (every ``target_<name>`` with a matching ``<name>``) and their tensors."""

    def __init__(self, loss_module):
        names = getattr(loss_module, "_target_names", None)
        if not names:
            raise ValueError(f"{type(self).__name__}: {type(loss_module).__name__} has no "
                             "target networks (build the loss with delay_* = True)")
        self.loss_module = loss_module
        self._pairs = []
        for name in names:
            src = dict(getattr(loss_module, name).state_dict(keep_vars=True))
            dst = dict(getattr(loss_module, "target_" + name).state_dict(keep_vars=True))
            if set(src) != set(dst):
                raise RuntimeError(f"{type(self).__name__}: {name} and its target have "
                                   f"different entries ({sorted(set(src) ^ set(dst))}); "
                                   "run lazy networks once before building the loss")
            self._pairs += [(dst[k], src[k]) for k in src]
        self.initialized = True

    def init_(self):
        """Copy the online weights into the targets."""
        with ember.no_grad():
            for t, s in self._pairs:
                t.copy_(s.detach())

    def step(self):
        raise NotImplementedError(f"{type(self).__name__} must define step()")

    def update_values(self):
        """Same as ``step``."""
        self.step()

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


class SoftUpdate(TargetNetUpdater):
    """Polyak averaging at every ``step()``: ``target = eps * target + (1 - eps) * online``.

    Args:
        loss_module: a loss with target networks.
        eps: the weight kept by the target (``1 - tau``); default 0.999.
        tau: the weight of the online network (give ``eps`` or ``tau``).
    """

    def __init__(self, loss_module, *, eps=None, tau=None):
        if eps is not None and tau is not None:
            raise ValueError("SoftUpdate: give eps or tau, not both")
        eps = 1.0 - tau if tau is not None else (0.999 if eps is None else eps)
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"SoftUpdate: eps must be in [0, 1], got {eps}")
        super().__init__(loss_module)
        self.eps = float(eps)

    def step(self):
        w = 1.0 - self.eps
        with ember.no_grad():
            for t, s in self._pairs:
                if np.dtype(t.dtype).kind == "f":
                    t.lerp_(s.detach(), w)
                else:
                    t.copy_(s.detach())


class HardUpdate(TargetNetUpdater):
    """Copy the online weights into the targets every ``value_network_update_interval``
    calls of ``step()``."""

    def __init__(self, loss_module, *, value_network_update_interval=1000):
        if value_network_update_interval < 1:
            raise ValueError(f"HardUpdate: value_network_update_interval must be >= 1, got "
                             f"{value_network_update_interval}")
        super().__init__(loss_module)
        self.value_network_update_interval = int(value_network_update_interval)
        self.counter = 0

    def step(self):
        self.counter += 1
        if self.counter % self.value_network_update_interval == 0:
            self.init_()

    def state_dict(self):
        return {"counter": self.counter}

    def load_state_dict(self, state):
        self.counter = int(state["counter"])
