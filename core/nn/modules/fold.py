"""`ember.nn.modules.fold`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import Fold, Unfold  # noqa: F401
