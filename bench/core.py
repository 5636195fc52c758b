"""Core benchmarks: per-op overhead, an MLP training step, and GEMM throughput.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/core.py --threads 2

Goals (issue "core: the foundation"): ``a + b`` on 4 elements with autograd at most torch's
time, forward and forward+backward; the MLP 784-512-512-10 step (batch 128, manual SGD) at
most 0.7x torch; a chain of 1024x1024 matmuls at least 90% of raw numpy's GFLOP/s.
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("core")


@suite.figure("add 4 elems, requires_grad, forward", unit="us", goal=1.0)
def add_forward():
    import torch

    import ember

    a, b = ember.randn(4, requires_grad=True), ember.randn(4, requires_grad=True)
    ta, tb = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    return (lambda: a + b), (lambda: ta + tb)


@suite.figure("add 4 elems, requires_grad, fwd+bwd", unit="us", goal=1.0)
def add_backward():
    import torch

    import ember

    a, b = ember.randn(4, requires_grad=True), ember.randn(4, requires_grad=True)
    ta, tb = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    g, tg = ember.ones(4), torch.ones(4)

    def run_e():
        (a + b).backward(g)

    def run_t():
        (ta + tb).backward(tg)
    return run_e, run_t


def _mlp_data(batch=128, sizes=(784, 512, 512, 10), seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params += [(rng.standard_normal((i, o)) * (2 / i) ** 0.5).astype(np.float32),
                   np.zeros(o, np.float32)]
    return x, y, params


def _torch_mlp_step():
    import torch
    import torch.nn.functional as F

    x, y, params = _mlp_data()
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    tp = [torch.tensor(p, requires_grad=True) for p in params]

    def step():
        w1, b1, w2, b2, w3, b3 = tp
        h = torch.relu(tx @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        loss = F.cross_entropy(h @ w3 + b3, ty)
        loss.backward()
        with torch.no_grad():
            for p in tp:
                p.sub_(p.grad, alpha=0.01)
                p.grad = None
    return step


@suite.figure("MLP 784-512-512-10 SGD step, batch 128", unit="ms", goal=0.7)
def mlp_step():
    import ember

    x, y, params = _mlp_data()
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)[:, None]
    ep = [ember.tensor(p, requires_grad=True) for p in params]

    def step():
        w1, b1, w2, b2, w3, b3 = ep
        h = (ex @ w1 + b1).relu()
        h = (h @ w2 + b2).relu()
        loss = -(h @ w3 + b3).log_softmax(1).take_along_dim(ey, 1).mean()
        loss.backward()
        with ember.no_grad():
            for p in ep:
                p.sub_(p.grad, alpha=0.01)
                p.grad = None
    return step, _torch_mlp_step()


def numpy_mlp_step():
    """The floor for any numpy-based autograd: forward and backward written out by hand."""
    import numpy as np

    x, y, params = _mlp_data()
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


@suite.figure("  same step, hand-written numpy (context)", unit="ms")
def mlp_step_numpy():
    return numpy_mlp_step(), _torch_mlp_step()


N_CHAIN = 4
CHAIN_FLOPS = 2 * 1024 ** 3 * N_CHAIN


@suite.figure("matmul chain 4 x 1024^2, requires_grad", unit="ms", goal=0.9,
              flops=CHAIN_FLOPS, anchor="numpy", higher_is_better=True)
def matmul_chain():
    """Forward through ember's autograd (graph recorded) vs the same GEMMs in raw numpy."""
    import numpy as np

    import ember

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32) / 32
    ws = [rng.standard_normal((1024, 1024)).astype(np.float32) / 32 for _ in range(N_CHAIN)]
    ex = ember.from_numpy(x)
    ew = [ember.tensor(w, requires_grad=True) for w in ws]

    def run_e():
        h = ex
        for w in ew:
            h = h @ w
        return h

    def run_np():
        h = x
        for w in ws:
            h = h @ w
        return h
    return run_e, run_np


@suite.figure("matmul chain 4 x 1024^2, fwd+bwd", unit="ms", goal=0.9,
              flops=3 * CHAIN_FLOPS, anchor="numpy", higher_is_better=True)
def matmul_chain_backward():
    """Forward and backward (weight and activation grads) vs the same GEMMs by hand."""
    import numpy as np

    import ember

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32) / 32
    ws = [rng.standard_normal((1024, 1024)).astype(np.float32) / 32 for _ in range(N_CHAIN)]
    ex = ember.tensor(x, requires_grad=True)
    ew = [ember.tensor(w, requires_grad=True) for w in ws]
    g0 = np.ones((1024, 1024), np.float32)
    eg0 = ember.from_numpy(g0)

    def run_e():
        h = ex
        for w in ew:
            h = h @ w
        h.backward(eg0)
        ex.grad = None
        for w in ew:
            w.grad = None

    def run_np():
        hs = [x]
        for w in ws:
            hs.append(hs[-1] @ w)
        g = g0
        for i in range(N_CHAIN - 1, -1, -1):
            _ = hs[i].T @ g
            g = g @ ws[i].T
    return run_e, run_np


if __name__ == "__main__":
    suite.main()
