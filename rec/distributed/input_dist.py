"""The input distribution of a sharded embedding-bag collection: every rank's
``KeyedJaggedTensor`` goes, feature by feature, to the ranks that hold the tables' shards.

Each source rank cuts its batch (``B`` samples) into one message per destination: for each
lookup unit on that destination (see ``layout.py``) the lengths of its features' bags and
their ids -- all of them for a table_wise or column_wise shard, only those in the shard's
rows (shifted to local row numbers) for a row_wise or table_row_wise shard::

    source s -> dest d:   lengths  [B | unit0: F0*B lengths | unit1: F1*B | ...]
                          values   [unit0's ids, feature-major | unit1's ids | ...]
                          weights  [the same layout, when the collection is weighted]

Two all_to_alls, as torchrec does: the lengths first (their sizes follow from the layout
and B, so nothing is exchanged beforehand; the leading B lets the receiver check that
every rank has the same batch size), then the values (and the weights) with the splits
read from the lengths. ``start_input_dist`` starts the first; ``PendingInput.advance()``
starts the second once the first has arrived and ``wait()`` finishes both, so a pipeline
can run other work between them. The receiver's unit input lists the bags of source 0,
then of source 1, ... (each source's bags feature-major): one pooled lookup of
``world_size * F * B`` bags.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..modules.embedding_modules import _check_ids, _feature_ids
from ..sparse import KeyedJaggedTensor
from ..sparse._util import host
from .comm import start_all_to_all

_i64 = np.dtype(np.int64)
_f32 = np.dtype(np.float32)


@dataclass
class LocalInput:
    """One batch as this rank looks it up: per local unit (``layout.local_units`` order)
    its ids, bag lengths (``world_size * F * B``) and per-id weights (or None); per
    data_parallel table the rank's own ``(ids, lengths, weights)``; and for row-split MEAN
    tables the source-side bag lengths (``F * B``) the pooled sums are divided by.
    For per-id outputs (sequence collections): ``src_count[table]``, this rank's ids of
    the table; ``src_perm[table] = (order, cut)``, for a row-split table, the positions
    of those ids sent to its shard ``k``: ``order[cut[k]:cut[k + 1]]``; ``unit_counts``
    (world_size, units), the ids each source sent each local unit."""

    batch: int
    unit_ids: List[np.ndarray] = field(default_factory=list)
    unit_lengths: List[np.ndarray] = field(default_factory=list)
    unit_weights: List[Optional[np.ndarray]] = field(default_factory=list)
    dp: List[tuple] = field(default_factory=list)
    src_lengths: Dict[int, np.ndarray] = field(default_factory=dict)
    src_count: Dict[int, int] = field(default_factory=dict)
    src_perm: Dict[int, tuple] = field(default_factory=dict)
    unit_counts: Optional[np.ndarray] = None


class PendingInput:
    """An input distribution in flight (see the module docstring)."""

    def __init__(self, layout, env, weighted, local, val_parts, w_parts, len_pending, who):
        self.layout, self.env, self.weighted, self.local = layout, env, weighted, local
        self._val_parts, self._w_parts = val_parts, w_parts
        self._lens_pending = len_pending
        self._val_pending = self._w_pending = None
        self._recv_lens = None
        self._who = who
        self._result = None

    def advance(self):
        """Start the values' all_to_all if the lengths have arrived (never blocks)."""
        if self._val_pending is None and self._lens_pending.test():
            self._start_values()

    def _start_values(self):
        lay, env, B = self.layout, self.env, self.local.batch
        W, me = env.world_size, env.rank
        recv = self._lens_pending.wait().reshape(W, lay.input_lengths(me, B))
        bad = [(s, int(b)) for s, b in enumerate(recv[:, 0]) if int(b) != B]
        if bad:
            raise ValueError(f"{self._who}: every rank must feed the same batch size; this "
                             f"rank ({me}) has {B}, rank(s) {[s for s, _ in bad]} have "
                             f"{[b for _, b in bad]}")
        self._recv_lens = recv[:, 1:]
        in_splits = [sum(p.shape[0] for p in parts) for parts in self._val_parts]
        out_splits = self._recv_lens.sum(1)
        send = _cat(self._val_parts, _i64)
        self._val_pending = start_all_to_all(env, send, in_splits, out_splits)
        if self.weighted:
            self._w_pending = start_all_to_all(env, _cat(self._w_parts, _f32), in_splits,
                                               out_splits)
        self._val_parts = self._w_parts = None

    def wait(self):
        """The ``LocalInput`` (completes both all_to_alls)."""
        if self._result is not None:
            return self._result
        if self._val_pending is None:
            self._start_values()
        vals = self._val_pending.wait()
        wts = self._w_pending.wait() if self._w_pending is not None else None
        lay, loc, B = self.layout, self.local, self.local.batch
        W = self.env.world_size
        units = lay.local_units
        Fs = [lay.tables[u.table].F for u in units]
        lens = self._recv_lens
        col = np.concatenate([[0], np.cumsum(Fs)]).astype(np.int64) * B
        per = np.stack([lens[:, col[j]:col[j + 1]].sum(1) for j in range(len(units))], 1) \
            if units else np.zeros((W, 0), np.int64)                     # (W, U) values
        starts = np.concatenate([[0], np.cumsum(per.reshape(-1))])[:-1].reshape(per.shape)
        loc.unit_counts = per
        for j in range(len(units)):
            sl = [slice(int(starts[s, j]), int(starts[s, j] + per[s, j])) for s in range(W)]
            loc.unit_ids.append(np.concatenate([vals[x] for x in sl]))
            loc.unit_lengths.append(np.ascontiguousarray(
                lens[:, col[j]:col[j + 1]]).reshape(-1))
            loc.unit_weights.append(None if wts is None else
                                    np.concatenate([wts[x] for x in sl]))
        self._result = loc
        return loc


