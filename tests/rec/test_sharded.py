"""Sharded embedding-bag collections, DistributedModelParallel and TrainPipelineSparseDist.

The multi-rank checks run ``worker_sharded.py`` under mpiexec on 2 and 4 ranks (one launch
each; see ``worker_sharded_ebc.py`` and ``worker_sharded_dmp.py`` for what they compare).
The rest runs in this process: a world of one (``ShardingEnv.local()``) goes through the
same input/output code with copies for collectives, which pins the layouts and the state
dicts; plan validation, the planner's memory budget and its reasons need no ranks at all.
"""
import doctest
import importlib
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.rec import (EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection,
                       EmbeddingConfig, KeyedJaggedTensor)
from ember.rec.distributed import (DistributedModelParallel, EmbeddingBagCollectionSharder,
                                   EmbeddingShardingPlanner, ParameterConstraints,
                                   ParameterSharding,
                                   ShardedEmbeddingBagCollection, ShardedEmbeddingCollection,
                                   ShardingEnv, ShardingType as ST, Topology,
                                   TrainPipelineSparseDist)
from ember.rec.distributed.layout import CollectionLayout
from ember.rec.distributed.planner import Shard
from mpi_sharded import assert_ranks_ok, global_batch, kjt_of, needs_mpi, run_worker

KEYS = ["f1", "f2", "f3", "f4"]
ROWS = {"f1": 20, "f2": 20, "f3": 15, "f4": 10}
TABLES = [("a", 20, 8, ["f1", "f2"], "sum"), ("b", 15, 8, ["f3"], "mean"),
          ("c", 10, 4, ["f4"], "max")]


@needs_mpi
@pytest.mark.multiprocess
@pytest.mark.parametrize("n", [2, 4])
def test_sharded_on_ranks(n):
    res = run_worker("worker_sharded.py", n, timeout=240)
    assert_ranks_ok(res, n, "sharded")
    assert_ranks_ok(res, n, "ec")
    assert_ranks_ok(res, n, "dmp")
    out = res.stdout
    assert f"ShardingPlan: {n} ranks x cpu" in out and "rejected options:" in out, out
    assert "est. cost" in out and "column_wise: embedding_dim 4" in out, out


@needs_mpi
@pytest.mark.multiprocess
def test_batch_size_mismatch_errors_on_every_rank():
    res = run_worker("worker_sharded_fault.py", 2, timeout=90)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "no error" not in out, out
    for r, (mine, theirs) in enumerate(((3, 4), (4, 3))):
        assert (f"every rank must feed the same batch size; this rank ({r}) has {mine}, "
                f"rank(s) [{1 - r}] have [{theirs}]") in out, out


def build(opt="adam", weighted=False, device=None, fused=True):
    ember.manual_seed(0)
    return EmbeddingBagCollection(
        [EmbeddingBagConfig(name=n, num_embeddings=r, embedding_dim=d, feature_names=fs,
                            pooling=p) for n, r, d, fs, p in TABLES],
        is_weighted=weighted, device=device,
        fused_params={"optimizer": opt, "lr": 0.05} if fused else None)


