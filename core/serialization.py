"""``ember.save`` / ``ember.load``: checkpoints as safetensors files, written atomically.

An ember checkpoint IS a safetensors file (readable by any safetensors reader)::

    [u64 little-endian N][N bytes of JSON header, space padded to 8][tensor bytes, no holes]

The header maps each tensor name to ``{"dtype", "shape", "data_offsets"}``; its
``"__metadata__"`` holds ``{"format": "ember", "ember.manifest": <JSON text>}``. The manifest is
the saved object tree with every tensor replaced by a reference to its name:

* JSON strings, ints, finite floats, booleans and null stand for themselves;
* ``{"@": "dict" | "odict", "items": [[key, value], ...]}`` keeps key order and key types
  (an optimizer state dict's int keys come back as ints); ``"list"``, ``"tuple"``, ``"set"``
  hold ``{"v": [...]}``;
* ``{"@": "tensor", "name": ..., ["rg": true], ["dev": "cuda:0"], ["dtype": ...]}`` (also
  ``"ndarray"`` for numpy arrays and ``"npscalar"`` for numpy scalars); ``"float"`` (nan/inf),
  ``"complex"``, ``"bytes"`` (base64), ``"dtype"`` and ``"device"`` nodes cover the rest.

Tensor names follow the object path (``"layer.weight"``, ``"state.0.exp_avg"``), so a saved
state dict is an ordinary safetensors file with the usual keys. Every tensor is saved as its own
contiguous data: views and tensors sharing storage are written separately (no aliasing survives
a round trip). complex128 (absent from safetensors) is stored as float64 pairs with a trailing
dimension of 2 and restored from the manifest.

``ember.load`` reads ember checkpoints, plain safetensors files (a flat ``{name: Tensor}``) and
PyTorch ``.pth``/``.pt`` files (zip and legacy formats) through a restricted unpickler that never
runs code (see :mod:`ember._pth`).

    >>> import ember, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.ember")
    >>> ember.save({"step": 3, "w": ember.ones(2, 3), "state": {0: {"m": ember.zeros(3)}}}, path)
    >>> ck = ember.load(path)
    >>> ck["step"], ck["w"].shape, list(ck["state"])
    (3, (2, 3), [0])
"""
from __future__ import annotations

import base64
import collections
import io
import json
import math
import os
import pickle
import secrets
import struct
import sys

import numpy as np

from . import _backend as B
from . import dtypes as D
from . import _safe_globals as _sg
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._pth import ForbiddenGlobalError, _readinto, load_pth  # noqa: F401 (re-export)
from ._tensor import Tensor

__all__ = ["save", "load", "ForbiddenGlobalError", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals"]

# ---------------------------------------------------------------------------- dtypes
_CODES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
          "I32": np.int32, "U32": np.uint32, "I64": np.int64, "U64": np.uint64,
          "F16": np.float16, "F32": np.float32, "F64": np.float64, "C64": np.complex64}
if D.bfloat16 is not None:
    import ml_dtypes as _ml

    _CODES.update({"BF16": D.bfloat16, "F8_E4M3": _ml.float8_e4m3fn, "F8_E5M2": _ml.float8_e5m2})
_CODES = {k: np.dtype(v) for k, v in _CODES.items()}  # native (ember's own dtype objects)
_CODE_OF = {dt: k for k, dt in _CODES.items()}
_NATIVE_LE = sys.byteorder == "little"
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit


def _code_for(dt, where):
    """safetensors dtype code for a numpy dtype, plus the dtype name to record in the manifest
    when the stored form differs (complex128 -> F64 pairs)."""
    ndt = dt.newbyteorder("=")
    code = _CODE_OF.get(ndt)
    if code is not None:
        return code, None
    if ndt == np.complex128:
        return "F64", "complex128"
    raise TypeError(f"ember.save: {where}: cannot save an array of dtype {dt}: expected a "
                    f"numeric or bool dtype ({', '.join(sorted(set(map(D.name, _CODE_OF))))}"
                    ", complex128)")