def _cat(parts_per_dest, dtype):
    flat = [p for parts in parts_per_dest for p in parts]
    if not flat:
        return np.zeros(0, dtype)
    return np.concatenate([np.asarray(p, dtype) for p in flat])


def start_input_dist(layout, env, features, weighted, who):
    """Cut ``features`` (this rank's KJT) into the messages of the module docstring and
    start the lengths' all_to_all. Returns a ``PendingInput``."""
    if not isinstance(features, KeyedJaggedTensor):
        raise TypeError(f"{who}: expected a KeyedJaggedTensor, got {type(features).__name__}")
    if features.variable_stride_per_key():
        raise ValueError(f"{who}: pooled outputs need one batch size for every feature, got "
                         f"stride_per_key {features.stride_per_key()}")
    if weighted and features.weights_or_none() is None:
        raise ValueError(f"{who}(is_weighted=True): the KeyedJaggedTensor has no weights")
    B = int(features.stride())
    W = env.world_size
    local = LocalInput(B)
    len_parts = [[np.array([B], np.int64)] for _ in range(W)]
    val_parts = [[] for _ in range(W)]
    w_parts = [[] for _ in range(W)]
    for t in layout.tables:
        cfg = t.cfg
        ids, lens, psw = _feature_ids(features, cfg.feature_names, who)
        _check_ids(ids, cfg, who)
        ids = host(ids).astype(_i64, copy=False)
        lens = host(lens).astype(_i64, copy=False)
        w = None
        if weighted:
            w = host(psw.array if hasattr(psw, "array") else psw).astype(_f32, copy=False)
        local.src_count[t.index] = ids.shape[0]
        if not t.units:  # data_parallel: looked up here
            local.dp.append((ids, lens, w))
            continue
        if not t.partial:
            for u in t.units:
                len_parts[u.rank].append(lens)
                val_parts[u.rank].append(ids)
                if weighted:
                    w_parts[u.rank].append(w)
            continue
        if t.mode == "mean":
            local.src_lengths[t.index] = lens
        K, FB = len(t.units), lens.shape[0]
        bounds = t.row_bounds()
        dest = np.searchsorted(bounds, ids, side="right") - 1
        bag = np.repeat(np.arange(FB, dtype=np.int64), lens)
        counts = np.bincount(dest * FB + bag, minlength=K * FB).reshape(K, FB)
        order = np.argsort(dest, kind="stable")
        sd = dest[order]
        local_ids = ids[order] - bounds[sd]
        ws = w[order] if weighted else None
        cut = np.concatenate([[0], np.cumsum(np.bincount(sd, minlength=K))])
        local.src_perm[t.index] = (order, cut)
        for k, u in enumerate(t.units):
            len_parts[u.rank].append(counts[k])
            val_parts[u.rank].append(local_ids[cut[k]:cut[k + 1]])
            if weighted:
                w_parts[u.rank].append(ws[cut[k]:cut[k + 1]])
    in_splits = [sum(p.shape[0] for p in parts) for parts in len_parts]
    expect = layout.input_lengths(env.rank, B)
    pending = start_all_to_all(env, _cat(len_parts, _i64), in_splits, [expect] * W)
    return PendingInput(layout, env, weighted, local, val_parts, w_parts, pending, who)
