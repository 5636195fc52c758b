"""Batches from worker processes through shared memory: arrays travel as segment names.

A worker allocates each large output array (collation stacks straight into it) in a file
under ``/dev/shm`` (tmpfs: memory, not disk) and sends only ``(name, shape, dtype)``; the
main process maps the file and wraps the mapping as a Tensor: no pickled copy of the payload.

Segments are recycled: when every array of a batch has been freed in the main process, the
mapping's finalizer queues the segment name, the loader passes it back to its worker, and
the worker reuses the segment for a later batch. Writing into pages that are already there
is about four times faster than into fresh ones (the kernel zeroes and maps every new page).
Names are unlinked when the workers stop; a mapping outlives its name, so batches the user
still holds stay valid.

When ``/dev/shm`` is missing or too small (Docker's default is 64 MB) the loader says so
and uses file-backed buffers in the temp folder instead of dying with a bus error.

    >>> import numpy as np
    >>> from ember.data.shm import Arena, shm_dir, unpack
    >>> arena = Arena(shm_dir(), "ember-doc")
    >>> a = arena.alloc((64, 64), np.float32); a[:] = 1
    >>> meta = arena.pack({"x": a, "y": [1, 2]})
    >>> out = unpack(meta)
    >>> out["x"].sum(), out["y"]
    (np.float32(4096.0), [1, 2])
    >>> arena.close()
"""
from __future__ import annotations

import collections
import glob
import mmap
import os
import shutil
import tempfile
import warnings
import weakref

import numpy as np

INLINE_BYTES = 1 << 14  # arrays smaller than this are pickled with the message


def shm_dir():
    """``/dev/shm`` when it exists and is writable, else None."""
    d = "/dev/shm"
    return d if os.path.isdir(d) and os.access(d, os.W_OK) else None


def free_bytes(path):
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def choose_dir(needed_bytes, requested=None):
    """Where worker buffers go: ``requested`` if given, else /dev/shm if it has room for
    ``needed_bytes``, else the temp folder (with a warning that says what to do)."""
    if requested is not None:
        return requested
    d = shm_dir()
    if d is not None and free_bytes(d) >= needed_bytes:
        return d
    tmp = tempfile.gettempdir()
    have = "missing" if d is None else f"{free_bytes(d) / 2**20:.0f} MB free"
    warnings.warn(
        f"ember.data: shared memory (/dev/shm) is {have}, but the DataLoader expects to need "
        f"about {needed_bytes / 2**20:.0f} MB for batches in flight; using file-backed buffers "
        f"in {tmp} instead (slower). To fix: enlarge /dev/shm (docker run --shm-size=8g, or "
        "mount -o remount,size=8G /dev/shm), or lower batch_size, num_workers or "
        "prefetch_factor.", RuntimeWarning, stacklevel=3)
    return tmp


