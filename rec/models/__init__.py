"""``ember.rec.models``: recommender models built on the embedding collections.

* ``dlrm``: ``DLRM``, ``DLRM_DCN`` (DCN v2 interaction), ``DLRMTrain`` (the model and its
  loss, torchrec's ``(loss, (loss, logits, labels))`` contract) and their archs
* ``two_tower``: ``TwoTower`` retrieval and ``TwoTowerTrainTask`` (in-batch negatives)
* ``deepfm``: ``SimpleDeepFMNN`` (DeepFM)
* ``mf``: ``MatrixFactorization`` with user and item biases

State-dict keys are torchrec's wherever torchrec defines the model.
"""
from __future__ import annotations

from .deepfm import FMInteractionArch, SimpleDeepFMNN
from .dlrm import (DLRM, DLRM_DCN, DenseArch, DLRMTrain, InteractionArch, InteractionDCNArch,
                   OverArch, SparseArch, choose)
from .mf import MatrixFactorization
from .two_tower import TwoTower, TwoTowerTrainTask

__all__ = ["DLRM", "DLRM_DCN", "DLRMTrain", "SparseArch", "DenseArch", "InteractionArch",
           "InteractionDCNArch", "OverArch", "choose", "TwoTower", "TwoTowerTrainTask",
           "SimpleDeepFMNN", "FMInteractionArch", "MatrixFactorization"]
