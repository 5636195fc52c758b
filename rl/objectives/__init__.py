"""``ember.rl.objectives``: RL losses with torchrl's names, arguments and outputs (each
returns a TensorDict whose ``loss_*`` entries are summed for backward), the target-network
updaters and the value estimators (``ember.rl.objectives.value``: keyed modules over the
tensor functions of ``value.functional``)."""
from . import value
from .a2c import A2CLoss
from .common import LossModule
from .ddpg import DDPGLoss
from .dqn import DQNLoss
from .ppo import ClipPPOLoss, KLPENPPOLoss, PPOLoss
from .sac import SACLoss
from .td3 import TD3Loss
from .utils import (HardUpdate, SoftUpdate, TargetNetUpdater, ValueEstimators,
                    default_value_kwargs, distance_loss)

__all__ = ["A2CLoss", "ClipPPOLoss", "DDPGLoss", "DQNLoss", "HardUpdate", "KLPENPPOLoss",
           "LossModule", "PPOLoss", "SACLoss", "SoftUpdate", "TD3Loss", "TargetNetUpdater",
           "ValueEstimators", "default_value_kwargs", "distance_loss", "value"]
