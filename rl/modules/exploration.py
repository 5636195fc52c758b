"""Exploration modules, appended to a policy (torchrl's names and arguments):

* ``EGreedyModule``: with probability ``eps`` replace the action by a random one from the
  action spec (respecting an action mask); ``eps`` anneals linearly from ``eps_init`` to
  ``eps_end`` over ``annealing_num_steps`` frames, one ``step(frames)`` call at a time.
* ``AdditiveGaussianModule``: add ``sigma * N(mean, std)`` to a continuous action, ``sigma``
  annealed the same way.
* ``OrnsteinUhlenbeckProcessModule``: add temporally correlated OU noise (DDPG).

They act only when exploring: under ``set_exploration_type(ExplorationType.RANDOM)`` or when
no type is set; ``DETERMINISTIC``/``MODE``/``MEAN`` (evaluation) leave the action as is.
(``ExplorationType`` is ``InteractionType``.)

    >>> import ember
    >>> from ember import nn
    >>> from ember.rl import TensorDict
    >>> from ember.rl.envs import Categorical
    >>> from ember.rl.modules import EGreedyModule, QValueActor, TensorDictSequential
    >>> spec = Categorical(2)
    >>> explore = EGreedyModule(spec, eps_init=1.0, eps_end=0.05, annealing_num_steps=100)
    >>> policy = TensorDictSequential(QValueActor(nn.Linear(4, 2), spec=spec), explore)
    >>> policy(TensorDict({"observation": ember.randn(3, 4)}, [3]))["action"].shape
    (3,)
    >>> explore.step(50); round(explore.eps.item(), 3)
    0.525
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.rl.tensordict import TensorDict
from ember.rl.tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from ember.rl.tensordict.nn import set_interaction_type
from ember.rl.tensordict.nn.common import norm_key

__all__ = ["EGreedyModule", "AdditiveGaussianModule", "OrnsteinUhlenbeckProcessModule",
           "ExplorationType", "exploration_type", "set_exploration_type"]

ExplorationType = InteractionType
exploration_type = interaction_type
set_exploration_type = set_interaction_type


def _exploring():
    return interaction_type() in (None, InteractionType.RANDOM)


def _numpy_rng():
    """A numpy generator seeded from ember's global generator (``ember.manual_seed`` makes
    the module's random actions reproducible)."""
    return np.random.default_rng(int(ember.randint(0, 2 ** 31 - 1, (1,)).item()))


class _Annealed(TensorDictModuleBase):
    """Shared by the exploration modules: an ``eps`` buffer annealed linearly by ``step``."""

    def __init__(self, eps_init, eps_end, annealing_num_steps, action_key, who):
        super().__init__()
        if annealing_num_steps <= 0:
            raise ValueError(f"{who}: annealing_num_steps must be positive, got "
                             f"{annealing_num_steps}")
        self.eps_init, self.eps_end = float(eps_init), float(eps_end)
        self.annealing_num_steps = int(annealing_num_steps)
        self.register_buffer("eps", ember.tensor(float(eps_init)))
        self.action_key = norm_key(action_key)

    def step(self, frames: int = 1) -> None:
        """Anneal ``eps`` by ``frames`` frames' worth (call once per collected batch)."""
        delta = (self.eps_init - self.eps_end) / self.annealing_num_steps * frames
        lo, hi = sorted((self.eps_init, self.eps_end))
        new = min(max(float(self.eps.item()) - delta, lo), hi)
        self.eps.fill_(new)

    def _action(self, tensordict, who):
        action = tensordict.get(self.action_key, None)
        if action is None:
            raise KeyError(f"{who}: the action {self.action_key!r} is missing from the "
                           f"TensorDict; put this module after the policy")
        return action


