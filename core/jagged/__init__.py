"""``ember.jagged``: batches of variable-length sequences without padding.

``JaggedTensor`` packs the sequences into one values tensor plus offsets (see its docstring
for the layout); the segment ops reduce over each sequence and convert to and from the
padded form. Used by ``ember.text`` (padding-free encoders) and ``ember.rec`` (sparse
features, embedding bags).

    >>> import ember
    >>> from ember import jagged
    >>> jt = jagged.as_jagged([ember.ones(2, 4), ember.ones(0, 4), ember.ones(3, 4)])
    >>> jt.lengths()
    tensor([2, 0, 3])
    >>> jagged.segment_mean(jt).shape
    (3, 4)
"""
from __future__ import annotations

from .padding import jagged_to_padded, padded_to_jagged
from .segment import (segment_expand, segment_max, segment_mean, segment_softmax,
                      segment_sum)
from .tensor import JaggedTensor, as_jagged

__all__ = ["JaggedTensor", "as_jagged", "jagged_to_padded", "padded_to_jagged",
           "segment_expand", "segment_max", "segment_mean", "segment_softmax", "segment_sum"]
