"""The padding-free batch layout: sequences packed back to back as one (tokens, d) view, with
attention per sequence (block-diagonal), done in groups of sequences of equal or similar
length.

The encoders hand attention to a layout (``layout.attend(q, k, v, num_heads, dropout_p)``,
see ``_attention``); :class:`JaggedBatch` is the layout of a jagged batch. It plans once per
batch, from the lengths alone:

* sequences are sorted by length and cut into groups; a group is run as one attention call
  on an (n, H, L, D) batch. Sequences of one length form a group that is a plain reshape of
  their rows (no copy, no mask). Neighbouring lengths are merged into one padded group (a
  gather into (n, L, d), a key mask, a gather back) only where the cost model below says
  that one call on the padded block is cheaper than one call per length: short sequences
  (where a call's fixed cost dominates) merge, long ones stay apart (the padded block's
  L * L scores cost more than the call saved);
* when a group's sequences are not neighbours in the batch, the tokens are put into group
  order once per forward (``pack``: an integer gather of the ids, positions and types) and
  the hidden states back into the batch's order once at the end (``unpack``), so every layer
  finds each group's rows contiguous::

      batch   | a0 a1 | b0 b1 b2 | c0 c1 | d0 |     lengths 2, 3, 2, 1
      groups  | a0 a1 c0 c1 | b0 b1 b2 | d0 |      (n=2, L=2), (n=1, L=3), (n=1, L=1)

All of it is built from differentiable ops (split, reshape, the jagged padding maps,
``scaled_dot_product_attention``, cat), so gradients, and gradients of gradients, flow as
they do on the padded path.

    >>> import ember
    >>> lay = JaggedBatch([2, 3, 2, 1], num_heads=2, costs=dict(padded=1e15))  # no padding
    >>> lay
    JaggedBatch(batch_size=4, tokens=8, groups=[2x2, 1x3, 1x1], permuted=True)
    >>> JaggedBatch([2, 3, 2, 1], num_heads=2)      # so short: one padded call is cheaper
    JaggedBatch(batch_size=4, tokens=8, groups=[4x3], permuted=False)
    >>> q = ember.randn(8, 8)
    >>> lay.attend(q, q, q, num_heads=2).shape
    (8, 8)
"""
from __future__ import annotations

import numpy as np

import ember
import ember.nn.functional as F
from ember.jagged import JaggedTensor

from ._attention import heads_first, heads_last

__all__ = ["JaggedBatch", "plan_groups", "group_cost", "GROUP_COSTS"]

# The cost model of one attention group, in nanoseconds, from timings on the development
# machine (2 cores, numpy + OpenBLAS, head dim 32): a call's fixed cost (split piece,
# reshapes, the attention node, the copy back: 30-60 us forward), a padded group's extra fixed
# cost (the jagged <-> padded gathers of q, k, v and of the output, the key mask: 60-170 us),
# the gathers' cost per padded element, and the attention's cost per score (n * H * L * L: two
# GEMMs and the softmax passes, 2.2-5 ns). Measured per layer: one padded group for a whole
# batch is 3-13x slower than calls per length (batches of 32 of lengths 52-256, 64 of 8-64,
# 200 of 1-24); merging short lengths as these constants do and one call per length were
# within the machine's noise of each other there.
GROUP_COSTS = dict(call=60_000.0, padded=100_000.0, pad_element=0.25, score=3.0)


def group_cost(n, length, padded, num_heads, head_dim=64, costs=None):
    """The modelled cost (ns) of one attention group of ``n`` sequences padded to
    ``length`` (``padded``: of unequal lengths, so gathered into a padded block); numpy
    arrays broadcast."""
    c = GROUP_COSTS if costs is None else dict(GROUP_COSTS, **costs)
    n = np.asarray(n, np.float64)
    L = np.asarray(length, np.float64)
    cost = c["call"] + c["score"] * num_heads * n * L * L
    return cost + np.asarray(padded) * (c["padded"] + c["pad_element"] * 4 * num_heads *
                                        head_dim * n * L)


def plan_groups(lengths, num_heads, head_dim=64, costs=None):
    """Cut sequences into attention groups: a list of index arrays (into ``lengths``), each
    a group run as one padded (n, L) attention call, L its longest length.

    Sorted by length (longest first), runs of equal length are the units; a dynamic
    programme over the runs finds the cuts of least total :func:`group_cost` (``costs``
    overrides :data:`GROUP_COSTS`), so neighbouring runs merge into one padded call where
    that is cheaper than a call each. Empty sequences belong to no group."""
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    order = np.argsort(-lengths, kind="stable")
    order = order[lengths[order] > 0]
    if order.size == 0:
        return []
    ls = lengths[order]
    starts = np.flatnonzero(np.r_[True, ls[1:] != ls[:-1]])       # run starts (sorted)
    ends = np.r_[starts[1:], ls.size]
    run_len = ls[starts]                                             # descending
    before = np.r_[0, ends]                                          # sequences before run u
    U = starts.size
    best = np.zeros(U + 1)
    cut = np.zeros(U + 1, np.int64)
    for j in range(1, U + 1):   # best[j]: runs 0..j-1 grouped, the last group runs i..j-1
        i = np.arange(j)
        cost = best[:j] + group_cost(before[j] - before[i], run_len[i], i < j - 1,
                                     num_heads, head_dim, costs)
        k = int(np.argmin(cost))
        best[j], cut[j] = cost[k], k
    bounds = []
    j = U
    while j > 0:
        bounds.append((int(cut[j]), j))
        j = int(cut[j])
    return [order[starts[a]:ends[b - 1]] for a, b in reversed(bounds)]


