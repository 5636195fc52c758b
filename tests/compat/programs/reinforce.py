"""REINFORCE in the style of the PyTorch example: a policy network, `Categorical` actions,
discounted returns normalised with float32's eps, `log_prob` times return as the loss. The
environment is a small corridor written here (reach the right end; each step costs)."""
import numpy as np

import ember as torch
import ember.nn.functional as F
from ember import nn, optim
from ember.distributions import Categorical

eps = np.finfo(np.float32).eps.item()


class Corridor:
    def __init__(self, length=6, max_steps=30, seed=0):
        self.length, self.max_steps = length, max_steps
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos, self.t = int(self.rng.integers(0, 2)), 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.length, np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, action):
        self.pos = max(0, min(self.length - 1, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == self.length - 1 or self.t >= self.max_steps
        return self._obs(), (1.0 if self.pos == self.length - 1 else -0.05), done


class Policy(nn.Module):
    def __init__(self, n):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(n, 32)
        self.dropout = nn.Dropout(p=0.1)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        return F.softmax(self.affine2(x), dim=1)


def select_action(policy, state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode(policy, optimizer, gamma=0.95):
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main(episodes=80):
    torch.manual_seed(0)
    env = Corridor()
    policy = Policy(env.length)
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    lengths = []
    for i_episode in range(episodes):
        state, done = env.reset(), False
        while not done:
            action = select_action(policy, state)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
        lengths.append(env.t)
        finish_episode(policy, optimizer)
    first, last = sum(lengths[:10]) / 10, sum(lengths[-10:]) / 10
    print('mean episode length: first 10 {:.1f}, last 10 {:.1f}'.format(first, last))
    return [first, last]


if __name__ == "__main__":
    main()
