"""torch's legacy typed constructors: ``FloatTensor``, ``LongTensor``, ...

Each is a factory that makes a plain ``Tensor`` of its dtype, from sizes or from data, and an
``isinstance`` test for CPU tensors of that dtype (as ``isinstance(x, torch.FloatTensor)``):

    >>> import ember
    >>> ember.FloatTensor(2, 3).shape, ember.LongTensor([1, 2]).dtype
    ((2, 3), dtype('int64'))
    >>> isinstance(ember.zeros(2), ember.FloatTensor)
    True
"""
from __future__ import annotations

from . import dtypes as D
from ._tensor import Tensor


class _TypedTensorMeta(type):
    def __call__(cls, *args, device=None):
        return Tensor(*args, dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and not obj.is_cuda


def _typed(name, dtype):
    return _TypedTensorMeta(name, (), {"dtype": dtype, "__doc__": (
        f"``{name}(*sizes)`` or ``{name}(data)``: a {dtype} tensor (torch's legacy constructor).")})


FloatTensor = _typed("FloatTensor", D.float32)
DoubleTensor = _typed("DoubleTensor", D.float64)
HalfTensor = _typed("HalfTensor", D.float16)
BFloat16Tensor = _typed("BFloat16Tensor", D.bfloat16)
LongTensor = _typed("LongTensor", D.int64)
IntTensor = _typed("IntTensor", D.int32)
ShortTensor = _typed("ShortTensor", D.int16)
CharTensor = _typed("CharTensor", D.int8)
ByteTensor = _typed("ByteTensor", D.uint8)
BoolTensor = _typed("BoolTensor", D.bool)

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]
