"""``Transform``, ``Compose`` and ``TransformedEnv``: environment transforms with torchrl's API.

A transform changes data and specs alike:

* ``_call(next_td)`` maps ``in_keys`` to ``out_keys`` with ``_apply_transform`` (entries that are
  missing are skipped); ``forward(td)`` does the same on any data (a replay-buffer batch);
* ``_step(td, next_td)`` is what the env runs after each step (default ``_call(next_td)``); it
  also sees the root ``td``, which stateful transforms (``StepCounter``, ``RewardSum``,
  ``CatFrames``) read their running value from, so their state travels with the data and
  partial resets, batched and parallel envs need no bookkeeping;
* ``_reset(td, td_reset)`` runs after a reset (default ``_call(td_reset)``); ``td`` is the reset
  input and holds ``"_reset"`` (shape ``batch + (1,)``) for a partial reset;
* ``inv(td)`` / ``_inv_call``: from the outer action (``out_keys_inv``) to what the inner env
  takes (``in_keys_inv``);
* ``transform_observation_spec`` / ``transform_reward_spec`` / ``transform_done_spec`` /
  ``transform_action_spec`` map the inner env's specs to the outer ones (so ``check_env_specs``
  holds on the transformed env).

``TransformedEnv(env, transform)`` applies them, in order, on ``reset`` and ``step`` (inverse
transforms in reverse order on the input of ``step``). ``transform.parent`` is the env seen by a
transform: the base env with the transforms before it (``ObservationNorm.init_stats`` rolls it
out).

    >>> from ember.rl.envs import GymEnv, check_env_specs
    >>> from ember.rl.envs.transforms import Compose, RewardSum, StepCounter, TransformedEnv
    >>> env = TransformedEnv(GymEnv("CartPole-v1"), Compose(StepCounter(10), RewardSum()))
    >>> check_env_specs(env, seed=0)
    True
    >>> ro = env.rollout(100, break_when_any_done=False)
    >>> int(ro["next", "step_count"].numpy().max()) <= 10
    True
"""
from __future__ import annotations

import weakref

import numpy as np

import ember
from ember import nn

from ember.rl.tensordict import TensorDict

from ..common import EnvBase, step_mdp

__all__ = ["Transform", "Compose", "TransformedEnv"]


def as_np(value):
    return value.numpy(force=True) if isinstance(value, ember.Tensor) else np.asarray(value)


def to_tensor(arr):
    arr = np.asarray(arr)
    return ember.from_numpy(arr if arr.flags.c_contiguous else np.ascontiguousarray(arr))


def key_list(keys, default=None):
    if keys is None:
        return list(default or [])
    if isinstance(keys, (str, tuple)):
        return [keys]
    return list(keys)


def reset_mask(td, batch_size):
    """The boolean reset mask of ``td`` broadcast to ``batch_size + (1,)`` (all True if absent)."""
    shape = tuple(batch_size) + (1,)
    if td is None or "_reset" not in td.keys():
        return np.ones(shape, np.bool_)
    return np.asarray(as_np(td.get("_reset")), np.bool_).reshape(shape)


