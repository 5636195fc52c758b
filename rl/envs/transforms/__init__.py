"""``ember.rl.envs.transforms``: ``TransformedEnv`` and the env transforms (torchrl's names and
signatures). See ``_base.py`` for how a transform changes data and specs.

    >>> from ember.rl.envs import GymEnv
    >>> from ember.rl.envs.transforms import (Compose, DoubleToFloat, ObservationNorm, RewardSum,
    ...                                       StepCounter, TransformedEnv)
    >>> env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(
    ...     ObservationNorm(in_keys=["observation"], standard_normal=True), StepCounter(50),
    ...     RewardSum()))
    >>> env.set_seed(0)
    0
    >>> env.transform[0].init_stats(200)
    >>> ro = env.rollout(60, break_when_any_done=False)
    >>> int(ro["next", "step_count"].numpy().max())
    50
"""
from ._base import Compose, Transform, TransformedEnv
from .counters import RewardSum, StepCounter
from .dtype import DoubleToFloat
from .frames import CatFrames
from .image import GrayScale, Resize, ToTensorImage
from .norm import ObservationNorm, RewardScaling, VecNorm

__all__ = ["CatFrames", "Compose", "DoubleToFloat", "GrayScale", "ObservationNorm", "Resize",
           "RewardScaling", "RewardSum", "StepCounter", "ToTensorImage", "Transform",
           "TransformedEnv", "VecNorm"]
