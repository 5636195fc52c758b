"""`ember.nn.modules.batchnorm`: the module path torch code imports from; the classes live in normalization.py."""
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase  # noqa: F401
