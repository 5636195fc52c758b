"""`ember.nn.modules.upsampling`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
