"""Recipe ``dqn``: deep Q-learning on a gymnasium env with discrete actions, built from
ember.rl's layers: ``GymEnv``, a ``QValueActor`` (optionally a dueling network) followed by
an annealed ``EGreedyModule``, ``SyncDataCollector``, a ``TensorDictReplayBuffer`` on
``LazyTensorStorage``, ``DQNLoss`` (optionally double DQN) and ``HardUpdate``.

    ember run dqn                                  # CartPole-v1
    ember run dqn double_dqn=true dueling=true     # variants
    ember run dqn resume=true                      # continue from the latest checkpoint

Each collected batch is added to the buffer; once ``learning_starts`` frames are collected,
``gradient_steps`` minibatch updates follow. The target network is refreshed every
``target_update_interval`` gradient steps; ``anneal_lr`` decays the learning rate linearly
to 0 so the last updates cannot undo a good policy (DQN's greedy policy on CartPole can
collapse within one batch of updates at a constant rate). With ``select_best``, the greedy
policy is evaluated every ``select_best.every_n_batches`` batches on ``select_best.episodes``
episodes (seeded apart from the final evaluation) and the best one is the run's result
(``select_return`` in metrics.csv). ``metrics.csv`` gets one row per
``log_every_batches`` batches (``frames``, ``mean_return`` of the training episodes that
ended since the last row, ``loss``, ``eps``); at the end ``eval_mean_return`` (10 greedy
episodes) is logged and printed last. A checkpoint holds the replay buffer too (written
with its own ``dumps`` beside the checkpoints).
"""
from __future__ import annotations

import os

import ember
from ember import nn
from ember.rl.envs import Categorical
from ember.rl.modules import (MLP, DuelingMlpDQNet, EGreedyModule, QValueActor,
                              TensorDictSequential)
from ember.rl.objectives import DQNLoss, HardUpdate

from ember.recipes._config import ConfigError
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun
from ember.recipes._registry import register_recipe
from ember.recipes._rl import (BestPolicy, BufferState, EpisodeReturns, evaluate, finish,
                               make_env, metrics_row, nan_if_empty, off_policy_data,
                               setup_threads)

__all__ = ["main", "make_qnet"]

COLUMNS = ("frames", "mean_return", "loss", "eps", "select_return", "eval_mean_return")
# what a transition needs for the loss (random-action batches hold no action values)
STORED = ("observation", "action", ("next", "observation"), ("next", "reward"),
          ("next", "done"), ("next", "terminated"))


def make_qnet(env, num_cells, dueling=False):
    """A ``QValueActor`` for ``env``'s discrete action spec (an MLP with ReLU, or a dueling
    head on an MLP trunk)."""
    spec = env.action_spec
    if not isinstance(spec, Categorical):
        raise ConfigError(f"dqn: needs a discrete (Categorical) action spec, got {spec!r}")
    n_obs = env.observation_spec["observation"].shape[-1]
    cells = list(num_cells)
    if dueling:
        net = DuelingMlpDQNet(spec.n, mlp_kwargs_feature={
            "in_features": n_obs, "num_cells": cells[:-1], "out_features": cells[-1],
            "activation_class": nn.ReLU},
            mlp_kwargs_output={"num_cells": [cells[-1]], "activation_class": nn.ReLU})
    else:
        net = MLP(in_features=n_obs, out_features=spec.n, num_cells=cells,
                  activation_class=nn.ReLU)
    return QValueActor(net, spec=spec)


@register_recipe("dqn")
def main(cfg):
    run = TrainingRun(cfg, "dqn", distributed=False)
    setup_threads(cfg)
    seed = run.seed
    env = make_env(cfg["env"], seed)
    qnet = make_qnet(env, cfg["num_cells"], bool(cfg.get("dueling")))
    explore = EGreedyModule(env.action_spec, eps_init=cfg["eps_init"], eps_end=cfg["eps_end"],
                            annealing_num_steps=int(cfg["eps_annealing_frames"]))
    policy = TensorDictSequential(qnet, explore)
    loss = DQNLoss(qnet, loss_function=cfg["loss_function"], double_dqn=bool(cfg["double_dqn"]),
                   delay_value=True)
    loss.make_value_estimator(gamma=cfg["gamma"])
    updater = HardUpdate(loss, value_network_update_interval=int(cfg["target_update_interval"]))
    lr = float(cfg["lr"])
    optim = ember.optim.Adam(loss.parameters(), lr=lr)
    fpb = int(cfg["frames_per_batch"])
    collector, buffer = off_policy_data(cfg, env, policy)
    select = cfg.get("select_best") or {}
    select_every = int(select.get("every_n_batches") or 0)
    best = BestPolicy(qnet)
    run.track(loss=loss, optimizer=optim, collector=collector, exploration=explore,
              target_updater=updater, best_policy=best,
              replay_buffer=BufferState(buffer, os.path.join(run.out, "checkpoints",
                                                             "replay_buffer")))
    run.restore()
    returns = EpisodeReturns()
    n_batches = len(collector)
    log_every = int(cfg.get("log_every_batches") or 1)
    grad_steps, learning_starts = int(cfg["gradient_steps"]), int(cfg["learning_starts"])
    params = list(loss.parameters())

    def postfix():
        return {"return": f"{returns.recent_mean(20):.1f}", "eps": f"{explore.eps.item():.2f}"}

    with run:
        for batch in run.batches(collector, n_batches, postfix=postfix, unit="batch"):
            returns.update(batch)
            buffer.extend(batch.select(*STORED).reshape(-1))
            frames = (run.step + 1) * fpb
            losses = []
            if cfg.get("anneal_lr"):      # a frozen-in final policy: late updates are small
                for g in optim.param_groups:
                    g["lr"] = lr * (1.0 - run.step / n_batches)
            if frames >= learning_starts:
                for _ in range(grad_steps):
                    out = loss(buffer.sample())
                    optim.zero_grad()
                    out["loss"].backward()
                    nn.utils.clip_grad_norm_(params, float(cfg["max_grad_norm"]))
                    optim.step()
                    updater.step()
                    losses.append(float(out["loss"].item()))
                explore.step(fpb)
            sel = float("nan")
            if select_every and frames >= learning_starts and \
                    ((run.step + 1) % select_every == 0 or run.step + 1 == n_batches):
                sel, _ = evaluate(qnet, cfg["env"], seed + 7919 * (run.step + 1),
                                  int(select.get("episodes", 5)))
                best.consider(sel)
            if (run.step + 1) % log_every == 0 or run.step + 1 == n_batches:
                run.log_row(metrics_row(COLUMNS, frames=frames, mean_return=returns.take_pending(),
                                        loss=nan_if_empty(losses), eps=float(explore.eps.item()),
                                        select_return=sel))
    if run.interrupted:
        return EXIT_INTERRUPTED
    return finish(run, collector, qnet, cfg, n_batches * fpb, COLUMNS,
                  before_eval=best.restore)   # the best greedy policy seen (select_best)
