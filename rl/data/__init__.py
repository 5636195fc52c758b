"""``ember.rl.data``: replay buffers (torchrl's ``torchrl.data``): ``ReplayBuffer``,
``TensorDictReplayBuffer`` and their prioritized twins, with ``ListStorage``,
``LazyTensorStorage``, ``LazyMemmapStorage``; ``RandomSampler``, ``SamplerWithoutReplacement``,
``PrioritizedSampler``, ``SliceSampler``; ``RoundRobinWriter``, ``TensorDictRoundRobinWriter``.

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> from ember.rl.data import TensorDictPrioritizedReplayBuffer, LazyTensorStorage
    >>> rb = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(64),
    ...                                        batch_size=8)
    >>> _ = rb.extend(TensorDict({"obs": ember.randn(16, 4)}, [16]))
    >>> batch = rb.sample()
    >>> batch.set("td_error", ember.rand(8))
    TensorDict(...)
    >>> rb.update_tensordict_priority(batch)
    >>> sorted(batch.keys())
    ['_weight', 'index', 'obs', 'td_error']
"""
from .replay_buffers import (LazyMemmapStorage, LazyTensorStorage, ListStorage, MinSegmentTree,
                             PrioritizedReplayBuffer, PrioritizedSampler, RandomSampler,
                             ReplayBuffer, RoundRobinWriter, Sampler, SamplerWithoutReplacement,
                             SliceSampler, Storage, SumSegmentTree,
                             TensorDictPrioritizedReplayBuffer, TensorDictReplayBuffer,
                             TensorDictRoundRobinWriter, TensorStorage, Writer)

__all__ = ["LazyMemmapStorage", "LazyTensorStorage", "ListStorage", "MinSegmentTree",
           "PrioritizedReplayBuffer", "PrioritizedSampler", "RandomSampler", "ReplayBuffer",
           "RoundRobinWriter", "Sampler", "SamplerWithoutReplacement", "SliceSampler", "Storage",
           "SumSegmentTree", "TensorDictPrioritizedReplayBuffer", "TensorDictReplayBuffer",
           "TensorDictRoundRobinWriter", "TensorStorage", "Writer"]
