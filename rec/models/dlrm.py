"""DLRM (Naumov et al., 2019) and DLRM with a DCN v2 interaction, in torchrec's layout.

    dense (B, dense_in) --dense_arch (MLP)--> (B, D) ---.
                                                        |-- inter_arch --> over_arch --> (B, out)
    sparse (KJT) --sparse_arch (EBC)--> (B, F, D) ------'

Module and state-dict names are torchrec's (``sparse_arch.embedding_bag_collection.
embedding_bags.<table>.weight``, ``dense_arch.model._mlp.<i>._linear.weight``,
``over_arch.model.0._mlp.<i>._linear.weight``, ``over_arch.model.1.weight``,
``inter_arch.crossnet.W_kernels.<l>``), so a torchrec DLRM checkpoint loads as it is.

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name=f"t_{f}", num_embeddings=10,
    ...     embedding_dim=4, feature_names=[f]) for f in ("f1", "f2")])
    >>> model = DLRM(ebc, dense_in_features=3, dense_arch_layer_sizes=[8, 4],
    ...              over_arch_layer_sizes=[5, 1])
    >>> kjt = KeyedJaggedTensor.from_lengths_sync(["f1", "f2"], ember.tensor([1, 2, 3]),
    ...                                           ember.tensor([1, 1, 0, 1]))
    >>> model(ember.ones(2, 3), kjt).shape
    (2, 1)
"""
from __future__ import annotations

import numpy as np

import ember
from ember import _backend as B_
from ember import nn
from ember.autograd.function import Function, once_differentiable

from ..modules.crossnet import LowRankCrossNet
from ..modules.embedding_modules import EmbeddingBagCollection
from ..modules.mlp import MLP
from ..sparse import KeyedJaggedTensor

__all__ = ["choose", "SparseArch", "DenseArch", "InteractionArch", "InteractionDCNArch",
           "OverArch", "DLRM", "DLRM_DCN", "DLRMTrain"]


def choose(n, k):
    """``n`` choose ``k`` (0 when ``k > n``)."""
    if not 0 <= k <= n:
        return 0
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out


def _common_dim(ebc, who):
    if not isinstance(ebc, EmbeddingBagCollection):
        raise TypeError(f"{who}: embedding_bag_collection must be an EmbeddingBagCollection, "
                        f"got {type(ebc).__name__}")
    dims = {c.name: c.embedding_dim for c in ebc.embedding_bag_configs()}
    if len(set(dims.values())) != 1:
        raise ValueError(f"{who}: every table must have the same embedding_dim, got {dims}")
    return next(iter(dims.values()))


class SparseArch(nn.Module):
    """The embedding-bag collection's pooled outputs as (B, F, D): one row per feature, in
    the collection's output order (tables, then each table's features)."""

    def __init__(self, embedding_bag_collection):
        super().__init__()
        self.D = _common_dim(embedding_bag_collection, "SparseArch")
        self.embedding_bag_collection = embedding_bag_collection
        self._sparse_feature_names = list(embedding_bag_collection._embedding_names)
        self.F = len(self._sparse_feature_names)

    @property
    def sparse_feature_names(self):
        return self._sparse_feature_names

    def forward(self, features):
        kt = self.embedding_bag_collection(features)
        v = kt.values()                                    # (B, F * D), features in order
        return v.reshape(v.shape[0], self.F, self.D)


class DenseArch(nn.Module):
    """An ``MLP`` (ReLU after every layer) on the dense features: (B, in) -> (B, D)."""

    def __init__(self, in_features, layer_sizes, device=None):
        super().__init__()
        self.model = MLP(in_features, layer_sizes, bias=True, activation="relu", device=device)

    def forward(self, features):
        return self.model(features)


class _DotInteraction(Function):
    """``Z = X X^T`` per batch entry, kept at the strict upper triangle: (B, n, D) -> (B, P).

    Written on raw arrays (one batched GEMM forward, one backward): the gradient scatters
    into the (B, n, n) products by assignment (the kept positions are distinct) and
    ``dX = (G + G^T) X``. ``test_models`` holds it equal to torch's bmm + gather."""

    @staticmethod
    def forward(ctx, combined, flat_index):
        x = combined.array
        xp = B_.namespace(x)
        z = xp.matmul(x, x.transpose(0, 2, 1))                     # (B, n, n)
        Bn, n = x.shape[0], x.shape[1]
        ctx.save_for_backward(combined)
        ctx.flat_index = flat_index
        return ember.Tensor._make(xp.ascontiguousarray(z.reshape(Bn, n * n)[:, flat_index]))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (combined,) = ctx.saved_tensors
        x = combined.array
        xp = B_.namespace(x)
        Bn, n = x.shape[0], x.shape[1]
        g = xp.zeros((Bn, n * n), dtype=x.dtype)
        g[:, ctx.flat_index] = grad.array
        g = g.reshape(Bn, n, n)
        g = g + g.transpose(0, 2, 1)
        return ember.Tensor._make(xp.matmul(g, x)), None


