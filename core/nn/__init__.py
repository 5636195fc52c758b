"""``ember.nn``: modules, parameters, initialisation and the functional ops.

    >>> import ember
    >>> from ember import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.Flatten())
    >>> [k for k in net.state_dict()]
    ['0.weight', '0.bias']
"""
from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter  # noqa: F401


def __getattr__(name):
    """``ember.nn.utils`` and ``ember.nn.parallel`` load on first use."""
    if name in ("utils", "parallel"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
