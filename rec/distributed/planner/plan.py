"""``ShardingPlan``: where every table's shards go, what each rank holds, and why the other
options were not taken. Prints as a table per rank; saves and loads as JSON.
The cost in a shard's row is that shard's; a rank's cost is the sum of its shards'; the
costs in the rejection reasons are an option's total over all its shards.

    ShardingPlan: 2 ranks x cuda, 1 host(s), 2 GB per rank; est. step 0.21 ms (slowest rank)
    rank 0: 1.2 GB of 2 GB used, est. cost 0.21 ms
      table        sharding       shard (rows x cols @ row,col)   memory     est. cost
      big          row_wise       500000x64 @ 0,0                 1.2 GB     0.2 ms
    ...
    rejected options:
      big
        table_wise: 2.4 GB exceeds 2 GB per rank
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Dict, List

from .types import Rejection, Shard, ShardingType, Topology, fmt_bytes, fmt_seconds

_VERSION = 1


@dataclass
class ParameterSharding:
    """The plan of one table: its sharding type and its shards (each with its rank)."""

    module_path: str
    table: str
    sharding_type: ShardingType
    shards: List[Shard]

    @property
    def ranks(self):
        return [s.rank for s in self.shards]

    @property
    def storage(self):
        return sum(s.storage for s in self.shards)

    @property
    def cost(self):
        """Estimated seconds per step over all its shards."""
        return sum(s.perf for s in self.shards)

    def to_dict(self):
        return {"sharding_type": self.sharding_type.value,
                "shards": [asdict(s) for s in self.shards]}


@dataclass
class ShardingPlan:
    """``plan[module_path][table] -> ParameterSharding``, the topology planned for and the
    options rejected (``rejected``, with their reasons)."""

    plan: Dict[str, Dict[str, ParameterSharding]]
    topology: Topology
    rejected: List[Rejection] = field(default_factory=list)

    def __getitem__(self, module_path):
        return self.plan[module_path]

    def tables(self):
        """``{table name: ParameterSharding}`` over every module (``path.name`` when two
        modules have a table of the same name)."""
        out, seen = {}, {}
        for path, tables in sorted(self.plan.items()):
            for name in tables:
                seen[name] = seen.get(name, 0) + 1
        for path, tables in sorted(self.plan.items()):
            for name, ps in sorted(tables.items()):
                out[name if seen[name] == 1 else f"{path}.{name}"] = ps
        return out

    def rejections(self, table, module_path=None):
        """The reasons the options of ``table`` were rejected, ``["row_wise: ..."]``."""
        return [str(r) for r in self.rejected if r.table == table and
                (module_path is None or r.module_path == module_path)]

    def memory_used(self):
        """Bytes each rank holds."""
        used = [0.0] * self.topology.world_size
        for tables in self.plan.values():
            for ps in tables.values():
                for s in ps.shards:
                    used[s.rank] += s.storage
        return used

    def rank_costs(self):
        """Estimated seconds of each rank's shards per step."""
        cost = [0.0] * self.topology.world_size
        for tables in self.plan.values():
            for ps in tables.values():
                for s in ps.shards:
                    cost[s.rank] += s.perf
        return cost

    def __str__(self):
        topo = self.topology
        cap = topo.memory_per_rank
        used, cost = self.memory_used(), self.rank_costs()
        lines = [f"ShardingPlan: {topo.world_size} ranks x {topo.compute_device}, "
                 f"{topo.num_hosts} host(s), {fmt_bytes(cap)} per rank; est. step "
                 f"{fmt_seconds(max(cost))} (slowest rank)"]
        rows = []
        for path, tables in sorted(self.plan.items()):
            for name, ps in sorted(tables.items()):
                for s in ps.shards:
                    rows.append((s.rank, f"{path}.{name}" if path else name,
                                 ps.sharding_type.value, s))
        width = max([len(r[1]) for r in rows] + [5]) + 2
        for rank in range(topo.world_size):
            lines.append(f"rank {rank}: {fmt_bytes(used[rank])} of {fmt_bytes(cap)} used, "
                         f"est. cost {fmt_seconds(cost[rank])}")
            mine = [r for r in rows if r[0] == rank]
            if not mine:
                lines.append("  (no shards)")
                continue
            lines.append(f"  {'table':<{width}}{'sharding':<16}"
                         f"{'shard (rows x cols @ row,col)':<32}{'memory':<11}est. cost")
            for _, name, st, s in mine:
                shard = f"{s.rows}x{s.cols} @ {s.row_offset},{s.col_offset}"
                lines.append(f"  {name:<{width}}{st:<16}{shard:<32}"
                             f"{fmt_bytes(s.storage):<11}{fmt_seconds(s.perf)}")
        if self.rejected:
            lines.append("rejected options:")
            last = None
            for r in self.rejected:
                name = f"{r.module_path}.{r.table}" if r.module_path else r.table
                if name != last:
                    lines.append(f"  {name}")
                    last = name
                lines.append(f"    {r}")
        return "\n".join(lines)

    def to_json(self, **kwargs):
        """The plan as a JSON string (``ShardingPlan.from_json`` reads it back)."""
        doc = {"version": _VERSION, "topology": self.topology.to_dict(),
               "plan": {path: {name: ps.to_dict() for name, ps in sorted(tables.items())}
                        for path, tables in sorted(self.plan.items())},
               "rejected": [{"module_path": r.module_path, "table": r.table,
                             "sharding_type": r.sharding_type.value, "reason": r.reason}
                            for r in self.rejected]}
        return json.dumps(doc, **kwargs)

    @classmethod
    def from_json(cls, text):
        doc = json.loads(text)
        if doc.get("version") != _VERSION:
            raise ValueError(f"ShardingPlan.from_json: unknown version {doc.get('version')!r} "
                             f"(this ember reads version {_VERSION})")
        plan = {path: {name: ParameterSharding(path, name, ShardingType(d["sharding_type"]),
                                               [Shard(**s) for s in d["shards"]])
                       for name, d in tables.items()}
                for path, tables in doc["plan"].items()}
        rejected = [Rejection(r["module_path"], r["table"], ShardingType(r["sharding_type"]),
                              r["reason"]) for r in doc["rejected"]]
        return cls(plan, Topology(**doc["topology"]), rejected)