class Transform(nn.Module):
    """Base of the env transforms (see the module doc). Subclasses set ``_apply_transform`` (and
    ``_inv_apply_transform``) and the ``transform_*_spec`` methods that their change needs."""

    def __init__(self, in_keys=None, out_keys=None, in_keys_inv=None, out_keys_inv=None):
        super().__init__()
        self.in_keys = key_list(in_keys)
        self.out_keys = key_list(out_keys) if out_keys is not None else list(self.in_keys)
        self.in_keys_inv = key_list(in_keys_inv)
        self.out_keys_inv = key_list(out_keys_inv) if out_keys_inv is not None else \
            list(self.in_keys_inv)
        for a, b, what in ((self.in_keys, self.out_keys, "out_keys"),
                           (self.in_keys_inv, self.out_keys_inv, "out_keys_inv")):
            if len(a) != len(b):
                raise ValueError(f"{type(self).__name__}: {what} {b} must be as long as the input "
                                 f"keys {a}")
        self._container = None

    # ---------------------------------------------------------------- data
    def _apply_transform(self, value):
        return value

    def _inv_apply_transform(self, value):
        return value

    def _call(self, next_tensordict):
        keys = next_tensordict.keys(True, True)
        for ki, ko in zip(self.in_keys, self.out_keys):
            if ki in keys:
                next_tensordict.set(ko, self._apply_transform(next_tensordict.get(ki)))
        return next_tensordict

    def forward(self, tensordict):
        return self._call(tensordict)

    def _step(self, tensordict, next_tensordict):
        return self._call(next_tensordict)

    def _reset(self, tensordict, tensordict_reset):
        return self._call(tensordict_reset)

    def _inv_call(self, tensordict):
        keys = tensordict.keys(True, True)
        for ki, ko in zip(self.in_keys_inv, self.out_keys_inv):
            if ko in keys:
                tensordict.set(ki, self._inv_apply_transform(tensordict.get(ko)))
        return tensordict

    def inv(self, tensordict):
        return self._inv_call(tensordict)

    # ---------------------------------------------------------------- specs
    def transform_observation_spec(self, observation_spec):
        return observation_spec

    def transform_reward_spec(self, reward_spec):
        return reward_spec

    def transform_done_spec(self, done_spec):
        return done_spec

    def transform_action_spec(self, action_spec):
        return action_spec

    def _map_spec(self, composite, fn, keys_in=None, keys_out=None):
        """Set ``composite[out] = fn(composite[in])`` for each key pair present."""
        keys_in = self.in_keys if keys_in is None else keys_in
        keys_out = self.out_keys if keys_out is None else keys_out
        have = set(composite.keys(True, True))
        for ki, ko in zip(keys_in, keys_out):
            if ki in have:
                composite[ko] = fn(composite[ki])
        return composite

    # ---------------------------------------------------------------- env links
    def _set_container(self, env):
        self._container = None if env is None else weakref.ref(env)

    @property
    def container(self):
        return None if self._container is None else self._container()

    @property
    def parent(self):
        """The env this transform sees: the base env with the transforms before this one."""
        env = self.container
        if env is None:
            return None
        chain = env._flat_transforms()
        out = TransformedEnv(env.base_env, Compose(*chain[:chain.index(self)]), _own=False)
        out.rng = env.rng                     # random actions follow the container's seed
        return out

    def __repr__(self):
        return f"{type(self).__name__}(in_keys={self.in_keys}, out_keys={self.out_keys})"


class Compose(Transform):
    """Transforms applied one after the other (inverse transforms in reverse order)."""

    def __init__(self, *transforms):
        super().__init__()
        self.transforms = nn.ModuleList(list(transforms))

    def _call(self, td):
        for t in self.transforms:
            td = t._call(td)
        return td

    def forward(self, td):
        for t in self.transforms:
            td = t.forward(td)
        return td

    def _step(self, tensordict, next_tensordict):
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def _inv_call(self, td):
        for t in reversed(list(self.transforms)):
            td = t._inv_call(td)
        return td

    def transform_observation_spec(self, spec):
        for t in self.transforms:
            spec = t.transform_observation_spec(spec)
        return spec

    def transform_reward_spec(self, spec):
        for t in self.transforms:
            spec = t.transform_reward_spec(spec)
        return spec

    def transform_done_spec(self, spec):
        for t in self.transforms:
            spec = t.transform_done_spec(spec)
        return spec

    def transform_action_spec(self, spec):
        for t in reversed(list(self.transforms)):
            spec = t.transform_action_spec(spec)
        return spec

    def _set_container(self, env):
        super()._set_container(env)
        for t in self.transforms:
            t._set_container(env)

    def flat(self):
        out = []
        for t in self.transforms:
            out.extend(t.flat() if isinstance(t, Compose) else [t])
        return out

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Compose(*list(self.transforms)[i])
        return self.transforms[i]

    def __len__(self):
        return len(self.transforms)

    def __iter__(self):
        return iter(self.transforms)

    def append(self, transform):
        self.transforms.append(transform)
        if self.container is not None:
            transform._set_container(self.container)
            self.container._refresh_specs()

    def insert(self, index, transform):
        items = list(self.transforms)
        items.insert(index, transform)
        self.transforms = nn.ModuleList(items)
        if self.container is not None:
            transform._set_container(self.container)
            self.container._refresh_specs()

    def __repr__(self):
        inner = ",\n    ".join(repr(t) for t in self.transforms)
        return f"Compose(\n    {inner})"


