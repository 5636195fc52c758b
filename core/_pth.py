"""A reader for PyTorch ``.pth``/``.pt`` checkpoints that needs no torch and runs no code.

``torch.save`` pickles the object with every tensor storage replaced by a *persistent id*
``("storage", storage_type, key, location, numel)``; tensors are rebuilt by calls to
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, meta])``.
Two containers exist:

* zip (default since torch 1.6): ``<root>/data.pkl`` (the pickle), ``<root>/data/<key>`` (one
  uncompressed record of raw bytes per storage), ``<root>/byteorder`` (``little``/``big``),
  ``<root>/version``; ``<root>`` is any folder name.
* legacy (``_use_new_zipfile_serialization=False``): consecutive pickles of the magic number,
  the protocol version (1001), a sys-info dict (byte order), the object, and the list of storage
  keys; then, per key in that order, an int64 element count followed by the raw elements.

The unpickler here resolves globals against a fixed allowlist of stand-ins (tensor rebuild
functions, storage and dtype names, ``OrderedDict``, ``torch.Size``, ``torch.device``, a few
builtins) written for this module; every other global (``os.system``, ``builtins.eval``, any
class) raises :class:`ForbiddenGlobalError` before anything is called. Tensors are rebuilt from
``(storage, offset, size, stride)`` with bounds checks and ``numpy.lib.stride_tricks.as_strided``.
"""
from __future__ import annotations

import collections
import io
import math
import pickle
import struct
import zipfile

import numpy as np

from . import _backend as B
from . import dtypes as D
from . import _safe_globals as _sg
from ._tensor import Tensor

_MAGIC = 0x1950A86A20F9469CFC6C
_PROTOCOL = 1001


class ForbiddenGlobalError(pickle.UnpicklingError):
    """The checkpoint's pickle names a global outside ember's allowlist (nothing was run).
    ``module`` and ``name`` say which."""

    def __init__(self, module, name, why=None):
        self.module, self.name = module, name
        why = why or ("ember loads only tensors and plain containers from .pth files and never "
                      "runs code from a checkpoint")
        super().__init__(f"refusing to load global '{module}.{name}' from the checkpoint: {why}. "
                         f"{_sg.ways_out(f'{module}.{name}')}; or re-save a plain state dict "
                         "(tensors, dicts, lists, numbers, strings)")


# ---------------------------------------------------------------------------- dtypes
def _ml(name):
    try:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError):  # pragma: no cover - ml_dtypes is a dependency
        return None


_DTYPES = {  # torch dtype name -> numpy dtype
    "float32": np.float32, "float": np.float32, "float64": np.float64, "double": np.float64,
    "float16": np.float16, "half": np.float16, "bfloat16": _ml("bfloat16"),
    "int64": np.int64, "long": np.int64, "int32": np.int32, "int": np.int32,
    "int16": np.int16, "short": np.int16, "int8": np.int8, "uint8": np.uint8,
    "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
    "complex64": np.complex64, "cfloat": np.complex64, "complex128": np.complex128,
    "cdouble": np.complex128, "float8_e4m3fn": _ml("float8_e4m3fn"),
    "float8_e5m2": _ml("float8_e5m2"), "float8_e4m3fnuz": _ml("float8_e4m3fnuz"),
    "float8_e5m2fnuz": _ml("float8_e5m2fnuz"),
}
_DTYPES = {k: np.dtype(v) for k, v in _DTYPES.items() if v is not None}
_UNSUPPORTED_DTYPES = {"complex32", "chalf", "quint8", "qint8", "qint32", "quint4x2",
                       "quint2x4", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8", "bits2x4",
                       "bits4x2", "bits8", "bits16", "uint1", "uint2", "uint3", "uint4", "uint5",
                       "uint6", "uint7", "int1", "int2", "int3", "int4", "int5", "int6", "int7"}
_STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
             "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
             "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
             "ComplexDoubleStorage": "complex128"}


class _UnsupportedDtype(str):
    """A torch dtype with no numpy counterpart: fine as a value, an error when a tensor uses it."""


class _StorageType:
    __slots__ = ("dtype", "name")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"<torch {self.name} stand-in>"


