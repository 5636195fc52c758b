"""What the RL recipes (``ppo``, ``dqn``, ``sac``) share around ``TrainingRun``: building the
gymnasium env, the returns of the training episodes seen in collector batches, the final
evaluation of the deterministic policy, a replay buffer saved beside each checkpoint (its
own ``dumps``/``loads`` format, no pickle) and the metrics row.

A resumed run restarts its environments (a gymnasium env's internal state cannot be saved):
the episode in progress at the checkpoint is dropped from the training returns.
"""
from __future__ import annotations

import math
import os

import numpy as np

import ember
from ember.rl.collectors import SyncDataCollector
from ember.rl.data import LazyTensorStorage, TensorDictReplayBuffer
from ember.rl.envs import GymEnv
from ember.rl.modules import ExplorationType, set_exploration_type

__all__ = ["make_env", "EpisodeReturns", "off_policy_data", "evaluate", "BufferState", "setup_threads",
           "finish", "metrics_row", "nan_if_empty"]


def setup_threads(cfg):
    """RL networks are small: one BLAS thread is faster than two fighting over the cores."""
    n = cfg.get("num_threads")
    if n:
        ember.set_num_threads(int(n))


def make_env(env_cfg, seed):
    """``GymEnv(env_cfg["name"], **env_cfg.get("kwargs", {}))`` seeded with ``seed``."""
    if not isinstance(env_cfg, dict) or "name" not in env_cfg:
        raise ValueError(f"env: expected a mapping with a 'name' (a gymnasium id), got "
                         f"{env_cfg!r}")
    env = GymEnv(env_cfg["name"], **(env_cfg.get("kwargs") or {}))
    env.set_seed(int(seed))
    return env


class EpisodeReturns:
    """Sums the rewards of each environment across collector batches and reports the
    returns of the episodes that end (``("next", "done")``); keeps those not yet logged
    (``take_pending``) and the latest ones (``recent_mean``, for the progress bar)."""

    def __init__(self):
        self.running = None
        self.pending, self.recent = [], []

    def take_pending(self):
        """Mean return of the episodes ended since the last call (NaN if none); forgets them."""
        mean = nan_if_empty(self.pending)
        self.pending = []
        return mean

    def recent_mean(self, n):
        return nan_if_empty(self.recent[-n:])

    def update(self, batch):
        """The returns of the episodes that ended in ``batch`` (``[T]`` or ``[n, T]``)."""
        r = batch.get(("next", "reward")).numpy(force=True)
        d = batch.get(("next", "done")).numpy(force=True)
        T = batch.batch_size[-1]
        r = r.reshape(-1, T).astype(np.float64)
        d = d.reshape(-1, T).astype(bool)
        if self.running is None or self.running.shape[0] != r.shape[0]:
            self.running = np.zeros(r.shape[0])
        out = []
        for e in range(r.shape[0]):
            start = 0
            for end in np.flatnonzero(d[e]):
                out.append(float(self.running[e] + r[e, start:end + 1].sum()))
                self.running[e] = 0.0
                start = end + 1
            self.running[e] += r[e, start:].sum()
        self.pending += out
        self.recent = (self.recent + out)[-100:]
        return out


def off_policy_data(cfg, env, policy):
    """The collector and the replay buffer of an off-policy recipe (dqn, sac)."""
    collector = SyncDataCollector(env, policy, frames_per_batch=int(cfg["frames_per_batch"]),
                                  total_frames=int(cfg["total_frames"]),
                                  init_random_frames=int(cfg["learning_starts"]))
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(int(cfg["buffer_size"])),
                                    batch_size=int(cfg["batch_size"]))
    return collector, buffer


def evaluate(policy, env_cfg, seed, episodes=10):
    """Mean return of ``episodes`` episodes of ``policy`` run deterministically (modes of its
    distributions, no exploration noise) on a fresh env seeded apart from training."""
    env = make_env(env_cfg, seed + 100_003)
    limit = getattr(getattr(env.env, "spec", None), "max_episode_steps", None) or 10_000
    returns = []
    with ember.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for _ in range(int(episodes)):
            td = env.rollout(limit, policy, break_when_any_done=True)
            returns.append(float(td.get(("next", "reward")).numpy().sum()))
    env.close()
    return float(np.mean(returns)), returns


def metrics_row(columns, **values):
    """A metrics row with every column of ``columns`` (NaN where no value: the CSV's columns
    are fixed by its first row, and the plot reads NaN as a gap)."""
    return {c: values.get(c, math.nan) for c in columns}


def finish(run, collector, policy, cfg, frames, columns, before_eval=None):
    """The end of an RL recipe: a last checkpoint of the trained state (unless one was just
    written; a later ``resume=true`` then only re-evaluates), the collector shut down,
    ``before_eval()`` if given (e.g. DQN restoring its best greedy policy), the evaluation
    of ``policy`` over ``cfg["eval_episodes"]`` episodes logged as the last metrics row and
    printed last. Returns the exit code."""
    if run.every_steps and run.step % run.every_steps:
        run.save_checkpoint()
    collector.shutdown()
    if before_eval is not None:
        before_eval()
    mean, returns = evaluate(policy, cfg["env"], run.seed, int(cfg.get("eval_episodes", 10)))
    run.log_row(metrics_row(columns, frames=frames, eval_mean_return=mean))
    line = (f"eval_mean_return {mean:.1f} over {len(returns)} episodes "
            f"(min {min(returns):.1f}, max {max(returns):.1f})")
    run.finish(line)
    print(line, flush=True)
    return 0


def nan_if_empty(values):
    return float(np.mean(values)) if values else math.nan


class BufferState:
    """Tracks a replay buffer for ``TrainingRun.track``: ``state_dict`` writes the buffer
    with ``dumps`` into ``directory`` (atomically) and returns where; ``load_state_dict``
    reads it back."""

    def __init__(self, buffer, directory):
        self.buffer, self.directory = buffer, directory

    def state_dict(self):
        self.buffer.dumps(self.directory)
        return {"directory": os.path.abspath(self.directory), "size": len(self.buffer)}

    def load_state_dict(self, state):
        path = state["directory"]
        if not os.path.isdir(path):
            raise FileNotFoundError(f"the checkpoint's replay buffer {path} is missing")
        self.buffer.loads(path)


class BestPolicy:
    """Model selection for an unstable learner (DQN): ``consider(score)`` keeps a copy of
    ``module``'s weights when ``score`` (a greedy evaluation on episodes seeded apart from the
    final evaluation's) is the best so far; ``restore()`` loads the best copy back. Tracked
    by checkpoints like the other objects."""

    def __init__(self, module):
        self.module, self.score, self.weights = module, None, None

    def consider(self, score):
        if self.score is None or score >= self.score:
            self.score = float(score)
            self.weights = {k: v.detach().clone() for k, v in self.module.state_dict().items()}
            return True
        return False

    def restore(self):
        if self.weights is not None:
            self.module.load_state_dict(self.weights)

    def state_dict(self):
        return {"score": self.score, "weights": self.weights}

    def load_state_dict(self, state):
        self.score, self.weights = state.get("score"), state.get("weights")
