"""Optimizer benchmarks: one step over many parameters, ember vs torch (its default CPU path,
the single-tensor loop, which uses torch's intra-op threads).

    env -u OPENBLAS_CORETYPE python bench/optim.py --threads 2

Goal (issue "optim"): an Adam step over 10M float32 parameters (10 tensors of 1M) at most
torch's time. ember's step runs in cache-sized chunks split across ``--threads`` threads
(see core/optim/_fused.py). The other figures track AdamW, SGD with momentum, and the
per-parameter overhead of a small model's step.
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("optim")


def _pair(name, shapes, **kw):
    import numpy as np
    import torch

    import ember
    import ember.optim

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) * 1e-2 for s in shapes]
    pe = [ember.tensor(a.copy(), requires_grad=True) for a in arrays]
    pt = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    for e, t, g in zip(pe, pt, grads):
        e.grad = ember.tensor(g.copy())
        t.grad = torch.tensor(g.copy())
    oe = getattr(ember.optim, name)(pe, **kw)
    ot = getattr(torch.optim, name)(pt, **kw)
    return oe.step, ot.step


@suite.figure("Adam step, 10 x 1M float32 params", unit="ms", goal=1.0, number=3)
def adam_10m():
    return _pair("Adam", [(1_000_000,)] * 10, lr=1e-3)


@suite.figure("AdamW step, 10 x (1000, 1000) params", unit="ms", goal=1.0, number=3)
def adamw_10m():
    return _pair("AdamW", [(1000, 1000)] * 10, lr=1e-3)


@suite.figure("SGD momentum step, 10 x 1M params", unit="ms", goal=1.0, number=3)
def sgd_10m():
    return _pair("SGD", [(1_000_000,)] * 10, lr=1e-2, momentum=0.9)


@suite.figure("SGD nesterov + weight decay step, 10 x 1M params", unit="ms", goal=1.0, number=3)
def sgd_nesterov_10m():
    return _pair("SGD", [(1_000_000,)] * 10, lr=1e-2, momentum=0.9, nesterov=True,
                 weight_decay=1e-4)


@suite.figure("SGD plain step (no momentum), 10 x 1M params", unit="ms", goal=1.0, number=3)
def sgd_plain_10m():
    return _pair("SGD", [(1_000_000,)] * 10, lr=1e-2)


@suite.figure("Adam step, MLP 784-512-512-10 params", unit="us", goal=1.0)
def adam_mlp():
    return _pair("Adam", [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)], lr=1e-3)


@suite.figure("Adam step, 20 params of 64 (overhead)", unit="us", goal=1.0)
def adam_small():
    return _pair("Adam", [(64,)] * 20, lr=1e-3)


if __name__ == "__main__":
    suite.main()
