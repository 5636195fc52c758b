"""`ember.nn.modules.pixelshuffle`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import PixelShuffle, PixelUnshuffle  # noqa: F401
