"""``DistributedModelParallel``: a model whose embedding collections are sharded over the
ranks and whose dense rest is data-parallel.

    # mpiexec -n 2 python train.py
    import ember, ember.distributed as dist
    from ember.rec.distributed import DistributedModelParallel
    dist.init_process_group("mpi")
    model = DistributedModelParallel(MyDLRM(...))       # plans, shards, wraps in DDP
    dense_opt = ember.optim.SGD(model.parameters(), lr=0.1)
    loss = model(batch).sum()                         # each rank: its own samples
    loss.backward(); dense_opt.step()                 # tables were updated in backward
    print(model.plan)                                 # the plan, with its reasons
    state = model.state_dict()                        # the unsharded model's keys

Construction: with no ``plan``, ``EmbeddingShardingPlanner`` plans for a ``Topology`` of
the world (on rank 0; the plan is broadcast, so every rank shards alike); each
``EmbeddingBagCollection`` and ``EmbeddingCollection`` in the module tree is replaced by
its sharded twin (the sharders' ``shard``); the module is then wrapped in ``ember.nn.parallel.
DistributedDataParallel`` when it has dense parameters and the world has more than one
rank (``data_parallel_wrapper(module)`` replaces that step). Every collection needs a
fused optimizer: its own (``fused_params=`` when built) or the sharder's
(``sharders=[EmbeddingBagCollectionSharder(fused_params=...)]``). The sharded tables are not
parameters (``parameters()`` is the dense part, for the dense optimizer); they train with
their fused optimizers (``fused_optimizer``). ``state_dict``/``load_state_dict`` use the
unsharded model's keys (collective: every rank calls them), so a checkpoint of a
sharded model loads into a single-process model and back.
"""
from __future__ import annotations

from ember import nn
from ember.optim import Optimizer

from .comm import ShardingEnv, broadcast_object
from .embedding import EmbeddingCollectionSharder
from .embeddingbag import EmbeddingBagCollectionSharder
from .sharded_base import ShardedCollection
from .planner import EmbeddingShardingPlanner, ShardingPlan, Topology


class CombinedFusedOptimizer(Optimizer):
    """The fused optimizers of a model's sharded collections as one ``Optimizer`` (for LR
    schedulers): its ``param_groups`` are theirs, the same dicts, one per local table, so
    setting ``lr`` here changes the tables' rate. ``step`` only evaluates the closure (the
    updates ran in backward)."""

    def __init__(self, optimizers):
        import ember

        self.optimizers = [o for o in optimizers if o is not None]
        params = [p for o in self.optimizers for g in o.param_groups for p in g["params"]]
        defaults = dict(self.optimizers[0].defaults) if self.optimizers else {"lr": 0.0}
        # a rank holding no table still gets an optimizer (with no groups)
        super().__init__(params or [ember.zeros(1, requires_grad=True)], defaults)
        self.param_groups = [g for o in self.optimizers for g in o.param_groups]

    def step(self, closure=None):
        if closure is None:
            return None
        import ember

        with ember.enable_grad():
            return closure()

    def __repr__(self):
        return f"CombinedFusedOptimizer({self.optimizers})"


def _set_child(root, path, new):
    parent_path, _, name = path.rpartition(".")
    parent = root.get_submodule(parent_path) if parent_path else root
    setattr(parent, name, new)


