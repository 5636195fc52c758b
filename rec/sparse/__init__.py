"""``ember.rec.sparse``: the sparse-feature types of a recommender batch.

* ``JaggedTensor``: one feature's id lists over a batch, with optional per-id weights.
* ``KeyedJaggedTensor``: several features packed key by key (what embedding collections read).
* ``KeyedTensor``: dense per-key blocks side by side (what an embedding-bag collection returns).

Each class draws its layout in its docstring.
"""
from __future__ import annotations

from .jagged_tensor import JaggedTensor
from .keyed_jagged_tensor import KeyedJaggedTensor
from .keyed_tensor import KeyedTensor

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor"]
