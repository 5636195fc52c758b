"""``CollectionLayout``: what a sharding plan means for one embedding-bag collection on one
rank -- which shards it holds, what every rank sends it and what it sends back.

The plan of each table (``ParameterSharding``: a sharding type and shards with ranks) is
checked against the table's config (the shards must tile the table) and turned into
*lookup units*, one per shard, each with a ``kind`` saying how its output returns:

    kind   sharding types           input (ids)                  output back to the sources
    "a2a"  table_wise, column_wise  all ids of the table's        pooled rows (B, F*cols), in the
                                    features                      output all_to_all
    "rs"   row_wise                 the ids in its row block,     partial sums, reduce-scatter
                                    shifted to local rows         over all ranks
    "sum"  table_row_wise           as row_wise                   partial sums in the output
                                                                  all_to_all, summed at the source
    (data_parallel tables have no unit: each rank looks up its own batch in its replica)

Every rank builds the same layout (the plan is the same everywhere), so message sizes that
depend only on the layout and the batch size need no exchange. Units are in table order,
then shard order; ``units_on[r]`` lists rank ``r``'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from ..modules.embedding_configs import PoolingType, data_type_to_dtype
from .planner.types import ShardingType

_MODES = {PoolingType.SUM: "sum", PoolingType.MEAN: "mean", PoolingType.MAX: "max"}
_KIND = {ShardingType.TABLE_WISE: "a2a", ShardingType.COLUMN_WISE: "a2a",
         ShardingType.ROW_WISE: "rs", ShardingType.TABLE_ROW_WISE: "sum"}


@dataclass
class Unit:
    """One shard of one table, looked up on ``rank``: rows ``[row_off, row_off + rows)``
    and columns ``[col_off, col_off + cols)`` of table ``table`` (its index)."""

    table: int
    shard: int
    rank: int
    row_off: int
    rows: int
    col_off: int
    cols: int
    kind: str


@dataclass
class TableLayout:
    """One table: its config, sharding, output columns ``[base, base + F * D)`` of the
    collection's output and its units (none for data_parallel)."""

    index: int
    cfg: object
    sharding_type: ShardingType
    base: int
    units: List[Unit] = field(default_factory=list)

    @property
    def name(self):
        return self.cfg.name

    @property
    def F(self):
        return len(self.cfg.feature_names)

    @property
    def D(self):
        return self.cfg.embedding_dim

    @property
    def mode(self):
        """The pooling ("sum", "mean", "max"); "sum" for a sequence table (no pooling)."""
        return _MODES[getattr(self.cfg, "pooling", PoolingType.SUM)]

    @property
    def dtype(self):
        return np.dtype(data_type_to_dtype(self.cfg.data_type))

    @property
    def partial(self):
        """Shards hold partial sums of a bag (row_wise, table_row_wise)."""
        return self.sharding_type in (ShardingType.ROW_WISE, ShardingType.TABLE_ROW_WISE)

    def row_bounds(self):
        """Row offsets of the units plus the table's end: ids are bucketized by them."""
        return np.array([u.row_off for u in self.units] + [self.cfg.num_embeddings], np.int64)


