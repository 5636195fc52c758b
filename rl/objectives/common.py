"""``LossModule``: the base of the RL losses (torchrl's conventions).

* ``forward(tensordict)`` returns a TensorDict of scalars; the entries named ``loss_*`` are
  the terms to sum and backpropagate, the others are diagnostics (detached).
* ``tensor_keys`` lists the keys a loss reads; ``set_keys(action="my_action", ...)`` changes
  them (and the value estimator's keys with them).
* ``make_value_estimator(ValueEstimators.X, gamma=..., ...)`` picks the value estimator;
  ``value_estimator`` builds the loss's default one on first use.
* Target networks (``delay_* = True``) are frozen copies registered as ``target_<name>``:
  in ``state_dict``, not in ``parameters()``; ``SoftUpdate``/``HardUpdate`` move them.
"""
from __future__ import annotations

import copy
from dataclasses import fields, replace

import numpy as np

import ember
from ember import nn
from ember.rl.tensordict import TensorDict
from ember.rl.tensordict.nn.common import norm_key

from .utils import ValueEstimators, default_value_kwargs
from .value.advantages import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator

__all__ = ["LossModule", "frozen_copy", "frozen_params"]


def frozen_copy(module):
    """A deep copy of ``module`` whose parameters are plain buffers (no gradient, not
    returned by ``parameters()``, still in ``state_dict`` under the same names)."""
    tgt = copy.deepcopy(module)
    for m in tgt.modules():
        for name, p in list(m._parameters.items()):
            del m._parameters[name]
            m._buffers[name] = None if p is None else p.detach().clone()
    return tgt


class frozen_params:
    """Context manager: run ``module`` with its parameters not requiring gradients, so a
    loss term trains what feeds the module (an actor's action) but not the module itself
    (torchrl runs such terms with detached parameters)."""

    def __init__(self, *modules):
        self.params = [p for m in modules for p in m.parameters()]

    def __enter__(self):
        self.flags = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p, f in zip(self.params, self.flags):
            p.requires_grad_(f)


_ESTIMATORS = {ValueEstimators.TD0: TD0Estimator, ValueEstimators.TD1: TD1Estimator,
               ValueEstimators.TDLambda: TDLambdaEstimator, ValueEstimators.GAE: GAE}


class LossModule(nn.Module):
    """Base of the losses. Subclasses define ``_AcceptedKeys`` (a frozen dataclass of default
    keys), ``default_value_estimator`` and ``forward``, and may override
    ``_value_network_for_estimator`` and ``_estimator_keys``."""

    _AcceptedKeys = None
    default_value_estimator = ValueEstimators.TD0
    _supported_estimators = tuple(ValueEstimators)

    def __init__(self):
        super().__init__()
        self._tensor_keys = self._AcceptedKeys()
        self._value_estimator = None
        self._target_names = []
        self.gamma = None

    # ------------------------------------------------------------------ keys
    @property
    def tensor_keys(self):
        return self._tensor_keys

    def set_keys(self, **kwargs):
        """Change the keys the loss reads/writes, e.g. ``set_keys(reward="r")``."""
        valid = {f.name for f in fields(self._AcceptedKeys)}
        for k, v in kwargs.items():
            if k not in valid:
                raise KeyError(f"{type(self).__name__}.set_keys: {k!r} is not a key of this "
                               f"loss; expected one of {sorted(valid)}")
            if v is None:
                raise ValueError(f"{type(self).__name__}.set_keys: {k} cannot be None")
        self._tensor_keys = replace(self._tensor_keys,
                                    **{k: norm_key(v) for k, v in kwargs.items()})
        if self._value_estimator is not None:
            self._value_estimator.set_keys(**self._estimator_keys())
        return self

    def _estimator_keys(self):
        """The estimator keys this loss maps (``value``, ``reward``, ``done``, ...)."""
        k = self._tensor_keys
        out = {}
        for name in ("advantage", "value_target", "value", "reward", "done", "terminated",
                     "sample_log_prob"):
            if hasattr(k, name):
                out[name] = getattr(k, name)
        return out

    def _require(self, td, key, what=None):
        v = td.get(key, None)
        if v is None:
            raise KeyError(f"{type(self).__name__}: {what or 'the entry'} {key!r} is missing "
                           f"from the TensorDict (its keys: {list(td.keys(True))})")
        return v

    # ------------------------------------------------------------------ estimators
    def _value_network_for_estimator(self):
        """The network the estimator runs (``None``: the loss writes the values itself)."""
        return None

    @property
    def value_estimator(self):
        if self._value_estimator is None:
            self.make_value_estimator()
        return self._value_estimator

    @value_estimator.setter
    def value_estimator(self, est):
        self._value_estimator = est

    def make_value_estimator(self, value_type=None, **hyperparams):
        """Use the estimator ``value_type`` (a ``ValueEstimators`` member; default the loss's
        ``default_value_estimator``) with ``hyperparams`` (``gamma``, ``lmbda``, ...)."""
        value_type = self.default_value_estimator if value_type is None else value_type
        if isinstance(value_type, str):
            value_type = ValueEstimators[value_type]
        if value_type not in self._supported_estimators:
            raise ValueError(f"{type(self).__name__}: value estimator "
                             f"{value_type.name} is not supported; use one of "
                             f"{[v.name for v in self._supported_estimators]}")
        hp = default_value_kwargs(value_type)
        if self.gamma is not None:
            hp["gamma"] = self.gamma
        hp.update(hyperparams)
        est = _ESTIMATORS[value_type](value_network=self._value_network_for_estimator(), **hp)
        est.set_keys(**self._estimator_keys())
        self.value_type = value_type
        self._value_estimator = est
        return self

    # ------------------------------------------------------------------ targets
    def _make_target(self, name, delay=True):
        """Register ``target_<name>``: a frozen copy of ``<name>`` (``delay=False``: the
        network itself)."""
        net = getattr(self, name)
        if delay:
            setattr(self, "target_" + name, frozen_copy(net))
            self._target_names.append(name)

    def _target(self, name):
        """``target_<name>`` if the loss has it, else ``<name>`` itself."""
        tgt = self._modules.get("target_" + name)
        return tgt if tgt is not None else getattr(self, name)

    def _reduce_out(self, out: dict, reduction: str):
        """The output TensorDict: ``loss_*`` entries reduced, the rest detached."""
        from .utils import reduce
        vals = {}
        for k, v in out.items():
            if k.startswith("loss_"):
                vals[k] = reduce(v, reduction)
            else:
                vals[k] = v.detach() if isinstance(v, ember.Tensor) else ember.tensor(
                    np.float32(v))
        return TensorDict(vals, batch_size=[])
