"""``ember.rl.modules``: policy and value building blocks with torchrl's names: networks
(``MLP``, ``ConvNet``, dueling Q-nets), actors and value operators (``Actor``,
``ProbabilisticActor``, ``ValueOperator``, ``QValueActor``/``QValueModule``), exploration
(``EGreedyModule``, ``AdditiveGaussianModule``, ``OrnsteinUhlenbeckProcessModule``), the
``TanhNormal`` distribution and the TensorDict modules of ``ember.rl.tensordict.nn``."""
from ..tensordict.nn import (Delta, InteractionType, NormalParamExtractor,
                             ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential,
                             TensorDictModule, TensorDictModuleBase, TensorDictSequential,
                             set_interaction_type)
from .actors import Actor, ProbabilisticActor, QValueActor, QValueModule, ValueOperator
from .distributions import SafeTanhTransform, TanhNormal
from .exploration import (AdditiveGaussianModule, EGreedyModule, ExplorationType,
                          OrnsteinUhlenbeckProcessModule, exploration_type, set_exploration_type)
from .models import MLP, ConvNet, DuelingCnnDQNet, DuelingMlpDQNet, SquashDims

__all__ = ["MLP", "Actor", "AdditiveGaussianModule", "ConvNet", "Delta", "DuelingCnnDQNet",
           "DuelingMlpDQNet", "EGreedyModule", "ExplorationType", "InteractionType",
           "NormalParamExtractor", "OrnsteinUhlenbeckProcessModule", "ProbabilisticActor",
           "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential",
           "QValueActor", "QValueModule", "SafeTanhTransform", "SquashDims", "TanhNormal",
           "TensorDictModule", "TensorDictModuleBase", "TensorDictSequential", "ValueOperator",
           "exploration_type", "set_exploration_type", "set_interaction_type"]