class InteractionArch(nn.Module):
    """DLRM's dot interaction: the dense output and the F sparse rows (F + 1 vectors of D)
    pairwise dotted, the upper triangle (F + 1 choose 2 values) kept and appended to the
    dense output: (B, D), (B, F, D) -> (B, D + choose(F + 1, 2)) (torchrec's order: row by
    row of the strict upper triangle)."""

    def __init__(self, num_sparse_features):
        super().__init__()
        self.F = int(num_sparse_features)
        n = self.F + 1
        r, c = np.triu_indices(n, 1)
        self._flat_index = (r * n + c).astype(np.int64)   # positions in the (n * n) products

    def forward(self, dense_features, sparse_features):
        if self.F <= 0:
            return dense_features
        if sparse_features.ndim != 3 or sparse_features.shape[1] != self.F or \
                sparse_features.shape[2] != dense_features.shape[1]:
            raise ValueError(f"InteractionArch: sparse_features must be (B, {self.F}, "
                             f"{dense_features.shape[1]}), got {tuple(sparse_features.shape)}")
        combined = ember.cat([dense_features.unsqueeze(1), sparse_features], 1)  # (B, F+1, D)
        idx = self._flat_index
        if B_.namespace(combined.array) is not np:
            idx = B_.to_device(idx, combined.device)
        flat = _DotInteraction.apply(combined, idx)
        return ember.cat([dense_features, flat], 1)


class InteractionDCNArch(nn.Module):
    """DCN v2 interaction: the dense output and the sparse rows flattened to
    (B, (F + 1) * D) and passed through ``crossnet`` (a ``LowRankCrossNet``)."""

    def __init__(self, num_sparse_features, crossnet):
        super().__init__()
        self.F = int(num_sparse_features)
        self.crossnet = crossnet

    def forward(self, dense_features, sparse_features):
        if self.F <= 0:
            return dense_features
        B = dense_features.shape[0]
        combined = ember.cat([dense_features.unsqueeze(1), sparse_features], 1)
        return self.crossnet(combined.reshape(B, -1))


class OverArch(nn.Module):
    """An ``MLP`` over all but the last size, then a plain ``Linear`` to the last size (the
    logits): ``model.0`` is the MLP and ``model.1`` the Linear, as torchrec's."""

    def __init__(self, in_features, layer_sizes, device=None):
        super().__init__()
        layer_sizes = list(layer_sizes)
        if len(layer_sizes) <= 1:
            raise ValueError(f"OverArch: layer_sizes needs at least two sizes (hidden ..., "
                             f"output), got {layer_sizes}")
        self.model = nn.Sequential(
            MLP(in_features, layer_sizes[:-1], bias=True, activation="relu", device=device),
            nn.Linear(layer_sizes[-2], layer_sizes[-1], bias=True, device=device))

    def forward(self, features):
        return self.model(features)


def _check_inputs(who, dense_in, dense, sparse):
    if not isinstance(dense, ember.Tensor) or dense.ndim != 2 or dense.shape[1] != dense_in:
        got = tuple(dense.shape) if isinstance(dense, ember.Tensor) else type(dense).__name__
        raise ValueError(f"{who}: dense_features must be a (B, {dense_in}) Tensor, got {got}")
    if not isinstance(sparse, KeyedJaggedTensor):
        raise TypeError(f"{who}: sparse_features must be a KeyedJaggedTensor, got "
                        f"{type(sparse).__name__}")
    if sparse.stride() != dense.shape[0]:
        raise ValueError(f"{who}: the dense batch has {dense.shape[0]} rows but the "
                         f"KeyedJaggedTensor's batch size (stride) is {sparse.stride()}")


