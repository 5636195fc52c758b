"""`ember.nn.modules.instancenorm`: the module path torch code imports from; the classes live in normalization.py."""
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
