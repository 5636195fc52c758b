"""The local lookups and the output distribution of a sharded embedding-bag collection, as
one autograd node (``ShardedLookup``) whose backward runs the adjoint collectives.

Forward, on every rank, in this order:

1. each local unit pools its ids (``pooled_lookup``: ``world_size * F * B`` bags, rows
   ``(source, feature, sample)``); each data_parallel replica pools the rank's own batch;
2. output distribution, both collectives started before either is waited for:
   * all_to_all: every table_wise / column_wise / table_row_wise unit sends each source its
     ``F * B`` pooled rows;
   * reduce_scatter: the row_wise units' partial sums, one chunk per source, summed;
3. the source writes each block into its columns of the (B, sum of F * D) output (a
   table_row_wise table's partial sums are added up there; a row-split MEAN table is
   divided by its bag lengths at the end).

Backward is the adjoint, in the same fixed order on every rank: the output gradient's
blocks go back through an all_to_all (the transpose of the forward one) and an all-gather
(the adjoint of a reduce-scatter); each local unit's pooled-lookup node then gives its
shard's gradient, row-sparse and coalesced; the data_parallel tables' gradients are summed
over ranks (``comm.sparse_sum``). The node returns one gradient per local table, which the
engine hands to the fused optimizer's hook on that table (column shards of a
rowwise_adagrad table are updated here instead: see ``_rowwise_column_shards``). Keeping
every collective inside one node is what keeps their order the same on every rank,
whatever each rank holds.

Gradients are *summed* over ranks (each rank's loss contributes its own samples'
gradient), so a sharded collection trained on per-rank losses equals the unsharded one
trained on their sum.
"""
from __future__ import annotations

import numpy as np

from ember.autograd.function import Function, once_differentiable
from ember.sparse import RowSparseGrad

from ..modules._lookup import pooled_lookup
from ..sparse._util import cumsum0, wrap
from .comm import sparse_sum, start_all_gather, start_all_to_all, start_reduce_scatter


def table_view(a, base, F, D):
    """Columns ``[base, base + F * D)`` of the C-contiguous (B, total) ``a`` as a (B, F, D)
    view (writes go to ``a``)."""
    it = a.itemsize
    return np.lib.stride_tricks.as_strided(a[:, base:], shape=(a.shape[0], F, D),
                                           strides=(a.strides[0], D * it, it))


class Run:
    """One forward's inputs: the layout, the env, the ``LocalInput`` and the local tables'
    modules (data_parallel replicas first, then the units, ``layout`` order)."""

    def __init__(self, layout, env, local, dp_tables, unit_tables, record, optimizer):
        self.layout, self.env, self.local = layout, env, local
        self.dp_tables, self.unit_tables, self.record = dp_tables, unit_tables, record
        self.optimizer = optimizer


def _inv_lengths(lens, F, B, dtype):
    """(B, F) of 1 / max(length, 1) from feature-major bag lengths (F * B,)."""
    return (1 / np.maximum(lens, 1)).astype(dtype).reshape(F, B).T


