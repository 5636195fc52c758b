"""Functions that tests/core/test_multiprocessing.py runs in child processes (a plain module on
sys.path, so "spawn" children can import them by name)."""
import os
import sys

import numpy as np

import ember
import ember.multiprocessing as mp


def regression_data(seed, n=256):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    w = np.linspace(-1, 1, 8, dtype=np.float32)[:, None]
    return ember.tensor(x), ember.tensor(x @ w + 0.5)


def mse(model, x, y):
    with ember.no_grad():
        return float(((model(x) - y) ** 2).mean())


def hogwild_train(rank, model, steps, done):
    """SGD steps in place on the (shared) parameters of ``model``."""
    x, y = regression_data(100 + rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for i in range(steps):
        j = (i * 32) % len(x)
        opt.zero_grad()
        loss = ((model(x[j:j + 32]) - y[j:j + 32]) ** 2).mean()
        loss.backward()
        opt.step()
    done.put((rank, mp.is_shared(model.weight), os.getpid()))


def add_from_queue(q, answer, release):
    """Take a tensor from ``q``, add 1 in place, answer with a new shared tensor, then wait
    until the parent has taken the answer before exiting (a sender must outlive the fetch)."""
    t = q.get()
    shared = mp.is_shared(t)
    t.add_(1)
    mine = mp.share_memory_(ember.full((3,), 7.0))
    answer.put((shared, mine))
    release.wait(30)
    answer.put(float(mine.sum()))  # the parent changed it in place


def fill_row(args):
    t, i = args
    t[i] = float(i + 1)
    return mp.is_shared(t)


def rank_fails(rank, bad_rank, how):
    if rank != bad_rank:
        return
    if how == "raise":
        raise ValueError(f"boom on rank {rank}")
    if how == "exit":
        sys.exit(3)
    if how == "kill":
        os.kill(os.getpid(), 9)


def write_rank(rank, t):
    t[rank] = float(rank + 10)


def memfd_maps(pid="self"):
    """Mappings and open descriptors of ember segments in a process."""
    with open(f"/proc/{pid}/maps") as f:
        maps = sum("memfd:ember-shm" in line for line in f)
    fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds += "memfd:ember-shm" in os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return maps, fds
