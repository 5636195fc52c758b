"""Recipe ``sac``: soft actor-critic on a gymnasium env with bounded continuous actions,
built from ember.rl's layers: ``GymEnv``, a ``ProbabilisticActor`` with a ``TanhNormal``
scaled to the action bounds, two Q-networks (``ValueOperator`` on observation and action),
``SyncDataCollector``, a ``TensorDictReplayBuffer`` on ``LazyTensorStorage``, ``SACLoss``
(automatic entropy tuning) and ``SoftUpdate``.

    ember run sac                                  # Pendulum-v1
    ember run sac total_frames=10000               # overrides
    ember run sac resume=true                      # continue from the latest checkpoint

Each collected batch is added to the buffer; once ``learning_starts`` frames are collected,
``utd_ratio * frames_per_batch`` updates follow (actor, critics and temperature with one
optimizer each, then a Polyak step of the target critics). ``metrics.csv`` gets one row per
``log_every_batches`` batches (``frames``, ``mean_return``, the loss terms, ``alpha``); at
the end ``eval_mean_return`` (10 episodes of the deterministic policy: the squashed mean) is
logged and printed last.
"""
from __future__ import annotations

import os

import ember
from ember import nn
from ember.rl.modules import (MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal,
                              TensorDictModule, ValueOperator)
from ember.rl.objectives import SACLoss, SoftUpdate

from ember.recipes._config import ConfigError
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun
from ember.recipes._registry import register_recipe
from ember.recipes._rl import (BufferState, EpisodeReturns, finish, make_env, metrics_row,
                               off_policy_data, setup_threads)

__all__ = ["main", "make_sac_nets"]

COLUMNS = ("frames", "mean_return", "loss_actor", "loss_qvalue", "loss_alpha", "alpha",
           "eval_mean_return")
STORED = ("observation", "action", ("next", "observation"), ("next", "reward"),
          ("next", "done"), ("next", "terminated"))


def make_sac_nets(env, num_cells):
    """(actor, qvalue) for ``env``'s bounded continuous action spec."""
    spec = env.action_spec
    if not hasattr(spec, "low"):
        raise ConfigError(f"sac: needs a bounded continuous action spec, got {spec!r}")
    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = spec.shape[-1]
    body = nn.Sequential(MLP(in_features=n_obs, out_features=2 * n_act, num_cells=num_cells,
                             activation_class=nn.ReLU), NormalParamExtractor())
    actor = ProbabilisticActor(TensorDictModule(body, ["observation"], ["loc", "scale"]),
                               ["loc", "scale"], spec=spec, distribution_class=TanhNormal)
    qvalue = ValueOperator(MLP(in_features=n_obs + n_act, out_features=1, num_cells=num_cells,
                               activation_class=nn.ReLU), in_keys=["observation", "action"])
    return actor, qvalue


@register_recipe("sac")
def main(cfg):
    run = TrainingRun(cfg, "sac", distributed=False)
    setup_threads(cfg)
    seed = run.seed
    env = make_env(cfg["env"], seed)
    actor, qvalue = make_sac_nets(env, list(cfg["num_cells"]))
    loss = SACLoss(actor, qvalue, num_qvalue_nets=2, loss_function=cfg["loss_function"],
                   alpha_init=float(cfg["alpha_init"]), action_spec=env.action_spec)
    loss.make_value_estimator(gamma=cfg["gamma"])
    updater = SoftUpdate(loss, tau=float(cfg["tau"]))
    lr = float(cfg["lr"])
    opt_actor = ember.optim.Adam(actor.parameters(), lr=lr)
    opt_q = ember.optim.Adam(loss.qvalue_networks.parameters(), lr=lr)
    opt_alpha = ember.optim.Adam([loss.log_alpha], lr=float(cfg.get("alpha_lr", lr)))
    fpb = int(cfg["frames_per_batch"])
    collector, buffer = off_policy_data(cfg, env, actor)
    run.track(loss=loss, opt_actor=opt_actor, opt_q=opt_q, opt_alpha=opt_alpha,
              collector=collector,
              replay_buffer=BufferState(buffer, os.path.join(run.out, "checkpoints",
                                                             "replay_buffer")))
    run.restore()
    returns = EpisodeReturns()
    n_batches = len(collector)
    log_every = int(cfg.get("log_every_batches") or 1)
    updates = max(1, int(round(float(cfg["utd_ratio"]) * fpb)))
    learning_starts = int(cfg["learning_starts"])

    def postfix():
        return {"return": f"{returns.recent_mean(10):.1f}"}

    with run:
        for batch in run.batches(collector, n_batches, postfix=postfix, unit="batch"):
            returns.update(batch)
            buffer.extend(batch.select(*STORED).reshape(-1))
            frames = (run.step + 1) * fpb
            sums, count = {}, 0
            if frames >= learning_starts:
                for _ in range(updates):
                    out = loss(buffer.sample())
                    opt_actor.zero_grad()
                    opt_q.zero_grad()
                    opt_alpha.zero_grad()
                    (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
                    opt_actor.step()
                    opt_q.step()
                    opt_alpha.step()
                    updater.step()
                    for k in ("loss_actor", "loss_qvalue", "loss_alpha", "alpha"):
                        sums[k] = sums.get(k, 0.0) + float(out[k].item())
                    count += 1
            if (run.step + 1) % log_every == 0 or run.step + 1 == n_batches:
                run.log_row(metrics_row(COLUMNS, frames=frames, mean_return=returns.take_pending(),
                                        **{k: v / count for k, v in sums.items()}))
    if run.interrupted:
        return EXIT_INTERRUPTED
    return finish(run, collector, actor, cfg, n_batches * fpb, COLUMNS)
