"""Two-tower retrieval (torchrec's ``TwoTower`` layout) trained with in-batch negatives.

One ``EmbeddingBagCollection`` holds the query tables (its first table config) and the
candidate tables (its second); each tower is an ``MLP`` over the pooled features of its side:

    KJT --ebc--> query features (B, Dq)     --query_proj-->     q (B, E)
             \\-> candidate features (B, Dc) --candidate_proj--> c (B, E)

With in-batch negatives, the score matrix ``q @ c.T`` (B, B) is a B-way classification per
query whose answer is its own candidate (the diagonal): every other candidate of the batch
is a negative, so training needs positive pairs only.

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> ebc = EmbeddingBagCollection([
    ...     EmbeddingBagConfig(name="t_user", num_embeddings=10, embedding_dim=4,
    ...                        feature_names=["user_id"]),
    ...     EmbeddingBagConfig(name="t_item", num_embeddings=20, embedding_dim=4,
    ...                        feature_names=["item_id"])])
    >>> tt = TwoTower(ebc, layer_sizes=[8, 3])
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["user_id", "item_id"],
    ...     ember.tensor([1, 2, 5, 7]), ember.tensor([1, 1, 1, 1]))
    >>> q, c = tt(kjt)
    >>> q.shape, c.shape
    ((2, 3), (2, 3))
"""
from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from ..modules.embedding_modules import EmbeddingBagCollection
from ..modules.mlp import MLP

__all__ = ["TwoTower", "TwoTowerTrainTask"]


class TwoTower(nn.Module):
    """``forward(kjt) -> (query_embedding (B, E), candidate_embedding (B, E))``, E =
    ``layer_sizes[-1]``. The query tower reads the features of the collection's first
    table config, the candidate tower those of its second (torchrec's convention); each
    tower's input is its features' pooled embeddings side by side. State keys ``ebc.``...,
    ``query_proj._mlp.<i>``..., ``candidate_proj._mlp.<i>``...

    ``activation``: the towers' MLP activation, after every layer including the last (as
    torchrec's, "relu"); "swish_layernorm" cannot die at the output the way ReLU units can.

    ``score(q, c)``: the (Bq, Bc) matrix of dot products, what retrieval ranks by."""

    def __init__(self, embedding_bag_collection, layer_sizes, device=None, activation="relu"):
        super().__init__()
        if not isinstance(embedding_bag_collection, EmbeddingBagCollection):
            raise TypeError("TwoTower: embedding_bag_collection must be an "
                            "EmbeddingBagCollection, got "
                            f"{type(embedding_bag_collection).__name__}")
        cfgs = embedding_bag_collection.embedding_bag_configs()
        if len(cfgs) < 2:
            raise ValueError(f"TwoTower: the collection needs two table configs (query, "
                             f"candidate), got {len(cfgs)}")
        self._feature_names_query = list(cfgs[0].feature_names)
        self._candidate_feature_names = list(cfgs[1].feature_names)
        self.ebc = embedding_bag_collection
        self.query_proj = MLP(cfgs[0].embedding_dim * len(self._feature_names_query),
                              layer_sizes, activation=activation, device=device)
        self.candidate_proj = MLP(cfgs[1].embedding_dim * len(self._candidate_feature_names),
                                  layer_sizes, activation=activation, device=device)

    @staticmethod
    def _side(pooled, names):
        parts = [pooled[n] for n in names]
        return parts[0] if len(parts) == 1 else ember.cat(parts, 1)

    def forward(self, kjt):
        pooled = self.ebc(kjt)
        q = self.query_proj(self._side(pooled, self._feature_names_query))
        c = self.candidate_proj(self._side(pooled, self._candidate_feature_names))
        return q, c

    @staticmethod
    def score(query_embedding, candidate_embedding):
        """(Bq, E), (Bc, E) -> (Bq, Bc) dot products."""
        return ember.matmul(query_embedding, candidate_embedding.transpose(0, 1))


class TwoTowerTrainTask(nn.Module):
    """A ``TwoTower`` with its loss: ``forward(batch)`` (``batch.sparse_features`` a KJT of
    positive (query, candidate) pairs) returns ``(loss, (loss.detach(), logits.detach(),
    labels))``.

    ``in_batch_negatives=True`` (default): ``logits = q @ c.T / temperature`` (B, B) and the
    loss is the cross entropy against ``labels = arange(B)`` (each query's own candidate).
    ``False``: torchrec's pointwise form, ``logits = sum(q * c, 1)`` (B,) and binary cross
    entropy against ``batch.labels``."""

    def __init__(self, two_tower, in_batch_negatives=True, temperature=1.0):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"TwoTowerTrainTask: temperature must be > 0, got {temperature}")
        self.two_tower = two_tower
        self.in_batch_negatives = bool(in_batch_negatives)
        self.temperature = float(temperature)

    def forward(self, batch):
        q, c = self.two_tower(batch.sparse_features)
        if self.in_batch_negatives:
            logits = TwoTower.score(q, c)
            if self.temperature != 1.0:
                logits = logits / self.temperature
            labels = ember.arange(q.shape[0], device=logits.device)
            loss = F.cross_entropy(logits, labels)
        else:
            logits = (q * c).sum(1)
            labels = batch.labels
            if tuple(labels.shape) != tuple(logits.shape):
                raise ValueError(f"TwoTowerTrainTask: labels must have shape "
                                 f"{tuple(logits.shape)}, got {tuple(labels.shape)}")
            loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        return loss, (loss.detach(), logits.detach(), labels.detach())
