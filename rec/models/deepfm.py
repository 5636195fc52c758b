"""DeepFM (Guo et al., 2017) as torchrec's ``SimpleDeepFMNN``: a dense arch, the embedding
bags, a deep + factorization-machine interaction and a sigmoid over arch.

    dense (B, n) --dense_arch--> (B, D) ------------------------------.
    sparse KJT --sparse_arch (EBC)--> KeyedTensor --.                  |
                                                     inter_arch: [dense, deep_fm(all), fm(all)]
                                                         (B, D + deep_fm_dimension + 1)
                                                     --over_arch (Linear + sigmoid)--> (B, 1)

State keys as torchrec's: ``dense_arch.model.{0,2}``, ``sparse_arch.embedding_bag_collection
...``, ``inter_arch.deep_fm.dense_module.0``, ``over_arch.model.0``. The output is a
probability (torchrec's over arch ends in a sigmoid), not a logit.

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=10,
    ...     embedding_dim=4, feature_names=["f1", "f2"])])
    >>> m = SimpleDeepFMNN(num_dense_features=3, embedding_bag_collection=ebc,
    ...                    hidden_layer_size=8, deep_fm_dimension=5)
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2"], ember.tensor([1, 2, 3]),
    ...                                           ember.tensor([1, 1, 0, 1]))
    >>> m(ember.ones(2, 3), kjt).shape
    (2, 1)
"""
from __future__ import annotations

import ember
from ember import nn

from ..modules.deepfm import DeepFM, FactorizationMachine
from ..modules.embedding_modules import EmbeddingBagCollection

__all__ = ["SimpleDeepFMNN", "FMInteractionArch"]


class _SparseArch(nn.Module):
    """The collection's pooled outputs as a KeyedTensor."""

    def __init__(self, embedding_bag_collection):
        super().__init__()
        self.embedding_bag_collection = embedding_bag_collection

    def forward(self, features):
        return self.embedding_bag_collection(features)


class _DenseArch(nn.Module):
    """Linear, ReLU, Linear, ReLU: (B, in) -> (B, embedding_dim)."""

    def __init__(self, in_features, hidden_layer_size, embedding_dim):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_features, hidden_layer_size), nn.ReLU(),
                                   nn.Linear(hidden_layer_size, embedding_dim), nn.ReLU())

    def forward(self, features):
        return self.model(features)


class FMInteractionArch(nn.Module):
    """``[dense, deep_fm([dense, *sparse]), fm([dense, *sparse])]`` -> (B, D +
    deep_fm_dimension + 1); the deep part is ``Linear(fm_in_features, deep_fm_dimension)``
    and ReLU."""

    def __init__(self, fm_in_features, sparse_feature_names, deep_fm_dimension):
        super().__init__()
        self.sparse_feature_names = list(sparse_feature_names)
        self.deep_fm = DeepFM(dense_module=nn.Sequential(
            nn.Linear(fm_in_features, deep_fm_dimension), nn.ReLU()))
        self.fm = FactorizationMachine()

    def forward(self, dense_features, sparse_features):
        if not self.sparse_feature_names:
            return dense_features
        parts = [dense_features] + [sparse_features[n] for n in self.sparse_feature_names]
        return ember.cat([dense_features, self.deep_fm(parts), self.fm(parts)], 1)


class _OverArch(nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_features, 1), nn.Sigmoid())

    def forward(self, features):
        return self.model(features)


class SimpleDeepFMNN(nn.Module):
    """DeepFM: ``forward(dense_features (B, num_dense_features), sparse_features KJT)`` ->
    (B, 1) click probability. Every table must have the first table's ``embedding_dim``."""

    def __init__(self, num_dense_features, embedding_bag_collection, hidden_layer_size,
                 deep_fm_dimension):
        super().__init__()
        if not isinstance(embedding_bag_collection, EmbeddingBagCollection):
            raise TypeError("SimpleDeepFMNN: embedding_bag_collection must be an "
                            "EmbeddingBagCollection, got "
                            f"{type(embedding_bag_collection).__name__}")
        cfgs = embedding_bag_collection.embedding_bag_configs()
        D = cfgs[0].embedding_dim
        names = list(embedding_bag_collection._embedding_names)
        fm_in = D + sum(c.embedding_dim * len(c.feature_names) for c in cfgs)
        self._num_dense_features = int(num_dense_features)
        self.sparse_arch = _SparseArch(embedding_bag_collection)
        self.dense_arch = _DenseArch(num_dense_features, hidden_layer_size, D)
        self.inter_arch = FMInteractionArch(fm_in, names, deep_fm_dimension)
        self.over_arch = _OverArch(D + deep_fm_dimension + 1)

    def forward(self, dense_features, sparse_features):
        if dense_features.ndim != 2 or dense_features.shape[1] != self._num_dense_features:
            raise ValueError(f"SimpleDeepFMNN: dense_features must be (B, "
                             f"{self._num_dense_features}), got {tuple(dense_features.shape)}")
        embedded_dense = self.dense_arch(dense_features)
        embedded_sparse = self.sparse_arch(sparse_features)
        return self.over_arch(self.inter_arch(embedded_dense, embedded_sparse))
