"""ember.rl: TensorDict, environments, collectors, replay buffers and RL losses.

Available now: ``TensorDict`` (``ember.rl.tensordict``), the TensorDict modules
(``ember.rl.tensordict.nn``, also under ``ember.rl.modules``) and the value estimators
(``ember.rl.objectives.value.functional``).
"""
from .tensordict import NonTensorData, NonTensorStack, TensorDict, cat, stack

__all__ = ["NonTensorData", "NonTensorStack", "TensorDict", "cat", "stack"]
