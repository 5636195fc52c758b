"""The embedding sharding planner (ember.rec.distributed.planner): every table placed,
memory under budget, constraints honoured, reasons for each rejected option, JSON, meta."""
import doctest
import importlib
import json

import pytest

from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection, \
    EmbeddingConfig
from ember.rec.distributed import (EmbeddingShardingPlanner, ParameterConstraints,
                                   PlannerError, ShardingPlan, ShardingType, Topology)
from ember.rec.distributed.planner import (EmbeddingPerfEstimator, EmbeddingStorageEstimator,
                                           Enumerator, Partitioner, PerfEstimator, Proposer,
                                           StorageEstimator)
from ember.rec.distributed.planner.storage import optimizer_state_bytes

GB = 1e9


def _ebc(sizes, fused="rowwise_adagrad", device="meta", dtype="FP32"):
    tables = [EmbeddingBagConfig(name=f"t{i}", num_embeddings=n, embedding_dim=d,
                                 feature_names=[f"f{i}"], data_type=dtype)
              for i, (n, d) in enumerate(sizes)]
    return EmbeddingBagCollection(tables, device=device,
                                  fused_params={"optimizer": fused} if fused else None)


def _check_plan(plan, module_tables, topo):
    """Every table placed once, every shard on a rank, the shards tile the table (or each
    copy covers it for data_parallel), every rank under its memory."""
    placed = plan.tables()
    assert sorted(placed) == sorted(module_tables)
    for name, ps in placed.items():
        n, d = module_tables[name]
        assert all(0 <= s.rank < topo.world_size for s in ps.shards)
        if ps.sharding_type is ShardingType.DATA_PARALLEL:
            assert sorted(ps.ranks) == list(range(topo.world_size))
            assert all((s.rows, s.cols) == (n, d) for s in ps.shards)
        else:
            assert sum(s.rows * s.cols for s in ps.shards) == n * d
            cells = {(s.row_offset, s.col_offset) for s in ps.shards}
            assert len(cells) == len(ps.shards)
    used = plan.memory_used()
    assert max(used) <= topo.memory_per_rank
    return placed


MIXES = [
    [(1000, 16)],
    [(10_000_000, 64), (1000, 16), (50_000, 128)],
    [(2_000_000, 32)] * 6 + [(100, 8)] * 4,
    [(300_000, 256), (5, 4), (64, 64)],
]


@pytest.mark.parametrize("sizes", MIXES)
@pytest.mark.parametrize("world,local", [(1, 1), (2, 2), (4, 4), (8, 4), (8, 2)])
@pytest.mark.parametrize("cap", [1.5 * GB, 8 * GB])
def test_every_table_placed_under_budget(sizes, world, local, cap):
    topo = Topology(world_size=world, local_world_size=local, hbm_cap=cap)
    ebc = _ebc(sizes)
    tables = {f"t{i}": s for i, s in enumerate(sizes)}
    total = sum(n * d * 4 + n * 4 + 8 for n, d in sizes)  # weights + rowwise adagrad
    if total > world * cap:  # more bytes than all ranks hold (here: one rank of 1.5 GB)
        with pytest.raises(PlannerError, match="1.5 GB per rank"):
            EmbeddingShardingPlanner(topo).plan(ebc)
        return
    plan = EmbeddingShardingPlanner(topo).plan(ebc)
    _check_plan(plan, tables, topo)
    for name in tables:  # each table: one chosen type, every other type has a reason
        chosen = plan.tables()[name].sharding_type
        reasons = plan.rejections(name)
        assert sorted(r.split(":")[0] for r in reasons) == sorted(
            st.value for st in ShardingType if st is not chosen)


def test_constraints_honoured_and_reasons():
    ebc = _ebc([(1000, 64), (2000, 32), (500, 16)])
    cons = {"t0": ParameterConstraints(sharding_types=["row_wise"]),
            "t1": ParameterConstraints(sharding_types=[ShardingType.COLUMN_WISE,
                                                       ShardingType.TABLE_WISE]),
            "t2": ParameterConstraints(sharding_types=["table_wise"], pooling_factors=[30.0])}
    topo = Topology(world_size=4)
    plan = EmbeddingShardingPlanner(topo, cons).plan(ebc)
    assert plan[""]["t0"].sharding_type is ShardingType.ROW_WISE
    assert plan[""]["t0"].ranks == [0, 1, 2, 3]
    assert plan[""]["t1"].sharding_type in (ShardingType.COLUMN_WISE, ShardingType.TABLE_WISE)
    assert plan[""]["t2"].sharding_type is ShardingType.TABLE_WISE
    r0 = plan.rejections("t0")
    assert "table_wise: not in constraints (allowed: row_wise)" in r0
    assert "data_parallel: not in constraints (allowed: row_wise)" in r0
    assert len(r0) == 4
    r1 = dict(r.split(": ", 1) for r in plan.rejections("t1"))
    assert r1["row_wise"] == "not in constraints (allowed: column_wise, table_wise)"
    other = ({"column_wise", "table_wise"} - {plan[""]["t1"].sharding_type.value}).pop()
    assert r1[other].startswith("est. cost")
    text = str(plan)
    assert "row_wise: not in constraints" in text and "rejected options:" in text


