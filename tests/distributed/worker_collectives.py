"""Run under mpiexec: every collective against a numpy reference (exit 0 = all passed).

Rank r's data for a case is ``ref(r)``, computable on every rank, so each rank checks its
result against numpy without any communication.
"""
import os
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "mpi")
DEV = "cuda" if BACKEND == "nccl" else "cpu"
dist.init_process_group(BACKEND)
R, N = dist.get_rank(), dist.get_world_size()
DTYPES = [np.float32, np.float64, np.int64]
SHAPES = [(7,), (3, 5), (1,)]


def data(r, shape, dt, salt=0):
    rng = np.random.default_rng(1000 * r + salt)
    return (rng.integers(-5, 6, size=shape)).astype(dt)


def T(a):
    return ember.tensor(a.copy(), device=DEV)


def eq(got, want, what):
    got = got.detach().cpu().numpy() if hasattr(got, "numpy") else got
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=what)


npops = {ReduceOp.SUM: np.sum, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min,
         ReduceOp.PRODUCT: np.prod}

for dt in DTYPES:
    for shape in SHAPES:
        allv = np.stack([data(r, shape, dt) for r in range(N)])
        mine = allv[R]
        for op, f in npops.items():
            t = T(mine)
            dist.all_reduce(t, op=op)
            eq(t, f(allv, axis=0).astype(dt), f"all_reduce {op} {dt} {shape}")
            t = T(mine)
            dist.reduce(t, dst=N - 1, op=op)
            eq(t, f(allv, axis=0).astype(dt) if R == N - 1 else mine, f"reduce {op} {dt}")
        if np.dtype(dt).kind == "f":
            t = T(mine)
            dist.all_reduce(t, op="avg")
            eq(t, (allv.sum(0) / N).astype(dt), f"all_reduce avg {dt}")
        t = T(mine)
        dist.broadcast(t, src=N - 1)
        eq(t, allv[N - 1], f"broadcast {dt}")
        outs = [T(np.zeros(shape, dt)) for _ in range(N)]
        dist.all_gather(outs, T(mine))
        for r in range(N):
            eq(outs[r], allv[r], f"all_gather {dt}")
        out = T(np.zeros((N * shape[0],) + shape[1:], dt))
        dist.all_gather_into_tensor(out, T(mine))
        eq(out, np.concatenate(list(allv)), f"all_gather_into_tensor {dt}")
        gl = [T(np.zeros(shape, dt)) for _ in range(N)] if R == 0 else None
        dist.gather(T(mine), gl, dst=0)
        if R == 0:
            for r in range(N):
                eq(gl[r], allv[r], f"gather {dt}")
        chunks = [data(0, shape, dt, salt=10 + j) for j in range(N)]
        t = T(np.zeros(shape, dt))
        dist.scatter(t, [T(c) for c in chunks] if R == 0 else None, src=0)
        eq(t, chunks[R], f"scatter {dt}")
        lists = [[data(r, shape, dt, salt=20 + j) for j in range(N)] for r in range(N)]
        t = T(np.zeros(shape, dt))
        dist.reduce_scatter(t, [T(c) for c in lists[R]])
        eq(t, sum(lists[r][R] for r in range(N)).astype(dt), f"reduce_scatter {dt}")
        t = T(np.zeros(shape, dt))
        dist.reduce_scatter_tensor(t, T(np.concatenate(lists[R])), op=ReduceOp.MAX)
        eq(t, np.max([lists[r][R] for r in range(N)], axis=0), f"reduce_scatter_tensor {dt}")

    # all_to_all_single with uneven splits: rank r sends (r + j) % 3 rows of width 3 to rank j
    def split(r, j):
        return (r + j) % 3

    def block(r, j):
        return data(r, (split(r, j), 3), dt, salt=50 + j)
    send = np.concatenate([block(R, j) for j in range(N)])
    want = np.concatenate([block(j, R) for j in range(N)])
    out = T(np.zeros_like(want))
    dist.all_to_all_single(out, T(send), [split(j, R) for j in range(N)],
                           [split(R, j) for j in range(N)])
    eq(out, want, f"all_to_all_single uneven {dt}")
    send = np.concatenate([data(R, (2,), dt, salt=60 + j) for j in range(N)])
    out = T(np.zeros(2 * N, dt))
    dist.all_to_all_single(out, T(send))
    eq(out, np.concatenate([data(j, (2,), dt, salt=60 + R) for j in range(N)]), "a2a even")
    ins = [T(data(R, (j + 1, 2), dt, salt=70)) for j in range(N)]
    outs = [T(np.zeros((R + 1, 2), dt)) for _ in range(N)]
    dist.all_to_all(outs, ins)
    for j in range(N):
        eq(outs[j], data(j, (R + 1, 2), dt, salt=70), f"all_to_all {dt}")

