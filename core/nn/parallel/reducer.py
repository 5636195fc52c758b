"""The gradient reducer behind DistributedDataParallel.

Parameters are grouped into buckets of at most ``bucket_cap_mb`` (one dtype each; the first
at most 1 MB) in reverse registration order, roughly the order backward produces their gradients. After each forward
the reducer walks the autograd graph from the outputs to find the parameters that will get a
gradient (the engine sums all of a leaf's incoming gradients first and then runs its
post-accumulate-grad hook once per backward). That hook marks the parameter's gradient final:
once every parameter of a bucket is final the bucket is copied into one flat buffer
and its all-reduce starts (``MPI_Iallreduce`` / NCCL), while backward goes on. Buckets start
strictly in index order, so every rank issues the same collectives in the same order. The
first hook of a backward queues an end-of-backward callback (``autograd.graph.queue_callback``)
that starts any bucket still waiting (e.g. a parameter whose gradient came back None), waits
for all reductions, averages, and writes the gradients back: when ``loss.backward()``
returns, gradients are synchronized.

Row-sparse gradients (``Embedding(sparse=True)``) are not bucketed: at the end of backward
their rows are all-gathered (indices and values) into one ``RowSparseGrad``.
"""
from __future__ import annotations

import time

import numpy as np

from ... import _backend as B
from ..._tensor import Tensor
from ...autograd.graph import Node, queue_callback
from ...distributed.collectives import _reduce_dtype
from ...distributed.reduce_op import ReduceOp


FIRST_BUCKET_BYTES = 1024 * 1024


class Bucket:
    __slots__ = ("index", "params", "offsets", "flat", "remaining", "reqs")

    def __init__(self, index, params, dtype, xp, offsets, total):
        self.index, self.params, self.offsets = index, params, offsets
        self.flat = xp.zeros(total, dtype)
        self.remaining = len(params)
        self.reqs = None


def output_tensors(out, acc):
    """Every Tensor inside ``out`` (nested tuples, lists, dicts)."""
    if isinstance(out, Tensor):
        acc.append(out)
    elif isinstance(out, (list, tuple)):
        for o in out:
            output_tensors(o, acc)
    elif isinstance(out, dict):
        for o in out.values():
            output_tensors(o, acc)
    return acc


def count_grad_edges(outputs, ids):
    """{param id: number of graph edges into it} over the graph reachable from ``outputs``."""
    counts = dict.fromkeys(ids, 0)
    seen = set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    for t in outputs:
        if t.grad_fn is None and id(t) in counts:
            counts[id(t)] += 1
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for e in n.next:
            if e is None:
                continue
            t = e[0]
            if isinstance(t, Node):
                if t not in seen:
                    stack.append(t)
            else:
                k = id(t)
                if k in counts:
                    counts[k] += 1
    return counts


