"""`ember.nn.modules.padding`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,  # noqa: F401
                       ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d,
                       ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                       ZeroPad1d, ZeroPad2d, ZeroPad3d)
