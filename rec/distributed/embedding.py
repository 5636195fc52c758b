"""``ShardedEmbeddingCollection``: an ``EmbeddingCollection`` (per-id embeddings of sequence
features) split over ranks by a sharding plan, and ``EmbeddingCollectionSharder``.

The input distribution is the bag collection's (``input_dist.py``). Each shard then looks
up one row per id it received and sends the rows back in one all_to_all (there is nothing
to pool, so no reduce-scatter): a table_wise shard returns whole rows, a column_wise shard
its columns, a row_wise / table_row_wise shard the rows of the ids in its block, which the
source puts back at those ids' positions. Backward sends each id's gradient row the same
way in reverse; every shard's gradient is row-sparse and coalesced and goes to the fused
optimizer's hook; data_parallel replicas get theirs summed over ranks. All collectives are
in one autograd node (``ShardedSequenceLookup``), in a fixed order on every rank.

    >>> import ember
    >>> from ember.rec import EmbeddingCollection, EmbeddingConfig, KeyedJaggedTensor
    >>> from ember.rec.distributed import (EmbeddingShardingPlanner, ShardedEmbeddingCollection,
    ...                                    ShardingEnv, Topology)
    >>> ec = EmbeddingCollection([EmbeddingConfig(name="t", num_embeddings=10,
    ...     embedding_dim=4, feature_names=["f"])], fused_params={"optimizer": "sgd"})
    >>> plan = EmbeddingShardingPlanner(Topology(world_size=1)).plan(ec)
    >>> sec = ShardedEmbeddingCollection(ec, plan[""], ShardingEnv.local())
    >>> out = sec(KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([1, 2, 3]),
    ...                                              ember.tensor([2, 1])))
    >>> out["f"].values().shape, out["f"].lengths().tolist()
    ((3, 4), [2, 1])

Every rank must use at least one of the outputs in its loss (the node's backward, which
every rank must run, hangs off them). Sequence features need one batch size for all keys.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.autograd.function import Function, once_differentiable
from ember.autograd.grad_mode import STATE
from ember.sparse import RowSparseGrad

from ..modules._lookup import coalesce_rows
from ..modules.embedding_modules import EmbeddingCollection, _feature_ids
from ..sparse import JaggedTensor
from ..sparse._util import wrap
from .comm import sparse_sum, start_all_to_all
from .input_dist import start_input_dist
from .lookup import Run, _cat, _rowwise_column_shards
from .sharded_base import ShardedCollection


def _src_rows(lay, loc, u):
    """How many of this rank's ids went to unit ``u``, and their positions (None: all ids
    of the table, in order)."""
    t = lay.tables[u.table]
    if not t.partial:
        return loc.src_count[t.index], None
    order, cut = loc.src_perm[t.index]
    return int(cut[u.shard + 1] - cut[u.shard]), order[cut[u.shard]:cut[u.shard + 1]]


class ShardedSequenceLookup(Function):
    """``apply(run, anchor, *weights)`` -> one (ids of this rank, D) tensor per table."""

    @staticmethod
    def forward(ctx, run, anchor, *weights):
        lay, env, loc = run.layout, run.env, run.local
        W = env.world_size
        dt = lay.out_dtype
        counts = loc.unit_counts                      # (W, local units)
        starts = np.cumsum(counts, 0) - counts
        rows = [m.weight.array.take(ids, axis=0)
                for ids, m in zip(loc.unit_ids, run.unit_tables)]
        send = [rows[j][starts[s, j]:starts[s, j] + counts[s, j]].reshape(-1)
                for s in range(W) for j in range(len(rows))]
        cols = [u.cols for u in lay.local_units]
        in_splits = [int(sum(counts[s, j] * cols[j] for j in range(len(cols))))
                     for s in range(W)]
        out_splits = [sum(_src_rows(lay, loc, u)[0] * u.cols for u in lay.units_on[d])
                      for d in range(W)]
        pending = start_all_to_all(env, _cat(send, dt), in_splits, out_splits, dt)
        outs = [np.zeros((loc.src_count[t.index], t.D), dt) for t in lay.tables]
        for t, (ids, _, _), m in zip(lay.dp_tables, loc.dp, run.dp_tables):
            outs[t.index][...] = m.weight.array.take(ids, axis=0)
        got, off = pending.wait(), 0
        for d in range(W):
            for u in lay.units_on[d]:
                n, pos = _src_rows(lay, loc, u)
                blk = got[off:off + n * u.cols].reshape(n, u.cols)
                if pos is None:
                    outs[u.table][:, u.col_off:u.col_off + u.cols] = blk
                else:
                    outs[u.table][pos] = blk
                off += n * u.cols
        ctx.run = run
        return tuple(wrap(o) for o in outs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        run = ctx.run
        ctx.run = None
        lay, env, loc = run.layout, run.env, run.local
        W = env.world_size
        g = [np.ascontiguousarray(x.array) for x in grads]
        dt = lay.out_dtype
        send, in_splits = [], []
        for d in range(W):
            n_d = 0
            for u in lay.units_on[d]:
                n, pos = _src_rows(lay, loc, u)
                part = g[u.table][:, u.col_off:u.col_off + u.cols] if pos is None \
                    else g[u.table].take(pos, axis=0)
                send.append(np.ascontiguousarray(part).reshape(-1))
                n_d += n * u.cols
            in_splits.append(n_d)
        counts = loc.unit_counts
        cols = [u.cols for u in lay.local_units]
        out_splits = [int(sum(counts[s, j] * cols[j] for j in range(len(cols))))
                      for s in range(W)]
        got = start_all_to_all(env, _cat(send, dt), in_splits, out_splits, dt).wait()
        per_src = np.concatenate([[0], np.cumsum(out_splits)])
        inner = np.cumsum(counts * np.array(cols, np.int64), 1) - counts * np.array(cols,
                                                                                 np.int64) \
            if cols else np.zeros((W, 0), np.int64)
        out = []
        if lay.dp_tables:
            local = []
            for t, (ids, _, _) in zip(lay.dp_tables, loc.dp):
                ui, uv = coalesce_rows(ids, lambda o, gt=g[t.index]: gt.take(o, axis=0),
                                       t.cfg.num_embeddings)
                local.append((ui, uv, t.cfg.num_embeddings))
            for t, (ui, uv) in zip(lay.dp_tables, sparse_sum(env, local)):
                out.append(RowSparseGrad(ui, np.ascontiguousarray(uv),
                                         (t.cfg.num_embeddings, t.D), coalesced=True))
        for j, (u, ids) in enumerate(zip(lay.local_units, loc.unit_ids)):
            gj = np.concatenate([
                got[per_src[s] + inner[s, j]:per_src[s] + inner[s, j] + counts[s, j] * u.cols]
                for s in range(W)]).reshape(-1, u.cols)
            ui, uv = coalesce_rows(ids, lambda o, gj=gj: gj.take(o, axis=0), u.rows)
            out.append(RowSparseGrad(ui, np.ascontiguousarray(uv), (u.rows, u.cols),
                                     coalesced=True))
        if lay.cw_rowwise:
            _rowwise_column_shards(run, out, len(lay.dp_tables))
        return (None, None) + tuple(out)


class ShardedEmbeddingCollection(ShardedCollection):
    """``module`` (an ``EmbeddingCollection``) sharded by ``table_plans`` over ``env``; see
    the module docstring, and ``ShardedCollection`` for start values and state dicts
    (``embeddings.<table>.weight``, ...)."""

    _tables_attr = "embeddings"

    def __init__(self, module, table_plans, env=None, fused_params=None):
        who = "ShardedEmbeddingCollection"
        if not isinstance(module, EmbeddingCollection):
            raise TypeError(f"{who}: expected an EmbeddingCollection, got "
                            f"{type(module).__name__}")
        super().__init__(module, module.embedding_configs(), table_plans, env, fused_params,
                         who)
        self._need_indices = module.need_indices()
        self._embedding_names_by_table = module.embedding_names_by_table()

    def embedding_configs(self):
        return self._configs

    def need_indices(self):
        return self._need_indices

    def embedding_names_by_table(self):
        return self._embedding_names_by_table

    def input_dist(self, features):
        """Start sending ``features``' ids to the shards; returns a ``PendingInput``."""
        return start_input_dist(self._layout, self._env, features, False, self._who)

    def compute_and_output_dist(self, local):
        """One (ids of this rank, D) tensor per table, differentiable."""
        run = Run(self._layout, self._env, local, self._dp_tables, self._unit_tables,
                  STATE.enabled, self._fused_optimizer)
        weights = [m.weight for m in self._dp_tables] + [m.weight for m in self._unit_tables]
        outs = ShardedSequenceLookup.apply(run, self._anchor, *weights)
        return outs if isinstance(outs, tuple) else (outs,)

    def forward(self, features):
        """``{embedding name: JaggedTensor}`` of this rank's ids, as the unsharded
        collection returns them."""
        outs = self.compute_and_output_dist(self._input_for(features))
        idx = features.index_per_key()
        lop, opk = features.lengths_offset_per_key(), features.offset_per_key()
        lens_all = features.lengths()
        result = {}
        for cfg, names, rows in zip(self._configs, self._embedding_names_by_table, outs):
            counts = [opk[idx[f] + 1] - opk[idx[f]] for f in cfg.feature_names]
            parts = [rows] if len(counts) == 1 else ember.split(rows, counts, 0)
            ids = None
            if self._need_indices:
                ids = _feature_ids(features, cfg.feature_names, self._who)[0]
            at = np.concatenate([[0], np.cumsum(counts)]).tolist()
            for j, (f, name, part) in enumerate(zip(cfg.feature_names, names, parts)):
                k = idx[f]
                wts = None if ids is None else wrap(ids[at[j]:at[j + 1]])
                result[name] = JaggedTensor(part, wts, lengths=lens_all[lop[k]:lop[k + 1]],
                                            validate=False)
        return result


class EmbeddingCollectionSharder:
    """Makes the sharded twin of an ``EmbeddingCollection`` (``fused_params`` as for
    ``EmbeddingBagCollectionSharder``)."""

    module_type = EmbeddingCollection

    def __init__(self, fused_params=None):
        self.fused_params = None if fused_params is None else dict(fused_params)

    def shard(self, module, params, env, device=None, path=""):
        return ShardedEmbeddingCollection(module, params, env, self.fused_params)
