"""Recipe ``dlrm``: click-through prediction with DLRM (or DLRM_DCN) on synthetic batches or
on files in the Criteo TSV layout; reports AUC and log loss on the test data.

    ember run dlrm                                   # RandomRecDataset batches, seconds on a CPU
    ember run dlrm --config dlrm_dcn                 # the DCN v2 interaction
    ember run dlrm --config dlrm_criteo data.train_files=[day_0] data.test_files=[day_23]
    ember run --nproc 2 dlrm                         # two ranks

The tables (one per sparse feature) train with a fused optimizer (``embedding_optimizer``:
the update happens inside backward, on the rows the batch touched); the dense layers with
``optimizer``. The loss is ``DLRMTrain``'s binary cross entropy of the logits.

``data.source=random``: torchrec's ``RandomRecDataset`` (random labels: AUC stays near 0.5;
a speed and plumbing check). ``data.source=criteo``: ``data.train_files`` and
``data.test_files`` (plain or gzipped TSV: label, 13 integers, 26 hex categories), ids
hashed to ``data.num_embeddings_per_feature`` (or ``data.num_embeddings`` for every table),
dense values ``log(max(x + data.dense_log_offset, 1))``.

Per epoch it logs ``epoch, step, lr, train_loss, test_logloss, test_auc, test_accuracy`` to
``metrics.csv``; at the end it saves ``model.safetensors`` (the ``DLRMTrain`` state dict,
fused optimizer state included). Checkpoints (mid-epoch too: the data position is saved),
``resume=true``, Ctrl-C and ``overwrite=true`` work as in ``classify``.

With several ranks each rank reads its share of the data. ``sharding=model_parallel``
(default): ``DistributedModelParallel`` shards the tables by its planner (the plan, with its
reasons, is printed) and makes the dense layers data-parallel; checkpoints gather the
unsharded state (they load into a one-process run and back). ``sharding=data_parallel``:
every rank holds every table, the tables' row-sparse gradients are all-reduced by
``DistributedDataParallel`` and a sparse optimizer applies them (adagrad/rowwise_adagrad ->
``optim.Adagrad``, adam -> ``optim.SparseAdam``, sgd -> ``optim.SGD``), since a fused update
inside backward would run before the all-reduce.
"""
from __future__ import annotations

import math
import os

import numpy as np

import ember

from ember.recipes._config import ConfigError, instantiate
from ember.recipes._loop import EXIT_INTERRUPTED, TrainingRun, rate_postfix
from ember.recipes._registry import register_recipe

__all__ = ["roc_auc", "log_loss_from_logits", "EpochStream", "build_model", "main"]


# ------------------------------------------------------------------------------ metrics
def roc_auc(labels, scores):
    """Area under the ROC curve: the probability that a random positive scores above a
    random negative (ties count half), from the ranks of the scores. NaN when only one
    class is present."""
    y = np.asarray(labels).reshape(-1).astype(bool)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if y.shape != s.shape:
        raise ValueError(f"roc_auc: {y.shape[0]} labels for {s.shape[0]} scores")
    npos = int(y.sum())
    nneg = y.size - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    _, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    avg_rank = np.cumsum(counts) - (counts - 1) / 2.0     # 1-based mean rank of each value
    r = avg_rank[inv]
    return float((r[y].sum() - npos * (npos + 1) / 2.0) / (npos * nneg))


