"""ember.rl: TensorDict, environments, collectors, replay buffers and RL losses.

- ``TensorDict`` (``ember.rl.tensordict``) and the TensorDict modules
  (``ember.rl.tensordict.nn``, also under ``ember.rl.modules``);
- ``ember.rl.envs``: specs, ``GymEnv`` over gymnasium (1.x autoreset handled), ``SerialEnv``,
  ``ParallelEnv`` (worker processes on shared memory), ``TransformedEnv`` and its transforms,
  ``check_env_specs``;
- ``ember.rl.collectors``: ``SyncDataCollector``, ``MultiSyncDataCollector``,
  ``split_trajectories``;
- ``ember.rl.data``: replay buffers, storages (list, tensor, memmap), samplers (random,
  without replacement, prioritized on a vectorised sum tree, slices), ``dumps``/``loads``
  without pickle;
- ``ember.rl.modules``: ``MLP``, ``ConvNet``, dueling Q-nets, ``Actor``,
  ``ProbabilisticActor``, ``ValueOperator``, ``QValueActor``, ``EGreedyModule``,
  ``AdditiveGaussianModule``, ``OrnsteinUhlenbeckProcessModule``;
- ``ember.rl.objectives``: ``ClipPPOLoss``, ``KLPENPPOLoss``, ``A2CLoss``, ``DQNLoss``,
  ``SACLoss``, ``TD3Loss``, ``DDPGLoss``, ``SoftUpdate``/``HardUpdate``, the keyed value
  estimators (``GAE``, ``TD0Estimator``, ``TD1Estimator``, ``TDLambdaEstimator``) and their
  plain tensor functions (``ember.rl.objectives.value.functional``).

Submodules load on first use.
"""
import importlib as _importlib

from .tensordict import NonTensorData, NonTensorStack, TensorDict, cat, stack

__all__ = ["NonTensorData", "NonTensorStack", "TensorDict", "cat", "stack"]

_SUBMODULES = ("collectors", "data", "envs", "modules", "objectives", "tensordict")


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
