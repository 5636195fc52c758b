"""``ember.rec.distributed``: sharding of embedding collections across ranks.

Only the planner is here so far (``ember.rec.distributed.planner``): it decides, for each
table of each embedding collection, how to shard it and on which ranks, and says why.

    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    >>> from ember.rec.distributed import EmbeddingShardingPlanner, Topology
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=1000,
    ...                               embedding_dim=16, feature_names=["f"])], device="meta")
    >>> plan = EmbeddingShardingPlanner(Topology(world_size=2)).plan(ebc)
    >>> sorted(plan.tables())
    ['t']
"""
from __future__ import annotations

from .planner import (EmbeddingShardingPlanner, ParameterConstraints, ParameterSharding,
                      PlannerError, ShardingPlan, ShardingType, Topology)

__all__ = ["EmbeddingShardingPlanner", "ParameterConstraints", "ParameterSharding",
           "PlannerError", "ShardingPlan", "ShardingType", "Topology"]