def log_loss_from_logits(labels, logits):
    """Mean binary cross entropy of ``sigmoid(logits)`` against 0/1 ``labels``, computed
    stably from the logits."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    x = np.asarray(logits, dtype=np.float64).reshape(-1)
    return float(np.mean(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))))


# --------------------------------------------------------------------------------- data
class EpochStream:
    """The batches of each epoch from ``make(epoch)`` (a DataPipe), ``steps`` at most,
    as an explicit iterator whose position is saved with the checkpoints: a run resumed
    mid-epoch continues with the next unseen batch."""

    def __init__(self, make, steps=None):
        self.make, self.steps = make, steps
        self.epoch, self.it, self.taken, self._pending = None, None, 0, None

    def start(self, epoch):
        """The batches still to come in ``epoch``."""
        self.it = iter(self.make(epoch))
        self.taken = 0
        if self._pending is not None and self._pending["epoch"] == epoch:
            self.it.load_state_dict(self._pending["it"])
            self.taken = self._pending["taken"]
        self._pending, self.epoch = None, epoch
        return self

    def __iter__(self):
        return self

    def __next__(self):
        if self.steps is not None and self.taken >= self.steps:
            raise StopIteration
        b = next(self.it)
        self.taken += 1
        return b

    def state_dict(self):
        return {"epoch": self.epoch, "taken": self.taken,
                "it": None if self.it is None else self.it.state_dict()}

    def load_state_dict(self, state):
        self._pending = state if state.get("it") is not None else None


def _set_shard(pipe, world, rank):
    """Give the pipe's sharding filter this rank's share."""
    from ember.data.pipe import walk
    from ember.data.shuffle import ShardingFilter

    for p in walk(pipe):
        if isinstance(p, ShardingFilter):
            p.set_sharding([(world, rank, 1)] if world > 1 else [])
    return pipe


def _count_rows(paths):
    from ember.rec.datasets import LineRecords

    return sum(1 for _ in LineRecords(paths, lambda line: None, name="criteo"))


def _data(cfg, run, batch_size):
    """``(train EpochStream, test batches (list), sparse keys, hash sizes, num_dense)``."""
    from ember.rec.datasets import DEFAULT_CAT_NAMES, RandomRecDataset, criteo_batches

    d = cfg.get("data") or {}
    world, rank, seed = run.world, run.rank, run.seed
    source = d.get("source", "random")
    if source == "random":
        n_sparse, num_dense = int(d.get("num_sparse", 26)), int(d.get("num_dense", 13))
        keys = [f"cat_{i}" for i in range(n_sparse)]
        sizes = _sizes(d, n_sparse)
        ids = int(d.get("ids_per_feature", 1))
        lo = d.get("min_ids_per_feature")
        common = dict(keys=keys, batch_size=batch_size, hash_sizes=sizes,
                      ids_per_features=[ids] * n_sparse, num_dense=num_dense,
                      min_ids_per_features=None if lo is None else [int(lo)] * n_sparse)
        steps = int(d.get("num_batches", 64)) // world
        if steps < 1:
            raise ConfigError(f"data.num_batches={d.get('num_batches')} gives no batch to each "
                              f"of {world} ranks")
        train = RandomRecDataset(manual_seed=seed * 7919 + rank + 1, num_batches=steps,
                                 num_generated_batches=steps, **common)
        test = list(RandomRecDataset(manual_seed=seed * 7919 + 104729,
                                     num_batches=int(d.get("num_test_batches", 8)),
                                     num_generated_batches=int(d.get("num_test_batches", 8)),
                                     **{**common, "batch_size": int(cfg.get("eval_batch_size",
                                                                            1024))}))
        return EpochStream(lambda epoch: train, steps), test, keys, sizes, num_dense
    if source != "criteo":
        raise ConfigError(f"data.source must be 'random' or 'criteo', got {source!r}")
    train_files, test_files = d.get("train_files"), d.get("test_files")
    if not train_files or not test_files:
        raise ConfigError("dlrm with data.source=criteo needs data.train_files and "
                          "data.test_files (lists of TSV files in the Criteo layout)")
    for p in [*train_files, *test_files]:
        if not os.path.isfile(p):
            raise ConfigError(f"data file {p} not found")
    keys, sizes = list(DEFAULT_CAT_NAMES), _sizes(d, len(DEFAULT_CAT_NAMES))
    offset = float(d.get("dense_log_offset", 3.0))
    shuffle = int(d.get("shuffle_buffer", 0))
    rows = _count_rows(train_files)
    steps = (rows // world) // batch_size
    if steps < 1:
        raise ConfigError(f"{rows} training rows give no full batch of {batch_size} to each of "
                          f"{world} ranks")

    def make(epoch):
        pipe = criteo_batches(train_files, batch_size, sizes, dense_log_offset=offset,
                              drop_last=True, shuffle_buffer=shuffle, seed=seed + epoch)
        return _set_shard(pipe, world, rank)

    test = list(criteo_batches(test_files, int(cfg.get("eval_batch_size", 1024)), sizes,
                               dense_log_offset=offset))
    return EpochStream(make, steps), test, keys, sizes, 13


def _sizes(d, n):
    per = d.get("num_embeddings_per_feature")
    if per is None:
        return [int(d.get("num_embeddings", 1000))] * n
    per = [int(x) for x in per]
    if len(per) != n:
        raise ConfigError(f"data.num_embeddings_per_feature has {len(per)} sizes for {n} "
                          f"sparse features")
    return per


# -------------------------------------------------------------------------------- model
def build_model(model_cfg, keys, sizes, num_dense, fused_params):
    """``DLRMTrain`` around a DLRM (``model.kind: dlrm``) or DLRM_DCN (``dlrm_dcn``) with one
    table per sparse feature."""
    from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    from ember.rec.models import DLRM, DLRM_DCN, DLRMTrain

    m = dict(model_cfg)
    dim = int(m.get("embedding_dim", 16))
    tables = [EmbeddingBagConfig(name=f"t_{k}", num_embeddings=h, embedding_dim=dim,
                                 feature_names=[k]) for k, h in zip(keys, sizes)]
    ebc = EmbeddingBagCollection(tables, fused_params=fused_params)
    dense_sizes = list(m.get("dense_arch_layer_sizes") or [64, dim])
    over_sizes = list(m.get("over_arch_layer_sizes") or [64, 1])
    kind = m.get("kind", "dlrm")
    if kind == "dlrm":
        net = DLRM(ebc, num_dense, dense_sizes, over_sizes)
    elif kind == "dlrm_dcn":
        net = DLRM_DCN(ebc, num_dense, dense_sizes, over_sizes,
                       dcn_num_layers=int(m.get("dcn_num_layers", 3)),
                       dcn_low_rank_dim=int(m.get("dcn_low_rank_dim", 16)))
    else:
        raise ConfigError(f"model.kind must be 'dlrm' or 'dlrm_dcn', got {kind!r}")
    return DLRMTrain(net)


def _sparse_optimizer(params, fused):
    """The unfused optimizer matching ``fused`` (data-parallel runs)."""
    f = dict(fused)
    name = str(f.pop("optimizer")).lower()
    lr = float(f.get("lr", 0.01))
    if name in ("adagrad", "rowwise_adagrad", "exact_adagrad", "exact_rowwise_adagrad"):
        return ember.optim.Adagrad(params, lr=lr, eps=float(f.get("eps", 1e-10)))
    if name in ("adam", "lazy_adam"):
        return ember.optim.SparseAdam(params, lr=lr)
    if name in ("sgd", "exact_sgd"):
        return ember.optim.SGD(params, lr=lr)
    raise ConfigError(f"embedding_optimizer.optimizer: unknown {name!r}")


def evaluate(model, batches, rank=0, world=1):
    """``(labels, logits)`` of every test batch: rank r scores batches r, r + world, ...;
    every rank runs the same number of forwards (a sharded model's lookups are collective:
    a rank out of batches scores one again and drops it), then the scores are gathered."""
    labels, logits = [], []
    was = model.training
    model.eval()
    n = len(batches)
    with ember.no_grad():
        for j in range(-(-n // world)):
            i = j * world + rank
            b = batches[i if i < n else i % n]
            x = model.model(b.dense_features, b.sparse_features).reshape(-1)
            if i < n:
                labels.append(b.labels.numpy().reshape(-1))
                logits.append(x.numpy().astype(np.float64))
    model.train(was)
    y = np.concatenate(labels) if labels else np.zeros(0)
    s = np.concatenate(logits) if logits else np.zeros(0)
    if world > 1:
        import ember.distributed as dist

        parts = [None] * world
        dist.all_gather_object(parts, (y, s))
        y = np.concatenate([p[0] for p in parts])
        s = np.concatenate([p[1] for p in parts])
    return y, s


def _parallel(cfg, run, model, fused):
    """``(net, dense params, sparse optimizer or None, tracked model)`` for this world."""
    named = list(model.named_parameters())
    if run.world == 1:
        return model, [p for n, p in named if ".embedding_bags." not in n], None, model
    mode = cfg.get("sharding", "model_parallel")
    if mode == "model_parallel":
        from ember.rec.distributed import DistributedModelParallel

        net = DistributedModelParallel(model)
        if run.rank == 0:
            print(f"{run.world} ranks, tables sharded:\n{net.plan}", flush=True)
        return net, [p for _, p in net.named_parameters()], None, net
    if mode != "data_parallel":
        raise ConfigError(f"sharding must be 'model_parallel' or 'data_parallel', got {mode!r}")
    from ember.nn.parallel import DistributedDataParallel

    net = DistributedDataParallel(model)
    tables = [p for n, p in named if ".embedding_bags." in n]
    if run.rank == 0:
        print(f"{run.world} ranks, data-parallel: every rank holds every table", flush=True)
    return net, [p for n, p in named if ".embedding_bags." not in n], \
        _sparse_optimizer(tables, fused), model


@register_recipe("dlrm")
def main(cfg):
    """Train per ``cfg`` (see ``configs/dlrm.yaml``); returns the exit code."""
    run = TrainingRun(cfg, "dlrm")
    world, rank = run.world, run.rank
    batch_size = int(cfg["batch_size"])
    stream, test, keys, sizes, num_dense = _data(cfg, run, batch_size)
    fused = dict(cfg.get("embedding_optimizer") or {"optimizer": "rowwise_adagrad", "lr": 0.05})
    unfused = world > 1 and cfg.get("sharding", "model_parallel") == "data_parallel"
    model = build_model(cfg["model"], keys, sizes, num_dense, None if unfused else fused)
    n_params = sum(p.numel() for p in model.parameters())
    net, dense, sparse_opt, tracked = _parallel(cfg, run, model, fused)
    opt = instantiate(cfg["optimizer"], dense)
    if rank == 0:
        print(f"model: {cfg['model'].get('kind', 'dlrm')}, {len(keys)} tables "
              f"({sum(sizes)} rows x {cfg['model'].get('embedding_dim', 16)}), "
              f"{n_params} parameters; data: {cfg['data'].get('source', 'random')}, "
              f"{stream.steps} steps per epoch x {world} rank(s), {len(test)} test batches",
              flush=True)

    run.counters = {"loss": 0.0, "seen": 0}
    run.track(model=tracked, optimizer=opt, sparse_optimizer=sparse_opt)
    run.track(data=stream, pickled=True)
    run.restore()
    sums = run.counters
    epochs = int(cfg["epochs"])
    model.train()
    with run:
        for epoch in run.epochs(epochs):
            for batch in run.batches(stream.start(epoch), stream.steps, rate_postfix(sums, "samples_s")):
                opt.zero_grad()
                if sparse_opt is not None:
                    sparse_opt.zero_grad()
                loss, _ = net(batch)
                loss.backward()
                opt.step()
                if sparse_opt is not None:
                    sparse_opt.step()
                n = batch.batch_size
                sums["loss"] += float(loss.item()) * n
                sums["seen"] += n
            y, s = evaluate(model, test, rank, world)
            pred = s > 0
            run.end_epoch({"lr": float(opt.param_groups[0]["lr"]),
                           "train_loss": sums["loss"] / max(sums["seen"], 1),
                           "test_logloss": log_loss_from_logits(y, s),
                           "test_auc": roc_auc(y, s),
                           "test_accuracy": float((pred == y.astype(bool)).mean())
                           if y.size else math.nan})
            sums = run.counters
    if run.interrupted:
        return EXIT_INTERRUPTED
    state = tracked.state_dict()   # a collective when the tables are sharded
    if rank == 0:
        path = os.path.join(run.out, "model.safetensors")
        ember.save(state, path)
        auc, ll = run.last_logged("test_auc"), run.last_logged("test_logloss")
        run.finish(f"test AUC {auc:.4f}, log loss {ll:.4f}", [("weights", path)])
    return 0