class _Group:
    """One attention group: ``n`` sequences, padded length ``length``, ``rows`` tokens; for
    unequal lengths a JaggedTensor ``template`` of the group's layout (its padding maps and
    key mask are built once and serve every layer) and the (n, 1, 1, L) key mask."""

    __slots__ = ("n", "length", "rows", "lengths", "template", "key_mask")

    def __init__(self, lengths, device):
        self.n, self.length = int(lengths.size), int(lengths.max())
        self.rows = int(lengths.sum())
        self.lengths = lengths
        self.template = self.key_mask = None
        if self.rows != self.n * self.length:
            self.template = JaggedTensor(ember.empty((self.rows, 0), device=device),
                                         lengths=ember.tensor(lengths, device=device))
            self.key_mask = self.template.mask().reshape(self.n, 1, 1, self.length)

    def attend(self, q, k, v, num_heads, dropout_p):
        """(rows, d) x3 -> (rows, d): attention within each of the group's sequences."""
        n, L = self.n, self.length
        if self.template is None:   # equal lengths: the rows are the (n, L) block
            out = F.scaled_dot_product_attention(
                heads_first(q, n, L, num_heads), heads_first(k, n, L, num_heads),
                heads_first(v, n, L, num_heads), dropout_p=dropout_p)
            return heads_last(out)
        # the template's layout (shared through ``apply``) holds the cached padding map
        q, k, v = (heads_first(self.template.apply(lambda _, x=x: x).to_padded().reshape(
            n * L, -1), n, L, num_heads) for x in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.key_mask,
                                             dropout_p=dropout_p)
        out = heads_last(out).reshape(n, L, -1)
        return JaggedTensor.from_padded(out, self.template.lengths()).values()


class JaggedBatch:
    """The layout of a jagged batch of ``lengths`` (host ints) for an encoder with
    ``num_heads`` heads of ``head_dim``: tokens packed (no padding) in group order (see the
    module docstring). ``pack(x)`` puts per-token inputs (batch order) into that order,
    ``unpack(h)`` puts per-token outputs back; both are no-ops when the groups already lie
    in batch order. ``first_rows``: the packed row of each sequence's first token (batch
    order of sequences; sequences must be non-empty). ``costs`` overrides
    :data:`GROUP_COSTS` (``dict(padded=1e15)`` forbids padded groups: a call per length)."""

    __slots__ = ("batch_size", "num_tokens", "groups", "perm", "inv", "first_rows")

    def __init__(self, lengths, num_heads, head_dim=64, device=None, costs=None):
        lengths = np.asarray(lengths, np.int64).reshape(-1)
        dev = ember.device("cpu") if device is None else device
        self.batch_size, self.num_tokens = int(lengths.size), int(lengths.sum())
        members = [np.sort(g) for g in plan_groups(lengths, num_heads, head_dim, costs)]
        members.sort(key=lambda g: int(g[0]))
        seq = np.concatenate(members) if members else np.zeros(0, np.int64)
        self.groups = [_Group(lengths[g], dev) for g in members]
        offsets = np.r_[0, np.cumsum(lengths)]
        # token order: each group's sequences back to back, groups one after another
        if np.array_equal(seq, np.flatnonzero(lengths > 0)):
            self.perm = self.inv = None
            first = offsets[:-1]
        else:
            lens = lengths[seq]
            start_new = np.r_[0, np.cumsum(lens)[:-1]]
            perm = np.repeat(offsets[seq] - start_new, lens) + np.arange(self.num_tokens)
            inv = np.empty_like(perm)
            inv[perm] = np.arange(self.num_tokens)
            self.perm = ember.tensor(perm, device=dev)
            self.inv = ember.tensor(inv, device=dev)
            first = inv[np.minimum(offsets[:-1], max(self.num_tokens - 1, 0))]
        self.first_rows = ember.tensor(np.asarray(first, np.int64), device=dev)

    def pack(self, x):
        """Per-token values (T, ...) in batch order -> the layout's token order."""
        return x if self.perm is None else x.index_select(0, self.perm)

    def unpack(self, h):
        """Per-token values (T, ...) in the layout's order -> batch order."""
        return h if self.inv is None else h.index_select(0, self.inv)

    def first_tokens(self, h):
        """(T, d) in the layout's order -> (batch, d): each sequence's first token."""
        return h.index_select(0, self.first_rows)

    def attend(self, q, k, v, num_heads, dropout_p=0.0):
        """Multi-head attention within each sequence: (T, d) x3 -> (T, d), in the layout's
        token order."""
        gs = self.groups
        if not gs:                      # no tokens at all
            return v
        if len(gs) == 1:
            return gs[0].attend(q, k, v, num_heads, dropout_p)
        sizes = [g.rows for g in gs]
        parts = [g.attend(a, b, c, num_heads, dropout_p)
                 for g, a, b, c in zip(gs, q.split(sizes), k.split(sizes), v.split(sizes))]
        return ember.cat(parts, 0)

    def __repr__(self):
        shown = ", ".join(f"{g.n}x{g.length}" for g in self.groups[:8])
        more = ", ..." if len(self.groups) > 8 else ""
        return (f"JaggedBatch(batch_size={self.batch_size}, tokens={self.num_tokens}, "
                f"groups=[{shown}{more}], permuted={self.perm is not None})")
