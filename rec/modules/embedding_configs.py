"""Embedding table configs: ``EmbeddingBagConfig`` (pooled) and ``EmbeddingConfig`` (per id).

Field names and defaults follow torchrec's, so configs read the same. The initial weights
are uniform in ``[weight_init_min, weight_init_max]``, by default
``+-sqrt(1 / num_embeddings)``; ``init_fn`` (a function of the weight tensor, e.g.
``partial(ember.nn.init.normal_, std=0.01)``) replaces it.

    >>> from ember.rec import EmbeddingBagConfig, PoolingType
    >>> cfg = EmbeddingBagConfig(name="t_user", num_embeddings=100, embedding_dim=8,
    ...                          feature_names=["user_id"], pooling=PoolingType.MEAN)
    >>> round(cfg.get_weight_init_max(), 3), cfg.num_features()
    (0.1, 1)
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from math import sqrt
from typing import Callable, List, Optional

import numpy as np


class PoolingType(enum.Enum):
    """How an embedding bag reduces the rows of its ids: sum, mean or element-wise max
    (``NONE``: no pooling, the sequence form an ``EmbeddingCollection`` returns)."""

    SUM = "SUM"
    MEAN = "MEAN"
    MAX = "MAX"
    NONE = "NONE"


class DataType(enum.Enum):
    """The storage type of a table. Training tables are FP32 or FP16; INT8 marks a table
    for row-wise int8 quantization (``quantize_embeddings``), trained in FP32 until then."""

    FP32 = "FP32"
    FP16 = "FP16"
    INT8 = "INT8"


_DTYPES = {DataType.FP32: np.dtype(np.float32), DataType.FP16: np.dtype(np.float16),
           DataType.INT8: np.dtype(np.float32)}


def data_type_to_dtype(data_type):
    """The numpy dtype a trainable table of ``data_type`` is stored in."""
    return _DTYPES[DataType(data_type)]


def _as_enum(cls, value, what):
    if isinstance(value, cls):
        return value
    try:
        return cls(str(value).upper())
    except ValueError:
        raise ValueError(f"{what} must be one of {[m.name for m in cls]}, got "
                         f"{value!r}") from None


@dataclass
class BaseEmbeddingConfig:
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: List[str] = field(default_factory=list)
    weight_init_max: Optional[float] = None
    weight_init_min: Optional[float] = None
    init_fn: Optional[Callable] = None

    def __post_init__(self):
        if int(self.num_embeddings) <= 0 or int(self.embedding_dim) <= 0:
            raise ValueError(f"embedding config {self.name!r}: num_embeddings and "
                             f"embedding_dim must be positive, got {self.num_embeddings} and "
                             f"{self.embedding_dim}")
        self.num_embeddings, self.embedding_dim = int(self.num_embeddings), \
            int(self.embedding_dim)
        self.data_type = _as_enum(DataType, self.data_type, "data_type")
        self.feature_names = list(self.feature_names)
        lo, hi = self.get_weight_init_min(), self.get_weight_init_max()
        if lo > hi:
            raise ValueError(f"embedding config {self.name!r}: weight_init_min {lo} is above "
                             f"weight_init_max {hi}")

    def get_weight_init_max(self) -> float:
        return sqrt(1 / self.num_embeddings) if self.weight_init_max is None \
            else float(self.weight_init_max)

    def get_weight_init_min(self) -> float:
        return -sqrt(1 / self.num_embeddings) if self.weight_init_min is None \
            else float(self.weight_init_min)

    def num_features(self) -> int:
        return len(self.feature_names)


@dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    """A table read by an ``EmbeddingBagCollection``: each feature's ids of one batch entry
    are pooled into one row (``pooling``: SUM, MEAN or MAX)."""

    pooling: PoolingType = PoolingType.SUM

    def __post_init__(self):
        super().__post_init__()
        self.pooling = _as_enum(PoolingType, self.pooling, "pooling")
        if self.pooling is PoolingType.NONE:
            raise ValueError(f"EmbeddingBagConfig {self.name!r}: pooling NONE is the "
                             "EmbeddingConfig form; a bag pools with SUM, MEAN or MAX")


@dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    """A table read by an ``EmbeddingCollection``: one row per id (no pooling)."""