class TransformedEnv(EnvBase):
    """``TransformedEnv(env, transform=None)``: ``env`` with ``transform`` applied to what it
    returns (a single ``Transform`` or a ``Compose``). ``append_transform``/``insert_transform``
    add more; ``base_env`` is the wrapped env; ``transform`` the transform (a ``Compose`` once
    several were added)."""

    def __init__(self, env, transform=None, device=None, _own=True):
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv: env must be an EnvBase, got {type(env).__name__}")
        super().__init__(env.batch_size, device or env.device)
        self.base_env = env
        self.transform = Compose() if transform is None else transform
        if not isinstance(self.transform, Transform):
            raise TypeError("TransformedEnv: transform must be a Transform, got "
                            f"{type(transform).__name__}")
        self._own = _own
        if _own:
            self.transform._set_container(self)
        self._refresh_specs()

    def _flat_transforms(self):
        t = self.transform
        return t.flat() if isinstance(t, Compose) else [t]

    def _refresh_specs(self):
        base = self.base_env
        self.observation_spec = self.transform.transform_observation_spec(base.observation_spec.clone())
        self.reward_spec = self.transform.transform_reward_spec(base.reward_spec)
        self.done_spec = self.transform.transform_done_spec(base.done_spec.clone())
        self.action_spec = self.transform.transform_action_spec(base.action_spec)

    def append_transform(self, transform):
        if not isinstance(self.transform, Compose):
            self.transform = Compose(self.transform)
            self.transform._set_container(self)
        self.transform.append(transform)
        transform._set_container(self)
        self._refresh_specs()
        return self

    def insert_transform(self, index, transform):
        if not isinstance(self.transform, Compose):
            self.transform = Compose(self.transform)
            self.transform._set_container(self)
        self.transform.insert(index, transform)
        transform._set_container(self)
        self._refresh_specs()
        return self

    # ---------------------------------------------------------------- EnvBase
    def _set_seed(self, seed):
        self.base_env.set_seed(seed)

    def _reset(self, tensordict=None):
        out = self.base_env.reset(tensordict)
        return self.transform._reset(tensordict, out)

    def _step(self, tensordict):
        inner = self.transform.inv(tensordict.clone(False))
        inner = self.base_env.step(inner)
        return self.transform._step(tensordict, inner.get("next"))

    def step_and_maybe_reset(self, tensordict):
        """As ``EnvBase.step_and_maybe_reset`` (same results), in one call to the base env's own
        ``step_and_maybe_reset`` when it has one (``ParallelEnv``: one round trip to the workers
        instead of a step and a reset); only the sub-envs that a transform ended (``StepCounter``)
        need a separate reset."""
        base = self.base_env
        if type(base).step_and_maybe_reset is EnvBase.step_and_maybe_reset:
            return super().step_and_maybe_reset(tensordict)
        inner = self.transform.inv(tensordict.clone(False))
        inner, base_root = base.step_and_maybe_reset(inner)
        base_done = np.array(as_np(inner.get(("next", "done"))), np.bool_)   # before _step
        tensordict.set("next", self.transform._step(tensordict, inner.get("next")))
        root = step_mdp(tensordict)
        done = np.asarray(as_np(root.get("done")), np.bool_)
        if not done.any():
            return tensordict, root
        rows = done.reshape(self.batch_size + (-1,)).any(-1)
        extra = done & ~base_done
        if extra.any():                            # ended by a transform: the base did not reset
            fresh = base.reset(TensorDict({"_reset": extra}, batch_size=self.batch_size))
            _merge_rows(base_root, fresh, extra.reshape(self.batch_size + (-1,)).any(-1))
        reset_in = TensorDict({"_reset": done}, batch_size=self.batch_size)
        fresh = self.transform._reset(reset_in, base_root)
        _merge_rows(root, fresh, rows)
        return tensordict, root

    def close(self):
        self.base_env.close()

    def __repr__(self):
        return f"TransformedEnv(\n  env={self.base_env!r},\n  transform={self.transform!r})"


def _merge_rows(dst, src, rows):
    """``dst[k][rows] = src[k][rows]`` for every leaf of ``src`` (new arrays, ``dst`` updated)."""
    for k in src.keys(True, True):
        new = as_np(src.get(k))
        if k in dst.keys(True, True):
            out = as_np(dst.get(k)).copy()
            out[rows] = new[rows]
        else:
            out = new
        dst.set(k, to_tensor(out))