class DLRM(nn.Module):
    """DLRM: ``over_arch(inter_arch(dense_arch(dense), sparse_arch(sparse)))`` -> (B, out)
    logits. Every table must have the same ``embedding_dim`` D, and
    ``dense_arch_layer_sizes[-1]`` must be D. ``over_arch_layer_sizes[-1]`` is the number
    of outputs (1 for click-through prediction).

    ``forward(dense_features (B, dense_in_features), sparse_features KJT)``.
    """

    def __init__(self, embedding_bag_collection, dense_in_features, dense_arch_layer_sizes,
                 over_arch_layer_sizes, dense_device=None):
        super().__init__()
        D = _common_dim(embedding_bag_collection, type(self).__name__)
        dense_arch_layer_sizes = list(dense_arch_layer_sizes)
        if not dense_arch_layer_sizes or dense_arch_layer_sizes[-1] != D:
            raise ValueError(f"{type(self).__name__}: the last dense_arch layer size "
                             f"({dense_arch_layer_sizes[-1] if dense_arch_layer_sizes else None})"
                             f" must equal the tables' embedding_dim ({D})")
        self._dense_in_features = int(dense_in_features)
        self.sparse_arch = SparseArch(embedding_bag_collection)
        F = self.sparse_arch.F
        self.dense_arch = DenseArch(dense_in_features, dense_arch_layer_sizes, dense_device)
        self.inter_arch = InteractionArch(F)
        self.over_arch = OverArch(D + choose(F, 2) + F, over_arch_layer_sizes, dense_device)

    def forward(self, dense_features, sparse_features):
        _check_inputs(type(self).__name__, self._dense_in_features, dense_features,
                      sparse_features)
        embedded_dense = self.dense_arch(dense_features)
        embedded_sparse = self.sparse_arch(sparse_features)
        concatenated = self.inter_arch(embedded_dense, embedded_sparse)
        return self.over_arch(concatenated)


class DLRM_DCN(DLRM):
    """DLRM whose interaction is a DCN v2 ``LowRankCrossNet`` of ``dcn_num_layers`` layers
    and rank ``dcn_low_rank_dim`` over the flattened (F + 1) * D features; the over arch
    reads those (F + 1) * D values.

    >>> import ember
    >>> from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig
    >>> ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t", num_embeddings=10,
    ...     embedding_dim=4, feature_names=["f1", "f2"])])
    >>> m = DLRM_DCN(ebc, 3, [8, 4], [5, 1], dcn_num_layers=2, dcn_low_rank_dim=2)
    >>> m.inter_arch.crossnet.W_kernels[0].shape
    (12, 2)
    """

    def __init__(self, embedding_bag_collection, dense_in_features, dense_arch_layer_sizes,
                 over_arch_layer_sizes, dcn_num_layers, dcn_low_rank_dim, dense_device=None):
        super().__init__(embedding_bag_collection, dense_in_features, dense_arch_layer_sizes,
                         over_arch_layer_sizes, dense_device)
        D, F = self.sparse_arch.D, self.sparse_arch.F
        crossnet = LowRankCrossNet((F + 1) * D, num_layers=dcn_num_layers,
                                   low_rank=dcn_low_rank_dim)
        self.inter_arch = InteractionDCNArch(F, crossnet)
        self.over_arch = OverArch((F + 1) * D, over_arch_layer_sizes, dense_device)


class DLRMTrain(nn.Module):
    """A DLRM with its loss, for training loops: ``forward(batch)`` with a batch holding
    ``dense_features``, ``sparse_features`` and ``labels`` (a ``ember.rec.datasets.Batch``)
    returns ``(loss, (loss.detach(), logits.detach(), labels))``, the loss being the mean
    binary cross entropy of the (B,) logits against the labels (torchrec's contract). The
    model is ``self.model`` (state-dict keys ``model.``...)."""

    def __init__(self, dlrm_module):
        super().__init__()
        self.model = dlrm_module
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, batch):
        logits = self.model(batch.dense_features, batch.sparse_features).squeeze(-1)
        labels = batch.labels
        if tuple(labels.shape) != tuple(logits.shape):
            raise ValueError(f"DLRMTrain: labels must have shape {tuple(logits.shape)} (one "
                             f"per batch entry), got {tuple(labels.shape)}")
        loss = self.loss_fn(logits, labels.to(logits.dtype))
        return loss, (loss.detach(), logits.detach(), labels.detach())
