"""``GreedyPartitioner``: gives every shard of a proposal a rank.

Options go most costly first (ties: larger, then by table name). Shards with fixed ranks
(data_parallel: every rank; row_wise: block ``i`` on rank ``i``) go there; a table_row_wise
option goes to the host with the least cost whose ranks all have room; every other shard
(table_wise, column_wise) goes to the rank with the least cost so far among those with room
for it (ties: lowest rank). A shard with no room anywhere raises ``PartitionError`` naming
the table, the shard's size and the most memory left on a rank.
"""
from __future__ import annotations

from .types import Partitioner, PartitionError, ShardingType, fmt_bytes


class GreedyPartitioner(Partitioner):
    """The default partitioner (see the module docstring)."""

    def partition(self, proposal, topology):
        W, L = topology.world_size, topology.local_world_size
        free = [topology.memory_per_rank] * W
        cost = [0.0] * W

        def fail(opt, need, where):
            most = max(free[r] for r in where)
            raise PartitionError(
                f"table {opt.table.name!r} ({opt.sharding_type.value}): a shard of "
                f"{fmt_bytes(need)} does not fit; at most {fmt_bytes(most)} left of "
                f"{fmt_bytes(topology.memory_per_rank)} per rank", opt)

        def put(s, r):
            s.rank = r
            free[r] -= s.storage
            cost[r] += s.perf

        order = sorted(proposal, key=lambda o: (-o.cost, -o.storage, o.table.key))
        for opt in order:
            for s in opt.shards:
                s.rank = None
            if opt.fixed_ranks is not None:
                for s, r in zip(opt.shards, opt.fixed_ranks):
                    if s.storage > free[r]:
                        fail(opt, s.storage, [r])
                for s, r in zip(opt.shards, opt.fixed_ranks):
                    put(s, r)
            elif opt.sharding_type is ShardingType.TABLE_ROW_WISE:
                hosts = []
                for h in range(topology.num_hosts):
                    ranks = range(h * L, (h + 1) * L)
                    if all(s.storage <= free[r] for s, r in zip(opt.shards, ranks)):
                        hosts.append((sum(cost[r] for r in ranks), h))
                if not hosts:
                    fail(opt, opt.max_shard_storage, range(W))
                h = min(hosts)[1]
                for i, s in enumerate(opt.shards):
                    put(s, h * L + i)
            else:
                for s in opt.shards:
                    fits = [(cost[r], r) for r in range(W) if s.storage <= free[r]]
                    if not fits:
                        fail(opt, s.storage, range(W))
                    put(s, min(fits)[1])