class DistributedModelParallel(nn.Module):
    """Shard ``module``'s embedding collections by ``plan`` (planned when None) over
    ``env`` (a ``ShardingEnv``; default: a new group over the whole world, or one process
    when ``ember.distributed`` is not initialized) and make the dense rest data-parallel.
    ``sharders``: default ``[EmbeddingBagCollectionSharder(),
    EmbeddingCollectionSharder()]``. ``device`` must be the CPU (ember's MPI collectives
    move numpy arrays). ``init_parameters`` is accepted for torchrec code: the tables always
    start as rank 0's (or, built on the meta device, from their configs). See the module
    docstring."""

    def __init__(self, module, env=None, device=None, plan=None, sharders=None,
                 init_data_parallel=True, init_parameters=True, data_parallel_wrapper=None):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"DistributedModelParallel: module must be an ember.nn.Module, "
                            f"got {type(module).__name__}")
        if device is not None and str(getattr(device, "type", device)).split(":")[0] != "cpu":
            raise ValueError(f"DistributedModelParallel: device {device!r} is not supported "
                             "(sharded collections run on the CPU over MPI)")
        env = ShardingEnv.default() if env is None else env
        sharders = list(sharders) if sharders else [EmbeddingBagCollectionSharder(),
                                                    EmbeddingCollectionSharder()]
        if plan is None:
            plan = self._plan(module, env)
        elif not isinstance(plan, ShardingPlan):
            raise TypeError(f"DistributedModelParallel: plan must be a ShardingPlan, got "
                            f"{type(plan).__name__}")
        self.__dict__["_env"], self.__dict__["_plan"] = env, plan
        module = self._shard(module, plan, env, sharders)
        self.__dict__["_inner"] = module
        dense = [p for p in module.parameters() if p.requires_grad]
        wrapped = module
        if init_data_parallel and env.world_size > 1 and dense:
            if data_parallel_wrapper is not None:
                wrapped = data_parallel_wrapper(module)
            else:
                from ember.nn.parallel import DistributedDataParallel

                wrapped = DistributedDataParallel(module)
        self._dmp_wrapped_module = wrapped

    @staticmethod
    def _plan(module, env):
        text = None
        if env.rank == 0:
            topo = Topology(world_size=env.world_size, compute_device="cpu")
            text = EmbeddingShardingPlanner(topo).plan(module).to_json()
        return ShardingPlan.from_json(broadcast_object(env, text))

    @staticmethod
    def _shard(module, plan, env, sharders):
        found = []
        for p, m in module.named_modules():
            sharder = next((s for s in sharders if isinstance(m, s.module_type)), None)
            if sharder is not None:
                found.append((p, m, sharder))
        for path, m, sharder in found:
            try:
                params = plan[path]
            except KeyError:
                raise ValueError(f"DistributedModelParallel: the plan has no entry for the "
                                 f"collection at {path or '<root>'!r} (it plans "
                                 f"{sorted(plan.plan)})") from None
            sharded = sharder.shard(m, params, env, path=path)
            if path == "":
                return sharded
            _set_child(module, path, sharded)
        return module

    # -- the wrapped model ------------------------------------------------------------
    @property
    def module(self):
        """The sharded model (not wrapped in DDP)."""
        return self._inner

    @property
    def plan(self):
        """The ``ShardingPlan`` in use (print it for the reasons)."""
        return self._plan

    @property
    def env(self):
        return self._env

    def sharded_modules(self):
        """``[(path, sharded collection)]`` of the model."""
        return [(p, m) for p, m in self._inner.named_modules()
                if isinstance(m, ShardedCollection)]

    @property
    def fused_optimizer(self):
        """The fused optimizers of every sharded collection (lr per table group)."""
        return CombinedFusedOptimizer([m.fused_optimizer for _, m in self.sharded_modules()])

    def forward(self, *args, **kwargs):
        return self._dmp_wrapped_module(*args, **kwargs)

    # -- names and state as the unsharded model's ---------------------------------------
    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._inner.named_parameters(prefix, recurse, remove_duplicate)

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._inner.named_buffers(prefix, recurse, remove_duplicate)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The unsharded model's state dict (collective: call it on every rank)."""
        return self._inner.state_dict(*args, destination=destination, prefix=prefix,
                                      keep_vars=keep_vars)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Load an unsharded model's state dict (every rank keeps its blocks)."""
        return self._inner.load_state_dict(state_dict, strict=strict, assign=assign)