class Reducer:
    """Buckets, hooks and the per-iteration bookkeeping (see the module docstring)."""

    def __init__(self, named_params, group, bucket_cap_mb, find_unused, as_view, static_graph,
                 sparse_ids=()):
        self.group, self.impl, self.n = group, group.impl, group.size
        self.find_unused, self.as_view, self.static_graph = find_unused, as_view, static_graph
        self.names = [nm for nm, _ in named_params]
        self.params = [p for _, p in named_params]
        self.ids = [id(p) for p in self.params]
        self.sparse = [i for i, p in enumerate(self.params) if id(p) in sparse_ids]
        self.bucket_of = {}
        self.buckets = []
        cap = max(1, int(bucket_cap_mb * 1024 * 1024))
        # as in PyTorch, the first bucket (the last layers, whose gradients come first) is
        # small, so that communication starts early in backward
        limit = min(cap, FIRST_BUCKET_BYTES)
        cur, size, key = [], 0, None
        sparse = set(self.sparse)
        dense = [i for i in reversed(range(len(self.params))) if i not in sparse]
        for i in dense:
            p = self.params[i]
            k = (p.array.dtype, type(p.array))
            nbytes = p.array.size * p.array.dtype.itemsize
            if cur and (k != key or size + nbytes > limit):
                self._make_bucket(cur)
                cur, size, limit = [], 0, cap
            cur.append(i)
            size += nbytes
            key = k
        if cur:
            self._make_bucket(cur)
        self.pending = [0] * len(self.params)
        self.hit = np.zeros(len(self.params), np.int32)
        self.armed = False
        self.started = False
        self.next_bucket = 0
        self.done_upto = 0
        self.cached_counts = None
        self.last_wait_s = 0.0  # time the last backward spent waiting for its reductions
        self.handles = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                        for i, p in enumerate(self.params)]

    def _make_bucket(self, idx):
        p0 = self.params[idx[0]].array
        xp = B.namespace(p0)
        dt = _reduce_dtype(self.impl, p0.dtype)
        offsets, off = [], 0
        for i in idx:
            offsets.append(off)
            off += self.params[i].array.size
            self.bucket_of[i] = len(self.buckets)
        self.buckets.append(Bucket(len(self.buckets), idx, dt, xp, offsets, off))

    # -- per iteration ---------------------------------------------------------------------
    def check_finished(self):
        """Called before a forward: the previous synchronized backward must have completed
        (it cannot have, when it raised half-way: the ranks' reductions are then out of step)."""
        if self.started and self.armed:
            missing = [self.names[i] for i, c in enumerate(self.pending) if c > 0]
            self.armed = False
            raise RuntimeError(
                "DistributedDataParallel: the previous backward stopped before its gradients "
                f"were reduced (still waiting for: {missing[:10]}); the ranks are out of step.")

    def prepare(self, out):
        """Arm the hooks for the backward of ``out`` (a forward's output)."""
        if self.static_graph and self.cached_counts is not None:
            counts = self.cached_counts
        else:
            c = count_grad_edges(output_tensors(out, []), self.ids)
            counts = [c[k] for k in self.ids]
            if self.static_graph:
                self.cached_counts = counts
        unused = [i for i, c in enumerate(counts) if c == 0]
        if unused and not self.find_unused:
            raise RuntimeError(
                "DistributedDataParallel: these parameters did not take part in computing the "
                f"forward output: {[self.names[i] for i in unused][:10]}; pass "
                "find_unused_parameters=True if that is intended.")
        self.pending = [1 if c else 0 for c in counts]  # one hook call per reached leaf
        self.hit[:] = 0
        for b in self.buckets:
            b.remaining = len(b.params)
            b.reqs = None
        self.next_bucket = 0
        self.done_upto = 0  # buckets below this index have finished reducing
        self.armed, self.started = True, False
        for i in unused:
            self._ready(i)
        if not self.buckets and not self.sparse:
            self.armed = False

    def disarm(self):
        self.armed = False

    def _hook_for(self, i):
        def hook(p):
            if not self.armed:
                return
            if not self.started:
                self.started = True
                queue_callback(self._end_of_backward)
            c = self.pending[i] - 1
            self.pending[i] = c
            if c == 0:
                self.hit[i] = 1
                self._ready(i)
            # MPI advances non-blocking reductions only inside MPI calls: poke the ones in
            # flight at every gradient, so they progress while backward computes
            for k in range(self.done_upto, self.next_bucket):
                reqs = self.buckets[k].reqs
                if reqs is not None and self.impl.test(reqs):
                    self.done_upto = k + 1
                else:
                    break
        return hook

    def _ready(self, i):
        b = self.bucket_of.get(i)
        if b is not None:
            bk = self.buckets[b]
            bk.remaining -= 1
            while self.next_bucket < len(self.buckets) and \
                    self.buckets[self.next_bucket].remaining == 0:
                self._launch(self.buckets[self.next_bucket])
                self.next_bucket += 1

    def _end_of_backward(self):
        if not self.armed:
            return
        while self.next_bucket < len(self.buckets):  # gradients that never arrived
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1
        self._finish()

    def _launch(self, b):
        flat = b.flat
        for i, off in zip(b.params, b.offsets):
            p = self.params[i]
            n = p.array.size
            g = p.grad
            dst = flat[off:off + n]
            if g is None:
                dst[...] = 0
            elif getattr(g, "is_sparse", False):
                dst[...] = g.to_dense().array.reshape(-1)
            elif not (g.array.base is flat or g.array is dst):
                dst[...] = g.array.reshape(-1)
        b.reqs = self.impl.allreduce(flat, ReduceOp.SUM)

    def _finish(self):
        self.armed = False
        used = None
        if self.find_unused:  # a parameter is left alone only when no rank used it
            flags = B.namespace(self.params[0].array).asarray(self.hit)
            self.impl.wait(self.impl.allreduce(flags, ReduceOp.MAX))
            used = flags.tolist()
        for i in self.sparse:
            self._reduce_sparse(i, used)
        inv = 1.0 / self.n
        t0 = time.perf_counter()
        for b in self.buckets:
            self.impl.wait(b.reqs)
        self.last_wait_s = time.perf_counter() - t0
        for b in self.buckets:
            b.reqs = None
            b.flat *= inv
            for i, off in zip(b.params, b.offsets):
                p = self.params[i]
                if used is not None and not used[i]:
                    continue
                view = b.flat[off:off + p.array.size].reshape(p.array.shape)
                g = p.grad
                if self.as_view and view.dtype == p.array.dtype:
                    p.grad = Tensor._make(view)
                elif g is None or getattr(g, "is_sparse", False) or g.array.dtype != view.dtype \
                        or g.requires_grad:
                    p.grad = Tensor._make(view.astype(p.array.dtype, copy=True))
                elif g.array.base is not b.flat:
                    g.array[...] = view
                    g._bump()

    def _reduce_sparse(self, i, used):
        from ...sparse import RowSparseGrad

        p = self.params[i]
        if used is not None and not used[i]:
            return
        g = p.grad
        xp = B.namespace(p.array)
        rows = p.array.shape[0]
        if g is None:
            idx = xp.zeros(0, np.int64)
            val = xp.zeros((0,) + p.array.shape[1:], p.array.dtype)
        elif getattr(g, "is_sparse", False):
            idx, val = g.indices, g.values
        else:
            idx, val = xp.arange(rows, dtype=np.int64), g.array
        counts = xp.zeros(self.n, np.int64)
        cnt = xp.asarray([idx.shape[0]], np.int64)
        self.impl.wait(self.impl.allgather(cnt, counts))
        counts = [int(c) for c in counts.tolist()]
        m = max(counts)
        pad_i = xp.zeros(m, np.int64)
        pad_i[:idx.shape[0]] = idx
        pad_v = xp.zeros((m,) + val.shape[1:], val.dtype)
        pad_v[:idx.shape[0]] = val
        all_i = xp.empty((self.n, m), np.int64)
        all_v = xp.empty((self.n, m) + val.shape[1:], val.dtype)
        self.impl.wait(self.impl.allgather(pad_i, all_i))
        self.impl.wait(self.impl.allgather(pad_v, all_v))
        I = xp.concatenate([all_i[r, :counts[r]] for r in range(self.n)])
        V = xp.concatenate([all_v[r, :counts[r]] for r in range(self.n)]) * val.dtype.type(1.0 / self.n)
        p.grad = RowSparseGrad(I, V.astype(val.dtype, copy=False), p.array.shape)

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
