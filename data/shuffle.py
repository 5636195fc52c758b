"""``shuffle`` (a seeded shuffle buffer) and ``sharding_filter`` (this worker's share).

The shuffle buffer holds ``buffer_size`` samples; each new sample replaces a random one,
which is yielded; at the end the rest comes out in random order. Its state is the buffer,
the RNG state and the upstream position, so a restored iterator continues the same order.

``sharding_filter`` keeps the samples of one shard. Sharding is set by the DataLoader (first
by distributed rank, then by worker) with ``set_sharding``; a level ``(num_shards, shard_id,
block)`` keeps the samples whose index ``i`` has ``(i // block) % num_shards == shard_id``.
With ``block`` equal to the loader's batch size, every worker builds whole batches of the
unsharded order, so the loader's output does not depend on ``num_workers``.

    >>> from ember.data import IterableWrapper
    >>> dp = IterableWrapper(range(10)).sharding_filter()
    >>> _ = dp.set_sharding([(2, 1, 1)])
    >>> list(dp)
    [1, 3, 5, 7, 9]
"""
from __future__ import annotations

import random

from .pipe import IterDataPipe, PassIter, SourceIter, register
from .seeding import fresh_seed


@register("shuffle")
class Shuffler(IterDataPipe):
    """Shuffle through a buffer of ``buffer_size`` samples.

    ``seed``: None draws a fresh seed from ember's default generator for each iteration; an
    int gives the same order on every iteration (the DataLoader sets a new seed per epoch with
    ``set_seed``). ``enabled=False`` passes samples through (``DataLoader(shuffle=False)``).
    """

    def __init__(self, source, buffer_size=10000, seed=None, enabled=True):
        if buffer_size < 1:
            raise ValueError(f"shuffle: buffer_size must be >= 1, got {buffer_size}")
        self.source, self.buffer_size, self.seed, self.enabled = source, buffer_size, seed, enabled

    def set_seed(self, seed):
        self.seed = seed
        return self

    def set_enabled(self, enabled=True):
        self.enabled = bool(enabled)
        return self

    def __iter__(self):
        return _ShuffleIter(self) if self.enabled else PassIter(self)

    def __len__(self):
        return len(self.source)

    def describe(self):
        return f"Shuffler(buffer_size={self.buffer_size}" + ("" if self.enabled else ", off") + ")"


class _ShuffleIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.size = pipe.buffer_size
        self.seed = pipe.seed if pipe.seed is not None else fresh_seed()
        self.rng = random.Random(self.seed)
        self.buf = []
        self.done = False

    def __next__(self):
        buf = self.buf
        if not self.done:
            src, size = self.src, self.size
            while True:
                try:
                    x = next(src)
                except StopIteration:
                    self.done = True
                    break
                if len(buf) < size:
                    buf.append(x)
                    continue
                j = int(self.rng.random() * size)
                out = buf[j]
                buf[j] = x
                return out
        if not buf:
            raise StopIteration
        j = int(self.rng.random() * len(buf))
        buf[j], buf[-1] = buf[-1], buf[j]
        return buf.pop()

    def state_dict(self):
        return {"src": self.src.state_dict(), "rng": self.rng.getstate(),
                "buf": list(self.buf), "done": self.done, "seed": self.seed}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.rng.setstate(_as_rng_state(state["rng"]))
        self.buf = list(state["buf"])
        self.done = state["done"]
        self.seed = state["seed"]


def _as_rng_state(st):
    # a state that went through JSON comes back as lists: random.setstate wants tuples
    version, internal, gauss = st
    return (version, tuple(internal), gauss)


def shard_count(n, num_shards, shard_id, block=1):
    """How many of ``n`` samples land in shard ``shard_id`` (see the module docstring)."""
    span = block * num_shards
    full, rem = divmod(n, span)
    return full * block + min(max(rem - shard_id * block, 0), block)


@register("sharding_filter")
class ShardingFilter(IterDataPipe):
    """Keep this shard's samples; a pass-through until ``set_sharding`` is called.

    ``block``: the number of consecutive samples that go to the same shard (None: the
    DataLoader picks it; 1 when used by hand)."""

    def __init__(self, source, block=None):
        if block is not None and block < 1:
            raise ValueError(f"sharding_filter: block must be >= 1, got {block}")
        self.source, self.block = source, block
        self.levels = []

    def set_sharding(self, levels):
        """``levels``: ``[(num_shards, shard_id, block), ...]``, applied one after another
        (the DataLoader passes the rank level, then the worker level)."""
        checked = []
        for num, sid, block in levels:
            if not 0 <= sid < num:
                raise ValueError(f"sharding: shard_id {sid} out of range for {num} shards")
            checked.append((int(num), int(sid), int(block)))
        self.levels = [lv for lv in checked if lv[0] > 1]
        return self

    def __iter__(self):
        return _ShardIter(self) if self.levels else PassIter(self)

    def __len__(self):
        n = len(self.source)
        for num, sid, block in self.levels:
            n = shard_count(n, num, sid, block)
        return n

    def describe(self):
        if not self.levels:
            return "ShardingFilter(unsharded)"
        lv = ", ".join(f"{sid}/{num}" + (f" block {b}" if b > 1 else "")
                       for num, sid, b in self.levels)
        return f"ShardingFilter({lv})"


class _ShardIter(SourceIter):
    def __init__(self, pipe):
        super().__init__(pipe)
        self.levels = pipe.levels
        self.counts = [0] * len(self.levels)

    def __next__(self):
        src, levels, counts = self.src, self.levels, self.counts
        while True:
            x = next(src)
            for k, (num, sid, block) in enumerate(levels):
                i = counts[k]
                counts[k] = i + 1
                if (i // block) % num != sid:
                    break
            else:
                return x

    def state_dict(self):
        return {"src": self.src.state_dict(), "counts": list(self.counts)}

    def load_state_dict(self, state):
        self.src.load_state_dict(state["src"])
        self.counts = list(state["counts"])
