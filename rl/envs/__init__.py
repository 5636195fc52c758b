"""``ember.rl.envs``: tensor specs, the TensorDict environment API, gymnasium environments and
batched environments.

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
from .specs import (Binary, Bounded, Categorical, Composite, MultiCategorical, OneHot, TensorSpec,
                    Unbounded)

__all__ = ["Binary", "Bounded", "Categorical", "Composite", "EnvBase", "GymEnv", "MultiCategorical",
           "OneHot", "SerialEnv", "TensorSpec", "Unbounded", "check_env_specs", "space_to_spec",
           "step_mdp"]
