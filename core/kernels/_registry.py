"""The registry: op name -> (numpy reference, CPU kernel, CUDA kernel), looked up by device."""
from __future__ import annotations

from .. import _backend as B
from . import _jit


class Kernel:
    """One op's implementations. ``reference`` (numpy, always present) is the definition the
    others are tested against; ``cpu`` (a numba-backed function, or None) takes numpy arrays;
    ``cuda`` (cupy ElementwiseKernel/RawKernel-backed, or None) takes cupy arrays. All three
    take the same arguments and return the same results."""

    __slots__ = ("name", "reference", "cpu", "cuda", "doc")

    def __init__(self, name, reference, cpu=None, cuda=None):
        self.name, self.reference, self.cpu, self.cuda = name, reference, cpu, cuda
        self.doc = (reference.__doc__ or "").strip().split("\n")[0]

    def for_array(self, array):
        """The implementation for ``array``'s device: compiled where one exists and is
        enabled, else the reference."""
        if B.is_cuda_array(array):
            return self.cuda if self.cuda is not None else self.reference
        if self.cpu is not None and _jit.available():
            return self.cpu
        return self.reference

    def __repr__(self):
        have = [k for k in ("cpu", "cuda") if getattr(self, k) is not None]
        return f"Kernel({self.name!r}, compiled for {', '.join(have) or 'none'})"


_KERNELS: dict[str, Kernel] = {}


def register(name, *, reference, cpu=None, cuda=None) -> Kernel:
    """Add op ``name``; a name is registered once."""
    if name in _KERNELS:
        raise ValueError(f"ember.kernels: {name!r} is already registered")
    k = _KERNELS[name] = Kernel(name, reference, cpu, cuda)
    return k


def lookup(name) -> Kernel:
    """The ``Kernel`` entry of op ``name`` (its reference, cpu and cuda implementations)."""
    try:
        return _KERNELS[name]
    except KeyError:
        raise KeyError(f"ember.kernels: no kernel named {name!r}; registered: "
                       f"{', '.join(sorted(_KERNELS))}") from None


def get(name, array):
    """The implementation of op ``name`` for ``array``'s device (see ``Kernel.for_array``)."""
    return lookup(name).for_array(array)


def names() -> list[str]:
    return sorted(_KERNELS)
