"""``ember.rec.distributed``: embedding collections sharded over ranks, planned with reasons.

* ``planner/``          ``EmbeddingShardingPlanner``: for each table of each collection, how
  to shard it (``ShardingType``) and on which ranks, within each rank's memory, printing
  why every other option was rejected; ``ShardingPlan`` saves/loads as JSON
* ``embeddingbag.py``   ``ShardedEmbeddingBagCollection`` (+ ``EmbeddingBagCollectionSharder``):
  an ``EmbeddingBagCollection`` split by a plan over ``ember.distributed`` (MPI): data_parallel,
  table_wise, row_wise, column_wise, table_row_wise; fused optimizers on every shard;
  unsharded state dicts
* ``embedding.py``      ``ShardedEmbeddingCollection`` (+ ``EmbeddingCollectionSharder``): the
  same for ``EmbeddingCollection`` (per-id rows of sequence features)
* ``sharded_base.py``   what both share: local shards, fused optimizer, unsharded state dicts
* ``layout.py``         what a plan means on one rank (its lookup units)
* ``input_dist.py``     the KJT all_to_alls (lengths, then ids and weights)
* ``lookup.py``         local lookups + output all_to_all / reduce_scatter, one autograd node
  whose backward runs the adjoint collectives
* ``comm.py``           ``ShardingEnv`` and the collectives on numpy arrays
* ``model_parallel.py`` ``DistributedModelParallel``: plan, shard, DDP for the dense rest
* ``train_pipeline.py`` ``TrainPipelineSparseDist``: the next batch's input distribution
  overlapping the current batch's compute

    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    >>> from ember.rec.distributed import EmbeddingShardingPlanner, Topology
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=1000,
    ...                               embedding_dim=16, feature_names=["f"])], device="meta")
    >>> plan = EmbeddingShardingPlanner(Topology(world_size=2)).plan(ebc)
    >>> sorted(plan.tables())
    ['t']

Run the sharded modules under ``mpiexec -n N`` after ``ember.distributed.init_process_group``;
without it they run as one rank (``ShardingEnv.local()``). Each rank feeds its own samples
(the same batch size on every rank). As in torchrec, the tables' gradients are *summed*
over ranks while DDP *averages* the dense ones: N ranks training on per-rank losses equal
one process training on their sum with the dense learning rate divided by N.
"""
from __future__ import annotations

from .comm import ShardingEnv
from .embedding import EmbeddingCollectionSharder, ShardedEmbeddingCollection
from .embeddingbag import EmbeddingBagCollectionSharder, ShardedEmbeddingBagCollection
from .model_parallel import CombinedFusedOptimizer, DistributedModelParallel
from .planner import (EmbeddingShardingPlanner, ParameterConstraints, ParameterSharding,
                      PlannerError, ShardingPlan, ShardingType, Topology)
from .train_pipeline import TrainPipelineSparseDist

__all__ = ["EmbeddingShardingPlanner", "ParameterConstraints", "ParameterSharding",
           "PlannerError", "ShardingPlan", "ShardingType", "Topology", "ShardingEnv",
           "ShardedEmbeddingBagCollection", "EmbeddingBagCollectionSharder",
           "ShardedEmbeddingCollection", "EmbeddingCollectionSharder",
           "DistributedModelParallel", "CombinedFusedOptimizer", "TrainPipelineSparseDist"]
