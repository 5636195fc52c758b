"""``GreedyProposer``: each table's options sorted cheapest first (by the summed cost of
its shards, then total bytes, then the order of ``ShardingType``); the first proposal
takes the cheapest of every table, and when the partitioner reports that a table's option
did not fit, the next proposal moves that table to its next option that needs less memory
on one rank (or, as much on one rank, less in all). Deterministic: ties break by name and
type order."""
from __future__ import annotations

from .types import Proposer, ShardingType

_ORDER = {st: i for i, st in enumerate(ShardingType)}


def sort_key(opt):
    return (opt.cost, opt.storage, _ORDER[opt.sharding_type])


class GreedyProposer(Proposer):
    """The default proposer (see the module docstring)."""

    def load(self, options):
        self._by_table = {}
        for opt in options:
            self._by_table.setdefault(opt.table.key, []).append(opt)
        for opts in self._by_table.values():
            opts.sort(key=sort_key)
        self._current = {k: 0 for k in self._by_table}
        self._exhausted = False

    def sorted_options(self, key):
        """A table's options in the order this proposer tries them."""
        return list(self._by_table[key])

    def propose(self):
        if self._exhausted:
            return None
        return [self._by_table[k][i] for k, i in sorted(self._current.items())]

    def feedback(self, failed):
        key = failed.table.key
        opts, i = self._by_table[key], self._current[key]
        need = (opts[i].max_shard_storage, opts[i].storage)
        for j in range(i + 1, len(opts)):
            if (opts[j].max_shard_storage, opts[j].storage) < need:
                self._current[key] = j
                return
        self._exhausted = True
