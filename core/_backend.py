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


_DEVICES: dict = {}
CPU = device("cpu")


def device_of(array) -> device:
    if type(array) is ndarray:
        return CPU
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return device("cuda", array.device.id)
    return CPU


def to_device(array, dev: device):
    """Copy ``array`` to ``dev`` (no copy when it is already there)."""
    dev = device(dev)
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
