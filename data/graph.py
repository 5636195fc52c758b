"""Per-epoch preparation of a pipe graph for a DataLoader: sharding, seeds, fresh hubs.

Every decision is a pure function of (base seed, epoch, rank, worker, graph position), so
each worker (and a resumed run) sets up exactly the same graph:

- each ``sharding_filter`` gets the levels ``[(world_size, rank, block), (num_workers,
  worker_id, block)]``;
- each seeded pipe (shuffle, bucketbatch, map-style shuffle) gets ``derive_seed(base, epoch,
  position)``; upstream of sharding the seed is shared by all workers and ranks (they must
  agree on the order they then split), downstream it also depends on rank and worker;
- fork/demux hubs drop any pass left over from a previous iteration.
"""
from __future__ import annotations

from .pipe import walk
from .seeding import derive_seed


def _seeded(p):
    return hasattr(p, "set_seed")


def sharding_filters(pipe):
    from .shuffle import ShardingFilter

    return [p for p in walk(pipe) if isinstance(p, ShardingFilter)]


def downstream_of_sharding(pipe):
    """ids of the pipes that read (directly or not) from a sharding filter."""
    from .shuffle import ShardingFilter

    after = set()
    for p in walk(pipe):  # upstream first
        if any(isinstance(q, ShardingFilter) or id(q) in after for q in p.parents()):
            after.add(id(p))
    return after


def choose_block(pipe, loader_batch_size):
    """The sharding block that keeps whole batches together: the batch size when only
    one-to-one pipes (map, collate) and at most one ``batch`` sit between the (single)
    sharding filter and the output; else 1."""
    from .batching import Batcher
    from .shuffle import ShardingFilter
    from .transforms import Enumerator, Mapper

    filters = sharding_filters(pipe)
    if len(filters) != 1:
        return 1
    if filters[0].block is not None:
        return filters[0].block
    mult = loader_batch_size or 1
    p = pipe
    while not isinstance(p, ShardingFilter):
        parents = p.parents()
        if len(parents) != 1:
            return 1
        if isinstance(p, Batcher):
            mult *= p.batch_size
        elif not isinstance(p, (Mapper, Enumerator)):
            return 1
        p = parents[0]
    return mult


def prepare(pipe, *, base_seed, epoch, rank=0, world_size=1, worker_id=0, num_workers=1,
            block=1, shuffle=None):
    """Configure ``pipe``'s graph for one epoch of one worker (mutates the pipes)."""
    from .fork import _Output

    after = downstream_of_sharding(pipe)
    for pos, p in enumerate(walk(pipe)):
        if isinstance(p, _Output):
            p.hub._run = None
        if hasattr(p, "set_sharding"):
            b = block if p.block is None else p.block
            p.set_sharding([(world_size, rank, b), (num_workers, worker_id, b)])
        if _seeded(p):
            keys = (epoch, pos) if id(p) not in after else (epoch, pos, rank, worker_id)
            p.set_seed(derive_seed(base_seed, "pipe", *keys))
        if shuffle is not None and hasattr(p, "set_enabled"):
            p.set_enabled(shuffle)
    return pipe


def has_shuffle(pipe):
    return any(hasattr(p, "set_enabled") for p in walk(pipe))
