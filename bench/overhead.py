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


@suite.figure("MLP 784-512-512-10 step (nn.Linear, SGD) vs numpy by hand", unit="ms",
              goal=1.05, anchor="numpy")
def mlp_modules():
    import core
    import ember
    import ember.nn as nn
    import ember.nn.functional as F

    x, y, params = core._mlp_data()
    sizes = [params[0].shape[0]] + [w.shape[1] for w in params[::2]]
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
    return step, core.numpy_mlp_step()


@suite.figure("MLP step (tensor ops, as bench/core.py) vs numpy by hand", unit="ms",
              goal=1.05, anchor="numpy")
def mlp_tensor_ops():
    """bench/core.py's ember step (``@``, bias add, relu, log_softmax, take_along_dim, mean,
    ``sub_(alpha=)``) against its hand-written numpy step: the issue's ratio, in one figure."""
    import core

    return core.mlp_step()[0], core.numpy_mlp_step()


if __name__ == "__main__":
    suite.main()
