"""``ShardedEmbeddingBagCollection``: an ``EmbeddingBagCollection`` split over ranks by a
sharding plan, and ``EmbeddingBagCollectionSharder``, which makes one from a collection.

    # mpiexec -n 2 python train.py
    import ember.distributed as dist
    from ember.rec.distributed import (EmbeddingBagCollectionSharder,
                                       EmbeddingShardingPlanner, ShardingEnv, Topology)
    dist.init_process_group("mpi")
    env = ShardingEnv.default()
    plan = EmbeddingShardingPlanner(Topology(world_size=2, compute_device="cpu")).plan(ebc)
    sebc = EmbeddingBagCollectionSharder().shard(ebc, plan[""], env)
    kt = sebc(kjt)          # this rank's samples, every feature: a KeyedTensor (B, sum dims)

On one process (``ShardingEnv.local()``, every shard on rank 0) it runs the same code:

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> from ember.rec.distributed import (EmbeddingShardingPlanner, ShardedEmbeddingBagCollection,
    ...                                    ShardingEnv, Topology)
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=10,
    ...     embedding_dim=4, feature_names=["f"])], fused_params={"optimizer": "sgd"})
    >>> plan = EmbeddingShardingPlanner(Topology(world_size=1)).plan(ebc)
    >>> sebc = ShardedEmbeddingBagCollection(ebc, plan[""], ShardingEnv.local())
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([1, 2, 3]),
    ...                                           ember.tensor([2, 1]))
    >>> sebc(kjt).values().shape, list(sebc.state_dict())
    ((2, 4), ['embedding_bags.t.weight', 'embedding_bags.t.step'])

A forward is ``input_dist`` (``input_dist.py``: the ids to the shards' ranks), then the
local lookups and ``output_dist`` (``lookup.py``: one autograd node, whose backward sends
the gradients back through the adjoint collectives). Every table trains with the fused
optimizer of the collection (or the sharder's ``fused_params``), applied on each shard as
its gradient arrives; data_parallel replicas get the gradient summed over ranks and stay
equal. The output and the trained tables equal the unsharded collection run on all ranks'
samples with the sum of the ranks' losses (up to float summation order).

The local shards are not parameters and ``state_dict()`` is collective, gathering the
unsharded layout (``embedding_bags.<table>.weight``, ...): see ``sharded_base.py``.
"""
from __future__ import annotations

from ember.autograd.grad_mode import STATE

from ..modules.embedding_modules import EmbeddingBagCollection
from ..sparse import KeyedTensor
from .input_dist import start_input_dist
from .lookup import Run, ShardedLookup
from .sharded_base import ShardedCollection


class ShardedEmbeddingBagCollection(ShardedCollection):
    """``module`` (an ``EmbeddingBagCollection``) sharded by ``table_plans`` (``{table:
    ParameterSharding}``, i.e. ``plan[module_path]``) over ``env`` (default
    ``ShardingEnv.default()``); see ``ShardedCollection`` for the tables' start values and
    state dicts, the module docstring for forward and training."""

    _tables_attr = "embedding_bags"

    def __init__(self, module, table_plans, env=None, fused_params=None):
        who = "ShardedEmbeddingBagCollection"
        if not isinstance(module, EmbeddingBagCollection):
            raise TypeError(f"{who}: expected an EmbeddingBagCollection, got "
                            f"{type(module).__name__}")
        super().__init__(module, module.embedding_bag_configs(), table_plans, env,
                         fused_params, who)
        self._is_weighted = module.is_weighted()
        self._embedding_names = list(module._embedding_names)
        self._lengths_per_embedding = list(module._lengths_per_embedding)

    def embedding_bag_configs(self):
        return self._configs

    def is_weighted(self):
        return self._is_weighted

    # -- forward -------------------------------------------------------------------------
    def input_dist(self, features):
        """Start sending ``features``' ids to the shards; returns a ``PendingInput``."""
        return start_input_dist(self._layout, self._env, features, self._is_weighted,
                                self._who)

    def compute_and_output_dist(self, local):
        """The pooled (B, sum of dims) values of a ``LocalInput`` (local lookups, then the
        output collectives), differentiable."""
        record = STATE.enabled
        run = Run(self._layout, self._env, local, self._dp_tables, self._unit_tables, record,
                  self._fused_optimizer)
        weights = [m.weight for m in self._dp_tables] + [m.weight for m in self._unit_tables]
        return ShardedLookup.apply(run, self._anchor, *weights)

    def forward(self, features):
        """``features``: this rank's KeyedJaggedTensor (every rank the same batch size).
        Returns the KeyedTensor of its samples, as the unsharded collection would."""
        values = self.compute_and_output_dist(self._input_for(features))
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)


class EmbeddingBagCollectionSharder:
    """Makes the sharded twin of an ``EmbeddingBagCollection``. ``fused_params`` trains a
    collection built without a fused optimizer (one built with it keeps its own)."""

    module_type = EmbeddingBagCollection

    def __init__(self, fused_params=None):
        self.fused_params = None if fused_params is None else dict(fused_params)

    def shard(self, module, params, env, device=None, path=""):
        """``params``: ``{table: ParameterSharding}`` (``plan[path]``)."""
        return ShardedEmbeddingBagCollection(module, params, env, self.fused_params)

    def sharding_types(self):
        from .planner.types import ShardingType

        return [st.value for st in ShardingType]