# ---------------------------------------------------------------------------- save
def save(obj, f) -> None:
    """Save ``obj`` (nested dicts/lists/tuples of tensors, numpy arrays, Python scalars,
    strings, None) to ``f``, a path or a binary file object.

    Writing to a path is atomic: the data goes to a temporary file in the same directory, is
    flushed and fsync'ed, then renamed over ``f`` (``os.replace``); if anything fails midway the
    previous file is untouched and the temporary file is removed. A file object is written in
    place (its atomicity is the caller's business). Tensors on the GPU are copied to the host
    one at a time while writing and come back on their device (see ``load``'s ``map_location``).

    >>> import ember, io
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.arange(3)}, buf)
    >>> _ = buf.seek(0); ember.load(buf)["w"]
    tensor([0, 1, 2])
    """
    enc = _Encoder()
    manifest = {"version": 1, "root": enc.encode(obj, ())}
    header, entries = _layout(enc.entries, manifest)
    if isinstance(f, (str, os.PathLike)):
        with _AtomicFile(f) as fh:
            _write(fh, header, entries)
    else:
        if not hasattr(f, "write"):
            raise TypeError(f"ember.save: f must be a path or a binary file object, got "
                            f"{type(f).__name__}")
        _write(f, header, entries)


class _Encoder:
    """Turns the object tree into JSON, collecting tensors as ``(name, array, stored)``."""

    def __init__(self):
        self.entries = []  # (name, array, code, stored_shape)
        self.names = set()
        self.open = set()  # ids of the containers being encoded (to catch cycles)

    def _add(self, path, arr):
        where = _path_str(path)
        code, note = _code_for(arr.dtype, where)
        name = ".".join(str(p) for p in path) or "tensor"
        base, n = name, 1
        while name in self.names or name == "__metadata__":
            name, n = f"{base}#{n}", n + 1
        self.names.add(name)
        shape = tuple(int(s) for s in arr.shape) + ((2,) if note else ())
        self.entries.append((name, arr, code, shape))
        node = {"name": name}
        if note:
            node["dtype"] = note
        return node

    def encode(self, x, path):
        if isinstance(x, (dict, list, tuple, set, frozenset)):
            if id(x) in self.open:
                raise ValueError(f"ember.save: {_path_str(path)} contains itself")
            self.open.add(id(x))
            try:
                return self._encode(x, path)
            finally:
                self.open.discard(id(x))
        return self._encode(x, path)

    def _encode(self, x, path):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, np.generic) and not isinstance(x, (np.str_, np.bytes_, np.void)):
            return {"@": "npscalar", **self._add(path, np.asarray(x))}
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            if math.isfinite(x):
                return float(x)
            return {"@": "float", "v": repr(float(x))}
        if isinstance(x, Tensor):
            node = self._add(path, x.array)
            node["@"] = "tensor"
            if x.requires_grad:
                node["rg"] = True
            if x.device.type != "cpu":
                node["dev"] = str(x.device)
            return node
        if isinstance(x, np.ndarray):
            return {"@": "ndarray", **self._add(path, x)}
        if isinstance(x, dict):
            kind = "odict" if isinstance(x, collections.OrderedDict) else "dict"
            node = {"@": kind, "items": [[self._key(k, path), self.encode(v, path + (k,))]
                                         for k, v in x.items()]}
            meta = getattr(x, "_metadata", None)
            if kind == "odict" and isinstance(meta, dict):
                node["meta"] = self.encode(meta, path + ("_metadata",))
            return node
        if isinstance(x, (list, tuple)):
            kind = "list" if isinstance(x, list) else "tuple"
            return {"@": kind, "v": [self.encode(v, path + (i,)) for i, v in enumerate(x)]}
        if isinstance(x, (set, frozenset)):
            return {"@": "set" if isinstance(x, set) else "frozenset",
                    "v": [self._key(v, path) for v in x]}
        if isinstance(x, complex):
            return {"@": "complex", "v": [self.encode(x.real, path), self.encode(x.imag, path)]}
        if isinstance(x, (bytes, bytearray)):
            return {"@": "bytes", "v": base64.b64encode(bytes(x)).decode("ascii")}
        if isinstance(x, np.dtype):
            _code_for(x, _path_str(path))
            return {"@": "dtype", "v": D.name(x)}
        if isinstance(x, B.device):
            return {"@": "device", "v": str(x)}
        return self._pickle(x, path)

    def _pickle(self, x, path):
        """Any other object (a whole ``nn.Module``, a user class): pickled, with its tensors
        stored as safetensors entries and referenced from the pickle by name. Loading it needs
        its classes allowed (see ``add_safe_globals``)."""
        seen = {}

        def persistent_id(obj):
            if not isinstance(obj, Tensor):
                return None
            hit = seen.get(id(obj))
            if hit is None:
                kind = "param" if type(obj).__name__ == "Parameter" else "tensor"
                node = self._add(path + (f"@{len(seen)}",), obj.detach().array)
                hit = seen[id(obj)] = (obj, (kind, node["name"], node.get("dtype"),
                                             bool(obj.requires_grad), str(obj.device)))
            return hit[1]

        buf = io.BytesIO()
        p = pickle.Pickler(buf, protocol=4)
        p.persistent_id = persistent_id
        try:
            p.dump(x)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError(f"ember.save: {_path_str(path)}: cannot save an object of type "
                            f"{type(x).__module__}.{type(x).__qualname__}: it is not a tensor, "
                            f"array, container, number or string, and pickling it failed ({e})"
                            ) from None
        return {"@": "object", "cls": f"{type(x).__module__}.{type(x).__qualname__}",
                "v": base64.b64encode(buf.getvalue()).decode("ascii")}

    def _key(self, k, path):
        if isinstance(k, (Tensor, np.ndarray)):
            raise TypeError(f"ember.save: {_path_str(path)}: tensors cannot be dict keys or "
                            "set members")
        return self.encode(k, path)