class EGreedyModule(_Annealed):
    """Epsilon-greedy exploration.

    Args:
        spec: the action spec (random actions are ``spec.rand``; ``OneHot``, ``Categorical``,
            ``Bounded``...).
        eps_init, eps_end, annealing_num_steps: the linear schedule of ``eps``.
        action_key: where the action is read and written.
        action_mask_key: a boolean mask of the allowed actions (random actions are drawn
            among them).
    """

    def __init__(self, spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=1000, *,
                 action_key="action", action_mask_key=None):
        super().__init__(eps_init, eps_end, annealing_num_steps, action_key, "EGreedyModule")
        if spec is None:
            raise ValueError("EGreedyModule: spec (the action spec) is required")
        self.spec = spec
        self.action_mask_key = None if action_mask_key is None else norm_key(action_mask_key)
        self.in_keys = [self.action_key] + ([self.action_mask_key] if action_mask_key else [])
        self.out_keys = [self.action_key]
        self._rng = _numpy_rng()

    def _random(self, action, mask):
        spec = self.spec
        lead = tuple(action.shape[:action.ndim - len(spec.shape)])
        if mask is None:
            return spec.rand(lead, generator=self._rng).to(action.dtype)
        m = mask.numpy(force=True).astype(bool)
        u = self._rng.random(m.shape) * m            # a uniform pick among allowed actions
        idx = u.argmax(-1)
        if type(spec).__name__ == "OneHot":
            return ember.tensor(np.eye(m.shape[-1], dtype=np.int64)[idx]).to(action.dtype)
        return ember.tensor(idx.astype(np.int64)).to(action.dtype)

    def forward(self, tensordict=None, *args, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        if not _exploring():
            return tensordict
        action = self._action(tensordict, "EGreedyModule")
        mask = None if self.action_mask_key is None else tensordict.get(self.action_mask_key)
        random = self._random(action, mask)
        bshape = tuple(tensordict.batch_size)
        cond = self._rng.random(bshape) < float(self.eps.item())
        cond = ember.tensor(cond.reshape(bshape + (1,) * (action.ndim - len(bshape))))
        tensordict.set(self.action_key, ember.where(cond, random, action))
        return tensordict


class AdditiveGaussianModule(_Annealed):
    """Gaussian exploration noise: ``action + sigma * (mean + std * N(0, 1))``, then
    projected into ``spec`` (``safe=True``). ``sigma`` is annealed from ``sigma_init`` to
    ``sigma_end`` over ``annealing_num_steps`` frames (``step``); it is the ``eps`` buffer."""

    def __init__(self, spec, sigma_init=1.0, sigma_end=0.1, annealing_num_steps=1000,
                 mean=0.0, std=1.0, *, action_key="action", safe=True):
        super().__init__(sigma_init, sigma_end, annealing_num_steps, action_key,
                         "AdditiveGaussianModule")
        if spec is None:
            raise ValueError("AdditiveGaussianModule: spec (the action spec) is required")
        self.spec, self.mean, self.std, self.safe = spec, float(mean), float(std), safe
        self.in_keys, self.out_keys = [self.action_key], [self.action_key]

    @property
    def sigma(self):
        return self.eps

    def forward(self, tensordict=None, *args, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        if not _exploring():
            return tensordict
        action = self._action(tensordict, "AdditiveGaussianModule")
        noise = ember.randn(*action.shape, dtype=action.dtype) * self.std + self.mean
        out = action + noise * float(self.eps.item())
        if self.safe:
            out = self.spec.project(out).to(action.dtype)
        tensordict.set(self.action_key, out)
        return tensordict


class OrnsteinUhlenbeckProcessModule(_Annealed):
    """Ornstein-Uhlenbeck exploration noise (Lillicrap et al. 2015)::

        x_{n+1} = x_n + theta * (mu - x_n) * dt + sigma_n * sqrt(dt) * N(0, 1)
        action  = action + eps * x_{n+1}

    ``sigma_n`` anneals linearly from ``sigma`` to ``sigma_min`` over ``n_steps_annealing``
    noise steps (constant when ``sigma_min`` is None); ``eps`` from ``eps_init`` to
    ``eps_end`` by ``step(frames)``. The process state (``"_ou_prev_noise"``,
    ``"_ou_steps"``) is kept by the module per batch element and written to the TensorDict
    too; it restarts from ``x0`` where ``is_init_key`` is True (and when the batch shape
    changes, or on ``reset_noise()``).
    """

    noise_key, steps_key = "_ou_prev_noise", "_ou_steps"

    def __init__(self, spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=1000, theta=0.15,
                 mu=0.0, sigma=0.2, dt=1e-2, x0=None, sigma_min=None, n_steps_annealing=1000,
                 *, action_key="action", is_init_key=None, safe=True):
        super().__init__(eps_init, eps_end, annealing_num_steps, action_key,
                         "OrnsteinUhlenbeckProcessModule")
        if spec is None:
            raise ValueError("OrnsteinUhlenbeckProcessModule: spec (the action spec) is "
                             "required")
        self.spec, self.safe = spec, safe
        self.theta, self.mu, self.sigma, self.dt = float(theta), float(mu), float(sigma), \
            float(dt)
        self.x0 = 0.0 if x0 is None else x0
        self.sigma_min = self.sigma if sigma_min is None else float(sigma_min)
        self.n_steps_annealing = int(n_steps_annealing)
        self.is_init_key = None if is_init_key is None else norm_key(is_init_key)
        self.in_keys = [self.action_key] + ([self.is_init_key] if self.is_init_key else [])
        self.out_keys = [self.action_key, self.noise_key, self.steps_key]
        self._noise = None
        self._steps = None

    def reset_noise(self):
        """Restart the process for every batch element."""
        self._noise = self._steps = None

    def current_sigma(self, n_steps):
        """The noise scale after ``n_steps`` noise steps (array)."""
        slope = -(self.sigma - self.sigma_min) / self.n_steps_annealing
        return np.maximum(self.sigma_min, slope * n_steps + self.sigma)

    def forward(self, tensordict=None, *args, **kwargs):
        if not isinstance(tensordict, TensorDict):
            a = (() if tensordict is None else (tensordict,)) + args
            return self._tensors_call(a, kwargs)
        if not _exploring():
            return tensordict
        action = self._action(tensordict, "OrnsteinUhlenbeckProcessModule")
        shape = tuple(action.shape)
        lead = shape[:len(tensordict.batch_size)]
        x0 = np.broadcast_to(np.asarray(self.x0, np.float64), shape)
        if self._noise is None or self._noise.shape != shape:
            self._noise = np.array(x0, np.float64)
            self._steps = np.zeros(lead, np.int64)
        if self.is_init_key is not None and self.is_init_key in tensordict.keys(True):
            init = tensordict.get(self.is_init_key).numpy(force=True).reshape(lead)
            self._noise[init] = x0[init]
            self._steps[init] = 0
        sigma = self.current_sigma(self._steps).reshape(lead + (1,) * (len(shape) - len(lead)))
        x = self._noise
        x = x + self.theta * (self.mu - x) * self.dt + \
            sigma * math.sqrt(self.dt) * ember.randn(*shape, dtype=ember.float64).numpy()
        self._noise, self._steps = x, self._steps + 1
        noise = ember.tensor(x.astype(np.dtype(action.dtype)))
        out = action + noise * float(self.eps.item())
        if self.safe:
            out = self.spec.project(out).to(action.dtype)
        tensordict.set(self.action_key, out)
        tensordict.set(self.noise_key, noise)
        tensordict.set(self.steps_key, ember.tensor(self._steps.copy()))
        return tensordict
