"""Probabilistic TensorDict modules: build a distribution from TensorDict entries, write a
value drawn from it (and optionally its log-probability).

The value comes from the interaction type: the one set by ``set_interaction_type`` around the
call, else the module's ``default_interaction_type``:

* ``RANDOM``: ``rsample()`` when the distribution has it, else ``sample()``;
* ``MODE`` / ``MEAN`` / ``MEDIAN``: that property (``MEAN`` averages
  ``n_empirical_estimate`` samples when the distribution has no closed-form mean);
* ``DETERMINISTIC`` (default): ``deterministic_sample`` when the distribution defines it,
  else the mode for discrete distributions and the mean for the others.

    >>> import ember
    >>> from ember import nn
    >>> from ember.distributions import Normal
    >>> from ember.rl import TensorDict
    >>> from ember.rl.tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule,
    ...     ProbabilisticTensorDictSequential, TensorDictModule, InteractionType,
    ...     set_interaction_type)
    >>> policy = ProbabilisticTensorDictSequential(
    ...     TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
    ...                      ["obs"], ["loc", "scale"]),
    ...     ProbabilisticTensorDictModule(["loc", "scale"], ["action"],
    ...                                   distribution_class=Normal, return_log_prob=True))
    >>> td = TensorDict({"obs": ember.randn(5, 3)}, [5])
    >>> with set_interaction_type(InteractionType.RANDOM):
    ...     td = policy(td)
    >>> td["action"].shape, td["action_log_prob"].shape
    ((5, 2), (5, 2))
"""
from __future__ import annotations

import enum
import functools
import threading

from ember.distributions import Bernoulli, Categorical, Independent, OneHotCategorical

from .._base import TensorDict
from .common import TensorDictModuleBase, norm_key, norm_keys
from .distributions import Delta
from .sequence import TensorDictSequential

__all__ = ["InteractionType", "interaction_type", "set_interaction_type",
           "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential"]


class InteractionType(str, enum.Enum):
    """How a probabilistic module turns its distribution into a value (see module doc).
    ``InteractionType("Random")`` is accepted (any case)."""

    MODE = "mode"
    MEDIAN = "median"
    MEAN = "mean"
    RANDOM = "random"
    DETERMINISTIC = "deterministic"

    @classmethod
    def from_str(cls, type_str):
        return cls(type_str.lower())

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            for m in cls:
                if m.value == value.lower():
                    return m
        return None


_STATE = threading.local()


def interaction_type():
    """The interaction type set by the innermost ``set_interaction_type``, or None."""
    stack = getattr(_STATE, "stack", None)
    return stack[-1] if stack else None


class set_interaction_type:
    """Context manager (and decorator) that sets the interaction type of every probabilistic
    module called inside it."""

    def __init__(self, type=InteractionType.DETERMINISTIC):
        self.type = None if type is None else InteractionType(type)

    def __enter__(self):
        if not hasattr(_STATE, "stack"):
            _STATE.stack = []
        _STATE.stack.append(self.type)
        return self

    def __exit__(self, *exc):
        _STATE.stack.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_interaction_type(self.type):
                return fn(*args, **kwargs)

        return wrapper


_DISCRETE = (Categorical, OneHotCategorical, Bernoulli)


def _log_prob_key(out_key):
    if isinstance(out_key, str):
        return out_key + "_log_prob"
    return out_key[:-1] + (out_key[-1] + "_log_prob",)


