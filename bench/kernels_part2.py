"""Issue 12 part 2: the ops wired to the new kernels, through their public API, against the
same API on ember's numpy path (``anchor = ember-numpy``: ``EMBER_KERNELS=numpy`` switched
on per call, interleaved in one process) and against torch.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/kernels_part2.py --threads 2
    python bench/kernels_part2.py --threads 2 --oddities   # hot vs after-a-pause, page faults

Figures: ``F.embedding_bag`` (26 tables of 100k x 64, batch 2048, ~10 ids per bag, sum)
forward, and forward + backward with sparse gradients; ``nn.LSTM(256, 256, 2)`` on seq 100 x
batch 32, forward + backward; ``F.dropout(p=0.1)`` forward + backward on 32x128x1536;
``F.max_pool2d(3, 2, 1)`` forward + backward on 8x64x112x112 (ResNet's stem pool);
``F.scaled_dot_product_attention`` on 32x12x128x32 forward + backward, split over threads
against numpy's batched matmul (``anchor = batched``).
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("kernels_part2")


def _numpy_path(fn):
    """``fn`` run with the kernels switched off (ember's numpy references)."""
    from ember import kernels

    def run():
        old = kernels.set_mode("numpy")
        try:
            return fn()
        finally:
            kernels.set_mode(old)
    return run


def _both(build):
    """(compiled, numpy path) callables of ``build()``'s function."""
    fn = build()
    return fn, _numpy_path(fn)


# ----------------------------------------------------------------------------- embedding bag

def _bags():
    import numpy as np

    import ember

    rng = np.random.default_rng(0)
    lengths = rng.poisson(10, (26, 2048)).clip(1, None)
    ids = [rng.integers(0, 100_000, int(n.sum())) for n in lengths]
    offs = [np.concatenate([[0], np.cumsum(n)[:-1]]) for n in lengths]
    w = [rng.uniform(-0.01, 0.01, (100_000, 64)).astype(np.float32) for _ in range(26)]
    e = [(ember.from_numpy(i), ember.from_numpy(o)) for i, o in zip(ids, offs)]
    return w, ids, offs, e


def _eb_ember(grad):
    import ember
    import ember.nn.functional as F

    w, ids, offs, e = _bags()
    ws = [ember.tensor(a, requires_grad=grad) for a in w]

    def run():
        if not grad:
            with ember.no_grad():
                return [F.embedding_bag(i, t, o, mode="sum") for t, (i, o) in zip(ws, e)]
        sum(F.embedding_bag(i, t, o, mode="sum", sparse=True).sum()
            for t, (i, o) in zip(ws, e)).backward()
        for t in ws:
            t.grad = None
    return run, (w, ids, offs)


def _eb_torch(data, grad):
    import torch

    w, ids, offs = data
    tw = [torch.from_numpy(a).requires_grad_(grad) for a in w]
    ti = [(torch.from_numpy(i), torch.from_numpy(o)) for i, o in zip(ids, offs)]

    def run():
        if not grad:
            with torch.no_grad():
                return [torch.nn.functional.embedding_bag(i, t, o, mode="sum")
                        for t, (i, o) in zip(tw, ti)]
        sum(torch.nn.functional.embedding_bag(i, t, o, mode="sum", sparse=True).sum()
            for t, (i, o) in zip(tw, ti)).backward()
        for t in tw:
            t.grad = None
    return run


@suite.figure("F.embedding_bag 26x100kx64 b2048 fwd: compiled", unit="ms", anchor="ember-numpy")
def eb_fwd_numpy():
    return _both(lambda: _eb_ember(False)[0])


@suite.figure("  same, vs torch", unit="ms")
def eb_fwd_torch():
    run, data = _eb_ember(False)
    return run, _eb_torch(data, False)


@suite.figure("F.embedding_bag 26x100kx64 fwd+bwd sparse: compiled", unit="ms",
              anchor="ember-numpy", number=1)
def eb_train_numpy():
    return _both(lambda: _eb_ember(True)[0])


# ----------------------------------------------------------------------------- LSTM

def _lstm():
    import numpy as np

    import ember

    m = ember.nn.LSTM(256, 256, num_layers=2)
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((100, 32, 256))
                         .astype(np.float32))

    def run():
        m(x)[0].sum().backward()
        m.zero_grad()
    return run


@suite.figure("LSTM 2x256 seq100 b32 fwd+bwd: gate kernels", unit="ms", anchor="ember-numpy",
              number=1)
def lstm_numpy():
    return _both(_lstm)


# ----------------------------------------------------------------------------- dropout

def _dropout_pair():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    x = np.random.default_rng(0).standard_normal((32, 128, 1536)).astype(np.float32)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)

    def run_e():
        F.dropout(ex, 0.1).sum().backward()
        ex.grad = None

    def run_t():
        torch.nn.functional.dropout(tx, 0.1).sum().backward()
        tx.grad = None
    return run_e, run_t


