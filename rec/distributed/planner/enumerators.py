"""``EmbeddingEnumerator``: every sharding type of every table, with its shards, or the
reason that type does not apply to that table (not in its constraints, or a shape or
topology it cannot split over)."""
from __future__ import annotations

from .types import (Enumerator, Rejection, Shard, ShardingOption, ShardingType)

MIN_COLUMN_SHARD = 4  # narrowest column shard the enumerator makes
_ROW_SPLIT = (ShardingType.ROW_WISE, ShardingType.TABLE_ROW_WISE)


def _split(n, k):
    """``k`` (offset, size) blocks covering ``range(n)``, sizes differing by at most one."""
    base, extra = divmod(n, k)
    out, off = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        out.append((off, size))
        off += size
    return out


class EmbeddingEnumerator(Enumerator):
    """The default enumerator. Shards per type, for an ``N x D`` table on ``W`` ranks of
    ``L`` per host:

    * data_parallel: ``W`` full copies, on ranks ``0..W-1``
    * table_wise: one ``N x D`` shard, placed by the partitioner
    * row_wise: ``W`` row blocks, block ``i`` on rank ``i``
    * column_wise: ``min(W, D // 4)`` column blocks, placed like tables
    * table_row_wise: ``L`` row blocks on the ranks of one host (chosen by the partitioner)

    A MAX-pooled table cannot be split by rows (partial maxima do not sum): row_wise and
    table_row_wise are rejected for it with that reason; nor by columns with adam or
    rowwise_adagrad (each column shard would update the rows that won its own columns).
    """

    def enumerate(self, tables, topology, constraints):
        options, rejected = [], []
        W, L = topology.world_size, topology.local_world_size
        for t in tables:
            c = constraints.get(t.name)
            allowed = None if c is None or c.sharding_types is None else c.sharding_types
            for st in ShardingType:
                def reject(reason, st=st):
                    rejected.append(Rejection(t.module_path, t.name, st, reason))
                if allowed is not None and st not in allowed:
                    reject("not in constraints (allowed: "
                           f"{', '.join(a.value for a in allowed)})")
                    continue
                N, D = t.num_embeddings, t.embedding_dim
                if t.pooling == "MAX" and st in _ROW_SPLIT:
                    reject("MAX pooling cannot be split by rows (partial maxima do not sum)")
                    continue
                if st is ShardingType.COLUMN_WISE and t.pooling == "MAX" and \
                        t.optimizer in ("adam", "rowwise_adagrad"):
                    reject(f"MAX pooling with {t.optimizer}: a column shard touches only the "
                           "rows that won its columns, not the unsharded table's rows")
                    continue
                if st is ShardingType.TABLE_WISE:
                    options.append(ShardingOption(t, st, [Shard(0, 0, N, D)]))
                elif st is ShardingType.DATA_PARALLEL:
                    if W == 1 and allowed is None:
                        reject("world_size 1: the same as table_wise")
                        continue
                    options.append(ShardingOption(t, st, [Shard(0, 0, N, D) for _ in
                                                          range(W)], list(range(W))))
                elif st is ShardingType.ROW_WISE:
                    if W == 1 and allowed is None:
                        reject("world_size 1: the same as table_wise")
                    elif N < W:
                        reject(f"{N} rows cannot be split over {W} ranks")
                    else:
                        options.append(ShardingOption(
                            t, st, [Shard(o, 0, n, D) for o, n in _split(N, W)],
                            list(range(W))))
                elif st is ShardingType.COLUMN_WISE:
                    k = min(W, D // MIN_COLUMN_SHARD)
                    if k < 2:
                        reject(f"embedding_dim {D} on {W} rank(s) gives fewer than 2 "
                               f"column shards of >= {MIN_COLUMN_SHARD}")
                    else:
                        options.append(ShardingOption(
                            t, st, [Shard(0, o, N, d) for o, d in _split(D, k)]))
                else:  # TABLE_ROW_WISE
                    if topology.num_hosts == 1:
                        reject(f"needs more than one host (all {W} ranks on one host: "
                               "the same as row_wise)")
                    elif L == 1:
                        reject("one rank per host: the same as table_wise")
                    elif N < L:
                        reject(f"{N} rows cannot be split over the {L} ranks of a host")
                    else:
                        options.append(ShardingOption(
                            t, st, [Shard(o, 0, n, D) for o, n in _split(N, L)]))
        return options, rejected
