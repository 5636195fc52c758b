"""``ember.rl.tensordict.nn``: modules that read their inputs from a TensorDict and write
their outputs into it (``TensorDictModule``, ``TensorDictSequential``), probabilistic ones
that sample from a distribution built from TensorDict entries, and the helpers they use."""
from .common import TensorDictModule, TensorDictModuleBase
from .distributions import Delta, NormalParamExtractor, biased_softplus, expln, mappings
from .probabilistic import (InteractionType, ProbabilisticTensorDictModule,
                            ProbabilisticTensorDictSequential, interaction_type,
                            set_interaction_type)
from .sequence import TensorDictSequential

__all__ = ["Delta", "InteractionType", "NormalParamExtractor",
           "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential",
           "TensorDictModule", "TensorDictModuleBase", "TensorDictSequential",
           "biased_softplus", "expln", "interaction_type", "mappings", "set_interaction_type"]
