"""How shared tensors cross process boundaries: by handle, through multiprocessing's pickler.

``multiprocessing`` pickles everything it sends (queue items, pipe messages, pool tasks and
results, a spawned process's arguments) with ``multiprocessing.reduction.ForkingPickler``.
Registered here for the Tensor classes, a reducer sends a tensor whose array lives in a
shared segment as its usual rebuild call with the array replaced by a handle: the segment's
file descriptor (``multiprocessing.reduction.DupFd``: inherited by a starting child, or passed
over a Unix socket with ``SCM_RIGHTS`` by multiprocessing's resource sharer) and the view's
offset, shape, strides and dtype. The receiver maps the same memory (once per segment per
process). Tensors not in shared memory, and every ordinary ``pickle.dumps`` (``ember.save``,
``copy.deepcopy``), still copy their data.

As with torch's file-descriptor strategy, a sending process must stay alive until the
receiver has taken the tensor (the descriptor is fetched from the sender when the message is
unpickled); after that the two are independent.
"""
from __future__ import annotations

import pickle
import weakref
from multiprocessing import context
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from ._sharing import attach, segment_of

_registered: set = set()
_child_fds: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _dup_fd(fd):
    """``DupFd(fd)``, made once per descriptor for a starting child: the spawn launcher
    refuses a descriptor listed twice (several tensors of one segment in the arguments)."""
    popen = context.get_spawning_popen()
    if popen is None:
        return DupFd(fd)
    per_child = _child_fds.setdefault(popen, {})
    if fd not in per_child:
        per_child[fd] = DupFd(fd)
    return per_child[fd]


class _SharedArray:
    """Stands in for a shared array inside a tensor's rebuild arguments."""

    __slots__ = ("arr", "seg")

    def __init__(self, arr, seg):
        self.arr, self.seg = arr, seg

    def __reduce__(self):
        a, m = self.arr, self.seg
        offset = a.__array_interface__["data"][0] - m.addr
        return (_rebuild_array, (_dup_fd(m.fd), m.token, m.size, offset, a.shape, a.strides,
                                 a.dtype, bool(a.flags.writeable)))


def _rebuild_array(dupfd, token, size, offset, shape, strides, dtype, writeable):
    m = attach(dupfd.detach(), token, size)
    a = np.ndarray(shape, dtype, buffer=m, offset=offset, strides=strides)
    if not writeable:
        a.flags.writeable = False
    return a


def _reduce_tensor(t):
    rv = t.__reduce_ex__(pickle.DEFAULT_PROTOCOL)
    arr = t.array
    if type(arr) is not np.ndarray:
        return rv
    seg = segment_of(arr)
    if seg is None:
        return rv
    args = rv[1]
    new = tuple(_SharedArray(arr, seg) if a is arr else a for a in args)
    if not any(isinstance(a, _SharedArray) for a in new):
        raise pickle.PicklingError(
            f"ember.multiprocessing: {type(t).__name__}.__reduce_ex__ does not pass the "
            "tensor's array through, so its shared memory cannot be sent by handle")
    return (rv[0], new) + tuple(rv[2:])


def register_type(cls):
    """Send instances of ``cls`` (a Tensor class) by handle when they are shared."""
    if cls not in _registered:
        ForkingPickler.register(cls, _reduce_tensor)
        _registered.add(cls)


def register_defaults():
    from ember import Tensor
    from ember.nn.parameter import Buffer, Parameter

    for cls in (Tensor, Parameter, Buffer):
        register_type(cls)
