"""Actors and value operators with torchrl's names and default keys.

* ``Actor``: a deterministic policy, ``["observation"] -> ["action"]``.
* ``ProbabilisticActor``: a module writing distribution parameters, then a
  ``ProbabilisticTensorDictModule`` that builds the distribution and writes ``"action"``.
* ``ValueOperator``: ``["observation"] -> ["state_value"]``, or ``["state_action_value"]``
  when ``"action"`` is an input.
* ``QValueModule`` / ``QValueActor``: greedy actions from action values, written as
  ``"action"``, ``"action_value"`` and ``"chosen_action_value"``.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> from ember.rl.envs import Categorical
    >>> from ember.rl.modules import MLP, QValueActor
    >>> qnet = QValueActor(MLP(in_features=4, out_features=2, num_cells=[8]),
    ...                    spec=Categorical(2))
    >>> td = qnet(TensorDict({"observation": ember.randn(5, 4)}, [5]))
    >>> td["action"].shape, td["action_value"].shape, td["chosen_action_value"].shape
    ((5,), (5, 2), (5, 1))
"""
from __future__ import annotations

import numpy as np

import ember
from ember.rl.tensordict import TensorDict
from ember.rl.tensordict.nn import (ProbabilisticTensorDictModule,
                                    ProbabilisticTensorDictSequential, TensorDictModule,
                                    TensorDictModuleBase, TensorDictSequential)
from ember.rl.tensordict.nn.common import norm_key, norm_keys

from .distributions import TanhNormal

__all__ = ["Actor", "ProbabilisticActor", "ValueOperator", "QValueModule", "QValueActor"]


def _project(spec, value):
    """``value`` projected into ``spec`` where it lies outside (a ``safe`` module)."""
    if spec is None or spec.is_in(value):
        return value
    return spec.project(value).to(value.dtype)


class Actor(TensorDictModule):
    """A deterministic policy: ``module`` reads ``in_keys`` (default ``["observation"]``) and
    writes ``out_keys`` (default ``["action"]``). With ``safe=True`` an action outside
    ``spec`` is projected into it."""

    def __init__(self, module, in_keys=None, out_keys=None, *, spec=None, safe=False,
                 **kwargs):
        super().__init__(module, ["observation"] if in_keys is None else in_keys,
                         ["action"] if out_keys is None else out_keys, **kwargs)
        self.spec, self.safe = spec, safe
        if safe and spec is None:
            raise ValueError("Actor: safe=True needs a spec")

    def forward(self, tensordict=None, *args, **kwargs):
        out = super().forward(tensordict, *args, **kwargs)
        if self.safe and isinstance(out, TensorDict):
            key = self.out_keys[0]
            out.set(key, _project(self.spec, out.get(key)))
        return out


class ProbabilisticActor(ProbabilisticTensorDictSequential):
    """``module`` (a TensorDict module writing the distribution parameters ``in_keys``, e.g.
    ``["loc", "scale"]`` or ``["logits"]``) followed by a ``ProbabilisticTensorDictModule``
    that writes the action at ``out_keys`` (default ``["action"]``).

    Keyword arguments go to the probabilistic module (``distribution_class``,
    ``distribution_kwargs``, ``return_log_prob``, ``default_interaction_type``, ...). With a
    bounded ``spec`` and ``TanhNormal``, the distribution's ``low``/``high`` default to the
    spec's bounds. ``safe=True`` projects sampled actions into ``spec``.
    """

    def __init__(self, module, in_keys, out_keys=None, *, spec=None, safe=False, **kwargs):
        if isinstance(in_keys, (str, tuple)):
            in_keys = [in_keys]
        out_keys = ["action"] if out_keys is None else out_keys
        dist_cls = kwargs.get("distribution_class")
        if spec is not None and dist_cls is TanhNormal and hasattr(spec, "low"):
            dkw = dict(kwargs.get("distribution_kwargs") or {})
            if "low" not in dkw and "high" not in dkw:
                dkw["low"] = ember.tensor(np.asarray(spec.low, np.float32))
                dkw["high"] = ember.tensor(np.asarray(spec.high, np.float32))
                kwargs["distribution_kwargs"] = dkw
        prob = ProbabilisticTensorDictModule(in_keys, out_keys, **kwargs)
        super().__init__(module, prob)
        self.spec, self.safe = spec, safe
        if safe and spec is None:
            raise ValueError("ProbabilisticActor: safe=True needs a spec")

    def forward(self, tensordict=None, *args, **kwargs):
        out = super().forward(tensordict, *args, **kwargs)
        if self.safe and isinstance(out, TensorDict):
            key = self._steps()[-1].dist_sample_keys[0]
            out.set(key, _project(self.spec, out.get(key)))
        return out


