"""TensorDict on disk: ``memmap_``/``memmap``/``load_memmap`` and ``save``/``load``.

One directory per TensorDict (a sub-TensorDict is a sub-directory)::

    prefix/meta.json          {"format": "ember.TensorDict", "version": 1, "batch_size": [..],
                               "device": "cpu" | null, "fields": {key: field, ...}}
    prefix/<key>.memmap       the raw C-order bytes of one tensor (numpy memmap layout)
    prefix/<key>/meta.json    a sub-TensorDict

A field is ``{"kind": "tensor", "file", "dtype", "shape"}``, ``{"kind": "tensordict",
"dir"}``, ``{"kind": "nontensor", "data", "batch_size"}`` or ``{"kind": "nontensor_stack",
"items", "batch_size"}``. Non-tensor data is stored as JSON (str, numbers, bool, None, lists,
and tagged tuples, dicts, bytes and non-finite floats): nothing is pickled, so loading never
runs code. Keys that are not plain file names are stored as ``field<i>``; the manifest maps
them back. Every file is written to a temporary name and renamed into place, so a process that
has the previous version mapped keeps valid memory.

    >>> import ember, tempfile
    >>> from ember.rl import TensorDict
    >>> td = TensorDict({"obs": ember.ones(3, 2), "info": {"name": "cartpole"}}, [3])
    >>> path = tempfile.mkdtemp()
    >>> _ = td.memmap_(path)                      # tensors now live in files under path
    >>> back = TensorDict.load_memmap(path)
    >>> back["obs"].sum().item(), back["info", "name"]
    (6.0, 'cartpole')
"""
from __future__ import annotations

import base64
import json
import math
import os
import re

import numpy as np

import ember
from ember import dtypes as D
from ember._tensor import Tensor

from ._nontensor import NonTensorData, NonTensorStack
from ._utils import as_device

META = "meta.json"
FORMAT = "ember.TensorDict"
_SAFE = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,120}\Z")


class PersistOps:
    """Mixin of TensorDict: memory-mapped and saved copies on disk."""

    __slots__ = ()

    def memmap_(self, prefix, existsok=True):
        """Write every value under the directory ``prefix`` and make this TensorDict's tensors
        numpy memory maps of those files (writes to them go to disk). Tensors must be on the
        CPU. Returns self."""
        _write(self, os.fspath(prefix), memmap=True, existsok=existsok)
        return self

    def memmap(self, prefix, existsok=True):
        """A copy whose tensors are memory maps of files under ``prefix`` (this one is left
        as it is)."""
        return self.clone(recurse=False).memmap_(prefix, existsok=existsok)

    def save(self, prefix, existsok=True):
        """Write this TensorDict under the directory ``prefix`` (the ``memmap_`` layout);
        tensors on a GPU are copied to the host. This TensorDict is unchanged; returns it."""
        _write(self, os.fspath(prefix), memmap=False, existsok=existsok)
        return self

    dump = save

    @classmethod
    def load_memmap(cls, prefix):
        """The TensorDict saved under ``prefix``, its tensors memory-mapped from the files
        (read-write where the files allow it; on the CPU)."""
        return _read(cls, os.fspath(prefix), mmap=True)

    @classmethod
    def load(cls, prefix, device=None):
        """The TensorDict saved under ``prefix``, read into memory, on ``device`` (default:
        the device it was saved from)."""
        td, saved_device = _read(cls, os.fspath(prefix), mmap=False, with_device=True)
        dev = device if device is not None else saved_device
        if dev is not None and ember.device(dev).type != "cpu":
            return td.to(dev)
        if dev is not None:
            _set_device(td, ember.device(dev))
        return td


def _set_device(td, dev):
    td._device = dev
    for v in td._tensordict.values():
        if isinstance(v, PersistOps):
            _set_device(v, dev)


# ---------------------------------------------------------------------------- write
def _file_name(key, i, used):
    name = key if _SAFE.match(key) and key != META else f"field{i}"
    while name in used:
        name = f"{name}_{i}"
    used.add(name)
    return name


def _atomic_json(path, obj):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def _write(td, path, memmap, existsok):
    if os.path.exists(os.path.join(path, META)) and not existsok:
        raise FileExistsError(f"TensorDict: {path} already holds a saved TensorDict "
                              "(pass existsok=True to overwrite it)")
    os.makedirs(path, exist_ok=True)
    fields, used = {}, set()
    for i, (k, v) in enumerate(list(td._tensordict.items())):
        name = _file_name(k, i, used)
        if isinstance(v, Tensor):
            arr = v.detach().array
            if not isinstance(arr, np.ndarray):
                if memmap:
                    raise ValueError(f"TensorDict.memmap_: key {k!r} is on {v.device}; "
                                     "memory maps hold CPU tensors (call .cpu() first)")
                arr = arr.get()
            fname = name + ".memmap"
            mapped = _write_array(os.path.join(path, fname), arr)
            fields[k] = {"kind": "tensor", "file": fname, "dtype": D.name(arr.dtype),
                         "shape": list(arr.shape)}
            if memmap:
                td._tensordict[k] = Tensor._make(mapped)
        elif isinstance(v, PersistOps):
            _write(v, os.path.join(path, name), memmap, True)
            fields[k] = {"kind": "tensordict", "dir": name}
        elif isinstance(v, NonTensorData):
            fields[k] = {"kind": "nontensor", "data": _encode(v.data, k),
                         "batch_size": list(v.batch_size)}
        else:
            fields[k] = {"kind": "nontensor_stack",
                         "items": [_encode(x, k) for x in v.objects.reshape(-1)],
                         "batch_size": list(v.batch_size)}
    dev = td.device
    _atomic_json(os.path.join(path, META), {
        "format": FORMAT, "version": 1, "batch_size": list(td.batch_size),
        "device": None if dev is None else str(dev), "fields": fields})


