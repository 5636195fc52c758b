"""Per-op autograd overhead and the MLP step against a hand-written numpy step.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/overhead.py --threads 2

Goals (issue "core performance"): 100 x ``a + b`` (4 elements, requires_grad) then one
backward, per op, at most torch's time; the MLP 784-512-512-10 SGD step (batch 128) written
with ``nn.Linear``/``ReLU``/``cross_entropy``/``optim.SGD`` within 1.05 of the same step
written by hand in numpy (float32, in-place updates), which is the floor for any numpy-based
autograd. bench/core.py has the same MLP step written with raw tensor ops, against torch.
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("overhead")

N_OPS = 100


@suite.figure(f"{N_OPS} x a + b (4 elems, requires_grad) + backward", unit="us", goal=1.0)
def add_chain():
    import torch

    import ember

    a, b = ember.randn(4, requires_grad=True), ember.randn(4, requires_grad=True)
    ta, tb = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    g, tg = ember.ones(4), torch.ones(4)

    def run_e():
        s = a
        for _ in range(N_OPS):
            s = s + b
        s.backward(g)

    def run_t():
        s = ta
        for _ in range(N_OPS):
            s = s + tb
        s.backward(tg)
    return run_e, run_t


def _mlp_data(batch=128, sizes=(784, 512, 512, 10), seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    return x, y, sizes


def _numpy_step():
    """Forward and backward written out by hand, weights stored (in, out) so no GEMM needs
    a transposed output, SGD applied in place."""
    import numpy as np

    x, y, sizes = _mlp_data()
    rng = np.random.default_rng(1)
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params += [(rng.standard_normal((i, o)) * (2 / i) ** 0.5).astype(np.float32),
                   np.zeros(o, np.float32)]
    b = len(x)
    rows = np.arange(b)

    def step():
        w1, b1, w2, b2, w3, b3 = params
        a1 = x @ w1 + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ w2 + b2
        h2 = np.maximum(a2, 0)
        o = h2 @ w3 + b3
        e = np.exp(o - o.max(1, keepdims=True))
        g = e / e.sum(1, keepdims=True)
        g[rows, y] -= 1
        g /= b
        grads = [None] * 6
        grads[4], grads[5] = h2.T @ g, g.sum(0)
        g = (g @ w3.T) * (a2 > 0)
        grads[2], grads[3] = h1.T @ g, g.sum(0)
        g = (g @ w2.T) * (a1 > 0)
        grads[0], grads[1] = x.T @ g, g.sum(0)
        for p, gp in zip(params, grads):
            p -= 0.01 * gp
    return step


@suite.figure("MLP 784-512-512-10 step (nn.Linear, SGD) vs numpy by hand", unit="ms",
              goal=1.05, anchor="numpy")
def mlp_modules():
    import ember
    import ember.nn as nn
    import ember.nn.functional as F

    x, y, sizes = _mlp_data()
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    ember.manual_seed(0)
    layers = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(i, o), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = ember.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(ex), ey).backward()
        opt.step()
    return step, _numpy_step()


@suite.figure("MLP step (tensor ops, as bench/core.py) vs numpy by hand", unit="ms",
              goal=1.05, anchor="numpy")
def mlp_tensor_ops():
    """bench/core.py's ember step (``@``, bias add, relu, log_softmax, take_along_dim, mean,
    ``sub_(alpha=)``) against its hand-written numpy step: the issue's ratio, in one figure."""
    import core

    return core.mlp_step()[0], core.mlp_step_numpy()[0]


if __name__ == "__main__":
    suite.main()
