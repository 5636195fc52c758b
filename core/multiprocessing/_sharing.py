"""Tensor storage in shared memory: ``share_memory_``, ``is_shared``, ``share_memory(module)``.

A shared segment is an anonymous memory file (``memfd_create``; where that is missing, a file
in ``/dev/shm`` or the temp folder that is unlinked the moment it is created) mapped with
``MAP_SHARED``. It never has a name on disk, so nothing can leak into ``/dev/shm``: the kernel
frees the memory when the last file descriptor and the last mapping of it are gone, in
whichever process that happens, and also when processes are killed. Each process holds one
``_Mapping`` per segment (an ``mmap`` that keeps the descriptor open so that it can pass the
segment on); the mapping closes its descriptor when the last array over it is freed.

Tensors move to a segment by copying their data once and swapping their array
(``tensor.array = view``): the same Tensor object, with its shape, dtype, strides, grad and
autograd identity, now reads and writes shared memory. Tensors that shared one buffer before
(views of one array) share one region of the segment afterwards when they are moved together
(``share_memory(module)`` moves all parameters, buffers and grads together).

    >>> import ember
    >>> from ember.multiprocessing import is_shared, share_memory_
    >>> t = ember.arange(6.0).reshape(2, 3).t()
    >>> share_memory_(t) is t, is_shared(t), t.stride()
    (True, True, (1, 3))
"""
from __future__ import annotations

import mmap
import os
import sys
import tempfile
import threading
import uuid
import weakref

import numpy as np

_ALIGN = 64
_lock = threading.Lock()
_attached: "weakref.WeakValueDictionary[str, _Mapping]" = weakref.WeakValueDictionary()
USE_MEMFD = hasattr(os, "memfd_create")


def _reset_lock():  # a forked child must not inherit the lock held by another thread
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lock)


class _Mapping(mmap.mmap):
    """One shared segment mapped into this process. ``fd``: its open descriptor (closed when
    this mapping is freed); ``token``: the segment's identity in every process; ``addr``: the
    address of its first byte here."""


def _anonymous_fd(nbytes):
    if USE_MEMFD:
        fd = os.memfd_create("ember-shm", os.MFD_CLOEXEC)
    else:
        d = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
            else tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix="ember-mp-", dir=d)
        os.unlink(path)  # the descriptor keeps the memory; the name is gone at once
    try:
        os.ftruncate(fd, nbytes)
    except OSError:
        os.close(fd)
        raise
    return fd


_TRACKFD = {"trackfd": False} if sys.version_info >= (3, 13) else {}  # no internal dup


def _map(fd, size, token):
    try:
        m = _Mapping(fd, size, **_TRACKFD)
    except (OSError, ValueError):
        os.close(fd)
        raise
    m.fd, m.token, m.size = fd, token, size
    probe = np.frombuffer(m, np.uint8, 1)
    m.addr = probe.__array_interface__["data"][0]
    del probe
    weakref.finalize(m, os.close, fd)
    _attached[token] = m
    return m


def new_segment(nbytes):
    """A fresh shared segment of ``nbytes`` (at least 1) mapped here."""
    size = max(int(nbytes), 1)
    try:
        fd = _anonymous_fd(size)
    except OSError as e:
        raise RuntimeError(f"ember.multiprocessing: could not create a shared-memory segment "
                           f"of {size} bytes ({e})") from e
    with _lock:
        return _map(fd, size, uuid.uuid4().hex)


def attach(fd, token, size):
    """The mapping of segment ``token`` in this process, made from ``fd`` (which it then
    owns) unless the segment is mapped here already (``fd`` is then closed)."""
    with _lock:
        m = _attached.get(token)
        if m is not None:
            if fd != m.fd:
                os.close(fd)
            return m
        return _map(fd, size, token)


def segment_of(arr):
    """The ``_Mapping`` that ``arr`` (a numpy array) lives in, or None."""
    b = arr
    while isinstance(b, np.ndarray):
        b = b.base
    if isinstance(b, memoryview):
        b = b.obj
    return b if isinstance(b, _Mapping) else None