class _Storage:
    """A resolved persistent id: dtype, element count, location; ``array`` is filled lazily."""

    __slots__ = ("key", "dtype", "numel", "location", "array", "view")

    def __init__(self, key, dtype, numel, location, view=None):
        self.key, self.dtype, self.numel, self.location = key, dtype, numel, location
        self.array, self.view = None, view

    def __repr__(self):
        return f"<storage {self.key!r}: {self.numel} x {D.name(self.dtype)} on {self.location}>"


class _TensorClass:
    """Stand-in for ``torch.Tensor`` / ``torch.nn.Parameter`` (used as ``new_type`` markers)."""

    def __init__(self, name, is_param):
        self.name, self.is_param = name, is_param

    def __call__(self, data=None, requires_grad=True):
        if not isinstance(data, Tensor):
            raise pickle.UnpicklingError(f"{self.name}(...) expects a tensor, got "
                                         f"{type(data).__name__}")
        if self.is_param:
            _set_requires_grad(data, requires_grad)
        return data


def _set_requires_grad(t, flag):
    if flag and (D.is_floating(t.array.dtype) or t.array.dtype.kind == "c"):
        t.requires_grad = True


# ---------------------------------------------------------------------------- the allowlist
def _torch_size(*args):
    if len(args) != 1:
        raise pickle.UnpicklingError("torch.Size expects one sequence of ints")
    out = tuple(args[0])
    if not all(isinstance(s, int) for s in out):
        raise pickle.UnpicklingError("torch.Size expects ints")
    return out


def _torch_device(*args):
    try:
        return B.device(*args)
    except (ValueError, TypeError):
        return ":".join(str(a) for a in args)


def _codecs_encode(text, encoding="latin1"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is only allowed for latin1 bytes")
    return text.encode("latin1")


def _bytes_like(kind):
    def build(data=b"", *rest):
        if rest or not isinstance(data, (bytes, bytearray, list, tuple)):
            raise pickle.UnpicklingError(f"{kind.__name__}() is only allowed on bytes or lists")
        return kind(data)
    return build


def _complex(real=0.0, imag=0.0):
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise pickle.UnpicklingError("complex() is only allowed on numbers")
    return complex(real, imag)


def _rebuild_tensor(ctx, storage, offset, size, stride):
    return ctx.tensor(storage, offset, size, stride, None, False, None)


def _rebuild_tensor_v2(ctx, storage, offset, size, stride, requires_grad, hooks, metadata=None):
    return ctx.tensor(storage, offset, size, stride, None, requires_grad, metadata)


def _rebuild_tensor_v3(ctx, storage, offset, size, stride, requires_grad, hooks, dtype,
                       metadata=None):
    return ctx.tensor(storage, offset, size, stride, dtype, requires_grad, metadata)


def _rebuild_parameter(ctx, data, requires_grad, hooks, state=None):
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"_rebuild_parameter expects a tensor, got "
                                     f"{type(data).__name__}")
    _set_requires_grad(data, requires_grad)
    return data


def _rebuild_from_type_v2(ctx, func, new_type, args, state):
    if not isinstance(func, _Allowed) or not isinstance(new_type, _TensorClass):
        raise pickle.UnpicklingError("_rebuild_from_type_v2: unexpected arguments")
    return func(*args)  # python attributes in ``state`` are dropped


def _rebuild_device_tensor_from_cpu_tensor(ctx, data, dtype, device, requires_grad):
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("_rebuild_device_tensor_from_cpu_tensor expects a tensor")
    _set_requires_grad(data, requires_grad)
    return data


class _Allowed:
    """A callable from the allowlist bound to the current load (so ``func`` arguments of
    ``_rebuild_from_type_v2`` can be checked to be allowlisted too)."""

    __slots__ = ("fn", "ctx")

    def __init__(self, fn, ctx):
        self.fn, self.ctx = fn, ctx

    def __call__(self, *args):
        return self.fn(self.ctx, *args)


