"""``EmbeddingShardingPlanner``: runs the stages of ``types.py`` over a module's embedding
collections and returns a ``ShardingPlan``.

    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    >>> from ember.rec.distributed import (EmbeddingShardingPlanner, ParameterConstraints,
    ...                                    Topology)
    >>> ebc = EmbeddingBagCollection(
    ...     [EmbeddingBagConfig(name="big", num_embeddings=10_000_000, embedding_dim=64,
    ...                         feature_names=["f"])],
    ...     device="meta", fused_params={"optimizer": "rowwise_adagrad"})
    >>> planner = EmbeddingShardingPlanner(Topology(world_size=4, hbm_cap=1e9),
    ...     constraints={"big": ParameterConstraints(sharding_types=["table_wise",
    ...                                                               "row_wise"])})
    >>> plan = planner.plan(ebc)
    >>> plan[""]["big"].sharding_type.value      # "" : the path of the collection itself
    'row_wise'
    >>> plan.rejections("big")[1]
    'table_wise: 2.6 GB exceeds 1 GB per rank'
"""
from __future__ import annotations

from .enumerators import EmbeddingEnumerator
from .partitioners import GreedyPartitioner
from .perf import EmbeddingPerfEstimator
from .plan import ParameterSharding, ShardingPlan
from .proposers import GreedyProposer
from .storage import EmbeddingStorageEstimator, shard_bytes
from .types import (PartitionError, PlannerError, Rejection, ShardingType, TableSpec,
                    fmt_bytes, fmt_seconds)

_ORDER = {st: i for i, st in enumerate(ShardingType)}


def _collections(module):
    """``[(path, collection)]``: the embedding collections in ``module`` (itself included)."""
    out = []
    for path, m in module.named_modules():
        if hasattr(m, "embedding_bag_configs") or hasattr(m, "embedding_configs"):
            out.append((path, m))
    return out