class ValueOperator(TensorDictModule):
    """A value function: ``module`` reads ``in_keys`` (default ``["observation"]``) and
    writes ``"state_value"`` (or ``"state_action_value"`` when ``"action"`` is an input)."""

    def __init__(self, module, in_keys=None, out_keys=None):
        in_keys = ["observation"] if in_keys is None else in_keys
        if out_keys is None:
            keys = norm_keys(in_keys, "in_keys")
            out_keys = ["state_action_value"] if "action" in keys else ["state_value"]
        super().__init__(module, in_keys, out_keys)


_SPACES = {"one_hot": "one_hot", "one-hot": "one_hot", "onehot": "one_hot",
           "categorical": "categorical"}


def _action_space(action_space, spec, who):
    if action_space is None and spec is None:
        return "one_hot"
    if action_space is None:
        name = type(spec).__name__
        if name == "OneHot":
            return "one_hot"
        if name == "Categorical":
            return "categorical"
        raise ValueError(f"{who}: cannot infer the action space from spec {spec!r}; expected "
                         "a OneHot or Categorical spec")
    if not isinstance(action_space, str) or action_space not in _SPACES:
        raise ValueError(f"{who}: action_space must be one of {sorted(set(_SPACES.values()))},"
                         f" got {action_space!r}")
    return _SPACES[action_space]


class QValueModule(TensorDictModuleBase):
    """Greedy action from action values: reads ``action_value_key`` (default
    ``"action_value"``, shape ``[*batch, n_actions]``) and writes ``"action"`` (an index for
    a ``categorical`` space, a one-hot int64 vector for ``one_hot``), the action values and
    ``"chosen_action_value"`` (``[*batch, 1]``). With ``action_mask_key``, masked-out
    actions (mask False) are never chosen.

    ``action_space`` is ``"one_hot"`` or ``"categorical"``, else read from ``spec``
    (``OneHot`` / ``Categorical``); ``one_hot`` when neither is given.
    """

    def __init__(self, action_space=None, action_value_key=None, action_mask_key=None,
                 out_keys=None, var_nums=None, spec=None, safe=False):
        super().__init__()
        self.action_space = _action_space(action_space, spec, "QValueModule")
        self.action_value_key = norm_key(action_value_key or "action_value")
        self.action_mask_key = None if action_mask_key is None else norm_key(action_mask_key)
        self.in_keys = [self.action_value_key] + ([self.action_mask_key]
                                                  if self.action_mask_key else [])
        self.out_keys = norm_keys(out_keys or ["action", self.action_value_key,
                                               "chosen_action_value"], "out_keys")
        if len(self.out_keys) != 3:
            raise ValueError(f"QValueModule: out_keys must name (action, action_value, "
                             f"chosen_action_value), got {self.out_keys}")
        self.spec, self.safe, self.var_nums = spec, safe, var_nums

    def forward(self, tensordict=None, *args, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        values = tensordict.get(self.action_value_key, None)
        if values is None:
            raise KeyError(f"QValueModule: the action values {self.action_value_key!r} are "
                           f"missing from the TensorDict (its keys: "
                           f"{list(tensordict.keys(True))})")
        scored = values
        if self.action_mask_key is not None:
            mask = tensordict.get(self.action_mask_key).bool()
            low = float(np.finfo(np.dtype(values.dtype)).min)
            scored = ember.where(mask, values, ember.full_like(values, low))
        index = scored.argmax(-1)
        chosen = values.gather(-1, index.unsqueeze(-1))
        if self.action_space == "categorical":
            action = index
        else:
            action = ember.nn.functional.one_hot(index, values.shape[-1]).to(ember.int64)
        key_a, key_v, key_c = self.out_keys
        tensordict.set(key_a, action)
        if key_v != self.action_value_key:
            tensordict.set(key_v, values)
        tensordict.set(key_c, chosen)
        return tensordict


class QValueActor(TensorDictSequential):
    """``module`` (observation -> action values) followed by a ``QValueModule``.

    Args:
        module: network mapping ``in_keys`` (default ``["observation"]``) to action values
            (or a TensorDict module writing ``action_value_key`` itself).
        spec / action_space / action_value_key / action_mask_key: as ``QValueModule``.
    """

    def __init__(self, module, *, in_keys=None, spec=None, safe=False, action_space=None,
                 action_value_key=None, action_mask_key=None):
        action_value_key = action_value_key or "action_value"
        if not isinstance(module, TensorDictModuleBase):
            module = TensorDictModule(module, ["observation"] if in_keys is None else in_keys,
                                      [action_value_key])
        elif action_value_key not in module.out_keys:
            raise ValueError(f"QValueActor: the TensorDict module writes {module.out_keys}, "
                             f"not the action values {action_value_key!r}")
        qvalue = QValueModule(action_space=action_space, action_value_key=action_value_key,
                              action_mask_key=action_mask_key, spec=spec, safe=safe)
        super().__init__(module, qvalue)
        self.spec, self.action_space = spec, qvalue.action_space
        self.action_value_key = qvalue.action_value_key
