"""Sequence distances for speech recognition results."""
from __future__ import annotations

import numpy as np

__all__ = ["edit_distance"]


def edit_distance(seq1, seq2):
    """Levenshtein distance between two sequences (strings, lists of words or token ids):
    the fewest insertions, deletions and substitutions turning one into the other.

        >>> edit_distance("kitten", "sitting"), edit_distance("a b c".split(), ["a", "c"])
        (3, 1)
    """
    a, b = list(seq1), list(seq2)
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    # one row of the table at a time; the row update is vectorised except for insertions,
    # which chain along the row (a running minimum)
    index = {}
    b_ids = np.array([index.setdefault(x, len(index)) for x in b])
    prev = np.arange(len(b) + 1)
    for x in a:
        same = b_ids == index.get(x, -1)
        cur = np.empty_like(prev)
        cur[0] = prev[0] + 1
        cur[1:] = np.minimum(prev[1:] + 1, prev[:-1] + (~same))
        # insertions: cur[j] = min(cur[j], cur[j-1] + 1) along the row
        cur = np.minimum.accumulate(cur - np.arange(len(cur))) + np.arange(len(cur))
        prev = cur
    return int(prev[-1])
