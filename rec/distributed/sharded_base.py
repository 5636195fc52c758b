"""``ShardedCollection``: what the sharded embedding collections share -- the local tables
(shards and replicas) built from a plan, their fused optimizer, and state dicts in the
unsharded layout.

The local tables are *not* parameters of the module (``parameters()`` lists none of them),
so ``DistributedDataParallel`` and dense optimizers leave them alone; ``named_shards()``
lists them. ``state_dict()`` is collective (every rank calls it): it gathers the shards
into the unsharded layout and keys (``<tables>.<table>.weight`` and the fused optimizer's
``momentum1``, ``momentum2``, ``step``), the same on every rank. ``load_state_dict`` takes
such an (unsharded) dict and keeps each rank's blocks.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

import ember
from ember import nn

from ..modules import fused as _fused
from ..sparse._util import wrap
from .comm import ShardingEnv, all_reduce_sum, broadcast
from .layout import CollectionLayout

_STATE_ORDER = ("momentum1", "momentum2")


class _LocalTable(nn.Module):
    """One local table (a shard or a replica): its weight and, once the fused optimizer is
    attached, its state buffers."""

    def __init__(self, rows, cols, dtype):
        super().__init__()
        self.weight = nn.Parameter(ember.empty(rows, cols, dtype=dtype))


def _fused_params_of(module, fused_params, who):
    fo = module.fused_optimizer
    if fo is not None:
        return dict(fo.defaults), {g["name"]: g["lr"] for g in fo.param_groups}
    if fused_params:
        return dict(fused_params), {}
    raise ValueError(f"{who}: the collection has no fused optimizer; build it "
                     "with fused_params={'optimizer': ..., 'lr': ...} or give the sharder "
                     "fused_params (sharded tables train inside backward)")


class ShardedCollection(nn.Module):
    """The base of ``ShardedEmbeddingBagCollection`` and ``ShardedEmbeddingCollection``:
    ``module`` sharded by ``table_plans`` (``{table: ParameterSharding}``, i.e.
    ``plan[module_path]``) over ``env`` (default ``ShardingEnv.default()``). The tables start
    as ``module``'s on rank 0 of the group (a meta-device ``module`` is initialized shard by
    shard from its configs instead; replicas from rank 0)."""

    _tables_attr = ""   # the unsharded collection's table dict: the state-dict prefix

    def __init__(self, module, configs, table_plans, env=None, fused_params=None, who=""):
        super().__init__()
        env = ShardingEnv.default() if env is None else env
        fp, lrs = _fused_params_of(module, fused_params, who)
        opt, hp = _fused.parse_fused_params(fp)
        self._configs = list(configs)
        self._who = who
        layout = CollectionLayout(self._configs, dict(table_plans), env.world_size, env.rank,
                                  optimizer=opt.value, weight_decay=hp["weight_decay"],
                                  who=who)
        d = self.__dict__  # not registered: the shards are no parameters (see above)
        d["_env"], d["_layout"], d["_fused_kind"] = env, layout, opt
        d["_dp_tables"] = [_LocalTable(t.cfg.num_embeddings, t.D, t.dtype)
                           for t in layout.dp_tables]
        d["_unit_tables"] = [_LocalTable(u.rows, u.cols, layout.tables[u.table].dtype)
                             for u in layout.local_units]
        d["_anchor"] = ember.zeros(1, requires_grad=True)
        d["_prefetched"] = []
        named = self._named_local()
        d["_fused_optimizer"] = _fused.attach(named, fp) if named else None
        if self._fused_optimizer is not None:
            for g in self._fused_optimizer.param_groups:
                if g["name"] in lrs:
                    g["lr"] = lrs[g["name"]]
        self._init_from(module)

    # -- construction ------------------------------------------------------------------
    def _named_local(self):
        lay = self._layout
        return ([(t.name, m) for t, m in zip(lay.dp_tables, self._dp_tables)] +
                [(lay.tables[u.table].name, m) for u, m in zip(lay.local_units,
                                                               self._unit_tables)])

    def _init_from(self, module):
        env = self._env
        if module.device.type != "meta":
            state = module.state_dict()
            for v in state.values():  # every rank takes rank 0's tables
                broadcast(env, v.array)
            self._load_full(state, "", None, None, [])
            return
        rng_tables = {}
        lay = self._layout
        for u, m in zip(lay.local_units, self._unit_tables):
            rng_tables.setdefault(u.table, []).append(m)
        for ti, ms in rng_tables.items():
            cfg = lay.tables[ti].cfg
            for m in ms:
                with ember.no_grad():
                    if cfg.init_fn is not None:
                        cfg.init_fn(m.weight)
                    else:
                        nn.init.uniform_(m.weight, cfg.get_weight_init_min(),
                                         cfg.get_weight_init_max())
        for t, m in zip(lay.dp_tables, self._dp_tables):
            with ember.no_grad():
                if t.cfg.init_fn is not None:
                    t.cfg.init_fn(m.weight)
                else:
                    nn.init.uniform_(m.weight, t.cfg.get_weight_init_min(),
                                     t.cfg.get_weight_init_max())
            broadcast(env, m.weight.array)
            m.weight._bump()

    # -- properties ----------------------------------------------------------------------
    @property
    def fused_optimizer(self):
        """The ``FusedOptimizer`` of this rank's local tables (None when it holds none)."""
        return self._fused_optimizer

    @property
    def env(self):
        return self._env

    @property
    def layout(self):
        return self._layout

    def named_shards(self):
        """``[(name, weight)]`` of this rank's local tables: ``<table>`` for a replica,
        ``<table>.shard<k>`` for a shard."""
        lay = self._layout
        out = [(t.name, m.weight) for t, m in zip(lay.dp_tables, self._dp_tables)]
        out += [(f"{lay.tables[u.table].name}.shard{u.shard}", m.weight)
                for u, m in zip(lay.local_units, self._unit_tables)]
        return out

    # -- the pipeline's prefetched input distributions ------------------------------
    def prefetch(self, features, pending):
        """Use ``pending`` (an ``input_dist`` of ``features``, already started) when this
        module is next called with ``features`` itself (the train pipeline does this)."""
        self._prefetched.append((features, pending))

    def _input_for(self, features):
        """The ``LocalInput`` of ``features``: prefetched, or distributed now."""
        for i, (f, p) in enumerate(self._prefetched):
            if f is features:
                del self._prefetched[i]
                return p.wait()
        return self.input_dist(features).wait()

    # -- state dict ----------------------------------------------------------------------
    def _state_names(self):
        """``(["weight", <optimizer state>..., "step"], optimizer kind)``: the keys of each
        table, in the unsharded collection's order."""
        kind = self._fused_kind
        shapes = _fused.state_shapes(kind, 1, 1)
        return ["weight"] + [n for n in _STATE_ORDER if n in shapes] + ["step"], kind

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The unsharded state dict (collective: every rank calls it, every rank gets it).
        The tensors are gathered copies (``keep_vars`` has no effect)."""
        if args:
            destination, prefix = (list(args) + [destination, prefix])[:2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        lay, env = self._layout, self._env
        names, kind = self._state_names()
        steps = np.zeros(len(lay.tables), np.int64)
        dp_index = {t.index: m for t, m in zip(lay.dp_tables, self._dp_tables)}
        local = {}
        for u, m in zip(lay.local_units, self._unit_tables):
            local.setdefault(u.table, []).append((u, m))
            if u.shard == 0:
                steps[u.table] = int(m._buffers["step"].array)
        if env.world_size > 1 and any(t.units for t in lay.tables):
            all_reduce_sum(env, steps)
        for t in lay.tables:
            N, D = t.cfg.num_embeddings, t.D
            shapes = _fused.state_shapes(kind, N, D)
            for name in names:
                key = f"{prefix}{self._tables_attr}.{t.name}.{name}"
                if name == "step":
                    val = np.array(int(dp_index[t.index]._buffers["step"].array)
                                   if t.index in dp_index else steps[t.index], np.int64)
                elif t.index in dp_index:
                    src = dp_index[t.index]
                    a = src.weight.array if name == "weight" else src._buffers[name].array
                    val = a.copy()
                else:
                    shape = (N, D) if name == "weight" else shapes[name]
                    dt = t.dtype if name == "weight" else np.dtype(np.float32)
                    val = np.zeros(shape, dt)
                    for u, m in local.get(t.index, []):
                        a = m.weight.array if name == "weight" else m._buffers[name].array
                        if a.ndim == 1:  # a row's state: column shards hold equal copies
                            if u.col_off == 0:
                                val[u.row_off:u.row_off + u.rows] = a
                        else:
                            val[u.row_off:u.row_off + u.rows, u.col_off:u.col_off + u.cols] = a
                    all_reduce_sum(env, val)
                destination[key] = wrap(val)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        self._load_full(state_dict, prefix, missing_keys if strict else None,
                        unexpected_keys if strict else None, error_msgs)

    def _load_full(self, state_dict, prefix, missing, unexpected, errors):
        """Copy this rank's blocks out of an unsharded state dict (keys under ``prefix``)."""
        lay = self._layout
        names, kind = self._state_names()
        ours = set()
        for t in lay.tables:
            N, D = t.cfg.num_embeddings, t.D
            shapes = _fused.state_shapes(kind, N, D)
            targets = [(None, m) for tt, m in zip(lay.dp_tables, self._dp_tables)
                       if tt.index == t.index]
            targets += [(u, m) for u, m in zip(lay.local_units, self._unit_tables)
                        if u.table == t.index]
            for name in names:
                key = f"{prefix}{self._tables_attr}.{t.name}.{name}"
                ours.add(key)
                if key not in state_dict:
                    if missing is not None:
                        missing.append(key)
                    continue
                v = state_dict[key]
                arr = np.asarray(v.array if hasattr(v, "array") else v)
                want = (N, D) if name == "weight" else (() if name == "step"
                                                        else shapes[name])
                if arr.shape != tuple(want):
                    errors.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{list(arr.shape)} from checkpoint, the shape in the "
                                  f"unsharded model is {list(want)}.")
                    continue
                for u, m in targets:
                    dst = m.weight if name == "weight" else m._buffers[name]
                    if name == "step" or u is None:
                        blk = arr
                    elif arr.ndim == 1:
                        blk = arr[u.row_off:u.row_off + u.rows]
                    else:
                        blk = arr[u.row_off:u.row_off + u.rows, u.col_off:u.col_off + u.cols]
                    dst.array[...] = blk
                    dst._bump()
        if unexpected is not None:
            for key in state_dict:
                if key.startswith(prefix) and key not in ours:
                    unexpected.append(key)

    def extra_repr(self):
        lay = self._layout
        tables = ", ".join(f"{t.name}: {t.sharding_type.value}" for t in lay.tables)
        return (f"rank {self._env.rank} of {self._env.world_size}, {tables}, "
                f"local shards {[n for n, _ in self.named_shards()]}")


