"""Memory formats: ``ember.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format``.

They are honoured as strides, as in torch: ``x.contiguous(memory_format=ember.channels_last)``
keeps the (N, C, H, W) shape and lays the data out as N, H, W, C in memory, so
``x.is_contiguous(memory_format=ember.channels_last)`` is True. Ops accept any strides; none
runs faster on one layout yet, so ``channels_last`` changes memory order only.
"""
from __future__ import annotations

from . import _backend as B


class memory_format:
    __slots__ = ("name", "_perm")

    def __init__(self, name, perm=None):
        self.name, self._perm = name, perm

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1))


def _check(fmt, ndim):
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be an ember memory format (ember.channels_last, "
                        f"...), got {fmt!r}")
    if fmt._perm is not None and len(fmt._perm) != ndim:
        raise RuntimeError(f"required rank {len(fmt._perm)} tensor to use {fmt!r} format, got "
                           f"rank {ndim}")


def laid_out(arr, fmt, copy=False):
    """``arr`` with the memory order ``fmt`` asks for (a copy only where the order differs,
    or always with ``copy``)."""
    if fmt is None or fmt is preserve_format:
        return arr.copy(order="K") if copy else arr
    _check(fmt, arr.ndim)
    xp = B.namespace(arr)
    if fmt is contiguous_format:
        return arr.copy() if copy else xp.ascontiguousarray(arr)
    if is_laid_out(arr, fmt) and not copy:
        return arr
    perm = fmt._perm
    inv = [perm.index(i) for i in range(len(perm))]
    return xp.ascontiguousarray(arr.transpose(perm)).transpose(inv)


def is_laid_out(arr, fmt):
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return bool(arr.flags.c_contiguous)
    _check(fmt, arr.ndim)
    return bool(arr.transpose(fmt._perm).flags.c_contiguous)
