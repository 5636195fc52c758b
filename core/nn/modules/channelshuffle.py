"""`ember.nn.modules.channelshuffle`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import ChannelShuffle  # noqa: F401
