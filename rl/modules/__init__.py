"""``ember.rl.modules``: policy and value building blocks. For now the TensorDict modules
(re-exported from ``ember.rl.tensordict.nn``), ``NormalParamExtractor`` and the ``TanhNormal``
and ``Delta`` distributions."""
from ..tensordict.nn import (Delta, InteractionType, NormalParamExtractor,
                             ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential,
                             TensorDictModule, TensorDictModuleBase, TensorDictSequential,
                             set_interaction_type)
from .distributions import SafeTanhTransform, TanhNormal

__all__ = ["Delta", "InteractionType", "NormalParamExtractor",
           "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential",
           "SafeTanhTransform", "TanhNormal", "TensorDictModule", "TensorDictModuleBase",
           "TensorDictSequential", "set_interaction_type"]
