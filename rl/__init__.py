"""ember.rl: TensorDict, environments, collectors, replay buffers and RL losses.

Available now: ``TensorDict`` (``ember.rl.tensordict``), the TensorDict modules
(``ember.rl.tensordict.nn``, also under ``ember.rl.modules``), specs and gymnasium
environments (``ember.rl.envs``: ``GymEnv``, ``SerialEnv``, ``check_env_specs``) and the
value estimators (``ember.rl.objectives.value.functional``). Submodules load on first use.
"""
import importlib as _importlib

from .tensordict import NonTensorData, NonTensorStack, TensorDict, cat, stack

__all__ = ["NonTensorData", "NonTensorStack", "TensorDict", "cat", "stack"]

_SUBMODULES = ("envs", "modules", "objectives", "tensordict")


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
