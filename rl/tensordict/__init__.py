"""``ember.rl.tensordict``: TensorDict, a dict of tensors that share leading batch dims, with
nested keys, batch indexing, stack/cat, memory maps and non-tensor data; and (in
``ember.rl.tensordict.nn``) the modules that read and write TensorDicts.

    >>> import ember
    >>> from ember.rl.tensordict import TensorDict
    >>> td = TensorDict({"obs": ember.randn(8, 4), "done": ember.zeros(8, 1, dtype=ember.bool)},
    ...                 batch_size=[8])
    >>> td
    TensorDict(batch_size=[8], fields={obs: f32[4], done: bool[1]})
"""
from ._base import TensorDict, is_tensor_collection
from ._funcs import cat, stack
from ._nontensor import NonTensorData, NonTensorStack, is_non_tensor
from ._utils import unravel_key

__all__ = ["NonTensorData", "NonTensorStack", "TensorDict", "cat", "is_non_tensor",
           "is_tensor_collection", "stack", "unravel_key"]