class ShardedLookup(Function):
    """``ShardedLookup.apply(run, anchor, *weights)`` -> (B, total) pooled embeddings.
    ``anchor`` is a tensor requiring grad on every rank, so every rank has the node (and
    runs the backward collectives) even when it holds no table."""

    @staticmethod
    def forward(ctx, run, anchor, *weights):
        import ember

        lay, env, loc = run.layout, run.env, run.local
        W, me, B = env.world_size, env.rank, loc.batch
        dt = lay.out_dtype
        nodes, outs = [], []
        with ember.set_grad_enabled(run.record):
            for (ids, lens, w), m, t in zip(loc.dp, run.dp_tables, lay.dp_tables):
                psw = None if w is None else wrap(w)
                outs.append(pooled_lookup(m.weight, ids, cumsum0(lens), t.F, B, t.mode, psw))
            for j, (u, m) in enumerate(zip(lay.local_units, run.unit_tables)):
                t = lay.tables[u.table]
                w = loc.unit_weights[j]
                mode = "sum" if t.partial else t.mode
                outs.append(pooled_lookup(m.weight, loc.unit_ids[j],
                                          cumsum0(loc.unit_lengths[j]), 1,
                                          W * t.F * B, mode, None if w is None else wrap(w)))
        nodes = [o.grad_fn for o in outs] if run.record else []
        dp_outs = [o.array for o in outs[:len(lay.dp_tables)]]
        unit_outs = {id(u): o.array for u, o in zip(lay.local_units,
                                                    outs[len(lay.dp_tables):])}
        # output distribution: both collectives in flight together
        a2a_send = []
        for s in range(W):
            for u in lay.a2a_on[me]:
                FB = lay.tables[u.table].F * B
                a2a_send.append(unit_outs[id(u)][s * FB:(s + 1) * FB].reshape(-1))
        p_a2a = start_all_to_all(env, _cat(a2a_send, dt), [lay.a2a_size(me, B)] * W,
                                 [lay.a2a_size(d, B) for d in range(W)], dt)
        p_rs = None
        if lay.rs_tables:
            rs_send = np.empty((W, lay.rs_size(B)), dt)
            for s in range(W):
                off = 0
                for t in lay.rs_tables:
                    n = t.F * B * t.D
                    o = unit_outs[id(t.units[me])]
                    rs_send[s, off:off + n] = o[s * t.F * B:(s + 1) * t.F * B].reshape(-1)
                    off += n
            p_rs = start_reduce_scatter(env, rs_send)
        out = np.zeros((B, lay.total_cols), dt)
        for t, o in zip(lay.dp_tables, dp_outs):
            out[:, t.base:t.base + t.F * t.D] = o
        got = p_a2a.wait()
        off = 0
        for d in range(W):
            for u in lay.a2a_on[d]:
                t = lay.tables[u.table]
                n = t.F * B * u.cols
                blk = got[off:off + n].reshape(t.F, B, u.cols).transpose(1, 0, 2)
                view = table_view(out, t.base, t.F, t.D)[:, :, u.col_off:u.col_off + u.cols]
                if u.kind == "sum":
                    view += blk
                else:
                    view[...] = blk
                off += n
        if p_rs is not None:
            red = p_rs.wait()
            off = 0
            for t in lay.rs_tables:
                n = t.F * B * t.D
                table_view(out, t.base, t.F, t.D)[...] = \
                    red[off:off + n].reshape(t.F, B, t.D).transpose(1, 0, 2)
                off += n
        for ti, lens in loc.src_lengths.items():
            t = lay.tables[ti]
            table_view(out, t.base, t.F, t.D)[...] *= _inv_lengths(lens, t.F, B, dt)[:, :, None]
        ctx.run, ctx.nodes = run, nodes
        return wrap(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        run, nodes = ctx.run, ctx.nodes
        ctx.run = ctx.nodes = None
        lay, env, loc = run.layout, run.env, run.local
        W, me, B = env.world_size, env.rank, loc.batch
        g = np.ascontiguousarray(grad.array)
        dt = g.dtype
        inv = {ti: _inv_lengths(lens, lay.tables[ti].F, B, dt)[:, :, None]
               for ti, lens in loc.src_lengths.items()}

        def block(t, c0, d):
            """(F, B, d) of the output gradient of table ``t``'s columns c0:c0+d."""
            v = table_view(g, t.base, t.F, t.D)[:, :, c0:c0 + d]
            if t.index in inv:
                v = v * inv[t.index]
            return np.ascontiguousarray(v.transpose(1, 0, 2))

        a2a_send = [block(lay.tables[u.table], u.col_off, u.cols).reshape(-1)
                    for d in range(W) for u in lay.a2a_on[d]]
        p_a2a = start_all_to_all(env, _cat(a2a_send, dt),
                                 [lay.a2a_size(d, B) for d in range(W)],
                                 [lay.a2a_size(me, B)] * W, dt)
        p_ag = None
        if lay.rs_tables:
            p_ag = start_all_gather(env, _cat([block(t, 0, t.D).reshape(-1)
                                               for t in lay.rs_tables], dt))
        got = p_a2a.wait()
        gathered = p_ag.wait() if p_ag is not None else None
        per_src = lay.a2a_size(me, B)
        unit_grads, a2a_off, rs_off = [], 0, {}
        off = 0
        for t in lay.rs_tables:
            rs_off[t.index] = off
            off += t.F * B * t.D
        for u in lay.local_units:
            t = lay.tables[u.table]
            n = t.F * B * u.cols
            if u.kind == "rs":
                o = rs_off[t.index]
                gu = np.ascontiguousarray(gathered[:, o:o + n]).reshape(W * t.F * B, u.cols)
            else:
                gu = np.concatenate([got[s * per_src + a2a_off:s * per_src + a2a_off + n]
                                     for s in range(W)]).reshape(W * t.F * B, u.cols)
                a2a_off += n
            unit_grads.append(gu)
        n_dp = len(lay.dp_tables)
        grads = []
        if run.record:  # (every rank: the collectives below run even with no table here)
            dp_local = []
            for t, node in zip(lay.dp_tables, nodes[:n_dp]):
                gw = node.backward(wrap(np.ascontiguousarray(
                    g[:, t.base:t.base + t.F * t.D])))[0]
                node.release()
                gw = gw.coalesce()
                dp_local.append((gw.indices, gw.values, t.cfg.num_embeddings))
            if dp_local:
                for t, (ids, vals) in zip(lay.dp_tables, sparse_sum(env, dp_local)):
                    grads.append(RowSparseGrad(ids, np.ascontiguousarray(vals),
                                               (t.cfg.num_embeddings, t.D), coalesced=True))
            for gu, node in zip(unit_grads, nodes[n_dp:]):
                grads.append(node.backward(wrap(gu))[0])
                node.release()
            if lay.cw_rowwise:
                _rowwise_column_shards(run, grads, n_dp)
        return (None, None) + tuple(grads)


def _rowwise_column_shards(run, grads, n_dp):
    """rowwise_adagrad on column shards, exactly as on the whole table: a row's accumulator
    grows by the mean of its *full* gradient row squared, so the owners of a table's column
    shards exchange their partial sums of squares (one all_to_all among them; every shard
    of a SUM/MEAN table sees the same ids, so the same coalesced rows) and update their
    columns here. Their entries in ``grads`` become None (no fused hook runs for them)."""
    lay, env = run.layout, run.env
    W, me = env.world_size, env.rank
    fo = run.optimizer
    parts, mine = {}, {}
    for j, u in enumerate(lay.local_units):
        t = lay.tables[u.table]
        if t.index not in lay.cw_rowwise:
            continue
        gw = grads[n_dp + j].coalesce()
        hp = fo.param_groups[n_dp + j]
        w = run.unit_tables[j].weight.array
        g = gw.values.astype(np.float32, copy=False)
        if hp["weight_decay"]:
            g = g + np.float32(hp["weight_decay"]) * w.take(gw.indices, axis=0)
        ss = np.einsum("nd,nd->n", g, g)
        mine[j] = (gw.indices, g, hp)
        parts[t.index] = ss if t.index not in parts else parts[t.index] + ss
    owners = {ti: sorted({u.rank for u in lay.tables[ti].units}) for ti in lay.cw_rowwise}
    send, in_splits, out_splits = [], [], []
    for d in range(W):
        n_in = n_out = 0
        for ti in lay.cw_rowwise:
            if d != me and me in owners[ti] and d in owners[ti]:
                send.append(parts[ti])
                n_in += parts[ti].shape[0]
                n_out += parts[ti].shape[0]
        in_splits.append(n_in)
        out_splits.append(n_out)
    got = start_all_to_all(env, _cat(send, np.float32), in_splits, out_splits,
                           np.dtype(np.float32)).wait()
    total, off = dict(parts), 0
    for s in range(W):
        for ti in lay.cw_rowwise:
            if s != me and me in owners[ti] and s in owners[ti]:
                n = parts[ti].shape[0]
                total[ti] = total[ti] + got[off:off + n]
                off += n
    for j, (rows, g, hp) in mine.items():
        u = lay.local_units[j]
        m = run.unit_tables[j]
        M, Wt = m._buffers["momentum1"].array, m.weight.array
        m._buffers["step"].array[...] += 1
        acc = M.take(rows) + (total[u.table] / lay.tables[u.table].D).astype(M.dtype)
        M[rows] = acc
        scale = (np.float32(hp["lr"]) / (np.sqrt(acc) + np.float32(hp["eps"]))).astype(
            Wt.dtype)
        Wt[rows] = Wt.take(rows, axis=0) - g * scale[:, None]
        m.weight._bump()
        grads[n_dp + j] = None


def _cat(parts, dtype):
    if not parts:
        return np.zeros(0, dtype)
    return np.concatenate(parts).astype(dtype, copy=False)
