"""``SerialEnv(n, create_env_fn)``: ``n`` copies of an environment (or one per callable when
``create_env_fn`` is a list of ``n``) stepped one after the other in this process, exposed with
batch size ``(n,) + env.batch_size``. A batched sub-env gets its part of a ``"_reset"`` mask.

Seeding: ``set_seed(s)`` seeds sub-env ``i`` with ``s + i``. Resets follow ``EnvBase``'s convention:
``step`` never resets; ``reset(td)`` with a boolean ``td["_reset"]`` of shape ``(n, 1)`` resets only
those sub-envs (the others keep their current observation); ``step_and_maybe_reset`` and
``rollout(break_when_any_done=False)`` do that for the sub-envs that just finished, so
``td["next", "observation"]`` is always the terminal observation and the reset observation only
appears at the root of the following step. Stepping a finished, not yet reset sub-env raises.
"""
from __future__ import annotations

from ember.rl.tensordict import TensorDict, stack

from .common import EnvBase

__all__ = ["SerialEnv"]


class SerialEnv(EnvBase):
    def __init__(self, num_workers, create_env_fn, create_env_kwargs=None, device=None):
        n = int(num_workers)
        fns = list(create_env_fn) if isinstance(create_env_fn, (list, tuple)) else [create_env_fn] * n
        kws = list(create_env_kwargs) if isinstance(create_env_kwargs, (list, tuple)) else \
            [create_env_kwargs or {}] * n
        if len(fns) != n or len(kws) != n:
            raise ValueError(f"SerialEnv: got {len(fns)} create_env_fn and {len(kws)} "
                             f"create_env_kwargs for num_workers={n}")
        self.envs = [fn(**kw) for fn, kw in zip(fns, kws)]
        base = self.envs[0]
        super().__init__((len(self.envs),) + base.batch_size, device or base.device)
        n = (len(self.envs),)
        self.observation_spec = base.observation_spec.expand(n)
        self.action_spec = base.action_spec.expand(n)
        self.reward_spec = base.reward_spec.expand(n)
        self.done_spec = base.done_spec.expand(n)
        self._current = [None] * len(self.envs)

    @property
    def num_workers(self):
        return len(self.envs)

    def _set_seed(self, seed):
        for i, env in enumerate(self.envs):
            env.set_seed(seed + i)

    def _reset(self, tensordict=None):
        mask = full = None
        if tensordict is not None and "_reset" in tensordict.keys():
            full = tensordict.get("_reset").numpy(force=True).reshape(self.batch_size + (1,))
            mask = full.reshape(len(self.envs), -1).any(-1)
        for i, env in enumerate(self.envs):
            if mask is None or mask[i] or self._current[i] is None:
                arg = None
                if full is not None and env.batch_size and self._current[i] is not None:
                    arg = TensorDict({"_reset": full[i].copy()}, batch_size=env.batch_size)
                self._current[i] = env.reset(arg)
        return stack([c.clone() for c in self._current], 0)

    def _step(self, tensordict):
        outs = []
        for i, env in enumerate(self.envs):
            sub = tensordict[i]
            env.step(sub)
            nxt = sub.get("next")
            outs.append(nxt)
            self._current[i] = nxt.exclude("reward")
        return stack(outs, 0)

    def close(self):
        for env in self.envs:
            env.close()
