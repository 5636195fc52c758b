"""Matrix factorisation with user and item biases (Koren et al., 2009), on an
``EmbeddingBagCollection`` so its tables train row-sparse (fused optimizers welcome):

    rating(u, i) = <P_u, Q_i> + b_u + b_i + mu

Four tables read the two features ``user_id`` and ``item_id`` (one id per batch entry):
``t_user`` (P, dim D), ``t_item`` (Q), ``t_user_bias`` and ``t_item_bias`` (dim 1, zeros at
start); ``mu`` is the ``global_bias`` parameter.

    >>> import ember
    >>> from ember.rec import KeyedJaggedTensor
    >>> mf = MatrixFactorization(num_users=5, num_items=7, embedding_dim=3)
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["user_id", "item_id"],
    ...     ember.tensor([0, 4, 6, 2]), ember.tensor([1, 1, 1, 1]))
    >>> mf(kjt).shape, mf.score_all(ember.tensor([0, 1])).shape
    ((2,), (2, 7))
"""
from __future__ import annotations

from functools import partial

import ember
from ember import nn

from ..modules.embedding_configs import EmbeddingBagConfig
from ..modules.embedding_modules import EmbeddingBagCollection

__all__ = ["MatrixFactorization"]


class MatrixFactorization(nn.Module):
    """``forward(kjt)`` -> (B,) predicted ratings, ``kjt`` holding ``user_id`` and
    ``item_id`` (one id each per batch entry; ids 0-based). ``score_all(user_ids)`` ->
    (n, num_items) the scores of every item for those users (for top-k retrieval).
    ``init_std``: the factors start normal with this std; ``global_bias`` starts at
    ``global_bias`` (e.g. the training set's mean rating). ``fused_params`` as for
    ``EmbeddingBagCollection`` (the tables then update inside backward)."""

    def __init__(self, num_users, num_items, embedding_dim, init_std=0.1, global_bias=0.0,
                 fused_params=None, device=None):
        super().__init__()
        normal = partial(nn.init.normal_, std=float(init_std))
        self.num_users, self.num_items = int(num_users), int(num_items)
        self.ebc = EmbeddingBagCollection([
            EmbeddingBagConfig(name="t_user", num_embeddings=num_users,
                               embedding_dim=embedding_dim, feature_names=["user_id"],
                               init_fn=normal),
            EmbeddingBagConfig(name="t_item", num_embeddings=num_items,
                               embedding_dim=embedding_dim, feature_names=["item_id"],
                               init_fn=normal),
            EmbeddingBagConfig(name="t_user_bias", num_embeddings=num_users, embedding_dim=1,
                               feature_names=["user_id"], init_fn=nn.init.zeros_),
            EmbeddingBagConfig(name="t_item_bias", num_embeddings=num_items, embedding_dim=1,
                               feature_names=["item_id"], init_fn=nn.init.zeros_)],
            device=device, fused_params=fused_params)
        self.global_bias = nn.Parameter(ember.full((1,), float(global_bias), device=device))

    def forward(self, kjt):
        kt = self.ebc(kjt)
        p, q = kt["user_id@t_user"], kt["item_id@t_item"]
        return (p * q).sum(1) + kt["user_id@t_user_bias"].squeeze(1) + \
            kt["item_id@t_item_bias"].squeeze(1) + self.global_bias

    def score_all(self, user_ids):
        """(n,) user ids -> (n, num_items) predicted ratings of every item (no graph)."""
        bags = self.ebc.embedding_bags
        with ember.no_grad():
            p = bags["t_user"].weight[user_ids]
            s = ember.matmul(p, bags["t_item"].weight.transpose(0, 1))
            return s + bags["t_item_bias"].weight.reshape(1, -1) + \
                bags["t_user_bias"].weight[user_ids] + self.global_bias