class EmbeddingShardingPlanner:
    """Plans the sharding of every embedding collection in a module.

    ``topology`` (a ``Topology``), ``constraints`` (``{table name: ParameterConstraints}``)
    and ``batch_size`` (samples per rank per step, default 512) describe the job; each stage
    (``enumerator``, ``storage_estimator``, ``perf_estimator``, ``proposer``,
    ``partitioner``) defaults to this package's and can be replaced by any subclass of its
    base in ``types.py``. ``plan(module)`` reads only the collections' configs, so a module
    built on the meta device plans without memory. It raises ``PlannerError`` naming the
    table, its size and the memory per rank when no plan fits.
    """

    def __init__(self, topology, constraints=None, batch_size=512, enumerator=None,
                 storage_estimator=None, perf_estimator=None, proposer=None,
                 partitioner=None):
        self.topology = topology
        self.constraints = dict(constraints or {})
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"EmbeddingShardingPlanner: batch_size must be >= 1, got "
                             f"{batch_size}")
        self.enumerator = enumerator or EmbeddingEnumerator()
        self.storage_estimator = storage_estimator or EmbeddingStorageEstimator()
        self.perf_estimator = perf_estimator or EmbeddingPerfEstimator()
        self.proposer = proposer or GreedyProposer()
        self.partitioner = partitioner or GreedyPartitioner()

    def table_specs(self, module):
        """The ``TableSpec`` of every table of every embedding collection in ``module``."""
        specs = []
        for path, m in _collections(module):
            configs = (m.embedding_bag_configs() if hasattr(m, "embedding_bag_configs")
                       else m.embedding_configs())
            fo = getattr(m, "fused_optimizer", None)
            optimizer = None if fo is None else fo.optimizer_type.value
            for cfg in configs:
                c = self.constraints.get(cfg.name)
                nf = max(1, len(cfg.feature_names))
                pf = (c.pooling_factors if c is not None and c.pooling_factors is not None
                      else [1.0] * nf)
                npool = c.num_poolings if c is not None and c.num_poolings else 1
                bs = c.batch_size if c is not None and c.batch_size else self.batch_size
                itemsize = 2 if cfg.data_type.value == "FP16" else 4
                pooling = getattr(getattr(cfg, "pooling", None), "name", "SUM")
                specs.append(TableSpec(path, cfg.name, cfg.num_embeddings, cfg.embedding_dim,
                                       itemsize, optimizer, float(sum(pf)) * int(npool),
                                       int(bs), pooling))
        if not specs:
            raise PlannerError(f"EmbeddingShardingPlanner: {type(module).__name__} has no "
                               "embedding collection to plan")
        unknown = sorted(set(self.constraints) - {s.name for s in specs})
        if unknown:
            raise PlannerError(f"EmbeddingShardingPlanner: constraints name tables {unknown} "
                               f"that the module does not have "
                               f"({sorted({s.name for s in specs})})")
        return specs

    def plan(self, module):
        topo = self.topology
        cap = topo.memory_per_rank
        specs = self.table_specs(module)
        options, rejected = self.enumerator.enumerate(specs, topo, self.constraints)
        self.storage_estimator.estimate(options, topo)
        self.perf_estimator.estimate(options, topo)

        kept = []
        for opt in options:
            big = opt.max_shard_storage
            if big > cap:
                what = (f"{fmt_bytes(big)}" if len(opt.shards) == 1 or
                        opt.sharding_type is ShardingType.DATA_PARALLEL
                        else f"shards of up to {fmt_bytes(big)}")
                copy = " (a full copy on every rank)" \
                    if opt.sharding_type is ShardingType.DATA_PARALLEL else ""
                verb = "exceed" if what.startswith("shards") else "exceeds"
                rejected.append(Rejection(opt.table.module_path, opt.table.name,
                                          opt.sharding_type,
                                          f"{what}{copy} {verb} {fmt_bytes(cap)} per rank"))
            else:
                kept.append(opt)
        for t in specs:
            if not any(o.table.key == t.key for o in kept):
                why = "; ".join(str(r) for r in rejected if (r.module_path, r.table) == t.key)
                raise PlannerError(
                    f"table {t.name!r} ({self._describe(t)}) cannot be planned within "
                    f"{fmt_bytes(cap)} per rank on {topo.world_size} rank(s): {why}")

        self.proposer.load(kept)
        last_error = None
        while True:
            proposal = self.proposer.propose()
            if proposal is None:
                t = last_error.option.table
                total = sum(shard_bytes(s, s.num_embeddings, s.embedding_dim) for s in specs)
                raise PlannerError(
                    f"table {t.name!r} ({self._describe(t)}) does not fit in "
                    f"{fmt_bytes(cap)} per rank beside the other tables ({fmt_bytes(total)} "
                    f"in all for {topo.world_size} x {fmt_bytes(cap)}): {last_error}")
            try:
                self.partitioner.partition(proposal, topo)
                break
            except PartitionError as e:
                last_error = e
                o = e.option
                rejected.append(Rejection(o.table.module_path, o.table.name,
                                          o.sharding_type, f"did not fit beside the other "
                                          f"tables: {e}"))
                self.proposer.feedback(o)

        chosen = {o.table.key: o for o in proposal}
        done = {(r.module_path, r.table, r.sharding_type) for r in rejected}
        for opt in kept:
            c = chosen[opt.table.key]
            if opt is c or (opt.table.module_path, opt.table.name, opt.sharding_type) in done:
                continue
            if opt.cost > c.cost:
                reason = (f"est. cost {fmt_seconds(opt.cost)} > {fmt_seconds(c.cost)} of "
                          f"the chosen {c.sharding_type.value}")
            else:
                reason = (f"est. cost {fmt_seconds(opt.cost)}, no better than "
                          f"{fmt_seconds(c.cost)} of the chosen {c.sharding_type.value} "
                          f"with {fmt_bytes(opt.storage)} vs {fmt_bytes(c.storage)} in all")
            rejected.append(Rejection(opt.table.module_path, opt.table.name,
                                      opt.sharding_type, reason))
        index = {t.key: i for i, t in enumerate(specs)}
        rejected.sort(key=lambda r: (index[(r.module_path, r.table)],
                                     _ORDER[r.sharding_type]))
        plan = {}
        for o in proposal:
            plan.setdefault(o.table.module_path, {})[o.table.name] = ParameterSharding(
                o.table.module_path, o.table.name, o.sharding_type, list(o.shards))
        return ShardingPlan(plan, topo, rejected)

    @staticmethod
    def _describe(t):
        size = shard_bytes(t, t.num_embeddings, t.embedding_dim)
        state = f" + {t.optimizer} state" if t.optimizer else ""
        return (f"{t.num_embeddings} x {t.embedding_dim}, {fmt_bytes(size)} with "
                f"weights{state}")
