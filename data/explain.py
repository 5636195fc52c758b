"""``pipe.explain()``: the graph as an indented tree, upstream at the bottom, with a verdict.

    >>> from ember.data import IterableWrapper
    >>> dp = IterableWrapper(range(8)).shuffle().sharding_filter().map(str).batch(2)
    >>> print(dp.explain(file=False))  # doctest: +NORMALIZE_WHITESPACE
    Batcher(batch_size=2)                      [batching]
      Mapper(fn=str)
        ShardingFilter(unsharded)              [sharding]
          Shuffler(buffer_size=10000)          [shuffling]
            IterableWrapper(range, len=8)
    - shuffled before sharding: every worker/rank agrees on the order it splits.
    - one sharding_filter, followed only by one-to-one pipes and batching: each sample is
      seen exactly once per epoch, and batches do not depend on num_workers.
"""
from __future__ import annotations

import sys
import textwrap

from .pipe import walk


def _tag(p):
    from .batching import Batcher, BucketBatcher, Grouper
    from .combine import Cycler
    from .shuffle import ShardingFilter

    if hasattr(p, "set_enabled"):
        return "[shuffling]" if getattr(p, "enabled", True) else "[shuffle off]"
    if isinstance(p, ShardingFilter):
        return "[sharding]"
    if isinstance(p, (Batcher, BucketBatcher, Grouper)):
        return "[batching]"
    if isinstance(p, Cycler):
        return "[repeats samples]"
    return ""


def _tree(pipe):
    lines, seen = [], set()

    def rec(p, depth):
        tag = _tag(p)
        text = "  " * depth + p.describe()
        if id(p) in seen:
            lines.append(text + "  (shared, shown above)")
            return
        seen.add(id(p))
        lines.append(f"{text:42s} {tag}".rstrip())
        for q in p.parents():
            rec(q, depth + 1)
    rec(pipe, 0)
    return lines


def verdict(pipe, loader_batch_size=None):
    """Sentences on where shuffling and sharding happen and whether each sample is seen
    once per epoch."""
    from .combine import Cycler
    from .graph import choose_block, downstream_of_sharding, sharding_filters

    out = []
    pipes = walk(pipe)
    filters = sharding_filters(pipe)
    after = downstream_of_sharding(pipe)
    shuffles = [p for p in pipes if hasattr(p, "set_enabled")]
    if not shuffles:
        out.append("- no shuffle step: samples come in source order.")
    for s in shuffles:
        if id(s) in after:
            out.append(f"- {s.describe()} is after sharding: each worker shuffles only its own "
                       "share, so the order depends on num_workers.")
        elif filters:
            out.append("- shuffled before sharding: every worker/rank agrees on the order it "
                       "splits.")
    if not filters:
        out.append("- no sharding_filter: with several workers or ranks each would see every "
                   "sample (the DataLoader adds one at the end, after all the work).")
    elif len(filters) > 1:
        out.append("- several sharding_filters: samples are split more than once; some "
                   "samples will never be seen.")
    else:
        block = choose_block(pipe, loader_batch_size)
        if block > 1 or loader_batch_size in (None, 1):
            out.append("- one sharding_filter, followed only by one-to-one pipes and batching: "
                       "each sample is seen exactly once per epoch, and batches do not depend "
                       "on num_workers.")
        else:
            out.append("- one sharding_filter: each sample is seen exactly once per epoch; "
                       "pipes after it that drop, add or reorder samples make the batches "
                       "depend on num_workers.")
    if any(isinstance(p, Cycler) for p in pipes):
        out.append("- cycle(): samples repeat within an epoch.")
    return out


def explain(pipe, file=None, loader_batch_size=None):
    notes = [textwrap.fill(v, 92, subsequent_indent="  ") for v in verdict(pipe, loader_batch_size)]
    text = "\n".join(_tree(pipe) + notes)
    if file is not False:
        print(text, file=file or sys.stdout)
    return text


def explain_loader(loader, file=None):
    lo = loader
    head = [f"DataLoader(batch_size={lo.batch_size}, num_workers={lo.num_workers}, "
            f"world_size={lo.world_size}, rank={lo.rank}, seed={lo.seed})"]
    if lo.is_iter:
        body = explain(lo.dataset, file=False, loader_batch_size=lo.batch_size)
        head.append(f"  sharding block: {lo.block} sample(s) per shard turn")
    else:
        body = (f"map-style dataset {type(lo.dataset).__name__} (len {len(lo.dataset)}), "
                f"sampler {type(lo.sampler).__name__}: every index the sampler yields is "
                "loaded once, batches do not depend on num_workers.")
    text = "\n".join(head) + "\n" + body
    if file is not False:
        print(text, file=file or sys.stdout)
    return text