def _path_str(path):
    return "obj" + "".join(f"[{p!r}]" for p in path)


def _layout(entries, manifest):
    """Header bytes and the write order. Larger itemsizes first, so every tensor's data starts
    aligned to its itemsize (the header is padded to 8 bytes), with no holes in between."""
    order = sorted(entries, key=lambda e: -e[1].dtype.itemsize)
    header = {"__metadata__": {"format": "ember",
                               "ember.manifest": json.dumps(manifest, separators=(",", ":"),
                                                            allow_nan=False)}}
    pos = 0
    for name, arr, code, shape in order:
        n = int(arr.size) * arr.dtype.itemsize
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [pos, pos + n]}
        pos += n
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, order


def _write(fh, header, entries):
    fh.write(header)
    for _name, arr, _code, _shape in entries:
        _write_array(fh, arr)


def _write_array(fh, arr):
    """Write one array's bytes (C order, little-endian); GPU arrays are copied to the host."""
    if B.is_cuda_array(arr):
        arr = B.to_device(arr, "cpu")
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not _NATIVE_LE):
        a = a.astype(a.dtype.newbyteorder("<"))
    if a.size:
        fh.write(memoryview(a.reshape(-1).view(np.uint8)))


class _AtomicFile:
    """``with _AtomicFile(path) as fh``: a fresh temporary file next to ``path``, renamed over it
    (after flush + fsync) only when the block succeeds; removed when it raises."""

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))
        d, base = os.path.split(self.path)
        self.tmp = os.path.join(d, f".{base}.{secrets.token_hex(6)}.tmp")
        self.fh = None

    def __enter__(self):
        # O_EXCL + mode 0o666 lets the umask decide permissions, as for a plain open()
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        self.fh = os.fdopen(fd, "wb")
        return self.fh

    def __exit__(self, typ, exc, tb):
        done = False
        try:
            if typ is None:
                self.fh.flush()
                os.fsync(self.fh.fileno())
                self.fh.close()
                os.replace(self.tmp, self.path)
                done = True
        finally:
            if not done:
                self.fh.close()
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass
        _fsync_dir(os.path.dirname(self.path))
        return False


