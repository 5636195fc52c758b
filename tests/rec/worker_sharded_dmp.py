"""Run under mpiexec (2 or 4 ranks): DistributedModelParallel and TrainPipelineSparseDist.

A small DLRM-like model (an EmbeddingBagCollection, a dense bottom layer, a top layer over
both, squared error summed over the batch) is trained three ways from one seed:

* ``ref``: unsharded, one process, on the global batch; dense SGD at ``lr / world`` (DDP
  averages the dense gradients over ranks while the tables' gradients are summed);
* ``plain``: ``DistributedModelParallel`` with a plan forcing a different sharding type
  on each table, plain steps on this rank's slice;
* ``piped``: the same, stepped by ``TrainPipelineSparseDist``.

Each step ``plain`` and ``piped`` return the same predictions, equal to ``ref``'s slice;
at the end their state dicts (unsharded keys) equal ``ref``'s. The state dict loads into
a single-process model and into a DMP planned by default (another plan), which then
predict alike. Rank 0 prints the default plan (the test checks its reasons).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember import nn  # noqa: E402
from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig  # noqa: E402
from ember.rec.distributed import (DistributedModelParallel, EmbeddingShardingPlanner,  # noqa: E402
                                   ParameterConstraints, ShardedEmbeddingBagCollection,
                                   ShardingType as ST, Topology, TrainPipelineSparseDist)
from mpi_sharded import global_batch, init_mpi, kjt_of  # noqa: E402

init_mpi()
R, N = dist.get_rank(), dist.get_world_size()
PER, STEPS, LR = 4, 4, 0.05
KEYS = ["f1", "f2", "f3", "f4"]
ROWS = {"f1": 30, "f2": 30, "f3": 16, "f4": 12}
TABLES = [("a", 30, 8, ["f1", "f2"]), ("b", 16, 8, ["f3"]), ("c", 12, 4, ["f4"])]
TYPES = {"a": ST.ROW_WISE, "b": ST.COLUMN_WISE,
         "c": ST.TABLE_ROW_WISE if N == 4 else ST.DATA_PARALLEL}


class Batch:
    def __init__(self, dense, sparse, labels):
        self.dense, self.sparse, self.labels = dense, sparse, labels

    def to(self, device):
        return Batch(self.dense.to(device), self.sparse.to(device), self.labels.to(device))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ebc = EmbeddingBagCollection(
            [EmbeddingBagConfig(name=n, num_embeddings=r, embedding_dim=d, feature_names=fs)
             for n, r, d, fs in TABLES], fused_params={"optimizer": "adagrad", "lr": LR})
        self.bottom = nn.Linear(3, 8)
        self.top = nn.Linear(8 + 3 * 8 + 4, 1)

    def forward(self, batch):
        kt = self.ebc(batch.sparse)
        x = ember.cat([nn.functional.relu(self.bottom(batch.dense)), kt.values()], 1)
        pred = self.top(x).reshape(-1)
        return ((pred - batch.labels) ** 2).sum(), pred


def model():
    ember.manual_seed(0)
    return Model()


def batches(lo, hi, seed=3):
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        data = global_batch(rng, KEYS, PER, N, ROWS)
        dense = rng.standard_normal((PER * N, 3)).astype(np.float32)
        y = rng.standard_normal(PER * N).astype(np.float32)
        yield Batch(ember.tensor(dense[lo:hi]), kjt_of(data, KEYS, lo, hi),
                    ember.tensor(y[lo:hi]))


def close(a, b, what, rtol=1e-4, atol=1e-5):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not np.allclose(a, b, rtol=rtol, atol=atol):
        raise AssertionError(f"rank {R}: {what}: max abs diff {np.max(np.abs(a - b))}")


def same_state(sd, ref, what):
    assert list(sd) == list(ref), f"{what}: keys {list(sd)} vs {list(ref)}"
    for k in ref:
        close(sd[k].array, ref[k].array, f"{what}: {k}")


def main():
    lo, hi = R * PER, (R + 1) * PER
    topo = Topology(world_size=N, compute_device="cpu", local_world_size=2 if N == 4 else 1)
    planner = EmbeddingShardingPlanner(topo, {n: ParameterConstraints(sharding_types=[st])
                                              for n, st in TYPES.items()})
    plan = planner.plan(model())
    ref = model()
    plain = DistributedModelParallel(model(), plan=plan)
    piped = DistributedModelParallel(model(), plan=plan)
    assert isinstance(plain.module.ebc, ShardedEmbeddingBagCollection)
    assert {n: ps.sharding_type for n, ps in plain.plan["ebc"].items()} == TYPES
    assert not any("ebc" in n for n, _ in plain.named_parameters())  # tables: not dense
    ref_opt = ember.optim.SGD(ref.parameters(), lr=LR / N)
    opt = ember.optim.SGD(plain.parameters(), lr=LR)
    pipeline = TrainPipelineSparseDist(piped, ember.optim.SGD(piped.parameters(), lr=LR),
                                       device=ember.device("cpu"))
    it = batches(lo, hi)
    for step, (gb, lb) in enumerate(zip(batches(0, PER * N), batches(lo, hi))):
        ref_opt.zero_grad()
        loss, pred_ref = ref(gb)
        loss.backward()
        ref_opt.step()
        opt.zero_grad()
        loss, pred = plain(lb)
        loss.backward()
        opt.step()
        pred_p = pipeline.progress(it)
        close(pred.array, pred_ref.array[lo:hi], f"step {step}: plain vs unsharded", 1e-5, 1e-5)
        assert np.array_equal(pred.array, pred_p.array), \
            f"step {step}: pipelined {pred_p.array} vs plain {pred.array}"
    try:
        pipeline.progress(it)
        raise AssertionError("the pipeline did not stop")
    except StopIteration:
        pass
    sd = plain.state_dict()
    same_state(sd, ref.state_dict(), "plain vs unsharded")
    same_state(piped.state_dict(), sd, "pipelined vs plain")

    # the sharded checkpoint into one process, and into a DMP planned by default
    single = model()
    single.load_state_dict(sd)
    other = DistributedModelParallel(model())
    other.load_state_dict(sd)
    if R == 0:
        print(other.plan, flush=True)
    gb, lb = next(batches(0, PER * N, seed=11)), next(batches(lo, hi, seed=11))
    with ember.no_grad():
        p_single = single(gb)[1].array[lo:hi]
        p_other = other(lb)[1].array
    close(p_other, p_single, "default-planned DMP after load vs single process", 1e-5, 1e-5)
    print(f"rank {R}: dmp ok", flush=True)


if __name__ == "__main__":
    main()
