"""Run under mpiexec (2 or 4 ranks): a ShardedEmbeddingCollection (per-id rows of sequence
features) equals the unsharded EmbeddingCollection on the global batch, for each sharding
type: the JaggedTensors of this rank's ids (values, lengths, indices), then the gathered
state dict after each fused update; then a DMP holding one shards it by default."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember.rec import EmbeddingCollection, EmbeddingConfig  # noqa: E402
from ember.rec.distributed import (DistributedModelParallel, ParameterSharding,  # noqa: E402
                                   ShardedEmbeddingCollection, ShardingEnv, ShardingType as ST)
from ember.rec.distributed.planner import Shard  # noqa: E402
from mpi_sharded import global_batch, init_mpi, kjt_of  # noqa: E402
from worker_sharded_ebc import _rows, close, same_state  # noqa: E402

init_mpi()
R, N = dist.get_rank(), dist.get_world_size()
ENV = ShardingEnv.from_process_group(dist.new_group())
PER = 3
KEYS = ["f1", "f2", "f3"]
ROWS = {"f1": 20, "f2": 20, "f3": 15}
TABLES = [("a", 20, 8, ["f1", "f2"]), ("b", 15, 8, ["f3"])]


def build(opt):
    ember.manual_seed(0)
    return EmbeddingCollection([EmbeddingConfig(name=n, num_embeddings=r, embedding_dim=d,
                                                feature_names=fs) for n, r, d, fs in TABLES],
                               need_indices=True,
                               fused_params={"optimizer": opt, "lr": 0.05})


def plan_of(st):
    out = {}
    for i, (n, rows, dim, _) in enumerate(TABLES):
        if st is ST.DATA_PARALLEL:
            shards = [Shard(0, 0, rows, dim, r) for r in range(N)]
        elif st is ST.TABLE_WISE:
            shards = [Shard(0, 0, rows, dim, (i + 1) % N)]
        elif st is ST.ROW_WISE:
            shards = [Shard(o, 0, k, dim, r) for r, (o, k) in enumerate(_rows(rows, N))]
        elif st is ST.COLUMN_WISE:
            shards = [Shard(0, o, rows, d, (i + k) % N)
                      for k, (o, d) in enumerate(_rows(dim, 2))]
        else:
            ranks = [1, 0] if N == 2 else [2 * (i % 2), 2 * (i % 2) + 1]
            shards = [Shard(o, 0, k, dim, r) for (o, k), r in zip(_rows(rows, 2), ranks)]
        out[n] = ParameterSharding("", n, st, shards)
    return out


def run(st, opt):
    what = f"EC {st.value} {opt}"
    ref = build(opt)
    sharded = ShardedEmbeddingCollection(build(opt), plan_of(st), ENV)
    rng = np.random.default_rng(5)
    lo, hi = R * PER, (R + 1) * PER
    for step in range(3):
        data = global_batch(rng, KEYS, PER, N, ROWS)
        gk, lk = kjt_of(data, KEYS, 0, PER * N), kjt_of(data, KEYS, lo, hi)
        out_ref, out = ref(gk), sharded(lk)
        assert list(out) == list(out_ref)
        loss_ref = loss = 0
        for k in out_ref:
            f = k.split("@")[0]
            mine = kjt_of(data, [f], lo, hi)  # this rank's ids of the feature
            n = int(mine.lengths().array.sum())
            start = int(kjt_of(data, [f], 0, lo).lengths().array.sum())
            close(out[k].values().array, out_ref[k].values().array[start:start + n],
                  f"{what} step {step} {k}", 1e-5, 1e-6)
            assert out[k].lengths().tolist() == mine.lengths().tolist()
            assert out[k].weights().tolist() == mine.values().tolist()
            G = rng.standard_normal(out_ref[k].values().shape).astype(np.float32)
            loss_ref = loss_ref + (out_ref[k].values() * ember.tensor(G)).sum()
            loss = loss + (out[k].values() * ember.tensor(G[start:start + n])).sum()
        loss_ref.backward()
        loss.backward()
        same_state(sharded.state_dict(), ref.state_dict(), f"{what} step {step}")


def main():
    for st in ST:
        for opt in ("adam", "rowwise_adagrad"):
            run(st, opt)
    dmp = DistributedModelParallel(build("sgd"))
    assert isinstance(dmp.module, ShardedEmbeddingCollection), type(dmp.module)
    same_state(dmp.state_dict(), build("sgd").state_dict(), "EC under DMP")
    print(f"rank {R}: ec ok", flush=True)


if __name__ == "__main__":
    main()