def _fsync_dir(d):
    if os.name != "posix":
        return
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- load
def load(f, map_location=None, mmap=False, **kwargs):
    """Load a checkpoint written by ``ember.save``, a safetensors file, or a PyTorch
    ``.pth``/``.pt`` file (zip or legacy format; read without torch and without running any code
    from the file). ``f`` is a path or a seekable binary file object.

    ``map_location``: where tensors go. ``None`` restores each tensor to the device it was saved
    on; ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or an ``ember.device`` sends all there; a dict maps
    saved locations to new ones (``{"cuda:0": "cpu"}``); a callable ``fn(tensor, location)`` gets
    each tensor (on the CPU) with its saved location string and returns the tensor to use (or
    None for the default), so torch's ``lambda storage, loc: storage`` works as is.

    ``mmap=True`` maps tensor data from the file instead of reading it: CPU tensors are views of
    one copy-on-write mapping (``np.memmap`` mode ``"c"``), so pages are read on first touch,
    writes to a tensor stay private to this process and never reach the file. Needs a path or a
    real file object. (Replacing the file later with ``ember.save`` is safe: the rename leaves
    the mapped old file alive until its tensors are gone.) Without mmap, each tensor owns its
    memory, except that PyTorch tensors spanning their whole storage use it without a copy.

    ``weights_only`` (default True): a checkpoint holding a whole pickled object (saved with
    ``ember.save(model)``) loads only when its classes are allowed: ember's own modules are;
    add yours with ``ember.serialization.add_safe_globals([Net])`` or the
    ``ember.serialization.safe_globals([Net])`` context manager, or pass
    ``weights_only=False`` to trust the file completely (it may run any code; warns once).
    Unknown keyword arguments raise a TypeError.

    Returns the saved object: tensors become ember Tensors (``requires_grad`` as saved), numpy
    arrays stay numpy arrays, an OrderedDict stays ordered, int keys stay ints.
    """
    for k in kwargs:
        if k != "weights_only":
            raise TypeError(f"ember.load() got an unexpected keyword argument {k!r}")
    if kwargs.get("weights_only", True) is False:
        global _WARNED_TRUST
        if not _WARNED_TRUST:
            _WARNED_TRUST = True
            import warnings

            warnings.warn("ember.load(weights_only=False) trusts the file: unpickling it may run "
                          "any code it names. Load only files you made or trust.", stacklevel=2)
        token = _sg.TRUST_ALL.set(True)
        try:
            return _load(f, map_location, mmap)
        finally:
            _sg.TRUST_ALL.reset(token)
    return _load(f, map_location, mmap)


_WARNED_TRUST = False


def _load(f, map_location, mmap):
    place = _placer(map_location)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            return _load_from(fh, path if mmap else None, place, path)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    src = None
    if mmap:
        try:
            f.fileno()
            src = f
        except (AttributeError, OSError, io.UnsupportedOperation):
            raise ValueError("ember.load: mmap=True needs a file path or a real file object "
                             "(one with a fileno())") from None
    seekable = getattr(f, "seekable", None)
    if seekable is None or not seekable():
        f = io.BytesIO(f.read())
    return _load_from(f, src, place, getattr(f, "name", "<file object>"))


def _load_from(fh, mmap_src, place, name):
    start = fh.tell()
    head = fh.read(16)
    fh.seek(start)
    if len(head) >= 9 and head[8:9] == b"{":
        return _read_safetensors(fh, mmap_src, place, name)
    if head[:4] == b"PK\x03\x04" or head[:1] == b"\x80":
        return load_pth(fh, mmap_src=mmap_src, place=place, name=name)
    if len(head) == 0:
        raise ValueError(f"ember.load: {name} is empty")
    raise ValueError(f"ember.load: {name} is neither an ember/safetensors checkpoint nor a "
                     f"PyTorch .pth/.pt file (first bytes {head[:8]!r})")


