"""``ember.rec.datasets``: recommender data as DataPipes.

* ``criteo``: the Criteo Kaggle and 1TB click logs (TSV rows, ``criteo_batches`` for
  training batches with ids hashed to table sizes and log-transformed dense features)
* ``movielens``: MovieLens 100K/1M/20M/25M ratings in their published layouts, with the
  user and movie side files
* ``random``: ``RandomRecDataset``, synthetic batches with given pooling factors
* ``utils``: ``Batch``, ``DatasetFormatError``, ``LineRecords`` (resumable line reader),
  ``fetch``/``unpack`` (published archives through ``ember.hub``)
"""
from __future__ import annotations

from .criteo import (CAT_FEATURE_COUNT, DEFAULT_CAT_NAMES, DEFAULT_INT_NAMES,
                     INT_FEATURE_COUNT, CriteoCollate, CriteoIterDataPipe, criteo_batches,
                     criteo_kaggle, criteo_terabyte, criteo_terabyte_url,
                     download_criteo_kaggle)
from .movielens import (movielens, movielens_1m, movielens_20m, movielens_25m,
                        movielens_100k)
from .random import RandomRecDataset
from .utils import Batch, DatasetFormatError, LineRecords

__all__ = ["Batch", "DatasetFormatError", "LineRecords", "RandomRecDataset",
           "CriteoIterDataPipe", "CriteoCollate", "criteo_kaggle", "criteo_terabyte",
           "criteo_batches", "criteo_terabyte_url", "download_criteo_kaggle",
           "INT_FEATURE_COUNT", "CAT_FEATURE_COUNT", "DEFAULT_INT_NAMES",
           "DEFAULT_CAT_NAMES", "movielens", "movielens_100k", "movielens_1m",
           "movielens_20m", "movielens_25m"]
