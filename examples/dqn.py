"""DQN on CartPole in ~30 lines with ember.rl's layers: env, policy, collector, buffer, loss.

    python examples/dqn.py [--frames 50000] [--seed 0]
"""
import argparse

import ember
from ember import nn
from ember.rl.collectors import SyncDataCollector
from ember.rl.data import LazyTensorStorage, TensorDictReplayBuffer
from ember.rl.envs import GymEnv, RewardSum, TransformedEnv
from ember.rl.modules import MLP, EGreedyModule, QValueActor, TensorDictSequential
from ember.rl.objectives import DQNLoss, HardUpdate


def main(frames=50_000, seed=0, updates_per_batch=128, quiet=False):
    ember.manual_seed(seed)
    env = TransformedEnv(GymEnv("CartPole-v1"), RewardSum())   # adds "episode_reward"
    env.set_seed(seed)
    qnet = QValueActor(MLP(in_features=4, out_features=2, num_cells=[256, 256],
                           activation_class=nn.ReLU), spec=env.action_spec)
    explore = EGreedyModule(env.action_spec, eps_end=0.04, annealing_num_steps=frames // 6)
    collector = SyncDataCollector(env, TensorDictSequential(qnet, explore),
                                  frames_per_batch=256, total_frames=frames)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100_000), batch_size=64)
    loss = DQNLoss(qnet, loss_function="smooth_l1").make_value_estimator(gamma=0.99)
    target = HardUpdate(loss, value_network_update_interval=128)
    optim = ember.optim.Adam(loss.parameters(), lr=2.3e-3)
    returns = []
    for batch in collector:
        buffer.extend(batch.reshape(-1))
        done = batch["next", "done"][..., 0]
        returns += batch["next", "episode_reward"][done][..., 0].tolist()
        for _ in range(updates_per_batch if len(buffer) >= 1000 else 0):
            optim.zero_grad()
            loss(buffer.sample())["loss"].backward()
            optim.step()
            target.step()
        explore.step(256)
        if not quiet:
            print(f"frames {len(buffer):6d}  mean return (last 10 episodes) "
                  f"{sum(returns[-10:]) / max(len(returns[-10:]), 1):6.1f}")
    return returns


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(a.frames, a.seed)