def _read_safetensors(fh, mmap_src, place, name):
    base = fh.tell()
    (n,) = struct.unpack("<Q", fh.read(8))
    fh.seek(0, os.SEEK_END)
    size = fh.tell() - base
    if n > _MAX_HEADER or 8 + n > size:
        raise ValueError(f"ember.load: {name}: corrupt safetensors header (size {n})")
    fh.seek(base + 8)
    try:
        header = json.loads(fh.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"ember.load: {name}: corrupt safetensors header: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"ember.load: {name}: corrupt safetensors header")
    meta = header.pop("__metadata__", None) or {}
    data0 = base + 8 + n
    specs = []
    for key, info in header.items():
        try:
            dt = _CODES[info["dtype"]]
            shape = tuple(int(s) for s in info["shape"])
            b, e = (int(v) for v in info["data_offsets"])
        except KeyError as err:
            raise ValueError(f"ember.load: {name}: tensor {key!r}: unsupported or missing "
                             f"{err}") from None
        numel = math.prod(shape)
        if min(shape, default=0) < 0 or b < 0 or e - b != numel * dt.itemsize \
                or data0 + e > base + size:
            raise ValueError(f"ember.load: {name}: tensor {key!r}: data_offsets {[b, e]} do not "
                             f"match shape {list(shape)} of {info['dtype']} within the file")
        specs.append((key, dt, shape, b, e))
    arrays = {}
    mm = None
    if mmap_src is not None and specs:
        mm = np.memmap(mmap_src, dtype=np.uint8, mode="c")
    for key, dt, shape, b, e in sorted(specs, key=lambda s: s[3]):
        if mm is not None:
            raw = mm[data0 + b:data0 + e].view(np.ndarray)
        else:
            raw = np.empty(e - b, np.uint8)
            fh.seek(data0 + b)
            _readinto(fh, raw, name, ValueError)
        if _NATIVE_LE:
            arr = raw.view(dt).reshape(shape)
        else:  # safetensors data is little-endian
            arr = raw.view(dt.newbyteorder("<")).reshape(shape).astype(dt)
        arrays[key] = arr
    fh.seek(base + 8 + n)
    if meta.get("format") == "ember" and "ember.manifest" in meta:
        manifest = json.loads(meta["ember.manifest"])
        return _Decoder(arrays, place, name).decode(manifest["root"])
    return collections.OrderedDict((k, place(arrays[k], "cpu")) for k, *_ in specs)


class _Decoder:
    def __init__(self, arrays, place, name):
        self.arrays, self.place, self.name = arrays, place, name

    def _array(self, node):
        try:
            arr = self.arrays[node["name"]]
        except KeyError:
            raise ValueError(f"ember.load: {self.name}: the manifest refers to a missing tensor "
                             f"{node.get('name')!r}") from None
        if node.get("dtype") == "complex128":
            arr = np.ascontiguousarray(arr).view(np.complex128).reshape(arr.shape[:-1])
        return arr

    def decode(self, x):
        if not isinstance(x, dict):
            return x
        kind = x.get("@")
        if kind in ("dict", "odict"):
            out = {} if kind == "dict" else collections.OrderedDict()
            for k, v in x["items"]:
                out[self.decode(k)] = self.decode(v)
            if "meta" in x:
                out._metadata = self.decode(x["meta"])
            return out
        if kind == "list":
            return [self.decode(v) for v in x["v"]]
        if kind == "tuple":
            return tuple(self.decode(v) for v in x["v"])
        if kind in ("set", "frozenset"):
            return (set if kind == "set" else frozenset)(self.decode(v) for v in x["v"])
        if kind == "tensor":
            t = self.place(self._array(x), x.get("dev", "cpu"))
            if x.get("rg"):
                t.requires_grad_(True)
            return t
        if kind == "ndarray":
            return self._array(x)
        if kind == "npscalar":
            return self._array(x)[()]
        if kind == "float":
            return float(x["v"])
        if kind == "complex":
            return complex(self.decode(x["v"][0]), self.decode(x["v"][1]))
        if kind == "bytes":
            return base64.b64decode(x["v"])
        if kind == "dtype":
            return D.to_dtype(x["v"])
        if kind == "device":
            return B.device(x["v"])
        if kind == "object":
            return self._unpickle(x)
        raise ValueError(f"ember.load: {self.name}: unknown manifest node {kind!r} (written by a "
                         "newer ember?)")


    def _unpickle(self, x):
        made = {}

        def persistent_load(pid):
            kind, name, dtype, rg, dev = pid
            t = made.get(name)
            if t is None:
                node = {"name": name} if dtype is None else {"name": name, "dtype": dtype}
                t = self.place(self._array(node), dev)
                if kind == "param":
                    from .nn.parameter import Parameter

                    t = Parameter(t, requires_grad=rg)
                elif rg:
                    t.requires_grad_(True)
                made[name] = t
            return t

        u = _ObjectUnpickler(io.BytesIO(base64.b64decode(x["v"])), self.name)
        u.persistent_load = persistent_load
        return u.load()


class _ObjectUnpickler(pickle.Unpickler):
    """Resolves a pickled object's globals: ember's own modules and tensor types, the
    containers pickle itself uses, and whatever ``add_safe_globals``/``safe_globals`` allow;
    with ``weights_only=False``, anything."""

    _PLAIN = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
              ("builtins", "object"), ("copyreg", "_reconstructor"), ("builtins", "slice"),
              ("builtins", "complex"), ("builtins", "range")}

    def __init__(self, f, name):
        super().__init__(f)
        self.name = name

    def find_class(self, module, name):
        if _sg.TRUST_ALL.get() or (module, name) in self._PLAIN:
            return super().find_class(module, name)
        hit = _sg.lookup(module, name)
        if hit is not None:
            return hit
        if module == "ember" or module.startswith("ember."):
            obj = super().find_class(module, name)
            from .nn.modules.module import Module

            if isinstance(obj, type) and (issubclass(obj, (Module, Tensor)) or
                                          issubclass(obj, np.dtype)):
                return obj
        if module == "numpy" and name == "dtype" or module.startswith("numpy.dtypes"):
            return super().find_class(module, name)
        raise ForbiddenGlobalError(
            module, name, f"{self.name} holds a pickled object whose class is not allowed "
            "(a checkpoint must not run code unless you say so)")


