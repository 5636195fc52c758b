"""ember.rec: jagged tensors, embedding-bag collections, sharding, DLRM-family models.

The sparse-feature types live in ``ember.rec.sparse`` and the modules in
``ember.rec.modules``; the names most used are importable from ``ember.rec`` directly.
"""
from __future__ import annotations

from .modules import (MLP, CrossNet, DataType, DeepFM, EmbeddingBagCollection,
                      EmbeddingBagConfig, EmbeddingCollection, EmbeddingConfig, EmbOptimType,
                      FactorizationMachine, FusedEmbeddingBagCollection,
                      FusedEmbeddingCollection, LowRankCrossNet, PoolingType, SwishLayerNorm,
                      quantize_embeddings)
from .sparse import JaggedTensor, KeyedJaggedTensor, KeyedTensor

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor", "DataType",
           "EmbeddingBagCollection", "EmbeddingBagConfig", "EmbeddingCollection",
           "EmbeddingConfig", "EmbOptimType", "FusedEmbeddingBagCollection",
           "FusedEmbeddingCollection", "PoolingType", "quantize_embeddings", "MLP",
           "SwishLayerNorm", "CrossNet", "LowRankCrossNet", "DeepFM", "FactorizationMachine"]
