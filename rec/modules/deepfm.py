"""DeepFM's two halves on embeddings: ``DeepFM`` (the deep part) and ``FactorizationMachine``
(the pairwise-interaction part). Both take a list of (B, n_i, d_i) (or (B, m_i)) tensors and
flatten each to (B, n_i * d_i) before concatenating them."""
from __future__ import annotations

import ember
from ember import nn


def _flat_cat(embeddings):
    parts = [e.flatten(1) for e in embeddings]
    return parts[0] if len(parts) == 1 else ember.cat(parts, 1)


class DeepFM(nn.Module):
    """``dense_module`` (e.g. an ``MLP``) applied to the flattened, concatenated embeddings;
    its input size must be the sum of ``n_i * d_i``.

    >>> import ember
    >>> m = DeepFM(ember.nn.Linear(2 * 4 + 3, 5))
    >>> m([ember.ones(7, 2, 4), ember.ones(7, 3)]).shape
    (7, 5)
    """

    def __init__(self, dense_module):
        super().__init__()
        self.dense_module = dense_module

    def forward(self, embeddings):
        return self.dense_module(_flat_cat(embeddings))


class FactorizationMachine(nn.Module):
    """Second-order interactions of all the flattened inputs ``v`` (B, M):
    ``0.5 * ((sum_i v_i)^2 - sum_i v_i^2)`` -> (B, 1) (torchrec's FM, which sums over every
    element of the concatenated embeddings).

    >>> import ember
    >>> FactorizationMachine()([ember.tensor([[[1.0, 2.0]], [[0.0, 3.0]]])]).tolist()
    [[2.0], [0.0]]
    """

    def forward(self, embeddings):
        v = _flat_cat(embeddings)
        s = v.sum(1, keepdim=True)
        sq = (v * v).sum(1, keepdim=True)
        return 0.5 * (s * s - sq)
