"""``EnvBase``: the TensorDict environment API (reset / step / rollout), ``step_mdp`` and
``check_env_specs``.

Keys: the observation keys of ``observation_spec`` (``"observation"`` for a plain gymnasium space),
``"action"``, ``"reward"`` and ``"done"``/``"terminated"``/``"truncated"`` (bool, shape batch + (1,)).
``step(td)`` reads ``td["action"]`` and writes the outcome under ``td["next"]``; ``step_mdp(td)``
turns that into the input of the following step.

Autoreset convention (the one torchrl uses): ``step`` never resets. A sub-environment that finished
must be reset before it is stepped again (stepping it raises). ``step_and_maybe_reset(td)`` steps, then
resets the sub-environments that are done, returning ``(td, td_next_root)`` where ``td["next"]`` keeps
the terminal observation and ``td_next_root`` holds the reset observation. Thus no transition mixes
two episodes. ``rollout(..., break_when_any_done=False)`` is built on it.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.rl.tensordict import TensorDict, stack

from .specs import Categorical, Composite, Unbounded

__all__ = ["EnvBase", "step_mdp", "check_env_specs"]

DONE_KEYS = ("done", "terminated", "truncated")


def step_mdp(td, exclude_reward=True, exclude_action=True):
    """The root TensorDict of the next step: ``td["next"]`` without the reward (and no action)."""
    nxt = td.get("next")
    keys = [k for k in nxt.keys() if not (exclude_reward and k == "reward")]
    out = nxt.select(*keys)
    if not exclude_action and "action" in td.keys():
        out.set("action", td.get("action"))
    return out


def _done_spec(batch, device):
    return Composite({k: Categorical(2, batch + (1,), dtype=np.bool_, device=device) for k in DONE_KEYS},
                     shape=batch, device=device)


class EnvBase:
    """Subclasses set ``observation_spec``, ``action_spec`` (and may change ``reward_spec``) and
    implement ``_reset(td_or_None) -> TensorDict`` (observations, done flags optional) and
    ``_step(td) -> TensorDict`` (observations, reward, done, terminated, truncated) and
    ``_set_seed(seed)``."""

    def __init__(self, batch_size=(), device=None):
        self.batch_size = tuple(batch_size)
        self.device = ember.device(device) if device is not None else ember.device("cpu")
        self.reward_spec = Unbounded(self.batch_size + (1,), np.float32, self.device)
        self.done_spec = _done_spec(self.batch_size, self.device)
        self.rng = np.random.default_rng()

    # ---------------------------------------------------------------- spec views
    @property
    def full_observation_spec(self):
        return self.observation_spec

    @property
    def full_done_spec(self):
        return self.done_spec

    @property
    def observation_keys(self):
        return self.observation_spec.keys(True, True)

    # ---------------------------------------------------------------- api
    def set_seed(self, seed):
        """Seed the environment (applied at the next reset) and the generator used for random actions."""
        self.rng = np.random.default_rng(seed)
        self._set_seed(seed)
        return seed

    def _set_seed(self, seed):
        raise NotImplementedError(f"{type(self).__name__} must define _set_seed(seed)")

    def reset(self, tensordict=None):
        out = self._reset(tensordict)
        for k in DONE_KEYS:
            if k not in out.keys():
                out.set(k, self.done_spec[k].zero())
        return out

    def step(self, tensordict):
        nxt = self._step(tensordict)
        tensordict.set("next", nxt)
        return tensordict

    def rand_action(self, tensordict=None):
        action = self.action_spec.rand(generator=self.rng)
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size)
        tensordict.set("action", action)
        return tensordict

    def rand_step(self, tensordict=None):
        return self.step(self.rand_action(tensordict if tensordict is not None else self.reset()))

    def any_done(self, td):
        return bool(np.any(td.get("done").numpy(force=True)))

    def step_and_maybe_reset(self, tensordict):
        """Step, then reset the (sub-)environments that are done. Returns ``(td, next_root)``:
        ``td["next"]`` holds the terminal data, ``next_root`` the input of the following step."""
        tensordict = self.step(tensordict)
        root = step_mdp(tensordict)
        done = root.get("done").numpy(force=True)
        if done.any():
            reset_in = TensorDict({"_reset": done}, batch_size=self.batch_size)
            fresh = self.reset(reset_in)
            mask = done.reshape(self.batch_size) if self.batch_size else None
            for k in fresh.keys(True, True):
                new = fresh.get(k)
                if mask is None:
                    root.set(k, new)
                else:
                    old = root.get(k).numpy(force=True).copy()
                    old[mask] = new.numpy(force=True)[mask]
                    root.set(k, ember.tensor(old, device=self.device))
        return tensordict, root

    def rollout(self, max_steps, policy=None, break_when_any_done=True, auto_reset=True,
                tensordict=None):
        """Run up to ``max_steps`` steps; returns the transitions stacked along a time dim placed
        after the batch dims (shape ``batch + (T,)``). Without a policy, actions are
        ``action_spec.rand`` from the env's seeded generator. With ``break_when_any_done`` the
        rollout stops after the first step where any (sub-)env is done; otherwise done sub-envs are
        reset (see the module doc)."""
        if auto_reset or tensordict is None:
            tensordict = self.reset(tensordict if not auto_reset else None)
        steps = []
        for _ in range(max_steps):
            if policy is None:
                tensordict = self.rand_action(tensordict)
            else:
                tensordict = policy(tensordict)
            if break_when_any_done:
                tensordict = self.step(tensordict)
                steps.append(tensordict)
                if self.any_done(tensordict.get("next")):
                    break
                tensordict = step_mdp(tensordict)
            else:
                tensordict, nxt = self.step_and_maybe_reset(tensordict)
                steps.append(tensordict)
                tensordict = nxt
        return stack(steps, dim=len(self.batch_size))

    def close(self):
        pass

    def __repr__(self):
        return (f"{type(self).__name__}(batch_size={list(self.batch_size)}, device={self.device},\n"
                f"  observation_spec={self.observation_spec!r},\n  action_spec={self.action_spec!r})")


def check_env_specs(env, steps=3, seed=None):
    """Check that ``reset`` and a short random rollout produce exactly the keys of the env's specs,
    each value inside its spec, with the right shapes. Raises AssertionError naming the problem."""
    if seed is not None:
        env.set_seed(seed)
    obs_keys = set(env.observation_spec.keys(True, True))
    done_keys = set(env.done_spec.keys(True, True))
    td = env.reset()
    got = set(td.keys(True, True))
    if got != obs_keys | done_keys:
        raise AssertionError(f"reset keys {sorted(map(str, got))} != spec keys "
                             f"{sorted(map(str, obs_keys | done_keys))}")
    _check_values(env.observation_spec, td, "reset")
    _check_values(env.done_spec, td, "reset")
    ro = env.rollout(steps, break_when_any_done=False)
    T = steps
    lead = env.batch_size + (T,)
    if tuple(ro.batch_size) != lead:
        raise AssertionError(f"rollout batch_size {tuple(ro.batch_size)} != expected {lead}")
    nxt_keys = set(ro.get("next").keys(True, True))
    want = obs_keys | done_keys | {"reward"}
    if nxt_keys != want:
        raise AssertionError(f"('next',...) keys {sorted(map(str, nxt_keys))} != {sorted(map(str, want))}")
    root_keys = set(ro.keys(True, True)) - {("next",) + (k if isinstance(k, tuple) else (k,))
                                            for k in nxt_keys}
    if root_keys != obs_keys | done_keys | {"action"}:
        raise AssertionError(f"root keys {sorted(map(str, root_keys))} != "
                             f"{sorted(map(str, obs_keys | done_keys | {'action'}))}")
    for t in range(T):
        sl = ro[(slice(None),) * len(env.batch_size) + (t,)]
        _check_values(env.observation_spec, sl, f"rollout step {t}")
        _check_values(env.observation_spec, sl.get("next"), f"rollout step {t} next")
        _check_values(env.done_spec, sl.get("next"), f"rollout step {t} next")
        for name, spec, val in (("action", env.action_spec, sl.get("action")),
                                ("reward", env.reward_spec, sl.get("next").get("reward"))):
            if not spec.is_in(val) or tuple(val.shape) != spec.shape:
                raise AssertionError(f"{name} at step {t} (shape {tuple(val.shape)}, dtype {val.dtype}) "
                                     f"is not in {spec!r}")
    if not env.observation_spec.is_in(env.observation_spec.rand()):
        raise AssertionError("observation_spec.rand() is not in observation_spec")
    return True


def _check_values(comp, td, where):
    for k, spec in comp.items(True, True):
        val = td.get(k)
        if tuple(val.shape) != spec.shape or not spec.is_in(val):
            raise AssertionError(f"{where}: {k!r} (shape {tuple(val.shape)}, dtype {val.dtype}) is not "
                                 f"in {spec!r}")