def test_memory_rejection_reason_text():
    # 10M x 64 fp32 + rowwise adagrad = 2.56 GB + 40 MB = 2.6 GB > 2 GB
    ebc = _ebc([(10_000_000, 64)])
    plan = EmbeddingShardingPlanner(Topology(world_size=4, hbm_cap=2 * GB)).plan(ebc)
    assert plan[""]["t0"].sharding_type not in (ShardingType.TABLE_WISE,
                                                ShardingType.DATA_PARALLEL)
    reasons = plan.rejections("t0")
    assert "table_wise: 2.6 GB exceeds 2 GB per rank" in reasons
    assert "data_parallel: 2.6 GB (a full copy on every rank) exceeds 2 GB per rank" in reasons
    assert "table_wise: 2.6 GB exceeds 2 GB per rank" in str(plan)
    assert max(plan.memory_used()) <= 2 * GB


def test_did_not_fit_beside_others_is_explained():
    # three 1.2 GB tables (table_wise only for two) on 2 ranks of 2 GB: the third must go
    # row-wise (0.6 GB a rank) once table-wise cannot fit beside the others
    sizes = [(4_000_000, 75)] * 3
    ebc = _ebc(sizes, fused=None)
    cons = {"t0": ParameterConstraints(sharding_types=["table_wise"]),
            "t1": ParameterConstraints(sharding_types=["table_wise"]),
            "t2": ParameterConstraints(sharding_types=["table_wise", "row_wise"],
                                       pooling_factors=[0.01])}
    topo = Topology(world_size=2, hbm_cap=2 * GB)
    plan = EmbeddingShardingPlanner(topo, cons).plan(ebc)
    _check_plan(plan, {f"t{i}": s for i, s in enumerate(sizes)}, topo)
    assert plan[""]["t2"].sharding_type is ShardingType.ROW_WISE
    tw = [r for r in plan.rejections("t2") if r.startswith("table_wise")]
    assert len(tw) == 1 and "did not fit beside the other tables" in tw[0] and "'t2'" in tw[0]


def test_over_budget_error_names_table_size_budget():
    ebc = _ebc([(1000, 8), (50_000_000, 128)], fused="adam")  # 25.6 GB weights x3 with adam
    with pytest.raises(PlannerError) as e:
        EmbeddingShardingPlanner(Topology(world_size=2, hbm_cap=4 * GB)).plan(ebc)
    msg = str(e.value)
    assert "'t1'" in msg and "76.8 GB" in msg and "4 GB per rank" in msg and "adam" in msg
    # fits alone per rank but not all together: also named
    ebc = _ebc([(2_000_000, 100)] * 3, fused=None)  # 0.8 GB each
    cons = {f"t{i}": ParameterConstraints(sharding_types=["table_wise"]) for i in range(3)}
    with pytest.raises(PlannerError) as e:
        EmbeddingShardingPlanner(Topology(world_size=2, hbm_cap=1 * GB), cons).plan(ebc)
    msg = str(e.value)
    assert "800 MB" in msg and "1 GB per rank" in msg and "'t" in msg


def test_json_round_trip_and_determinism():
    topo = Topology(world_size=8, local_world_size=4, hbm_cap=3 * GB)
    ebc = _ebc(MIXES[1] + MIXES[2])
    cons = {"t1": ParameterConstraints(sharding_types=["table_wise", "data_parallel"],
                                       batch_size=64, num_poolings=3)}
    a = EmbeddingShardingPlanner(topo, cons, batch_size=256).plan(ebc)
    b = EmbeddingShardingPlanner(topo, cons, batch_size=256).plan(_ebc(MIXES[1] + MIXES[2]))
    assert a == b and str(a) == str(b) and a.to_json() == b.to_json()
    back = ShardingPlan.from_json(a.to_json())
    assert back == a and str(back) == str(a)
    doc = json.loads(a.to_json())
    assert doc["version"] == 1 and doc["topology"]["world_size"] == 8
    assert set(doc["plan"][""]) == {f"t{i}" for i in range(13)}
    with pytest.raises(ValueError, match="unknown version"):
        ShardingPlan.from_json(json.dumps(dict(doc, version=99)))