# non-contiguous in place, float16 (upcast reduction), async ops
base = np.arange(12, dtype=np.float32).reshape(3, 4) * (R + 1)
t = ember.tensor(base, device=DEV).t()
dist.all_reduce(t)
eq(t, (np.arange(12, dtype=np.float32).reshape(3, 4) * sum(range(1, N + 1))).T, "non-contig")
h = T(np.full(5, R + 1, np.float16))
dist.all_reduce(h)
eq(h, np.full(5, N * (N + 1) // 2, np.float16), "float16")
ts = [T(data(R, (9,), np.float32, salt=k)) for k in range(3)]
works = [dist.all_reduce(t, async_op=True) for t in ts]
assert all(isinstance(w, dist.Work) for w in works)
for w in works:
    w.wait()
    assert w.is_completed()
for k, t in enumerate(ts):
    eq(t, sum(data(r, (9,), np.float32, salt=k) for r in range(N)), "async all_reduce")
t = T(np.zeros(4, np.int64) + R)
dist.broadcast(t, src=0, async_op=True).wait()
eq(t, np.zeros(4, np.int64), "async broadcast")
outs = [T(np.zeros(5, np.float64)) for _ in range(N)]
w1 = dist.all_gather(outs, T(data(R, (5,), np.float64)), async_op=True)
send = np.concatenate([data(R, (2, 3), np.float32, salt=80 + j) for j in range(N)])
a2a = T(np.zeros((2 * N, 3), np.float32))
w2 = dist.all_to_all_single(a2a, T(send), async_op=True)
w2.wait()
w1.wait()
for r in range(N):
    eq(outs[r], data(r, (5,), np.float64), "async all_gather")
eq(a2a, np.concatenate([data(j, (2, 3), np.float32, salt=80 + R) for j in range(N)]), "async a2a")

# point to point: a ring (NCCL needs a peer other than itself)
if BACKEND == "mpi" or N > 1:
    nxt, prv = (R + 1) % N, (R - 1) % N
    w = dist.isend(T(np.full(3, R, np.float64)), nxt, tag=7)
    t = T(np.zeros(3, np.float64))
    src = dist.recv(t, src=prv, tag=7)
    w.wait()
    assert src == prv
    eq(t, np.full(3, prv, np.float64), "send/recv")
    if R == 0 and BACKEND == "mpi":
        t = T(np.zeros(2, np.int64))
        got = {dist.recv(t) for _ in range(N - 1)}
        assert got == set(range(1, N)), got
    elif BACKEND == "mpi":
        dist.send(T(np.full(2, R, np.int64)), 0)

# objects, groups, barrier
objs = [None, None] if R else [{"a": 1}, "x"]
dist.broadcast_object_list(objs, src=0)
assert objs == [{"a": 1}, "x"], objs
gathered = [None] * N
dist.all_gather_object(gathered, ("rank", R))
assert gathered == [("rank", r) for r in range(N)]
sub = dist.new_group(sorted({0, N - 1}))
if R in (0, N - 1):
    t = T(np.ones(2, np.float32))
    dist.all_reduce(t, group=sub)
    eq(t, np.full(2, min(N, 2), np.float32), "subgroup")
    assert dist.get_world_size(sub) == min(N, 2) and dist.get_rank(sub) == (0 if R == 0 else 1)
else:
    assert dist.get_rank(sub) == -1
dist.barrier()
dist.destroy_process_group(sub)
assert dist.get_local_rank() == R
try:
    dist.all_reduce(T(np.ones(3, np.int64)), op="avg")
    raise SystemExit("avg on int64 should raise")
except ValueError:
    pass
# data sharding follows the process group
from ember.data import DistributedSampler  # noqa: E402

s = DistributedSampler(list(range(10)), shuffle=False)
assert (s.num_replicas, s.rank) == (N, R), (s.num_replicas, s.rank)
assert list(s) == list(range(10 + (-10) % N))[R::N] or list(s) == [i % 10 for i in range(R, 10 + (-10) % N, N)]
from ember.data import DataLoader, IterableWrapper  # noqa: E402

dl = DataLoader(IterableWrapper(range(12)).shuffle().sharding_filter(), batch_size=None, seed=3)
assert (dl.rank, dl.world_size) == (R, N)
got = [int(v) for v in dl]
shares = [None] * N
dist.all_gather_object(shares, got)
assert sorted(sum(shares, [])) == list(range(12)), shares  # disjoint shares covering all
dist.destroy_process_group()
print(f"rank {R}: collectives ok", flush=True)
sys.exit(0)