# ---------------------------------------------------------------------------- map_location
def _placer(map_location):
    """``place(array, saved_location) -> Tensor`` applying ``map_location``."""
    if map_location is None:
        def target(loc):
            return loc
    elif isinstance(map_location, (str, B.device)):
        fixed = str(B.device(map_location))

        def target(loc):
            return fixed
    elif isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}

        def target(loc):
            return table.get(loc, loc)
    elif callable(map_location):
        def place(arr, loc):
            t = Tensor._make(arr)
            out = map_location(t, loc)
            if out is None:
                return _to(arr, loc, loc)
            if isinstance(out, Tensor):
                return out
            if isinstance(out, np.ndarray) or B.is_cuda_array(out):
                return Tensor._make(out)
            raise TypeError(f"ember.load: map_location returned {type(out).__name__}: expected "
                            "a Tensor (or None)")
        return place
    else:
        raise TypeError(f"ember.load: map_location must be None, a str, an ember.device, a dict "
                        f"or a callable, got {type(map_location).__name__}")

    def place(arr, loc):
        return _to(arr, target(loc), loc)
    return place


def _to(arr, dest, saved):
    if dest == "cpu" and type(arr) is np.ndarray:
        return Tensor._make(arr)
    try:
        dev = B.device(dest)
    except (ValueError, TypeError):
        raise RuntimeError(f"ember.load: a tensor was saved on {saved!r}, which ember cannot "
                           "restore to: pass map_location='cpu' (or 'cuda')") from None
    if dev.type == "cuda" and not B.cuda_available():
        raise RuntimeError(f"ember.load: a tensor was saved on {saved!r} but CUDA is not "
                           "available here: pass map_location='cpu' to load it on the CPU")
    return Tensor._make(B.to_device(arr, dev))