def test_meta_module_same_plan_as_real():
    sizes = [(2000, 16), (300, 8)]
    topo = Topology(world_size=2, hbm_cap=GB)
    meta = EmbeddingShardingPlanner(topo).plan(_ebc(sizes, device="meta"))
    real = EmbeddingShardingPlanner(topo).plan(_ebc(sizes, device=None))
    assert meta == real
    # a 1e9-row table on meta plans without allocating 256 GB
    huge = _ebc([(1_000_000_000, 64)], fused="sgd")
    plan = EmbeddingShardingPlanner(Topology(world_size=8, hbm_cap=40 * GB)).plan(huge)
    assert plan[""]["t0"].sharding_type in (ShardingType.ROW_WISE, ShardingType.COLUMN_WISE)
    assert max(plan.memory_used()) <= 40 * GB


def test_storage_counts_optimizer_state_and_dtype():
    n, d = 1000, 16
    for opt, extra in [(None, 0), ("sgd", 8), ("rowwise_adagrad", n * 4 + 8),
                       ("adagrad", n * d * 4 + 8), ("adam", 2 * n * d * 4 + 8)]:
        plan = EmbeddingShardingPlanner(Topology(world_size=1)).plan(_ebc([(n, d)], opt))
        assert plan[""]["t0"].storage == n * d * 4 + extra
        assert optimizer_state_bytes(opt, n, d) == extra
    plan = EmbeddingShardingPlanner(Topology(world_size=1)).plan(
        _ebc([(n, d)], None, dtype="FP16"))
    assert plan[""]["t0"].storage == n * d * 2


def test_cpu_topology_uses_ddr_and_several_collections():
    from ember import nn

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = _ebc([(1000, 16)])
            self.b = EmbeddingCollection([EmbeddingConfig(name="t0", num_embeddings=500,
                                                          embedding_dim=8,
                                                          feature_names=["s"])],
                                         device="meta")
    topo = Topology(world_size=2, compute_device="cpu", hbm_cap=1, ddr_cap=GB)
    plan = EmbeddingShardingPlanner(topo).plan(Two())
    assert set(plan.plan) == {"a", "b"} and set(plan.tables()) == {"a.t0", "b.t0"}
    assert "1 GB per rank" in str(plan)
    with pytest.raises(PlannerError, match="no embedding collection"):
        EmbeddingShardingPlanner(topo).plan(nn.Linear(2, 2))


def test_perf_model_orders_as_documented():
    """Bigger batches cost more; a second host makes table_row_wise cheaper than row_wise."""
    big = _ebc([(4_000_000, 64)], fused=None)
    topo = Topology(world_size=8, local_world_size=4, hbm_cap=2 * GB)
    cons = {"t0": ParameterConstraints(sharding_types=["row_wise", "table_row_wise"],
                                       pooling_factors=[20.0])}
    plan = EmbeddingShardingPlanner(topo, cons, batch_size=2048).plan(big)
    assert plan[""]["t0"].sharding_type is ShardingType.TABLE_ROW_WISE
    assert len(set(topo.host_of(r) for r in plan[""]["t0"].ranks)) == 1
    small_b = EmbeddingShardingPlanner(topo, cons, batch_size=16).plan(big)
    assert small_b[""]["t0"].cost < plan[""]["t0"].cost


def test_pluggable_stages():
    class Counting(EmbeddingStorageEstimator):
        calls = 0

        def estimate(self, options, topology):
            Counting.calls += 1
            super().estimate(options, topology)
            for o in options:  # pretend every shard is double the size
                for s in o.shards:
                    s.storage *= 2
    ebc = _ebc([(10_000_000, 32)], fused=None)  # 1.28 GB, 2.56 GB doubled
    plan = EmbeddingShardingPlanner(Topology(world_size=2, hbm_cap=2 * GB),
                                    storage_estimator=Counting()).plan(ebc)
    assert Counting.calls == 1
    assert "table_wise: 2.56 GB exceeds 2 GB per rank" in plan.rejections("t0")
    for base in (Enumerator, StorageEstimator, PerfEstimator, Proposer, Partitioner):
        with pytest.raises(TypeError):
            base()
    with pytest.raises(NotImplementedError, match="subclass must define"):
        PerfEstimator.estimate(EmbeddingPerfEstimator(), [], None)


def test_bad_inputs_named():
    with pytest.raises(ValueError, match="local_world_size 3 must divide world_size 4"):
        Topology(world_size=4, local_world_size=3)
    with pytest.raises(ValueError):
        ParameterConstraints(sharding_types=["diagonal"])
    with pytest.raises(PlannerError, match=r"\['nope'\]"):
        EmbeddingShardingPlanner(Topology(world_size=2),
                                 {"nope": ParameterConstraints()}).plan(_ebc([(10, 4)]))


@pytest.mark.parametrize("name", ["ember.rec.distributed",
                                  "ember.rec.distributed.planner.planner"])
def test_docstring_examples(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
