"""``ember.rec.distributed.planner``: the embedding sharding planner, as pluggable stages.

The stages are declared (abstract bases and the data they pass) in ``types.py``; each
default lives in its own file and is injected by ``EmbeddingShardingPlanner``:

* ``enumerators.py``   ``EmbeddingEnumerator``: every (table, sharding type) option, with
  its shards, or the reason the type does not apply
* ``storage.py``       ``EmbeddingStorageEstimator``: bytes of each shard (weights plus
  the fused optimizer's state)
* ``perf.py``          ``EmbeddingPerfEstimator``: seconds of each shard per step (a small
  documented cost model over the topology's bandwidths)
* ``proposers.py``     ``GreedyProposer``: the cheapest option per table, then the next
  ones for the table that did not fit
* ``partitioners.py``  ``GreedyPartitioner``: shards onto ranks, most costly first, onto the
  least-loaded rank with room
* ``plan.py``          ``ShardingPlan`` (printable table per rank, JSON)
* ``planner.py``       ``EmbeddingShardingPlanner``
"""
from __future__ import annotations

from .enumerators import EmbeddingEnumerator
from .partitioners import GreedyPartitioner
from .perf import EmbeddingPerfEstimator
from .plan import ParameterSharding, ShardingPlan
from .planner import EmbeddingShardingPlanner
from .proposers import GreedyProposer
from .storage import EmbeddingStorageEstimator
from .types import (Enumerator, ParameterConstraints, Partitioner, PerfEstimator,
                    PlannerError, Proposer, Rejection, Shard, ShardingOption, ShardingType,
                    StorageEstimator, TableSpec, Topology)

__all__ = ["EmbeddingShardingPlanner", "ShardingPlan", "ParameterSharding", "ShardingType",
           "Topology", "ParameterConstraints", "PlannerError", "Shard", "ShardingOption",
           "Rejection", "TableSpec", "Enumerator", "StorageEstimator", "PerfEstimator",
           "Proposer", "Partitioner", "EmbeddingEnumerator", "EmbeddingStorageEstimator",
           "EmbeddingPerfEstimator", "GreedyProposer", "GreedyPartitioner"]