_REBUILD = {"_rebuild_tensor": _rebuild_tensor, "_rebuild_tensor_v2": _rebuild_tensor_v2,
            "_rebuild_tensor_v3": _rebuild_tensor_v3, "_rebuild_parameter": _rebuild_parameter,
            "_rebuild_parameter_with_state": _rebuild_parameter,
            "_rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor_from_cpu_tensor}
_UNSUPPORTED = {  # known torch globals ember refuses on purpose, with the reason
    "_rebuild_sparse_tensor": "sparse tensors are not supported",
    "_rebuild_nested_tensor": "nested tensors are not supported",
    "_rebuild_qtensor": "quantized tensors are not supported",
    "_rebuild_meta_tensor_no_storage": "meta tensors (without data) are not supported",
    "_rebuild_wrapper_subclass": "tensor subclasses are not supported",
    "_rebuild_device_tensor_from_numpy": "tensors pickled through numpy are not supported",
    "_get_layout": "sparse layouts are not supported",
    "_load_from_bytes": "storages pickled outside torch.save are not supported",
}
_PLAIN = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch", "Size"): _torch_size,
    ("torch", "device"): _torch_device,
    ("torch", "Tensor"): _TensorClass("torch.Tensor", False),
    ("torch._tensor", "Tensor"): _TensorClass("torch.Tensor", False),
    ("torch.nn.parameter", "Parameter"): _TensorClass("torch.nn.Parameter", True),
    ("torch.storage", "UntypedStorage"): _StorageType("UntypedStorage", np.dtype(np.uint8)),
    ("torch", "UntypedStorage"): _StorageType("UntypedStorage", np.dtype(np.uint8)),
    ("_codecs", "encode"): _codecs_encode,
}
for _mod in ("builtins", "__builtin__"):
    _PLAIN.update({(_mod, "set"): set, (_mod, "frozenset"): frozenset,
                   (_mod, "complex"): _complex, (_mod, "bytearray"): _bytes_like(bytearray),
                   (_mod, "bytes"): _bytes_like(bytes)})
for _name, _dt in _STORAGES.items():
    if _dt in _DTYPES:
        for _mod in ("torch", "torch.cuda"):
            _PLAIN[(_mod, _name)] = _StorageType(_name, _DTYPES[_dt])
for _name, _dt in _DTYPES.items():
    _PLAIN[("torch", _name)] = _dt
for _name in _UNSUPPORTED_DTYPES:
    _PLAIN[("torch", _name)] = _UnsupportedDtype(_name)


def _refuse(what):
    raise pickle.UnpicklingError(f"refusing pickle opcode {what}: not used by torch.save "
                                 "checkpoints")


def _load_build(self):
    # state dicts carry attributes (``_metadata``) set through BUILD on a fresh OrderedDict;
    # tensors may carry python attributes (dropped). Nothing else gets its state set, so no
    # process-wide object (a class, a dtype, one of the stand-ins here) can be altered.
    state = self.stack.pop()
    inst = self.stack[-1]
    if isinstance(inst, Tensor):
        return
    if _sg.TRUST_ALL.get() or type(inst) in _sg.allowed_types():
        setstate = getattr(inst, "__setstate__", None)
        if setstate is not None:
            setstate(state)
        else:
            inst.__dict__.update(state[0] if isinstance(state, tuple) else state)
        return
    if type(inst) is not collections.OrderedDict:
        _refuse(f"BUILD on a {type(inst).__name__}")
    if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
        state = state[0]
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        _refuse("BUILD with a non-dict state")
    for k, v in state.items():
        if k.startswith("__"):
            _refuse(f"BUILD setting {k!r}")
        inst.__dict__[k] = v


def _checked(opname, types):
    op = getattr(pickle, opname)
    base = pickle._Unpickler.dispatch[op[0]]
    marked = opname in ("SETITEMS", "APPENDS", "ADDITEMS")
    depth = -3 if opname == "SETITEM" else -2

    def run(self):
        target = self.metastack[-1][-1] if marked else self.stack[depth]
        if type(target) not in types:
            _refuse(f"{opname} on a {type(target).__name__}")
        base(self)
    return run


