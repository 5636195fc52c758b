"""``ember.rl.envs``: tensor specs, the TensorDict environment API, gymnasium environments,
batched environments (``SerialEnv``, ``ParallelEnv``) and env transforms (``TransformedEnv``).

    >>> from ember.rl.envs import GymEnv, SerialEnv, check_env_specs
    >>> env = GymEnv("Pendulum-v1")
    >>> env.set_seed(0)
    0
    >>> check_env_specs(env)
    True
    >>> env.rollout(10)["next", "observation"].shape
    (10, 3)
    >>> benv = SerialEnv(4, lambda: GymEnv("CartPole-v1"))
    >>> benv.rollout(100, break_when_any_done=False).batch_size
    (4, 100)
"""
from .batched import SerialEnv
from .common import EnvBase, check_env_specs, step_mdp
from .gym import GymEnv, space_to_spec
from .parallel import ParallelEnv
from .specs import (Binary, Bounded, Categorical, Composite, MultiCategorical, OneHot, TensorSpec,
                    Unbounded)

_TRANSFORMS = ("CatFrames", "Compose", "DoubleToFloat", "GrayScale", "ObservationNorm", "Resize",
               "RewardScaling", "RewardSum", "StepCounter", "ToTensorImage", "Transform",
               "TransformedEnv", "VecNorm")


def __getattr__(name):
    """The transforms load on first use (they import ``ember.nn``)."""
    if name in _TRANSFORMS or name == "transforms":
        import importlib
        mod = importlib.import_module(f"{__name__}.transforms")
        return mod if name == "transforms" else getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Binary", "Bounded", "CatFrames", "Categorical", "Compose", "Composite",
           "DoubleToFloat", "EnvBase", "GrayScale", "GymEnv", "MultiCategorical", "ObservationNorm",
           "OneHot", "ParallelEnv", "Resize", "RewardScaling", "RewardSum", "SerialEnv",
           "StepCounter", "TensorSpec", "ToTensorImage", "Transform", "TransformedEnv", "Unbounded",
           "VecNorm", "check_env_specs", "space_to_spec", "step_mdp"]
