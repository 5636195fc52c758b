"""Train a small MLP with ember's autograd on three interleaved spirals, and print the loss.

    python examples/train_mlp.py [--steps 300] [--seed 0]

The data are made here (no download): 3 classes x 300 points on 2-D spirals with noise, a
problem a linear model cannot solve (it stays near 55% accuracy). A 2-64-64-3 MLP with
ReLU, softmax cross-entropy and SGD with momentum, all written with ember tensors, learns it.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ember


def spirals(n_per_class=300, classes=3, noise=0.2, seed=0):
    """``(x, y)``: points (N, 2) float32 on ``classes`` spiral arms, labels (N,) int64."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = np.linspace(c * 2 * math.pi / classes, c * 2 * math.pi / classes + 4.0,
                            n_per_class) + rng.normal(0, noise, n_per_class)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], 1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def init_params(sizes, gen):
    """He-initialised weights (in, out) and zero biases, as leaves that require grad."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = ember.randn(fan_in, fan_out, generator=gen) * math.sqrt(2.0 / fan_in)
        params += [w.requires_grad_(), ember.zeros(fan_out, requires_grad=True)]
    return params


def forward(params, x):
    """Logits (N, classes): ReLU hidden layers, linear output."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    return h


def cross_entropy(logits, y):
    """Mean negative log-likelihood of the labels ``y`` under softmax(logits)."""
    return -logits.log_softmax(1).take_along_dim(y[:, None], 1).mean()


def main(steps=300, seed=0, lr=0.1, momentum=0.9, batch=128, log_every=25, quiet=False):
    """Train and return the list of per-step losses (the last entry is the final loss)."""
    gen = ember.Generator().manual_seed(seed)
    x_np, y_np = spirals(seed=seed)
    x, y = ember.from_numpy(x_np), ember.from_numpy(y_np)
    params = init_params([2, 64, 64, 3], gen)
    velocity = [ember.zeros_like(p) for p in params]
    rng = np.random.default_rng(seed)
    losses = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        idx = ember.from_numpy(rng.integers(0, len(x_np), batch))
        loss = cross_entropy(forward(params, x[idx]), y[idx])
        loss.backward()
        with ember.no_grad():
            for p, v in zip(params, velocity):
                v.mul_(momentum).add_(p.grad)
                p.sub_(v, alpha=lr)
                p.grad = None
        losses.append(loss.item())
        if not quiet and (step == 1 or step % log_every == 0):
            print(f"step {step:4d}  loss {np.mean(losses[-log_every:]):.4f}")
    with ember.no_grad():
        acc = (forward(params, x).argmax(1) == y).float().mean().item()
    if not quiet:
        print(f"trained {steps} steps in {time.perf_counter() - t0:.1f} s: loss "
              f"{losses[0]:.3f} -> {np.mean(losses[-log_every:]):.3f}, "
              f"train accuracy {acc:.1%}")
    return losses, acc


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0.1)
    a = ap.parse_args()
    main(steps=a.steps, seed=a.seed, lr=a.lr)
