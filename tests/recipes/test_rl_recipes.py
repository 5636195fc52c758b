"""The RL recipes (ppo, dqn, sac) as seconds-long smoke runs: interrupted by Ctrl-C after
three batches (checkpoint saved, exit 130), resumed to the end, metrics with ``mean_return``
and the closing ``eval_mean_return`` printed last; plus the shared helpers of ``_rl``."""
import csv
import math

import numpy as np
import pytest

import ember
from recipe_helpers import StopAfter

SMOKE = {
    "ppo": ["quiet=true", "total_frames=512", "frames_per_batch=128", "ppo_epochs=2",
            "minibatch_size=64", "num_cells=[16]", "eval_episodes=2", "log_every_batches=1",
            "checkpoint.every_n_steps=1"],
    "ppo_pendulum": ["quiet=true", "total_frames=400", "frames_per_batch=100", "ppo_epochs=1",
                     "minibatch_size=50", "num_cells=[16]", "eval_episodes=1",
                     "log_every_batches=1", "checkpoint.every_n_steps=1"],
    "dqn": ["quiet=true", "total_frames=256", "frames_per_batch=64", "learning_starts=64",
            "gradient_steps=2", "batch_size=16", "num_cells=[16,16]", "eval_episodes=2",
            "log_every_batches=1", "checkpoint.every_n_steps=1", "target_update_interval=2",
            "eps_annealing_frames=128", "select_best.every_n_batches=2",
            "select_best.episodes=1"],
    "sac": ["quiet=true", "total_frames=500", "frames_per_batch=100", "learning_starts=100",
            "utd_ratio=0.02", "batch_size=16", "num_cells=[16,16]", "eval_episodes=1",
            "log_every_batches=1", "checkpoint.every_n_steps=1"],
}
TOTAL = {"ppo": 512, "ppo_pendulum": 400, "dqn": 256, "sac": 500}


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", ["ppo", "ppo_pendulum", "dqn", "sac"])
def test_recipe_interrupt_resume_and_eval(workdir, cli, monkeypatch, name):
    from ember.recipes import _loop as L

    recipe = name.split("_")[0]
    args = ["run", recipe, *(["--config", name] if name != recipe else []), *SMOKE[name],
            "output_dir=run"]
    with monkeypatch.context() as m:
        m.setattr(L, "Interrupt", StopAfter(2))
        rc, out, err = cli(*args)
    assert rc == 130, err
    assert "interrupted at step 3" in out and "resume=true" in out, out[-600:]
    ck = workdir / "run" / "checkpoints"
    assert (ck / "step-00000003.ember").exists()
    if recipe in ("dqn", "sac"):        # the replay buffer is saved beside the checkpoints
        assert (ck / "replay_buffer" / "buffer_metadata.json").exists()
    rc, out, err = cli(*args, "resume=true")
    assert rc == 0, err
    assert "resumed from" in out and "step 3)" in out
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    assert lines[-1].startswith("eval_mean_return ")
    rows = _rows(workdir / "run" / "metrics.csv")
    assert "mean_return" in rows[0] and "eval_mean_return" in rows[0]
    assert [int(r["step"]) for r in rows[:-1]] == list(range(len(rows) - 1))   # one per batch
    assert int(rows[-2]["frames"]) == TOTAL[name]
    final = float(rows[-1]["eval_mean_return"])
    assert not math.isnan(final) and f"{final:.1f}" in lines[-1]
    assert all(math.isnan(float(r["eval_mean_return"])) for r in rows[:-1])
    if recipe == "dqn":                 # model selection ran (every 2 batches)
        assert any(not math.isnan(float(r["select_return"])) for r in rows[:-1])
    # some training episode ended and was logged (CartPole and Pendulum episodes are short)
    assert any(not math.isnan(float(r["mean_return"])) for r in rows[:-1])


def test_recipes_refuse_wrong_action_spaces(workdir, cli):
    rc, _, err = cli("run", "dqn", "quiet=true", "env.name=Pendulum-v1", "output_dir=a")
    assert rc == 2 and "discrete" in err
    rc, _, err = cli("run", "sac", "quiet=true", "env.name=CartPole-v1", "output_dir=b")
    assert rc == 2 and "bounded continuous" in err


def test_episode_returns_span_batches():
    from ember.recipes._rl import EpisodeReturns
    from ember.rl import TensorDict

    def batch(rewards, dones):
        n = len(rewards)
        return TensorDict({"next": {"reward": ember.tensor(np.asarray(rewards, np.float32)
                                                           .reshape(n, 1)),
                                    "done": ember.tensor(np.asarray(dones).reshape(n, 1))}},
                          [n])

    er = EpisodeReturns()
    assert er.update(batch([1, 1, 1], [False, True, False])) == [2.0]
    assert er.update(batch([2, 2], [False, True])) == [5.0]      # 1 carried over + 2 + 2
    two = TensorDict({"next": {"reward": ember.ones(2, 3, 1),
                               "done": ember.tensor([[[False], [False], [True]],
                                                     [[True], [False], [False]]])}}, [2, 3])
    assert sorted(EpisodeReturns().update(two)) == [1.0, 3.0]


def test_buffer_state_round_trip(tmp_path):
    from ember.recipes._rl import BufferState
    from ember.rl import TensorDict
    from ember.rl.data import LazyTensorStorage, TensorDictReplayBuffer

    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=4)
    rb.extend(TensorDict({"obs": ember.arange(6).float()}, [6]))
    state = BufferState(rb, str(tmp_path / "rb")).state_dict()
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=4)
    BufferState(rb2, "unused").load_state_dict(state)
    assert len(rb2) == 6 and rb2[:6]["obs"].tolist() == list(range(6))
    with pytest.raises(FileNotFoundError, match="replay buffer"):
        BufferState(rb2, "x").load_state_dict({"directory": str(tmp_path / "missing")})


def test_best_policy_keeps_and_restores_the_best_weights():
    from ember import nn
    from ember.recipes._rl import BestPolicy

    net = nn.Linear(2, 1)
    best = BestPolicy(net)
    assert best.consider(10.0)
    w10 = net.weight.detach().numpy().copy()
    with ember.no_grad():
        net.weight.add_(1.0)
    assert not best.consider(5.0)
    best2 = BestPolicy(net)
    best2.load_state_dict(best.state_dict())      # as a resumed run does
    best2.restore()
    np.testing.assert_array_equal(net.weight.detach().numpy(), w10)
