"""Recipe ``ppo``: proximal policy optimisation (clipped objective) on a gymnasium env, built
from ember.rl's layers: ``GymEnv``, a ``ProbabilisticActor`` (categorical logits for discrete
actions, a ``TanhNormal`` within the action bounds for continuous ones), a ``ValueOperator``
critic, ``SyncDataCollector``, ``GAE`` and ``ClipPPOLoss``.

    ember run ppo                                  # CartPole-v1
    ember run ppo --config ppo_pendulum            # Pendulum-v1 (continuous actions)
    ember run ppo total_frames=50000 lr=1e-3       # overrides
    ember run ppo resume=true                      # continue from the latest checkpoint

Each collected batch: advantages by GAE over the batch, then ``ppo_epochs`` passes of
minibatch updates. ``metrics.csv`` gets one row per ``log_every_batches`` batches with
``frames``, ``mean_return`` (the training episodes that ended since the last row), the loss
terms and the learning rate; at the end ``eval_mean_return`` (10 episodes of the
deterministic policy) is logged and printed last. Checkpoints go to ``checkpoints/`` every
``checkpoint.every_n_steps`` batches; Ctrl-C saves one and exits 130.
"""
from __future__ import annotations

import ember
from ember import nn
from ember.distributions import Categorical as CategoricalDist
from ember.rl.collectors import SyncDataCollector
from ember.rl.envs import Categorical
from ember.rl.modules import (MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal,
                              TensorDictModule, ValueOperator)
from ember.rl.objectives import ClipPPOLoss

from ember.recipes._config import ConfigError
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun
from ember.recipes._registry import register_recipe
from ember.recipes._rl import EpisodeReturns, finish, make_env, metrics_row, setup_threads

__all__ = ["main", "make_actor_critic"]

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU}
COLUMNS = ("frames", "mean_return", "loss_objective", "loss_critic", "entropy", "lr",
           "eval_mean_return")


def make_actor_critic(env, num_cells, activation="tanh"):
    """(actor, critic) for ``env``: discrete action specs get a categorical policy, bounded
    continuous ones a ``TanhNormal`` scaled to the bounds."""
    act = _ACTIVATIONS.get(activation)
    if act is None:
        raise ConfigError(f"activation must be one of {sorted(_ACTIVATIONS)}, got "
                          f"{activation!r}")
    n_obs = env.observation_spec["observation"].shape[-1]
    spec = env.action_spec
    if isinstance(spec, Categorical):
        net = MLP(in_features=n_obs, out_features=spec.n, num_cells=num_cells,
                  activation_class=act)
        actor = ProbabilisticActor(TensorDictModule(net, ["observation"], ["logits"]),
                                   ["logits"], spec=spec, distribution_class=CategoricalDist,
                                   return_log_prob=True)
    elif hasattr(spec, "low"):
        n_act = spec.shape[-1]
        net = nn.Sequential(MLP(in_features=n_obs, out_features=2 * n_act, num_cells=num_cells,
                                activation_class=act), NormalParamExtractor())
        actor = ProbabilisticActor(TensorDictModule(net, ["observation"], ["loc", "scale"]),
                                   ["loc", "scale"], spec=spec, distribution_class=TanhNormal,
                                   return_log_prob=True)
    else:
        raise ConfigError(f"ppo: unsupported action spec {spec!r} (Categorical or Bounded)")
    critic = ValueOperator(MLP(in_features=n_obs, out_features=1, num_cells=num_cells,
                               activation_class=act))
    return actor, critic


@register_recipe("ppo")
def main(cfg):
    run = TrainingRun(cfg, "ppo", distributed=False)
    setup_threads(cfg)
    seed = run.seed
    env = make_env(cfg["env"], seed)
    actor, critic = make_actor_critic(env, list(cfg["num_cells"]), cfg.get("activation", "tanh"))
    loss = ClipPPOLoss(actor, critic, clip_epsilon=cfg["clip_epsilon"],
                       entropy_coef=cfg["entropy_coef"], critic_coef=cfg["critic_coef"],
                       loss_critic_type=cfg["loss_critic_type"],
                       normalize_advantage=cfg["normalize_advantage"])
    loss.make_value_estimator(gamma=cfg["gamma"], lmbda=cfg["lmbda"])
    lr = float(cfg["lr"])
    optim = ember.optim.Adam(loss.parameters(), lr=lr)
    collector = SyncDataCollector(env, actor, frames_per_batch=int(cfg["frames_per_batch"]),
                                  total_frames=int(cfg["total_frames"]))
    run.track(loss=loss, optimizer=optim, collector=collector)
    run.restore()
    returns = EpisodeReturns()
    n_batches, fpb = len(collector), int(cfg["frames_per_batch"])
    mb, epochs = int(cfg["minibatch_size"]), int(cfg["ppo_epochs"])
    log_every = int(cfg.get("log_every_batches") or 1)
    params = list(loss.parameters())

    def postfix():
        return {"return": f"{returns.recent_mean(20):.1f}"}

    with run:
        for batch in run.batches(collector, n_batches, postfix=postfix, unit="batch"):
            returns.update(batch)
            cur_lr = lr * (1.0 - run.step / n_batches) if cfg.get("anneal_lr") else lr
            for g in optim.param_groups:
                g["lr"] = cur_lr
            with ember.no_grad():
                loss.value_estimator(batch)
            flat = batch.reshape(-1)
            n = flat.batch_size[0]
            sums, count = {}, 0
            for _ in range(epochs):
                perm = ember.randperm(n).numpy()
                for i in range(0, n - mb + 1, mb):
                    out = loss(flat[perm[i:i + mb]])
                    total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
                    optim.zero_grad()
                    total.backward()
                    nn.utils.clip_grad_norm_(params, float(cfg["max_grad_norm"]))
                    optim.step()
                    for k in ("loss_objective", "loss_critic", "entropy"):
                        sums[k] = sums.get(k, 0.0) + float(out[k].item())
                    count += 1
            if (run.step + 1) % log_every == 0 or run.step + 1 == n_batches:
                run.log_row(metrics_row(COLUMNS, frames=(run.step + 1) * fpb,
                                        mean_return=returns.take_pending(), lr=cur_lr,
                                        **{k: v / max(count, 1) for k, v in sums.items()}))
    if run.interrupted:
        return EXIT_INTERRUPTED
    return finish(run, collector, actor, cfg, n_batches * fpb, COLUMNS)
