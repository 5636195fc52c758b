"""``ember.rec.modules``: embedding collections, fused sparse optimizers, quantized tables and
the shared blocks of recommender models (MLP, cross networks, factorization machines).

* ``embedding_configs``: ``EmbeddingBagConfig``, ``EmbeddingConfig``, ``PoolingType``,
  ``DataType``
* ``embedding_modules``: ``EmbeddingBagCollection``, ``EmbeddingCollection`` (+ ``Fused...``)
* ``fused``: the fused optimizers (update inside backward) and ``FusedOptimizer``
* ``quant``: ``quantize_embeddings``: int8 row-wise / fp16 tables for inference
* ``mlp``, ``activation``: ``Perceptron``, ``MLP``, ``SwishLayerNorm``
* ``crossnet``: ``CrossNet``, ``LowRankCrossNet``, ``VectorCrossNet``
* ``deepfm``: ``DeepFM``, ``FactorizationMachine``
"""
from __future__ import annotations

from .activation import SwishLayerNorm
from .crossnet import CrossNet, LowRankCrossNet, VectorCrossNet
from .deepfm import DeepFM, FactorizationMachine
from .embedding_configs import (BaseEmbeddingConfig, DataType, EmbeddingBagConfig,
                                EmbeddingConfig, PoolingType)
from .embedding_modules import (EmbeddingBagCollection, EmbeddingCollection,
                                FusedEmbeddingBagCollection, FusedEmbeddingCollection)
from .fused import EmbOptimType, FusedOptimizer
from .mlp import MLP, Perceptron
from .quant import QuantEmbeddingBagCollection, QuantEmbeddingCollection, quantize_embeddings

__all__ = ["BaseEmbeddingConfig", "DataType", "EmbeddingBagConfig", "EmbeddingConfig",
           "PoolingType", "EmbeddingBagCollection", "EmbeddingCollection",
           "FusedEmbeddingBagCollection", "FusedEmbeddingCollection", "EmbOptimType",
           "FusedOptimizer", "QuantEmbeddingBagCollection", "QuantEmbeddingCollection",
           "quantize_embeddings", "MLP", "Perceptron", "SwishLayerNorm", "CrossNet",
           "LowRankCrossNet", "VectorCrossNet", "DeepFM", "FactorizationMachine"]