@suite.figure("F.dropout(0.1) fwd+bwd 32x128x1536: kernel", unit="ms", anchor="ember-numpy")
def dropout_numpy():
    run_e, _ = _dropout_pair()
    return run_e, _numpy_path(run_e)


@suite.figure("  same, vs torch", unit="ms")
def dropout_torch():
    return _dropout_pair()


# ----------------------------------------------------------------------------- max pool

def _pool_pair():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    x = np.random.default_rng(0).standard_normal((8, 64, 112, 112)).astype(np.float32)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)

    def run_e():
        F.max_pool2d(ex, 3, 2, 1).sum().backward()
        ex.grad = None

    def run_t():
        torch.nn.functional.max_pool2d(tx, 3, 2, 1).sum().backward()
        tx.grad = None
    return run_e, run_t


@suite.figure("F.max_pool2d(3,2,1) fwd+bwd 8x64x112^2: kernels", unit="ms",
              anchor="ember-numpy")
def pool_numpy():
    run_e, _ = _pool_pair()
    return run_e, _numpy_path(run_e)


@suite.figure("  same, vs torch", unit="ms")
def pool_torch():
    return _pool_pair()


# ----------------------------------------------------------------------------- attention

def _sdpa_pair():
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((32, 12, 128, 32)).astype(np.float32) for _ in range(3)]
    e = [ember.tensor(a, requires_grad=True) for a in arrs]
    t = [torch.tensor(a, requires_grad=True) for a in arrs]

    def run_e():
        F.scaled_dot_product_attention(*e).sum().backward()
        for a in e:
            a.grad = None

    def run_t():
        torch.nn.functional.scaled_dot_product_attention(*t).sum().backward()
        for a in t:
            a.grad = None
    return run_e, run_t


@suite.figure("SDPA 32x12x128x32 fwd+bwd: split over threads", unit="ms", anchor="batched")
def sdpa_batched():
    from ember.nn.functional import attention as A

    run_e, _ = _sdpa_pair()
    real = A._threads_for

    def batched():
        A._threads_for = lambda *a: 1
        try:
            run_e()
        finally:
            A._threads_for = real
    return run_e, batched


@suite.figure("  same, vs torch", unit="ms")
def sdpa_torch():
    return _sdpa_pair()


# ----------------------------------------------------------------------------- oddities

def oddities(n=9):
    """Issue 12's two open oddities: log_softmax fwd+bwd (4096x1000) and an SGD momentum step
    (10 x 1M) timed hot and after a 0.3 s pause, with the minor page faults of each call;
    then the SGD step with ember's pool at one thread next to the same update by hand in
    numpy (no thread wake-up on either side)."""
    import resource
    import statistics
    import time

    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def measure(fn, pause):
        ts, fs = [], []
        for _ in range(n):
            if pause:
                time.sleep(pause)
            f0, t0 = faults(), time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
            fs.append(faults() - f0)
        return statistics.median(ts) * 1e3, statistics.median(fs)

    x = np.random.default_rng(0).standard_normal((4096, 1000)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def e_ls():
        F.log_softmax(ex, -1).sum().backward()
        ex.grad = None

    def t_ls():
        torch.nn.functional.log_softmax(tx, -1).sum().backward()
        tx.grad = None

    ps = [ember.nn.Parameter(ember.randn(1_000_000)) for _ in range(10)]
    tps = [torch.nn.Parameter(torch.from_numpy(p.detach().numpy().copy())) for p in ps]
    for p, t in zip(ps, tps):
        p.grad = ember.randn(1_000_000)
        t.grad = torch.from_numpy(p.grad.numpy().copy())
    opt = ember.optim.SGD(ps, lr=0.01, momentum=0.9)
    topt = torch.optim.SGD(tps, lr=0.01, momentum=0.9)
    for name, e, t in (("log_softmax fwd+bwd", e_ls, t_ls), ("SGD momentum step", opt.step,
                                                              topt.step)):
        for f in (e, t, e, t):
            f()
        for pause in (0, 0.3):
            (te, fe), (tt, ft) = measure(e, pause), measure(t, pause)
            print(f"{name:20s} pause {pause}: ember {te:7.2f} ms ({fe:.0f} minor faults), "
                  f"torch {tt:7.2f} ms ({ft:.0f}), ratio {te / tt:.2f}")
    P = [p.detach().numpy().copy() for p in ps]
    G = [p.grad.numpy() for p in ps]
    M = [np.zeros_like(a) for a in P]

    def by_hand():
        for p, g, m in zip(P, G, M):
            m *= np.float32(0.9)
            m += g
            p -= np.float32(0.01) * m

    ember.set_num_threads(1)
    for pause in (0, 0.3):
        (te, _), (th, _) = measure(opt.step, pause), measure(by_hand, pause)
        print(f"1 thread, pause {pause}: ember SGD step {te:.2f} ms, numpy by hand {th:.2f} ms")


if __name__ == "__main__":
    import sys

    if "--oddities" in sys.argv:
        oddities()
    else:
        suite.main()
