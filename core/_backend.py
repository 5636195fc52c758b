"""Array backends: numpy on the CPU, cupy on CUDA GPUs.

Ops are written once against the array namespace ``xp`` of their inputs
(``namespace(array)``), in the style of Chainer's ``get_array_module``.
A backend-specific branch exists only where the two libraries differ.
"""
from __future__ import annotations

import numpy as np

try:  # cupy is optional (extras ``cuda12`` / ``cuda13``)
    import cupy as _cupy

    try:
        _HAS_CUDA = _cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # driver missing or no device
        _HAS_CUDA = False
except Exception:  # pragma: no cover - depends on the machine
    _cupy = None
    _HAS_CUDA = False

ndarray = np.ndarray


def cupy():
    """The cupy module, or a clear error when it is not usable here."""
    if _cupy is None or not _HAS_CUDA:
        raise RuntimeError(
            "CUDA is not available: install ember with the 'cuda12' or 'cuda13' extra "
            "on a machine with an NVIDIA GPU")
    return _cupy


def cuda_available() -> bool:
    return _HAS_CUDA


def namespace(array):
    """``numpy`` or ``cupy``, whichever owns ``array``."""
    if type(array) is ndarray or isinstance(array, np.generic):
        return np
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return _cupy
    return np


def is_cuda_array(array) -> bool:
    return _cupy is not None and isinstance(array, _cupy.ndarray)


class device:
    """Where a tensor's memory lives: ``device("cpu")`` or ``device("cuda:0")``."""

    __slots__ = ("type", "index")

    def __new__(cls, spec="cpu", index=None):
        if isinstance(spec, device):
            return spec
        if isinstance(spec, int):
            spec, index = "cuda", spec
        if not isinstance(spec, str):
            raise TypeError(f"device must be a str, int or ember.device, got {type(spec).__name__}")
        typ, _, idx = spec.partition(":")
        if typ not in ("cpu", "cuda", "meta"):
            raise ValueError(f"unknown device type {typ!r}: expected 'cpu', 'cuda' or 'meta'")
        if idx:
            if index is not None:
                raise ValueError(f"device {spec!r} already has an index, got index={index}")
            if not idx.isdigit():
                raise ValueError(f"invalid device string {spec!r}: expected e.g. 'cuda:0'")
            index = int(idx)
        if typ == "cpu":
            index = None
        key = (typ, index)
        cached = _DEVICES.get(key)
        if cached is not None:
            return cached
        self = object.__new__(cls)
        object.__setattr__(self, "type", typ)
        object.__setattr__(self, "index", index)
        _DEVICES[key] = self
        return self

    def __setattr__(self, k, v):
        raise AttributeError("ember.device is immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """``with ember.device("meta"): model = Net()``: factories without an explicit device
        create their tensors here (nn modules built inside hold no memory on ``meta``)."""
        _DEFAULT_DEVICE.append(self)
        return self

    def __exit__(self, *exc):
        _DEFAULT_DEVICE.pop()


_DEVICES: dict = {}
CPU = device("cpu")


META = device("meta")

# ---------------------------------------------------------------------------- meta arrays
# A tensor on the ``meta`` device has a shape and a dtype but no memory: its array is a
# read-only zero-stride view of one shared scalar per dtype (``np.broadcast_to``), so every
# shape query works and nothing of the tensor's size is ever allocated. numpy keeps that
# scalar as the ``base`` of every view, which is how ``is_meta`` recognises them.
_META_BASES: dict = {}


def meta_array(shape, dtype):
    """An array of ``shape`` and ``dtype`` on the meta device (no memory)."""
    dt = np.dtype(dtype)
    base = _META_BASES.get(dt)
    if base is None:
        base = _META_BASES[dt] = np.zeros((), dt)
        base.flags.writeable = False
    return np.broadcast_to(base, tuple(shape))


def is_meta(array) -> bool:
    b = getattr(array, "base", None)
    return b is not None and type(array) is ndarray and _META_BASES.get(array.dtype) is b


# ---------------------------------------------------------------------------- default device
_DEFAULT_DEVICE = [None]  # a stack: ``with ember.device("meta"):`` pushes, exit pops


def get_default_device():
    """The device factories use when none is given (``cpu`` unless changed)."""
    return _DEFAULT_DEVICE[-1] or CPU


def set_default_device(dev):
    """Make ``dev`` (or None for cpu) the device factories use when none is given."""
    _DEFAULT_DEVICE[-1] = None if dev is None else device(dev)


def device_of(array) -> device:
    if type(array) is ndarray:
        if array.base is not None and is_meta(array):
            return META
        return CPU
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return device("cuda", array.device.id)
    return CPU


def to_device(array, dev: device):
    """Copy ``array`` to ``dev`` (no copy when it is already there)."""
    dev = device(dev)
    if dev.type == "meta":
        return array if is_meta(array) else meta_array(array.shape, array.dtype)
    if is_meta(array):
        raise RuntimeError(
            f"cannot copy a meta tensor (shape {tuple(array.shape)}) to {dev}: it has no data. "
            "Materialize modules with module.to_empty(device=...) and then initialize them "
            "(reset_parameters() or load_state_dict), or create tensors with "
            "ember.empty_like(t, device=...)")
    if dev.type == "cpu":
        if type(array) is ndarray:
            return array
        if is_cuda_array(array):
            return array.get()
        return np.asarray(array)
    if dev.type == "cuda":
        cp = cupy()
        idx = 0 if dev.index is None else dev.index
        if is_cuda_array(array) and array.device.id == idx:
            return array
        with cp.cuda.Device(idx):
            return cp.asarray(array)
    raise ValueError(f"cannot move data to device {dev}")
