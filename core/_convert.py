"""What Tensor and Module share about moving and casting: the ``to(...)`` argument forms and
the shorthands ``cpu() cuda() float() double() half() bfloat16()``, each defined once in
terms of ``self.to``."""
from __future__ import annotations

from . import _backend as B
from . import dtypes as D


def parse_to_args(args, device=None, dtype=None):
    """``(device, dtype)`` from ``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or
    ``to(tensor)`` positional forms (a tensor gives both of its own)."""
    from ._tensor import Tensor

    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, (str, B.device)) and not (isinstance(a, str) and a == "bfloat16"):
            device = a
        elif isinstance(a, int) and not isinstance(a, bool):
            device = a
        else:
            dtype = a
    return device, dtype


class Convertible:
    """Mixin: the conversion shorthands of Tensor and Module."""

    __slots__ = ()

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        if isinstance(device, (str, B.device)):
            return self.to(device)
        return self.to(B.device("cuda", 0 if device is None else device))

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def half(self):
        return self.to(D.float16)

    def bfloat16(self):
        return self.to("bfloat16")
