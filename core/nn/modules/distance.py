"""`ember.nn.modules.distance`: the module path torch code imports from; the classes live in sampling.py."""
from .sampling import CosineSimilarity, PairwiseDistance  # noqa: F401