def _address(arr):
    return arr.__array_interface__["data"][0]


def _extent(arr):
    """Byte offsets (lo, hi) of the memory ``arr``'s elements span, relative to element 0."""
    lo = hi = 0
    for n, s in zip(arr.shape, arr.strides):
        step = (n - 1) * s
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + arr.itemsize


def _root(arr):
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _check(t, fn):
    from ember import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: expected an ember Tensor, got {type(t).__name__}")
    if type(t.array) is not np.ndarray:
        raise RuntimeError(f"{fn}: only CPU tensors can live in shared memory, got a tensor on "
                           f"{t.device} (move it with .cpu() first; CUDA IPC is not supported)")


def _move(tensors):
    """Copy the storage of ``tensors`` (CPU, not yet shared) into one new segment and swap
    their arrays. Tensors over one buffer keep sharing one region of it."""
    groups = {}  # id(root array) -> [tensor, ...]
    for t in tensors:
        groups.setdefault(id(_root(t.array)), []).append(t)
    plan, total = [], 0
    for members in groups.values():
        empty = [t for t in members if t.array.size == 0]
        full = [t for t in members if t.array.size]
        if full:
            spans = [(_address(t.array) + lo, _address(t.array) + hi)
                     for t in full for lo, hi in [_extent(t.array)]]
            start = min(s for s, _ in spans)
            end = max(e for _, e in spans)
            total += start % _ALIGN  # keep each array's alignment as it was
            plan.append((full, total - start))
            total += end - start
            total = -(-total // _ALIGN) * _ALIGN
        for t in empty:
            plan.append(([t], None))
    m = new_segment(total)
    for members, shift in plan:
        for t in members:
            a = t.array
            if shift is None:
                view = np.ndarray(a.shape, a.dtype, buffer=m, offset=0)
            else:
                view = np.ndarray(a.shape, a.dtype, buffer=m,
                                  offset=_address(a) + shift, strides=a.strides)
                np.copyto(view, a, casting="no")
            if not a.flags.writeable:
                view.flags.writeable = False
            t.array = view
    return m


def share_memory_(tensor):
    """Move ``tensor``'s storage into shared memory, in place, and return ``tensor``.

    The data is copied once; afterwards the same Tensor object (a Parameter stays a
    Parameter; ``grad``, ``requires_grad`` and the graph are untouched) reads and writes the
    shared segment, and sending it to another process through an ``ember.multiprocessing``
    queue, pipe, pool or process argument sends a handle, not the data: an in-place change
    there is seen here. A no-op for a tensor that is shared already. Other tensors that were
    views of the same array keep the old memory. CPU tensors only (RuntimeError otherwise).
    """
    _check(tensor, "share_memory_")
    from ._reductions import register_type

    register_type(type(tensor))
    if segment_of(tensor.array) is None:
        _move([tensor])
    return tensor


def is_shared(tensor):
    """True when ``tensor``'s storage is in a shared segment (see ``share_memory_``)."""
    from ember import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_shared: expected an ember Tensor, got {type(tensor).__name__}")
    return type(tensor.array) is np.ndarray and segment_of(tensor.array) is not None


def share_memory(module):
    """Move every parameter, buffer and existing gradient of ``module`` (recursively) into
    shared memory, in place, all in one segment; returns ``module``. As torch's
    ``Module.share_memory``: the Hogwild setup, before the processes start."""
    from ember.nn import Module

    if not isinstance(module, Module):
        raise TypeError(f"share_memory: expected an ember.nn.Module, got "
                        f"{type(module).__name__}")
    from ._reductions import register_type

    todo, seen = [], set()
    cands = []
    for p in module.parameters():
        cands.append(p)
        if p.grad is not None:
            cands.append(p.grad)
    cands.extend(module.buffers())
    for t in cands:
        if id(t) in seen:
            continue
        seen.add(id(t))
        _check(t, "share_memory")
        register_type(type(t))
        if segment_of(t.array) is None:
            todo.append(t)
    if todo:
        _move(todo)
    return module
