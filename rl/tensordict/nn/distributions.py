"""Distribution helpers for TensorDict modules: ``NormalParamExtractor`` (split a network's
output into a location and a positive scale), the scale mappings it uses, and ``Delta`` (the
distribution of one fixed value: a deterministic module written as a probabilistic one).

    >>> import ember
    >>> from ember.rl.tensordict.nn import NormalParamExtractor
    >>> loc, scale = NormalParamExtractor()(ember.zeros(2, 6))
    >>> loc.shape, round(scale[0, 0].item(), 4)       # input 0 maps to scale 1.0
    ((2, 3), 1.0)
"""
from __future__ import annotations

import math

import ember
from ember import nn
from ember.distributions import Distribution, constraints
from ember.nn import functional as F

__all__ = ["NormalParamExtractor", "Delta", "mappings", "biased_softplus", "expln",
           "inv_softplus"]


def inv_softplus(y: float) -> float:
    """x such that softplus(x) = y (y > 0)."""
    return math.log(math.expm1(y))


class biased_softplus(nn.Module):
    """``softplus(x + b) + min_val`` with ``b`` chosen so that ``x = 0`` maps to ``bias``."""

    def __init__(self, bias: float, min_val: float = 0.01):
        super().__init__()
        if bias <= min_val:
            raise ValueError(f"biased_softplus: bias {bias} must be above min_val {min_val}")
        self.bias = inv_softplus(bias - min_val)
        self.min_val = min_val

    def forward(self, x):
        return F.softplus(x + self.bias) + self.min_val


def expln(x):
    """``exp(x)`` for x <= 0 and ``log1p(x) + 1`` above: positive, continuous, and growing
    only logarithmically."""
    return ember.where(x > 0, (x.clamp(min=0.0)).log1p() + 1.0, x.clamp(max=0.0).exp())


def mappings(key: str):
    """The scale mapping named ``key``: ``"softplus"``, ``"exp"``, ``"relu"``, ``"expln"``,
    ``"none"``, ``"biased_softplus"`` (bias 1.0), ``"biased_softplus_<bias>"`` or
    ``"biased_softplus_<bias>_<min_val>"``."""
    fixed = {"softplus": F.softplus, "exp": ember.exp, "relu": F.relu, "expln": expln,
             "none": lambda x: x}
    if key in fixed:
        return fixed[key]
    if key.startswith("biased_softplus"):
        parts = key.split("_")[2:]
        if len(parts) > 2:
            raise ValueError(f"mappings: cannot parse {key!r}")
        vals = [float(p) for p in parts]
        return biased_softplus(*(vals or [1.0]))
    raise ValueError(f"mappings: unknown scale mapping {key!r}; expected one of "
                     f"{sorted(fixed) + ['biased_softplus_<bias>[_<min>]']}")


class NormalParamExtractor(nn.Module):
    """Split the last dim of the input in two halves: ``loc`` and ``scale_mapping(second
    half)`` clamped to at least ``scale_lb``. Several inputs are concatenated first."""

    def __init__(self, scale_mapping="biased_softplus_1.0", scale_lb=1e-4):
        super().__init__()
        self.scale_mapping = scale_mapping
        self._map = mappings(scale_mapping) if isinstance(scale_mapping, str) else scale_mapping
        self.scale_lb = scale_lb

    def forward(self, *tensors):
        x = tensors[0] if len(tensors) == 1 else ember.cat(list(tensors), -1)
        if x.shape[-1] % 2:
            raise ValueError(f"NormalParamExtractor: the last dim must be even, got shape "
                             f"{list(x.shape)}")
        loc, raw = x.chunk(2, -1)
        scale = self._map(raw).clamp(min=self.scale_lb)
        return loc, scale

    def __repr__(self):
        return f"NormalParamExtractor(scale_mapping={self.scale_mapping!r}, " \
               f"scale_lb={self.scale_lb})"


class Delta(Distribution):
    """All the mass on ``param``. The last dim of ``param`` is the event dim (unless
    ``event_shape`` says otherwise); ``log_prob`` is 0 where a value matches ``param``
    (within ``atol + rtol * |param|``) and -inf elsewhere."""

    arg_constraints = {}
    has_rsample = True

    def __init__(self, param, atol=1e-6, rtol=1e-6, batch_shape=None, event_shape=None):
        self.param = param
        self.atol, self.rtol = atol, rtol
        shape = tuple(param.shape)
        if event_shape is None:
            event_shape = shape[-1:]
        if batch_shape is None:
            batch_shape = shape[:len(shape) - len(event_shape)]
        super().__init__(tuple(batch_shape), tuple(event_shape), validate_args=False)

    @property
    def support(self):
        return constraints.real

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return Delta(self.param.expand(batch_shape + self.event_shape), self.atol, self.rtol,
                     batch_shape, self.event_shape)

    def rsample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        return self.param.expand(sample_shape + tuple(self.param.shape))

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return self.rsample(sample_shape).clone()

    def log_prob(self, value):
        close = (value - self.param).abs() <= self.atol + self.rtol * self.param.abs()
        for _ in self.event_shape:
            close = close.all(-1)
        zero = ember.zeros(close.shape, dtype=self.param.dtype, device=self.param.device)
        return ember.where(close, zero, zero - math.inf)

    @property
    def mean(self):
        return self.param

    @property
    def mode(self):
        return self.param

    @property
    def deterministic_sample(self):
        return self.param

    def entropy(self):
        return ember.zeros(self.batch_shape, dtype=self.param.dtype, device=self.param.device)
