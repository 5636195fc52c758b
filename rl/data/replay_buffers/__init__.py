"""``ember.rl.data.replay_buffers``: replay buffers and their storages, samplers and writers
(torchrl's ``torchrl.data.replay_buffers``)."""
from .prioritized import PrioritizedSampler
from .replay_buffers import (PrioritizedReplayBuffer, ReplayBuffer,
                             TensorDictPrioritizedReplayBuffer, TensorDictReplayBuffer)
from .samplers import RandomSampler, Sampler, SamplerWithoutReplacement
from .segment_tree import MinSegmentTree, SumSegmentTree
from .slice import SliceSampler
from .storages import LazyMemmapStorage, LazyTensorStorage, ListStorage, Storage, TensorStorage
from .writers import RoundRobinWriter, TensorDictRoundRobinWriter, Writer

__all__ = ["LazyMemmapStorage", "LazyTensorStorage", "ListStorage", "MinSegmentTree",
           "PrioritizedReplayBuffer", "PrioritizedSampler", "RandomSampler", "ReplayBuffer",
           "RoundRobinWriter", "Sampler", "SamplerWithoutReplacement", "SliceSampler", "Storage",
           "SumSegmentTree", "TensorDictPrioritizedReplayBuffer", "TensorDictReplayBuffer",
           "TensorDictRoundRobinWriter", "TensorStorage", "Writer"]
