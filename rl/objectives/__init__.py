"""``ember.rl.objectives``: RL losses and value estimators. For now the value estimators as
tensor functions (``ember.rl.objectives.value.functional``)."""
from . import value

__all__ = ["value"]