class _Unpickler(pickle._Unpickler):
    """The pure-Python unpickler (its opcode table can be narrowed) with an allowlist for
    globals and type checks on the opcodes that mutate objects."""

    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BUILD[0]] = _load_build
    _MAPS = (dict, collections.OrderedDict)
    dispatch[pickle.SETITEM[0]] = _checked("SETITEM", _MAPS)
    dispatch[pickle.SETITEMS[0]] = _checked("SETITEMS", _MAPS)
    dispatch[pickle.APPEND[0]] = _checked("APPEND", (list,))
    dispatch[pickle.APPENDS[0]] = _checked("APPENDS", (list,))
    dispatch[pickle.ADDITEMS[0]] = _checked("ADDITEMS", (set,))

    def __init__(self, file, ctx):
        super().__init__(file)
        self.ctx = ctx

    def find_class(self, module, name):
        hit = _PLAIN.get((module, name))
        if hit is not None:
            return hit
        if module in ("torch._utils", "torch._tensor") and name in _REBUILD:
            return _Allowed(_REBUILD[name], self.ctx)
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _Allowed(_rebuild_from_type_v2, self.ctx)
        if module.startswith("torch") and name in _UNSUPPORTED:
            raise ForbiddenGlobalError(module, name, _UNSUPPORTED[name])
        hit = _sg.lookup(module, name)
        if hit is not None:
            return hit
        if _sg.TRUST_ALL.get() and not module.startswith("torch"):
            return super().find_class(module, name)
        raise ForbiddenGlobalError(module, name)

    def persistent_load(self, pid):
        return self.ctx.storage(pid)


def _unpickle(data_or_file, ctx):
    f = io.BytesIO(data_or_file) if isinstance(data_or_file, bytes) else data_or_file
    try:
        return _Unpickler(f, ctx).load()
    except (pickle.UnpicklingError, ValueError):
        raise
    except (EOFError, IndexError, KeyError, TypeError, AttributeError, struct.error) as e:
        raise pickle.UnpicklingError(f"{ctx.name}: corrupt checkpoint pickle "
                                     f"({type(e).__name__}: {e})") from None


# ---------------------------------------------------------------------------- load context
class _Context:
    """State of one load: storages by key, tensors waiting for their data, the placement."""

    def __init__(self, name, place, read_storage):
        self.name, self.place, self.read_storage = name, place, read_storage
        self.storages = {}
        self.pending = []
        self.mmap = False

    def fail(self, msg):
        raise pickle.UnpicklingError(f"{self.name}: corrupt checkpoint: {msg}")

    def storage(self, pid):
        if not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage":
            self.fail(f"unknown persistent id {pid!r:.80}")
        _, stype, key, location, numel = pid[:5]
        view = pid[5] if len(pid) == 6 else None
        if not isinstance(stype, _StorageType) or not isinstance(numel, int) or numel < 0:
            self.fail(f"bad storage record {pid!r:.120}")
        key, location = str(key), str(location)
        st = self.storages.get(key)
        if st is None:
            st = self.storages[key] = _Storage(key, stype.dtype, numel, location)
        elif st.dtype != stype.dtype:
            self.fail(f"storage {key!r} used with two dtypes")
        if view is None:
            return st
        vkey, voff, vsize = view
        vst = self.storages.get(vkey)
        if vst is None:
            vst = self.storages[vkey] = _Storage(vkey, st.dtype, vsize, location,
                                                 view=(st, voff, vsize))
        return vst

    def tensor(self, storage, offset, size, stride, dtype, requires_grad, metadata):
        if not isinstance(storage, _Storage):
            self.fail(f"tensor rebuilt from a {type(storage).__name__}, not a storage")
        if isinstance(dtype, _UnsupportedDtype):
            raise pickle.UnpicklingError(f"{self.name}: torch.{dtype} tensors have no numpy "
                                         "counterpart and are not supported")
        dt = storage.dtype if dtype is None else dtype
        if not isinstance(dt, np.dtype):
            self.fail(f"bad tensor dtype {dtype!r}")
        size, stride = tuple(size), tuple(stride)
        if not isinstance(offset, int) or len(size) != len(stride) or not all(
                isinstance(v, int) for v in size + stride):
            self.fail(f"bad tensor geometry offset={offset!r} size={size!r} stride={stride!r}")
        flags = {}
        for k, v in (metadata or {}).items():
            if k in ("conj", "neg"):
                flags[k] = bool(v)
            elif v:
                raise pickle.UnpicklingError(f"{self.name}: unsupported tensor metadata {k!r}")
        t = Tensor._make(np.empty((0,), dt))  # placeholder: data arrives in finish()
        self.pending.append((t, storage, offset, size, stride, dt, flags))
        _set_requires_grad(t, requires_grad)
        return t

    def storage_array(self, st):
        if st.array is None:
            if st.view is not None:
                root, off, n = st.view
                base = self.storage_array(root)
                if off < 0 or off + n > base.size:
                    self.fail(f"storage view {st.key!r} out of bounds")
                st.array = base[off:off + n]
            else:
                raw = self.read_storage(st)
                nbytes = st.numel * st.dtype.itemsize
                if raw.size != nbytes:
                    self.fail(f"storage {st.key!r} holds {raw.size} bytes, expected {nbytes}")
                st.array = raw.view(st.dtype)
        return st.array

    def finish(self):
        for t, st, offset, size, stride, dt, flags in self.pending:
            arr = self.storage_array(st)
            if dt != arr.dtype:  # typed view of an untyped (byte) storage
                if arr.size % dt.itemsize:
                    self.fail(f"storage {st.key!r} is not a whole number of {D.name(dt)}")
                arr = arr.view(dt)
            t.array = self.place(_strided(self, arr, offset, size, stride, flags), st.location).array
        self.pending = []