class Arena:
    """Worker side: allocates arrays in named segment files, packs batches for sending, and
    reuses the segments the main process has released."""

    def __init__(self, directory, prefix, fallback=None):
        self.dir, self.prefix, self.fallback = directory, prefix, fallback
        self.count = 0
        self.owned = {}  # id(array) -> (array, name) allocated for the batch being built
        self.free = []   # [(size, name, mmap)] segments the main process released
        self.busy = {}   # name -> (size, mmap): sent, or being filled
        self.paths = {}  # name -> path of every segment made
        self.warned = False

    def _new_segment(self, nbytes):
        d = self.dir
        if self.fallback is not None and free_bytes(d) < nbytes + (16 << 20):
            if not self.warned:
                self.warned = True
                warnings.warn(f"ember.data: {d} is full; worker buffers go to "
                              f"{self.fallback} from now on (enlarge /dev/shm to avoid this)",
                              RuntimeWarning)
            d = self.dir = self.fallback
        self.count += 1
        name = f"{self.prefix}-{self.count}"
        path = os.path.join(d, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, nbytes)
            mm = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        return name, path, mm

    def _segment(self, nbytes):
        best = None
        for k, (size, name, mm) in enumerate(self.free):  # smallest free one that fits
            if nbytes <= size <= 2 * nbytes + (1 << 20) and \
                    (best is None or size < self.free[best][0]):
                best = k
        if best is not None:
            size, name, mm = self.free.pop(best)
        else:
            size = nbytes
            name, path, mm = self._new_segment(nbytes)
            self.paths[name] = path
        self.busy[name] = (size, mm)
        return name, mm

    def alloc(self, shape, dtype):
        """An array of ``shape``/``dtype`` living in a segment of its own (small arrays stay
        in ordinary memory)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        n = count * dtype.itemsize
        if n < INLINE_BYTES or dtype.hasobject:
            return np.empty(shape, dtype)
        name, mm = self._segment(n)
        arr = np.frombuffer(mm, dtype, count).reshape(shape)
        self.owned[id(arr)] = (arr, name)
        return arr

    def release(self, names):
        """The main process is done with these segments: they may be refilled."""
        for name in names:
            seg = self.busy.pop(name, None)
            if seg is not None:
                self.free.append((seg[0], name, seg[1]))

    def pack(self, tree):
        """The batch with each large array replaced by a descriptor of its segment. Segments
        allocated for this batch but not sent (a collate_fn that returned a slice of its
        buffer: the slice is copied) go straight back to the free list."""
        self.sent = set()
        try:
            return self._pack(tree)
        finally:
            unsent = [name for _, name in self.owned.values() if name not in self.sent]
            self.owned.clear()
            self.release(unsent)

    def _pack(self, x):
        from ember import Tensor

        if isinstance(x, Tensor) and isinstance(x.array, np.ndarray):
            return _TensorLeaf(self._pack(x.array))
        if isinstance(x, np.ndarray):
            own = self.owned.get(id(x))
            if own is not None and own[0] is x:
                name = own[1]
                self.sent.add(name)
                return _Seg(name, os.path.dirname(self.paths[name]), x.shape, x.dtype.str)
            if x.nbytes < INLINE_BYTES or x.dtype.hasobject:
                return x
            y = self.alloc(x.shape, x.dtype)
            np.copyto(y, x)
            return self._pack(y)
        if isinstance(x, dict):
            return {k: self._pack(v) for k, v in x.items()}
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(self._pack(v) for v in x))
        if isinstance(x, (list, tuple)):
            return type(x)(self._pack(v) for v in x)
        return x

    def close(self):
        """Unlink every segment this arena made (mappings elsewhere stay valid)."""
        for path in self.paths.values():
            try:
                os.unlink(path)
            except OSError:
                pass
        self.paths.clear()
        self.free.clear()
        self.busy.clear()


class _Seg:
    __slots__ = ("name", "dir", "shape", "dtype")

    def __init__(self, name, directory, shape, dtype):
        self.name, self.dir, self.shape, self.dtype = name, directory, shape, dtype

    def __getstate__(self):
        return (self.name, self.dir, self.shape, self.dtype)

    def __setstate__(self, s):
        self.name, self.dir, self.shape, self.dtype = s


class _TensorLeaf:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __getstate__(self):
        return self.value

    def __setstate__(self, v):
        self.value = v


_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


def _open_seg(seg, released):
    path = os.path.join(seg.dir, seg.name)
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size, flags=_MAP_FLAGS)
    finally:
        os.close(fd)
    if released is None:
        os.unlink(path)  # nobody will reuse it: the name goes now, the mapping stays
    else:
        weakref.finalize(mm, released.append, seg.name)
    dtype = np.dtype(seg.dtype)
    count = int(np.prod(seg.shape, dtype=np.int64))
    return np.frombuffer(mm, dtype, count).reshape(seg.shape)


def unpack(tree, released=None, as_tensor=False, _memo=None):
    """Main side: map every segment of a packed batch. ``released``: a deque that receives
    each segment's name once all arrays over it are freed (so the worker may reuse it);
    None unlinks the segments instead. An array sent twice comes back as one array."""
    from ember import Tensor

    memo = {} if _memo is None else _memo
    if isinstance(tree, _Seg):
        arr = memo.get(tree.name)
        if arr is None:
            arr = memo[tree.name] = _open_seg(tree, released)
        return Tensor._make(arr) if as_tensor else arr
    if isinstance(tree, _TensorLeaf):
        v = unpack(tree.value, released, False, memo)
        return Tensor._make(v) if isinstance(v, np.ndarray) else v
    if isinstance(tree, dict):
        return {k: unpack(v, released, as_tensor, memo) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(unpack(v, released, as_tensor, memo) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(unpack(v, released, as_tensor, memo) for v in tree)
    return tree


def segment_names(tree, out=None):
    """The segment names in a packed batch."""
    out = [] if out is None else out
    if isinstance(tree, _Seg):
        out.append(tree.name)
    elif isinstance(tree, _TensorLeaf):
        segment_names(tree.value, out)
    elif isinstance(tree, dict):
        for v in tree.values():
            segment_names(v, out)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            segment_names(v, out)
    return out


def new_release_queue():
    return collections.deque()


def cleanup(prefix, dirs):
    """Unlink every leftover segment whose name starts with ``prefix`` in ``dirs``."""
    for d in {d for d in dirs if d}:
        for path in glob.glob(os.path.join(glob.escape(d), glob.escape(prefix) + "*")):
            try:
                os.unlink(path)
            except OSError:
                pass
