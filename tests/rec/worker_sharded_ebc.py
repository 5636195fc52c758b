"""Run under mpiexec (2 or 4 ranks): a ShardedEmbeddingBagCollection equals the unsharded
collection run in one process on the global batch, for every sharding type.

Every rank builds the same collection and data (one seed). The reference collection runs
on the whole batch with loss ``sum(out * G)``; the sharded one on this rank's slice with
``sum(out * G[slice])`` (so its loss summed over ranks is the reference's). For each plan
and fused optimizer, over three steps: the forward output, then the gathered state dict
(tables and optimizer state after each fused update) must equal the reference's; the
data_parallel replicas must be bitwise equal on all ranks; a state dict loads into a
module sharded another way; bad plans raise errors naming the table.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig  # noqa: E402
from ember.rec.distributed import (ParameterSharding, ShardedEmbeddingBagCollection,  # noqa: E402
                                   ShardingEnv, ShardingType as ST)
from ember.rec.distributed.planner import Shard  # noqa: E402
from mpi_sharded import global_batch, init_mpi, kjt_of  # noqa: E402

init_mpi()
R, N = dist.get_rank(), dist.get_world_size()
ENV = ShardingEnv.from_process_group(dist.new_group())
PER = 3  # samples per rank
KEYS = ["f1", "f2", "f3", "f4"]
ROWS = {"f1": 20, "f2": 20, "f3": 15, "f4": 10}
TABLES = [("a", 20, 8, ["f1", "f2"], "sum"), ("b", 15, 8, ["f3"], "mean"),
          ("c", 10, 4, ["f4"], "max")]


def build(opt, weighted=False):
    ember.manual_seed(0)
    return EmbeddingBagCollection(
        [EmbeddingBagConfig(name=n, num_embeddings=rows, embedding_dim=d, feature_names=fs,
                            pooling=p) for n, rows, d, fs, p in TABLES],
        is_weighted=weighted, fused_params={"optimizer": opt, "lr": 0.05})


def _rows(n, k):
    base, extra = divmod(n, k)
    out, off = [], 0
    for i in range(k):
        size = base + (i < extra)
        out.append((off, size))
        off += size
    return out


def table_plan(i, name, rows, dim, st):
    """Shards of table ``i`` for type ``st`` on N ranks, on deliberately mixed ranks."""
    if st is ST.DATA_PARALLEL:
        shards = [Shard(0, 0, rows, dim, r) for r in range(N)]
    elif st is ST.TABLE_WISE:
        shards = [Shard(0, 0, rows, dim, (i + 1) % N)]
    elif st is ST.ROW_WISE:
        shards = [Shard(o, 0, n, dim, r) for r, (o, n) in enumerate(_rows(rows, N))]
    elif st is ST.COLUMN_WISE:  # table 0: both column shards on the last rank
        ranks = [N - 1, N - 1] if i == 0 else [(i + k) % N for k in range(2)]
        shards = [Shard(0, o, rows, d, r) for (o, d), r in zip(_rows(dim, 2), ranks)]
    else:  # TABLE_ROW_WISE: the ranks of one "host" of two ranks (N=2: both, reversed)
        ranks = [1, 0] if N == 2 else ([2, 3] if i % 2 == 0 else [0, 1])
        shards = [Shard(o, 0, n, dim, r) for (o, n), r in zip(_rows(rows, 2), ranks)]
    return ParameterSharding("", name, st, shards)


def plan_of(types):
    return {n: table_plan(i, n, rows, d, st)
            for i, ((n, rows, d, _, _), st) in enumerate(zip(TABLES, types))}


def close(a, b, what, rtol=1e-4, atol=1e-5):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not np.allclose(a, b, rtol=rtol, atol=atol):
        raise AssertionError(f"rank {R}: {what}: max abs diff {np.max(np.abs(a - b))}")


def same_state(sd, ref, what):
    assert list(sd) == list(ref), f"{what}: keys {list(sd)} vs {list(ref)}"
    for k in ref:
        close(sd[k].array, ref[k].array, f"{what}: {k}")


def run(types, opt, weighted=False, steps=3):
    what = f"{[t.value for t in types]} {opt}{' weighted' if weighted else ''}"
    ref = build(opt, weighted)
    sharded = ShardedEmbeddingBagCollection(build(opt, weighted), plan_of(types), ENV)
    rng = np.random.default_rng(7)
    lo, hi = R * PER, (R + 1) * PER
    for step in range(steps):
        data = global_batch(rng, KEYS, PER, N, ROWS)
        out_ref = ref(kjt_of(data, KEYS, 0, PER * N, weighted))
        out = sharded(kjt_of(data, KEYS, lo, hi, weighted))
        assert out.keys() == out_ref.keys(), (out.keys(), out_ref.keys())
        close(out.values().array, out_ref.values().array[lo:hi], f"{what} step {step} forward",
              1e-5, 1e-6)
        G = rng.standard_normal(out_ref.values().shape).astype(np.float32)
        (out_ref.values() * ember.tensor(G)).sum().backward()
        (out.values() * ember.tensor(G[lo:hi])).sum().backward()
        same_state(sharded.state_dict(), ref.state_dict(), f"{what} step {step}")
    for name, w in sharded.named_shards():  # replicas stay bitwise equal
        if "." not in name:
            every = [None] * N
            dist.all_gather_object(every, w.array)
            assert all(np.array_equal(e, w.array) for e in every), f"{what}: {name} differs"
    return ref, sharded


def main():
    all_types = list(ST)
    for st in all_types:
        for opt in ("adam", "rowwise_adagrad"):
            # the MAX table "c" is never split by rows, nor by columns under these two
            no_max = st in (ST.ROW_WISE, ST.TABLE_ROW_WISE, ST.COLUMN_WISE)
            run([st, st, ST.TABLE_WISE if no_max else st], opt)
    run([ST.COLUMN_WISE] * 3, "sgd")
    run([ST.ROW_WISE, ST.COLUMN_WISE, ST.DATA_PARALLEL], "sgd", weighted=True)
    ref, sharded = run([ST.TABLE_ROW_WISE, ST.DATA_PARALLEL, ST.COLUMN_WISE], "adagrad")

    # an unsharded state dict loads into a module sharded another way, and back
    other = ShardedEmbeddingBagCollection(build("adagrad"), plan_of(
        [ST.COLUMN_WISE, ST.ROW_WISE, ST.TABLE_WISE]), ENV)
    other.load_state_dict(ref.state_dict())
    same_state(other.state_dict(), ref.state_dict(), "reload")
    single = build("adagrad")
    single.load_state_dict(sharded.state_dict())
    same_state(single.state_dict(), ref.state_dict(), "sharded -> single process")

    # plans that do not fit the collection name the table
    bad = plan_of([ST.ROW_WISE] * 3)
    for fix, words in ((lambda p: p.pop("b"), "no entry for table(s) ['b']"),
                       (lambda p: None, "'c' (row_wise, 10 x 4): MAX pooling"),
                       (lambda p: p["a"].shards.pop(), "row shards cover")):
        p = plan_of([ST.ROW_WISE, ST.ROW_WISE, ST.TABLE_WISE]) if words != \
            "'c' (row_wise, 10 x 4): MAX pooling" else dict(bad)
        fix(p)
        try:
            ShardedEmbeddingBagCollection(build("sgd"), p, ENV)
        except ValueError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"no error for {words}")
    print(f"rank {R}: sharded ok", flush=True)


if __name__ == "__main__":
    main()