def one_rank_plan(types):
    """Each table on the single rank, split as its type allows (column_wise: 2 shards)."""
    out = {}
    for (n, rows, d, _, _), st in zip(TABLES, types):
        if st is ST.COLUMN_WISE:
            shards = [Shard(0, 0, rows, d // 2, 0), Shard(0, d // 2, rows, d - d // 2, 0)]
        else:
            shards = [Shard(0, 0, rows, d, 0)]
        out[n] = ParameterSharding("", n, st, shards)
    return out


@pytest.mark.parametrize("types,opt", [
    ((ST.TABLE_WISE, ST.ROW_WISE, ST.DATA_PARALLEL), "adam"),
    ((ST.COLUMN_WISE, ST.TABLE_ROW_WISE, ST.TABLE_WISE), "rowwise_adagrad"),
    ((ST.DATA_PARALLEL, ST.COLUMN_WISE, ST.COLUMN_WISE), "sgd"),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_rank_equals_unsharded(types, opt, weighted):
    ref = build(opt, weighted)
    sharded = ShardedEmbeddingBagCollection(build(opt, weighted), one_rank_plan(types),
                                            ShardingEnv.local())
    assert sharded.parameters() is not None and not list(sharded.parameters())
    rng = np.random.default_rng(1)
    for _ in range(3):
        kjt = kjt_of(global_batch(rng, KEYS, 5, 1, ROWS), KEYS, 0, 5, weighted)
        o_ref, o = ref(kjt), sharded(kjt)
        assert o.keys() == o_ref.keys() and o.length_per_key() == o_ref.length_per_key()
        np.testing.assert_allclose(o.values().array, o_ref.values().array, 1e-5, 1e-6)
        G = ember.tensor(rng.standard_normal(o.values().shape).astype(np.float32))
        (o_ref.values() * G).sum().backward()
        (o.values() * G).sum().backward()
    sd, sd_ref = sharded.state_dict(), ref.state_dict()
    assert list(sd) == list(sd_ref)
    for k in sd_ref:
        np.testing.assert_allclose(sd[k].array, sd_ref[k].array, 1e-5, 1e-6, err_msg=k)


@pytest.mark.parametrize("types", [(ST.TABLE_WISE, ST.ROW_WISE, ST.DATA_PARALLEL),
                                   (ST.COLUMN_WISE, ST.TABLE_ROW_WISE, ST.COLUMN_WISE)])
def test_one_rank_sequence_collection_equals_unsharded(types):
    def ec():
        ember.manual_seed(0)
        return EmbeddingCollection(
            [EmbeddingConfig(name=n, num_embeddings=r, embedding_dim=d, feature_names=fs)
             for n, r, d, fs, _ in TABLES], need_indices=True,
            fused_params={"optimizer": "rowwise_adagrad", "lr": 0.05})
    ref, sharded = ec(), ShardedEmbeddingCollection(ec(), one_rank_plan(types),
                                                    ShardingEnv.local())
    rng = np.random.default_rng(2)
    for _ in range(3):
        kjt = kjt_of(global_batch(rng, KEYS, 4, 1, ROWS), KEYS, 0, 4)
        o_ref, o = ref(kjt), sharded(kjt)
        assert list(o) == list(o_ref)
        loss_ref = loss = 0
        for k in o_ref:
            np.testing.assert_allclose(o[k].values().array, o_ref[k].values().array, 1e-5,
                                       1e-6)
            assert o[k].lengths().tolist() == o_ref[k].lengths().tolist()
            assert o[k].weights().tolist() == o_ref[k].weights().tolist()
            G = ember.tensor(rng.standard_normal(o[k].values().shape).astype(np.float32))
            loss_ref = loss_ref + (o_ref[k].values() * G).sum()
            loss = loss + (o[k].values() * G).sum()
        loss_ref.backward()
        loss.backward()
    sd = sharded.state_dict()
    for k, v in ref.state_dict().items():
        np.testing.assert_allclose(sd[k].array, v.array, 1e-5, 1e-6, err_msg=k)


def test_state_dict_round_trip_and_meta_init():
    ref = build("adagrad")
    sharded = ShardedEmbeddingBagCollection(
        build("adagrad", device="meta"), one_rank_plan([ST.ROW_WISE, ST.COLUMN_WISE,
                                                        ST.DATA_PARALLEL]),
        ShardingEnv.local())
    rows = {n: r for n, r, _, _, _ in TABLES}
    for name, w in sharded.named_shards():  # initialized shard by shard from the configs
        bound = 1 / np.sqrt(rows[name.split(".")[0]])
        assert not w.is_meta and np.all(np.abs(w.array) <= bound + 1e-6), name
        assert np.std(w.array) > bound / 4, name
    sharded.load_state_dict(ref.state_dict())
    sd = sharded.state_dict()
    for k, v in ref.state_dict().items():
        np.testing.assert_array_equal(sd[k].array, v.array, err_msg=k)
    bad = dict(ref.state_dict())
    bad["embedding_bags.a.weight"] = ember.zeros(3, 8)
    bad["extra.key"] = ember.zeros(1)
    with pytest.raises(RuntimeError, match=r"size mismatch for embedding_bags.a.weight"):
        sharded.load_state_dict(bad)
    del bad["embedding_bags.a.weight"]
    with pytest.raises(RuntimeError, match="Missing key.*embedding_bags.a.weight"):
        sharded.load_state_dict(bad)


def layout(types_or_plan, world=2, opt="sgd", wd=0.0):
    cfgs = build(fused=False, device="meta").embedding_bag_configs()
    return CollectionLayout(cfgs, types_or_plan, world, 0, optimizer=opt, weight_decay=wd,
                            who="test")


def ps(name, st, shards):
    return ParameterSharding("", name, st, [Shard(*s) for s in shards])


def test_layout_units_and_plan_errors():
    good = {"a": ps("a", ST.ROW_WISE, [(0, 0, 10, 8, 0), (10, 0, 10, 8, 1)]),
            "b": ps("b", ST.COLUMN_WISE, [(0, 0, 15, 4, 1), (0, 4, 15, 4, 1)]),
            "c": ps("c", ST.DATA_PARALLEL, [(0, 0, 10, 4, 0), (0, 0, 10, 4, 1)])}
    lay = layout(good)
    assert [(u.table, u.rank, u.kind) for u in lay.units] == [
        (0, 0, "rs"), (0, 1, "rs"), (1, 1, "a2a"), (1, 1, "a2a")]
    assert lay.total_cols == 2 * 8 + 8 + 4 and [t.index for t in lay.dp_tables] == [2]
    assert lay.input_lengths(1, 5) == 1 + 5 * (2 + 1 + 1) and lay.a2a_size(0, 5) == 0
    cases = [
        ({k: v for k, v in good.items() if k != "b"}, "no entry for table(s) ['b']"),
        (dict(good, d=good["b"]), "names table(s) ['d']"),
        (dict(good, c=ps("c", ST.ROW_WISE, [(0, 0, 5, 4, 0), (5, 0, 5, 4, 1)])),
         "'c' (row_wise, 10 x 4): MAX pooling cannot be split by rows"),
        (dict(good, a=ps("a", ST.ROW_WISE, [(0, 0, 10, 8, 0), (10, 0, 9, 8, 1)])),
         "row shards cover 19 of 20 rows"),
        (dict(good, a=ps("a", ST.ROW_WISE, [(0, 0, 10, 8, 1), (10, 0, 10, 8, 0)])),
         "row_wise needs block i on rank i"),
        (dict(good, a=ps("a", ST.TABLE_WISE, [(0, 0, 20, 8, 2)])), "rank 2, outside the 2"),
        (dict(good, b=ps("b", ST.COLUMN_WISE, [(0, 0, 15, 4, 0), (0, 5, 15, 3, 1)])),
         "column shards must cover columns 0..8"),
        (dict(good, c=ps("c", ST.DATA_PARALLEL, [(0, 0, 10, 4, 0)])),
         "data_parallel needs one full copy on each of the 2 ranks"),
    ]
    for plan, words in cases:
        with pytest.raises(ValueError, match=None) as e:
            layout(plan)
        assert words in str(e.value), (words, str(e.value))
    cw_max = dict(good, c=ps("c", ST.COLUMN_WISE, [(0, 0, 10, 2, 0), (0, 2, 10, 2, 1)]))
    layout(cw_max, opt="adagrad")  # exact: a zero gradient row changes nothing
    for opt, wd in (("adam", 0.0), ("sgd", 0.01)):
        with pytest.raises(ValueError, match="MAX pooling each column shard"):
            layout(cw_max, opt=opt, wd=wd)


def test_planner_keeps_every_rank_under_budget_and_says_why():
    ebc = EmbeddingBagCollection(
        [EmbeddingBagConfig(name=f"t{i}", num_embeddings=n, embedding_dim=64,
                            feature_names=[f"f{i}"]) for i, n in
         enumerate([4_000_000, 1_000_000, 1_000_000, 200_000, 50_000, 1000])],
        device="meta", fused_params={"optimizer": "rowwise_adagrad"})
    cap = 0.6e9
    topo = Topology(world_size=4, compute_device="cpu", ddr_cap=cap)
    plan = EmbeddingShardingPlanner(topo).plan(ebc)
    used = plan.memory_used()
    assert all(u <= cap for u in used) and sum(used) > cap, used
    big = plan[""]["t0"]  # 1.04 GB with its state: it must be split over the ranks
    assert big.sharding_type in (ST.ROW_WISE, ST.COLUMN_WISE) and len(set(big.ranks)) == 4
    text = str(plan)
    assert "table_wise: 1.04 GB exceeds 600 MB per rank" in text, text
    assert "data_parallel: 1.04 GB (a full copy on every rank) exceeds" in text, text
    for rank in range(4):
        assert f"rank {rank}: " in text and " of 600 MB used" in text
    maxed = EmbeddingShardingPlanner(Topology(world_size=2)).plan(build("adam", device="meta"))
    assert "row_wise: MAX pooling cannot be split by rows (partial maxima do not sum)" in \
        maxed.rejections("c")
    assert any(r.startswith("column_wise: MAX pooling with adam") for r in
               maxed.rejections("c")), maxed.rejections("c")
    constrained = EmbeddingShardingPlanner(topo, {"t0": ParameterConstraints(
        sharding_types=["table_wise"])})
    with pytest.raises(Exception, match="'t0'.*600 MB per rank"):
        constrained.plan(ebc)


class Batch:
    def __init__(self, dense, sparse, labels):
        self.dense, self.sparse, self.labels = dense, sparse, labels

    def to(self, device):
        return Batch(self.dense.to(device), self.sparse.to(device), self.labels.to(device))


class Tiny(nn.Module):
    def __init__(self, kjt_inside=False):
        super().__init__()
        self.sparse = nn.Module()
        self.sparse.ebc = build("adagrad")
        self.top = nn.Linear(3 + 3 * 8 + 4, 1)
        self.kjt_inside = kjt_inside

    def forward(self, batch):
        f = batch.sparse
        if self.kjt_inside:  # a KJT the pipeline cannot find in the batch
            f = KeyedJaggedTensor(f.keys(), f.values(), lengths=f.lengths())
        x = ember.cat([batch.dense, self.sparse.ebc(f).values()], 1)
        pred = self.top(x).reshape(-1)
        return ((pred - batch.labels) ** 2).sum(), pred


def batches(n, seed=0, per=4):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        data = global_batch(rng, KEYS, per, 1, ROWS)
        yield Batch(ember.tensor(rng.standard_normal((per, 3)).astype(np.float32)),
                    kjt_of(data, KEYS, 0, per),
                    ember.tensor(rng.standard_normal(per).astype(np.float32)))


def _dmp(kjt_inside=False):
    ember.manual_seed(1)
    return DistributedModelParallel(Tiny(kjt_inside), env=ShardingEnv.local())


def test_dmp_one_process_and_pipeline():
    ember.manual_seed(1)
    ref = Tiny()
    dmp = _dmp()
    assert isinstance(dmp.module.sparse.ebc, ShardedEmbeddingBagCollection)
    assert [n for n, _ in dmp.named_parameters()] == ["top.weight", "top.bias"]
    assert list(dmp.state_dict()) == list(ref.state_dict())
    assert [g["name"] for g in dmp.fused_optimizer.param_groups] == ["a", "b", "c"]
    other = _dmp()  # an LR scheduler drives the tables' fused learning rates
    fo = other.fused_optimizer
    sched = ember.optim.lr_scheduler.StepLR(fo, step_size=1, gamma=0.5)
    fo.step()
    sched.step()
    assert [g["lr"] for g in other.module.sparse.ebc.fused_optimizer.param_groups] == \
        [0.025] * 3
    piped = _dmp()
    pipe = TrainPipelineSparseDist(piped, ember.optim.SGD(piped.parameters(), lr=0.01))
    opt, ref_opt = (ember.optim.SGD(m.parameters(), lr=0.01) for m in (dmp, ref))
    it = batches(4)
    for b in batches(4):
        for m, o in ((dmp, opt), (ref, ref_opt)):
            o.zero_grad()
            loss, pred = m(b)
            loss.backward()
            o.step()
        p = pipe.progress(it)
        np.testing.assert_array_equal(p.array, pred.array)
    with pytest.raises(StopIteration):
        pipe.progress(it)
    for k, v in ref.state_dict().items():
        np.testing.assert_allclose(dmp.state_dict()[k].array, v.array, 1e-5, 1e-6, err_msg=k)
        np.testing.assert_array_equal(piped.state_dict()[k].array,
                                      dmp.state_dict()[k].array, err_msg=k)


def test_pipeline_when_the_kjt_is_not_in_the_batch():
    plain, piped = _dmp(True), _dmp(True)
    pipe = TrainPipelineSparseDist(piped, ember.optim.SGD(piped.parameters(), lr=0.01))
    opt = ember.optim.SGD(plain.parameters(), lr=0.01)
    it = batches(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for b in batches(3):
            opt.zero_grad()
            loss, pred = plain(b)
            loss.backward()
            opt.step()
            np.testing.assert_array_equal(pipe.progress(it).array, pred.array)
    assert any("not pipelined" in str(x.message) for x in w)


def test_sharded_input_errors():
    s = ShardedEmbeddingBagCollection(build("sgd", weighted=True),
                                      one_rank_plan([ST.TABLE_WISE] * 3), ShardingEnv.local())
    rng = np.random.default_rng(0)
    data = global_batch(rng, KEYS, 3, 1, ROWS)
    with pytest.raises(TypeError, match="expected a KeyedJaggedTensor"):
        s(ember.zeros(3))
    with pytest.raises(ValueError, match="is_weighted=True.*no weights"):
        s(kjt_of(data, KEYS, 0, 3))
    bad = kjt_of(data, KEYS, 0, 3, weighted=True)
    bad.values().array[0] = 99
    with pytest.raises(IndexError, match="id 99 is outside table 'a'"):
        s(bad)
    with pytest.raises(ValueError, match="has no fused optimizer"):
        ShardedEmbeddingBagCollection(build(fused=False), one_rank_plan([ST.TABLE_WISE] * 3),
                                      ShardingEnv.local())


@pytest.mark.parametrize("name", ["ember.rec.distributed", "ember.rec.distributed.embeddingbag",
                                  "ember.rec.distributed.embedding"])
def test_docstring_examples(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def test_dmp_sharder_fused_params_and_root_collection():
    """A collection built without a fused optimizer trains with the sharder's; a model that
    is a collection itself is replaced by its sharded twin (no DDP: nothing dense)."""
    with pytest.raises(ValueError, match="has no fused optimizer"):
        DistributedModelParallel(build(fused=False), env=ShardingEnv.local())
    ref = build("sgd")
    dmp = DistributedModelParallel(
        build(fused=False), env=ShardingEnv.local(),
        sharders=[EmbeddingBagCollectionSharder(fused_params={"optimizer": "sgd",
                                                              "lr": 0.05})])
    assert isinstance(dmp.module, ShardedEmbeddingBagCollection)
    assert dmp.plan.topology.world_size == 1 and not list(dmp.parameters())
    kjt = kjt_of(global_batch(np.random.default_rng(4), KEYS, 4, 1, ROWS), KEYS, 0, 4)
    for m in (ref, dmp):
        m(kjt).values().sum().backward()
    sd = dmp.state_dict()
    for k, v in ref.state_dict().items():
        np.testing.assert_allclose(sd[k].array, v.array, 1e-6, 1e-7, err_msg=k)