def _strided(ctx, arr, offset, size, stride, flags):
    """``arr[offset:]`` seen with ``size``/``stride`` (in elements), bounds-checked, then made a
    contiguous array of its own unless it spans ``arr`` exactly or ``arr`` is memory-mapped."""
    if min(size, default=1) < 0 or min(stride, default=0) < 0 or offset < 0:
        ctx.fail(f"negative size/stride/offset {size}/{stride}/{offset}")
    n = math.prod(size)
    if n == 0:
        out = np.empty(size, arr.dtype)
    else:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if last >= arr.size:
            ctx.fail(f"tensor of size {list(size)}, stride {list(stride)} at offset {offset} "
                     f"exceeds its storage of {arr.size} elements")
        isz = arr.dtype.itemsize
        out = np.lib.stride_tricks.as_strided(arr[offset:], shape=size,
                                              strides=tuple(s * isz for s in stride))
        if offset == 0 and n == arr.size and out.flags.c_contiguous:
            out = arr.reshape(size)  # spans its whole storage: no copy needed
        elif not ctx.mmap:
            out = out.copy(order="C")
    if flags.get("conj"):
        out = np.conj(out)
    if flags.get("neg"):
        out = np.negative(out)
    return out


# ---------------------------------------------------------------------------- containers
def load_pth(fh, *, mmap_src=None, place, name="<file>"):
    """Load a PyTorch checkpoint from the seekable binary file ``fh`` (zip or legacy format).
    ``place(array, location) -> Tensor`` applies ``map_location``; ``mmap_src`` (a path or real
    file object) maps storages copy-on-write instead of reading them."""
    start = fh.tell()
    magic = fh.read(4)
    fh.seek(start)
    if magic == b"PK\x03\x04":
        return _load_zip(fh, mmap_src, place, name)
    return _load_legacy(fh, mmap_src, place, name)


def _memmap(src):
    return np.memmap(src, dtype=np.uint8, mode="c")


def _load_zip(fh, mmap_src, place, name):
    zf = zipfile.ZipFile(fh)
    names = zf.namelist()
    pkl = [n for n in names if n == "data.pkl" or (n.endswith("/data.pkl") and n.count("/") == 1)]
    if not pkl:
        kind = "a TorchScript archive" if any(n.endswith("constants.pkl") for n in names) \
            else "a zip file without data.pkl"
        raise ValueError(f"ember.load: {name} is {kind}, not a torch.save checkpoint")
    prefix = pkl[0][:-len("data.pkl")]
    big = False
    if prefix + "byteorder" in names:
        order = zf.read(prefix + "byteorder").strip()
        if order not in (b"little", b"big"):
            raise pickle.UnpicklingError(f"{name}: corrupt checkpoint: byteorder {order!r}")
        big = order == b"big"
    mm = _memmap(mmap_src) if mmap_src is not None else None

    def read_storage(st):
        rec = f"{prefix}data/{st.key}"
        try:
            info = zf.getinfo(rec)
        except KeyError:
            raise pickle.UnpicklingError(f"{name}: corrupt checkpoint: missing record {rec}")
        if info.compress_type == zipfile.ZIP_STORED:
            fh.seek(info.header_offset)
            local = fh.read(30)
            if local[:4] != b"PK\x03\x04":
                raise pickle.UnpicklingError(f"{name}: corrupt zip entry {rec}")
            n, m = struct.unpack("<HH", local[26:30])
            pos = info.header_offset + 30 + n + m
            if mm is not None:
                raw = mm[pos:pos + info.file_size].view(np.ndarray)
            else:
                raw = np.empty(info.file_size, np.uint8)
                fh.seek(pos)
                _readinto(fh, raw, name)
        else:
            raw = np.frombuffer(bytearray(zf.read(rec)), np.uint8)
        return _swap(raw, st.dtype, mm is not None) if big else raw

    ctx = _Context(name, place, read_storage)
    ctx.mmap = mm is not None
    obj = _unpickle(zf.read(pkl[0]), ctx)
    ctx.finish()
    return obj


