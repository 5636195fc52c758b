"""ember.rec: jagged tensors, embedding-bag collections, sharding, DLRM-family models.

The sparse-feature types live in ``ember.rec.sparse``, the modules in ``ember.rec.modules``,
sharding (planner, sharded collections, ``DistributedModelParallel``,
``TrainPipelineSparseDist``) in ``ember.rec.distributed``, the models (DLRM, DLRM_DCN,
TwoTower, SimpleDeepFMNN, MatrixFactorization) in ``ember.rec.models`` and the Criteo,
MovieLens and random datasets in ``ember.rec.datasets``; the names most used are importable
from ``ember.rec`` directly (the last three packages load on first use).
"""
from __future__ import annotations

import importlib as _importlib

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

_LAZY = {"distributed": None, "models": None, "datasets": None,
         "DLRM": "models", "DLRM_DCN": "models", "DLRMTrain": "models", "TwoTower": "models",
         "TwoTowerTrainTask": "models", "SimpleDeepFMNN": "models",
         "MatrixFactorization": "models", "RandomRecDataset": "datasets",
         "DistributedModelParallel": "distributed"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    sub = _LAZY[name]
    mod = _importlib.import_module(f"{__name__}.{sub or name}")
    return mod if sub is None else getattr(mod, name)
