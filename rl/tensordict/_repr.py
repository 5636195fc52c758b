"""The compact repr of a TensorDict, as tensordict prints it::

    TensorDict(batch_size=[3], device=cpu, fields={a: f32[4], b: {c: i64[]}})

Each field shows its dtype and its shape after the batch dims; a sub-TensorDict shows its
fields in braces (and its own batch size when it has more batch dims). When the one-line
form is longer than 80 characters, each top-level field gets its own line.
"""
from __future__ import annotations

import numpy as np

from ember._tensor import Tensor

from ._nontensor import NonTensorData, NonTensorStack

_SHORT = {"bool": "bool", "float16": "f16", "bfloat16": "bf16", "float32": "f32",
          "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "complex64": "c64", "complex128": "c128"}
WIDTH = 80


def _dims(shape):
    return "[" + ",".join(str(int(s)) for s in shape) + "]"


def _field(v, nb):
    if isinstance(v, Tensor):
        name = np.dtype(v.dtype).name
        return _SHORT.get(name, name) + _dims(v.array.shape[nb:])
    if isinstance(v, NonTensorData):
        return type(v.data).__name__
    if isinstance(v, NonTensorStack):
        return "stack[" + ",".join(sorted({type(x).__name__ for x in v.objects.flat})) + "]"
    inner = ", ".join(f"{k}: {_field(x, v.batch_dims)}" for k, x in v._tensordict.items())
    if v.batch_dims > nb:
        inner = f"batch_size={_dims(v.batch_size)}" + (", " + inner if inner else "")
    return "{" + inner + "}"


def td_repr(td):
    head = f"batch_size={_dims(td.batch_size)}"
    if td.device is not None:
        head += f", device={td.device}"
    fields = [f"{k}: {_field(v, td.batch_dims)}" for k, v in td._tensordict.items()]
    name = type(td).__name__
    one = f"{name}({head}, fields={{{', '.join(fields)}}})"
    if len(one) <= WIDTH or not fields:
        return one
    body = ",\n    ".join(fields)
    return f"{name}({head}, fields={{\n    {body}}})"
