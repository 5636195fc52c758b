"""Run under mpiexec: DDP equals single-process training on the concatenated batch.

Every rank builds the same data (one seed) and, next to its DDP replica, trains a local copy
of the model on the whole batch; after each phase the DDP parameters must equal that
reference (relative 1e-6) and be bitwise equal across ranks.
"""
import copy
import os
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "mpi")
DEV = "cuda" if BACKEND == "nccl" else "cpu"
dist.init_process_group(BACKEND)
R, N = dist.get_rank(), dist.get_world_size()
PER = 16  # per-rank batch


def H(a):
    """A raw array (numpy or cupy) as numpy."""
    return a.get() if hasattr(a, "get") else a


def cnn():
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 2 * 2, 10)).to(DEV)


def batches(steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.standard_normal((PER * N, 3, 8, 8)).astype(np.float32)
        y = rng.integers(0, 10, PER * N)
        yield ember.tensor(x, device=DEV), ember.tensor(y, device=DEV)


def mine(t):
    return t[R * PER:(R + 1) * PER]


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def check(ddp_model, ref_model, what):
    errs = []
    for (n, p), q in zip(ddp_model.module.named_parameters(), ref_model.parameters()):
        errs.append(rel_err(H(p.array), H(q.array)))
        every = [None] * N
        dist.all_gather_object(every, H(p.array))
        for r in range(N):
            assert np.array_equal(every[r], H(p.array)), f"{what}: {n} differs on rank {r}"
    assert max(errs) <= 1e-6, f"{what}: max relative error {max(errs)}"
    if R == 0:
        print(f"{what}: max rel err vs single process {max(errs):.2e}", flush=True)


def run(accum, **kw):
    ember.manual_seed(100 + R)  # different init per rank: DDP must broadcast rank 0's
    net = cnn()
    model = DDP(net, **kw)
    ref = copy.deepcopy(net)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ropt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    steps = 10 * accum
    for k, (x, y) in enumerate(batches(steps, seed=7)):
        last = (k + 1) % accum == 0
        if last:
            (lossf(model(mine(x)), mine(y)) / accum).backward()
        else:
            with model.no_sync():
                (lossf(model(mine(x)), mine(y)) / accum).backward()
        (lossf(ref(x), y) / accum).backward()
        if last:
            opt.step()
            opt.zero_grad()
            ropt.step()
            ropt.zero_grad()
    return model, ref


m, r = run(1)
check(m, r, "10 SGD steps")
m, r = run(1, bucket_cap_mb=0.001)  # many buckets, reduced while backward runs
assert len(m.reducer.buckets) > 3
check(m, r, "small buckets")
m, r = run(3)
check(m, r, "no_sync accumulation x3")
m, r = run(1, gradient_as_bucket_view=True, static_graph=True)
check(m, r, "bucket views + static graph")


# find_unused_parameters: a branch used only on rank 0
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 3)
        self.never = nn.Linear(2, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


ember.manual_seed(0)
bm = DDP(Branchy().to(DEV), find_unused_parameters=True)
x = ember.ones(2, 4, device=DEV)
bm(x, use_b=(R == 0)).sum().backward()
assert bm.module.never.weight.grad is None  # unused everywhere: left alone
np.testing.assert_allclose(H(bm.module.b.weight.grad.array), np.full((3, 4), 2.0 / N), rtol=1e-6)
np.testing.assert_allclose(H(bm.module.a.weight.grad.array), np.full((3, 4), 2.0), rtol=1e-6)
try:
    DDP(Branchy().to(DEV))(x, use_b=True)
    raise SystemExit("an unused parameter without find_unused_parameters should raise")
except RuntimeError as e:
    assert "never" in str(e), e

# BatchNorm buffers follow rank 0 at each forward
ember.manual_seed(0)
bn = DDP(nn.BatchNorm1d(3).to(DEV))
bn(ember.tensor(np.full((4, 3), float(R + 1), np.float32)
              + np.arange(4, dtype=np.float32)[:, None], device=DEV))
rm = H(bn.module.running_mean.array).copy()
bn(ember.zeros(4, 3, device=DEV))  # broadcast first: every rank starts from rank 0's statistics
every = [None] * N
dist.all_gather_object(every, H(bn.module.running_mean.array))
assert all(np.array_equal(e, every[0]) for e in every), every
want = [None]
want[0] = rm
dist.broadcast_object_list(want, src=0)
np.testing.assert_allclose(every[0], want[0] * 0.9, rtol=1e-6)

# row-sparse embedding gradients are all-gathered
ember.manual_seed(0)
emb = DDP(nn.Embedding(10, 3, sparse=True).to(DEV))
emb(ember.tensor(np.array([R, 5]), device=DEV)).sum().backward()
dense = H(emb.module.weight.grad.to_dense().array)
want = np.zeros((10, 3), np.float32)
for r in range(N):
    want[[r, 5]] += 1.0 / N
np.testing.assert_allclose(dense, want, rtol=1e-6)

# a rank with a different model gets a clear error
if N > 1:
    try:
        DDP(nn.Linear(4, 3 if R == 0 else 5).to(DEV))
        raise SystemExit("mismatched parameters should raise")
    except RuntimeError as e:
        assert "differ" in str(e), e

dist.destroy_process_group()
print(f"rank {R}: ddp ok", flush=True)
sys.exit(0)