class CollectionLayout:
    """The layout of one collection (``configs``, its ``ParameterSharding`` per table name)
    over ``world_size`` ranks, seen from ``rank``. Raises ``ValueError`` naming the table
    when the plan does not fit the configs."""

    def __init__(self, configs, table_plans, world_size, rank, optimizer=None, weight_decay=0.0,
                 who="sharding"):
        self.world_size, self.rank = int(world_size), int(rank)
        W = self.world_size
        names = [c.name for c in configs]
        missing = [n for n in names if n not in table_plans]
        if missing:
            raise ValueError(f"{who}: the plan has no entry for table(s) {missing} (it has "
                             f"{sorted(table_plans)})")
        extra = sorted(set(table_plans) - set(names))
        if extra:
            raise ValueError(f"{who}: the plan names table(s) {extra} that the collection "
                             f"does not have ({names})")
        self.tables, base = [], 0
        for i, cfg in enumerate(configs):
            ps = table_plans[cfg.name]
            t = TableLayout(i, cfg, ShardingType(getattr(ps.sharding_type, "value",
                                                         ps.sharding_type)), base)
            self._check(t, ps.shards, optimizer, weight_decay, who)
            if t.sharding_type is not ShardingType.DATA_PARALLEL:
                for k, s in enumerate(sorted(ps.shards, key=lambda s: (s.row_offset,
                                                                       s.col_offset))):
                    t.units.append(Unit(i, k, int(s.rank), int(s.row_offset), int(s.rows),
                                        int(s.col_offset), int(s.cols), _KIND[t.sharding_type]))
            self.tables.append(t)
            base += t.F * t.D
        self.total_cols = base
        self.units = [u for t in self.tables for u in t.units]
        self.units_on = [[u for u in self.units if u.rank == r] for r in range(W)]
        self.a2a_on = [[u for u in us if u.kind != "rs"] for us in self.units_on]
        self.rs_tables = [t for t in self.tables if t.sharding_type is ShardingType.ROW_WISE]
        self.dp_tables = [t for t in self.tables
                          if t.sharding_type is ShardingType.DATA_PARALLEL]
        self.local_units = self.units_on[self.rank]
        # column_wise tables under rowwise_adagrad: their shards share each row's
        # accumulator (``lookup._rowwise_column_shards``)
        self.cw_rowwise = [t.index for t in self.tables
                           if t.sharding_type is ShardingType.COLUMN_WISE and
                           optimizer == "rowwise_adagrad"]
        dts = {t.dtype for t in self.tables}
        self.out_dtype = np.result_type(*dts) if dts else np.dtype(np.float32)

    def _check(self, t, shards, optimizer, weight_decay, who):
        W, st, cfg = self.world_size, t.sharding_type, t.cfg
        N, D = cfg.num_embeddings, cfg.embedding_dim
        where = f"{who}: table {cfg.name!r} ({st.value}, {N} x {D})"
        if not shards:
            raise ValueError(f"{where}: the plan gives it no shards")
        for s in shards:
            if s.rank is None or not 0 <= int(s.rank) < W:
                raise ValueError(f"{where}: shard on rank {s.rank}, outside the {W} ranks")
        if t.mode == "max" and t.partial:
            raise ValueError(f"{where}: MAX pooling cannot be split by rows (partial maxima "
                             "have no sum to reduce); plan it table_wise, column_wise or "
                             "data_parallel")
        if st is ShardingType.COLUMN_WISE and t.mode == "max" and (
                optimizer in ("adam", "rowwise_adagrad") or weight_decay):
            raise ValueError(f"{where}: with MAX pooling each column shard touches only the "
                             "rows that won one of its columns, so adam, rowwise_adagrad or "
                             "weight decay would update other rows than the unsharded "
                             "table's; plan it table_wise or data_parallel")
        rows = sorted(shards, key=lambda s: (s.row_offset, s.col_offset))
        if st is ShardingType.DATA_PARALLEL:
            if sorted(int(s.rank) for s in shards) != list(range(W)) or any(
                    (s.row_offset, s.col_offset, s.rows, s.cols) != (0, 0, N, D)
                    for s in shards):
                raise ValueError(f"{where}: data_parallel needs one full copy on each of the "
                                 f"{W} ranks")
            return
        if st is ShardingType.TABLE_WISE:
            ok = len(shards) == 1 and (rows[0].row_offset, rows[0].col_offset, rows[0].rows,
                                       rows[0].cols) == (0, 0, N, D)
            if not ok:
                raise ValueError(f"{where}: table_wise needs one shard of the whole table")
            return
        if st is ShardingType.COLUMN_WISE:
            off = 0
            for s in rows:
                if (s.row_offset, s.rows, s.col_offset) != (0, N, off) or s.cols < 1:
                    raise ValueError(f"{where}: column shards must cover columns 0..{D} "
                                     f"in order with all rows; got {_desc(rows)}")
                off += s.cols
            if off != D:
                raise ValueError(f"{where}: column shards cover {off} of {D} columns")
            return
        off = 0
        for s in rows:
            if (s.col_offset, s.cols, s.row_offset) != (0, D, off) or s.rows < 1:
                raise ValueError(f"{where}: row shards must cover rows 0..{N} in order with "
                                 f"all columns; got {_desc(rows)}")
            off += s.rows
        if off != N:
            raise ValueError(f"{where}: row shards cover {off} of {N} rows")
        ranks = [int(s.rank) for s in rows]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"{where}: two row shards on one rank ({ranks})")
        if st is ShardingType.ROW_WISE and ranks != list(range(W)):
            raise ValueError(f"{where}: row_wise needs block i on rank i for all {W} ranks, "
                             f"got ranks {ranks}")

    def input_lengths(self, rank, batch):
        """Lengths a source of ``batch`` samples sends ``rank`` (a header and one per bag of
        each unit's features)."""
        return 1 + batch * sum(self.tables[u.table].F for u in self.units_on[rank])

    def a2a_size(self, rank, batch):
        """Output values ``rank`` returns to each source in the output all_to_all."""
        return batch * sum(self.tables[u.table].F * u.cols for u in self.a2a_on[rank])

    def rs_size(self, batch):
        """Output values each source gets from the reduce-scatter (row_wise tables)."""
        return batch * sum(t.F * t.D for t in self.rs_tables)


def _desc(shards):
    return ", ".join(f"{s.rows}x{s.cols}@{s.row_offset},{s.col_offset}" for s in shards)