def _write_array(path, arr):
    """Write ``arr`` to ``path`` (via a temporary file); returns a plain ndarray view of the
    file's memory map (or an empty array for zero-size tensors)."""
    tmp = f"{path}.tmp{os.getpid()}"
    if arr.size == 0:
        open(tmp, "wb").close()
        os.replace(tmp, path)
        return np.empty(arr.shape, arr.dtype)
    mm = np.memmap(tmp, dtype=arr.dtype, mode="w+", shape=arr.shape)
    mm[...] = arr
    mm.flush()
    del mm
    os.replace(tmp, path)
    return np.memmap(path, dtype=arr.dtype, mode="r+", shape=arr.shape).view(np.ndarray)


def _encode(x, key):
    if x is None or isinstance(x, (bool, int, str)):
        return int(x) if isinstance(x, int) and not isinstance(x, bool) else x
    if isinstance(x, float):
        return x if math.isfinite(x) else {"@float": repr(x)}
    if isinstance(x, np.generic) and not isinstance(x, (np.str_, np.bytes_, np.void)):
        return _encode(x.item(), key)
    if isinstance(x, list):
        return [_encode(v, key) for v in x]
    if isinstance(x, tuple):
        return {"@tuple": [_encode(v, key) for v in x]}
    if isinstance(x, dict):
        return {"@dict": [[_encode(a, key), _encode(b, key)] for a, b in x.items()]}
    if isinstance(x, (bytes, bytearray)):
        return {"@bytes": base64.b64encode(bytes(x)).decode("ascii")}
    raise TypeError(f"TensorDict.save: non-tensor data of type {type(x).__name__} at key "
                    f"{key!r} cannot be stored without pickling; store JSON-like data "
                    "(str, int, float, bool, None, lists, tuples, dicts, bytes)")


# ---------------------------------------------------------------------------- read
def _decode(x):
    if isinstance(x, list):
        return [_decode(v) for v in x]
    if isinstance(x, dict):
        (tag, v), = x.items()
        if tag == "@tuple":
            return tuple(_decode(a) for a in v)
        if tag == "@dict":
            return {_decode(a): _decode(b) for a, b in v}
        if tag == "@bytes":
            return base64.b64decode(v)
        if tag == "@float":
            return float(v)
        raise ValueError(f"TensorDict.load: unknown tag {tag!r} in {META}")
    return x


def _dtype(name):
    dt = getattr(D, name, None)
    return np.dtype(dt if dt is not None else name)


def _plain(name, path):
    if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
        raise ValueError(f"TensorDict.load: {path}/{META} names a file outside its folder: "
                         f"{name!r}")
    return os.path.join(path, name)


def _read(cls, path, mmap, with_device=False):
    meta_path = os.path.join(path, META)
    if not os.path.exists(meta_path):
        raise FileNotFoundError(f"TensorDict.load: no saved TensorDict at {path} (expected "
                                f"{meta_path})")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    if meta.get("format") != FORMAT:
        raise ValueError(f"TensorDict.load: {meta_path} is not an ember TensorDict manifest")
    bs = tuple(int(s) for s in meta["batch_size"])
    data = {}
    for k, f in meta["fields"].items():
        kind = f["kind"]
        if kind == "tensor":
            dt, shape = _dtype(f["dtype"]), tuple(int(s) for s in f["shape"])
            file = _plain(f["file"], path)
            n = math.prod(shape)
            if n == 0:
                arr = np.empty(shape, dt)
            elif mmap:
                try:
                    arr = np.memmap(file, dtype=dt, mode="r+", shape=shape).view(np.ndarray)
                except PermissionError:
                    arr = np.memmap(file, dtype=dt, mode="r", shape=shape).view(np.ndarray)
            else:
                arr = np.fromfile(file, dtype=dt, count=n).reshape(shape)
            data[k] = Tensor._make(arr)
        elif kind == "tensordict":
            data[k] = _read(cls, _plain(f["dir"], path), mmap)
        elif kind == "nontensor":
            data[k] = NonTensorData(_decode(f["data"]), f["batch_size"])
        elif kind == "nontensor_stack":
            data[k] = NonTensorStack.from_list([_decode(x) for x in f["items"]],
                                               f["batch_size"])
        else:
            raise ValueError(f"TensorDict.load: unknown field kind {kind!r} in {meta_path}")
    dev = as_device(meta.get("device"))
    td = cls._new(data, bs, dev if dev is not None and dev.type == "cpu" else None)
    return (td, dev) if with_device else td