class ProbabilisticTensorDictModule(TensorDictModuleBase):
    """Build ``distribution_class(**params)`` from the TensorDict and write a value drawn from
    it.

    Args:
        in_keys: the distribution's parameters: a list of keys (each key's last name is the
            keyword argument, e.g. ``["loc", "scale"]``) or a dict ``{argument: key}``.
        out_keys: where the value goes (default ``["_"]``: not written).
        default_interaction_type: used when no ``set_interaction_type`` is active.
        distribution_class: the distribution (default ``Delta``).
        distribution_kwargs: extra constructor arguments.
        return_log_prob: also write ``log_prob(value)`` at ``log_prob_key`` (default:
            ``"<out_key>_log_prob"``).
        cache_dist: keep the last distribution in ``self._dist``.
        n_empirical_estimate: samples averaged for ``MEAN`` when there is no closed form.
    """

    def __init__(self, in_keys, out_keys=None, *,
                 default_interaction_type=InteractionType.DETERMINISTIC,
                 distribution_class=Delta, distribution_kwargs=None, return_log_prob=False,
                 log_prob_key=None, cache_dist=False, n_empirical_estimate=1000):
        super().__init__()
        if isinstance(in_keys, dict):
            self._dist_names = list(in_keys)
            keys = list(in_keys.values())
        else:
            keys = norm_keys(in_keys, "in_keys")
            self._dist_names = [k if isinstance(k, str) else k[-1] for k in keys]
        self.in_keys = norm_keys(keys, "in_keys")
        self._sample_keys = norm_keys(["_"] if out_keys is None else out_keys, "out_keys")
        self.default_interaction_type = InteractionType(default_interaction_type)
        self.distribution_class = distribution_class
        self.distribution_kwargs = dict(distribution_kwargs or {})
        self.return_log_prob = return_log_prob
        self.log_prob_key = norm_key(log_prob_key) if log_prob_key is not None else \
            _log_prob_key(self._sample_keys[0])
        self.cache_dist = cache_dist
        self._dist = None
        self.n_empirical_estimate = n_empirical_estimate

    @property
    def dist_params_keys(self):
        return list(self.in_keys)

    @property
    def dist_sample_keys(self):
        return [k for k in self._sample_keys if k != "_"]

    @property
    def out_keys(self):
        keys = list(self._sample_keys)
        if self.return_log_prob and self.log_prob_key not in keys:
            keys.append(self.log_prob_key)
        return keys

    def get_dist(self, tensordict):
        """The distribution built from ``tensordict``'s parameter entries."""
        params = {}
        for name, key in zip(self._dist_names, self.in_keys):
            v = tensordict.get(key, None)
            if v is None:
                raise KeyError(f"ProbabilisticTensorDictModule: parameter key {key!r} is "
                               f"missing from the TensorDict (its keys: "
                               f"{list(tensordict.keys(True))})")
            params[name] = v
        dist = self.distribution_class(**params, **self.distribution_kwargs)
        if self.cache_dist:
            self._dist = dist
        return dist

    def log_prob(self, tensordict, dist=None):
        """``log_prob`` of the value stored at the out key."""
        dist = self.get_dist(tensordict) if dist is None else dist
        return dist.log_prob(tensordict.get(self.dist_sample_keys[0]))

    def _draw(self, dist, itype):
        if itype is InteractionType.RANDOM:
            return dist.rsample() if dist.has_rsample else dist.sample()
        if itype is InteractionType.DETERMINISTIC:
            det = getattr(dist, "deterministic_sample", None)
            if det is not None:
                return det
            base = dist.base_dist if isinstance(dist, Independent) else dist
            itype = InteractionType.MODE if isinstance(base, _DISCRETE) else \
                InteractionType.MEAN
        if itype is InteractionType.MODE:
            return dist.mode
        if itype is InteractionType.MEDIAN:
            median = getattr(dist, "median", None)
            if median is None:
                raise AttributeError(f"{type(dist).__name__} has no median; use another "
                                     "interaction type")
            return median
        try:
            return dist.mean
        except NotImplementedError:  # no closed form: the empirical mean
            return dist.rsample((self.n_empirical_estimate,)).mean(0) if dist.has_rsample \
                else dist.sample((self.n_empirical_estimate,)).float().mean(0)

    def forward(self, tensordict=None, *args, tensordict_out=None, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        out = tensordict if tensordict_out is None else tensordict_out
        dist = self.get_dist(tensordict)
        itype = interaction_type() or self.default_interaction_type
        value = self._draw(dist, itype)
        keys = self.dist_sample_keys
        if keys:
            out.set(keys[0], value)
        if self.return_log_prob:
            out.set(self.log_prob_key, dist.log_prob(value))
        return out

    def __repr__(self):
        name = getattr(self.distribution_class, "__name__", repr(self.distribution_class))
        return (f"{type(self).__name__}(\n    in_keys={self.in_keys},\n    out_keys="
                f"{self.out_keys},\n    distribution_class={name},\n    "
                f"default_interaction_type={self.default_interaction_type.name})")


class ProbabilisticTensorDictSequential(TensorDictSequential):
    """A sequence whose last module is a ``ProbabilisticTensorDictModule``: ``get_dist`` runs
    the modules before it and returns its distribution."""

    def __init__(self, *modules, partial_tolerant=False):
        super().__init__(*modules, partial_tolerant=partial_tolerant)
        steps = self._steps()
        if not steps or not isinstance(steps[-1], ProbabilisticTensorDictModule):
            raise TypeError("ProbabilisticTensorDictSequential: the last module must be a "
                            "ProbabilisticTensorDictModule")

    def get_dist(self, tensordict):
        steps = self._steps()
        for m in steps[:-1]:
            tensordict = m(tensordict)
        return steps[-1].get_dist(tensordict)

    def log_prob(self, tensordict):
        steps = self._steps()
        for m in steps[:-1]:
            tensordict = m(tensordict)
        return steps[-1].log_prob(tensordict)

    @property
    def log_prob_key(self):
        return self._steps()[-1].log_prob_key