def _swap(raw, dt, copy):
    if dt.itemsize == 1 or raw.size % dt.itemsize:
        return raw
    v = raw.view(dt)
    v = v.byteswap() if copy else v.byteswap(inplace=True)
    return v.view(np.uint8)


def _load_legacy(fh, mmap_src, place, name):
    base = fh.tell()
    meta = _Context(name, place, None)
    try:
        magic = _unpickle(fh, meta)
    except ForbiddenGlobalError:
        raise
    except Exception:
        magic = None
    if magic != _MAGIC:
        fh.seek(base)
        if _is_tar(fh):
            raise ValueError(f"ember.load: {name} is a pre-0.4 PyTorch tar checkpoint: load and "
                             "re-save it with a recent torch first")
        raise ValueError(f"ember.load: {name} is not a PyTorch checkpoint (bad magic number)")
    proto = _unpickle(fh, meta)
    if proto != _PROTOCOL:
        raise ValueError(f"ember.load: {name}: unsupported legacy protocol version {proto!r}")
    sys_info = _unpickle(fh, meta)
    little = bool(sys_info.get("little_endian", True)) if isinstance(sys_info, dict) else True
    order = "<" if little else ">"

    ctx = _Context(name, place, None)
    ctx.mmap = mmap_src is not None
    obj = _unpickle(fh, ctx)
    keys = _unpickle(fh, meta)
    if not isinstance(keys, list):
        ctx.fail("the storage key list is missing")
    mm = _memmap(mmap_src) if mmap_src is not None else None
    raws = {}
    for key in keys:
        st = ctx.storages.get(str(key))
        if st is None or st.view is not None:
            ctx.fail(f"storage key {key!r} is not used by the object")
        head = fh.read(8)
        if len(head) != 8:
            ctx.fail("truncated storage data")
        (numel,) = struct.unpack(order + "q", head)
        if numel != st.numel:
            ctx.fail(f"storage {key!r} holds {numel} elements, expected {st.numel}")
        nbytes = numel * st.dtype.itemsize
        pos = fh.tell()
        if mm is not None:
            if pos + nbytes > mm.size:
                ctx.fail("truncated storage data")
            raw = mm[pos:pos + nbytes].view(np.ndarray)
            fh.seek(pos + nbytes)
        else:
            raw = np.empty(nbytes, np.uint8)
            _readinto(fh, raw, name)
        raws[st.key] = _swap(raw, st.dtype, mm is not None) if order != "<" else raw

    def read_storage(st):
        if st.key not in raws:
            ctx.fail(f"no data for storage {st.key!r}")
        return raws[st.key]

    ctx.read_storage = read_storage
    ctx.finish()
    return obj


def _is_tar(fh):
    pos = fh.tell()
    block = fh.read(512)
    fh.seek(pos)
    return len(block) == 512 and block[257:262] == b"ustar"


def _readinto(fh, buf, name, exc=pickle.UnpicklingError):
    """Fill the numpy buffer ``buf`` from ``fh`` (one copy; ``read`` where no ``readinto``)."""
    mv = memoryview(buf).cast("B")
    pos, total = 0, len(mv)
    readinto = getattr(fh, "readinto", None)
    while pos < total:
        if readinto is not None:
            k = readinto(mv[pos:])
        else:
            chunk = fh.read(total - pos)
            k = len(chunk)
            mv[pos:pos + k] = chunk
        if not k:
            raise exc(f"ember.load: {name} is truncated")
        pos += k
