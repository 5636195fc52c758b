"""The collectives the sharded modules use, on raw numpy arrays, over one process group.

``ShardingEnv`` names the group (world size, this rank, the ``ember.distributed`` group);
a group of one (``ShardingEnv.local()``) needs no MPI and every collective is a copy, so a
sharded model also runs in a plain single process. Each ``start_*`` call begins a
non-blocking collective and returns a ``Pending`` whose ``wait()`` gives the result: the
sharded modules start their collectives in one fixed program order on every rank (MPI
requires it on a communicator) and wait as late as they can.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..modules._lookup import coalesce_rows
from ..sparse._util import wrap


@dataclass
class ShardingEnv:
    """``world_size`` ranks, this one ``rank``, talking over ``process_group`` (an
    ``ember.distributed`` group; None only for a world of one)."""

    world_size: int
    rank: int
    process_group: object = None

    @classmethod
    def from_process_group(cls, pg):
        """The env of group ``pg`` (``dist.new_group()``, or None for the default group)."""
        import ember.distributed as dist
        from ember.distributed.group import group_or_world

        if pg is None and not dist.is_initialized():
            raise RuntimeError("ShardingEnv.from_process_group: ember.distributed is not "
                               "initialized (call dist.init_process_group first, or use "
                               "ShardingEnv.local() for one process)")
        g = group_or_world(pg)
        return cls(g.size, g.rank, g)

    @classmethod
    def local(cls):
        """One process, no communication."""
        return cls(1, 0, None)

    @classmethod
    def default(cls):
        """A fresh group over the whole world when ``ember.distributed`` is initialized (the
        sharded modules' collectives then never interleave with DDP's), else ``local()``."""
        import ember.distributed as dist

        if not dist.is_initialized():
            return cls.local()
        return cls.from_process_group(dist.new_group())


class Pending:
    """A collective in flight: ``wait()`` completes it and returns ``finish()``'s value."""

    def __init__(self, works, finish):
        self._works, self._finish, self._value, self._done = works, finish, None, False

    def test(self):
        """True once every part has completed (drives MPI's progress; never blocks)."""
        return all(w.is_completed() for w in self._works)

    def wait(self):
        if not self._done:
            for w in self._works:
                w.wait()
            self._value = self._finish()
            self._done = True
        return self._value


def _done(value):
    return Pending([], lambda: value)


def start_all_to_all(env, send, in_splits, out_splits, dtype=None):
    """``send`` (1-D) cut by ``in_splits`` (elements to each rank) -> the received 1-D array,
    ``out_splits[r]`` elements from rank ``r``, in rank order."""
    dtype = send.dtype if dtype is None else dtype
    if env.process_group is None:
        return _done(np.array(send, dtype=dtype, copy=True))
    import ember.distributed as dist

    recv = np.empty(int(sum(out_splits)), dtype)
    w = dist.all_to_all_single(wrap(recv), wrap(np.ascontiguousarray(send, dtype)),
                               output_split_sizes=[int(s) for s in out_splits],
                               input_split_sizes=[int(s) for s in in_splits],
                               group=env.process_group, async_op=True)
    return Pending([w], lambda: recv)


def start_reduce_scatter(env, send):
    """``send`` (world_size, n): rank r gets the sum over ranks of their ``send[r]`` (n,)."""
    if env.process_group is None:
        return _done(send[0].copy())
    import ember.distributed as dist

    out = np.empty(send.shape[1:], send.dtype)
    w = dist.reduce_scatter_tensor(wrap(out), wrap(np.ascontiguousarray(send)),
                                   group=env.process_group, async_op=True)
    return Pending([w], lambda: out)


def start_all_gather(env, send):
    """``send`` (n,) of every rank -> (world_size, n), in rank order."""
    if env.process_group is None:
        return _done(send[None].copy())
    import ember.distributed as dist

    out = np.empty((env.world_size,) + send.shape, send.dtype)
    w = dist.all_gather_into_tensor(wrap(out), wrap(np.ascontiguousarray(send)),
                                    group=env.process_group, async_op=True)
    return Pending([w], lambda: out)


def all_reduce_sum(env, a):
    """``a`` summed over ranks, in place (returned)."""
    if env.process_group is not None:
        import ember.distributed as dist

        dist.all_reduce(wrap(a), group=env.process_group)
    return a


def broadcast(env, a, src=0):
    """``a`` <- group rank ``src``'s ``a``, in place."""
    if env.process_group is not None:
        import ember.distributed as dist

        dist.broadcast(wrap(a), src=env.process_group.ranks[src], group=env.process_group)
    return a


def broadcast_object(env, obj, src=0):
    if env.process_group is None:
        return obj
    import ember.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=env.process_group.ranks[src], group=env.process_group)
    return box[0]


def sparse_sum(env, grads):
    """The sum over ranks of row-sparse gradients: ``grads`` is a list of ``(indices,
    values (k, D), num_rows)``, each coalesced (the same tables on every rank); returns
    ``[(sorted unique indices, summed rows)]``, identical on every rank (the rows of all
    ranks are concatenated in rank order and summed in one sorted pass). Three
    all-gathers whatever the number of tables: the counts, then the ids and the values,
    each padded to the largest rank's."""
    W = env.world_size
    if W == 1 or not grads:  # already coalesced: nothing to add
        return [(i, v) for i, v, _ in grads]
    counts = np.array([i.shape[0] for i, _, _ in grads], np.int64)
    dims = np.array([v.shape[1] for _, v, _ in grads], np.int64)
    all_counts = start_all_gather(env, counts).wait()                      # (W, T)
    n_ids = all_counts.sum(1)
    n_vals = (all_counts * dims).sum(1)
    dtype = grads[0][1].dtype
    ids = np.empty(int(n_ids.max()), np.int64)   # padding past a rank's own data is unread
    vals = np.empty(int(n_vals.max()), dtype)
    if grads:
        ids[:int(n_ids[env.rank])] = np.concatenate([i for i, _, _ in grads])
        vals[:int(n_vals[env.rank])] = np.concatenate([v.reshape(-1) for _, v, _ in grads])
    p_ids, p_vals = start_all_gather(env, ids), start_all_gather(env, vals)
    all_ids, all_vals = p_ids.wait(), p_vals.wait()
    out = []
    io = np.zeros(W, np.int64)
    vo = np.zeros(W, np.int64)
    for t, (_, v, num) in enumerate(grads):
        D = int(dims[t])
        parts_i, parts_v = [], []
        for r in range(W):
            c = int(all_counts[r, t])
            parts_i.append(all_ids[r, io[r]:io[r] + c])
            parts_v.append(all_vals[r, vo[r]:vo[r] + c * D].reshape(c, D))
            io[r] += c
            vo[r] += c * D
        ti, tv = np.concatenate(parts_i), np.concatenate(parts_v)
        out.append(coalesce_rows(ti, lambda o, tv=tv: tv.take(o, axis=0), num))
    return out
