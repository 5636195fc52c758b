"""``ember.accelerator``: torch's device-agnostic API (torch 2.6+), which current example code
calls unconditionally.

    >>> import ember
    >>> dev = ember.accelerator.current_accelerator() if ember.accelerator.is_available() \\
    ...     else ember.device("cpu")
"""
from __future__ import annotations

from . import _backend as B


def is_available():
    """True when a CUDA GPU is usable through cupy (ember's only accelerator)."""
    return B.cuda_available()


def device_count():
    if not is_available():
        return 0
    return B.cupy().cuda.runtime.getDeviceCount()


def current_accelerator(check_available=False):
    """``ember.device("cuda")`` when a GPU is usable, else None (as torch on a CPU machine)."""
    return B.device("cuda") if is_available() else None


def current_device_index():
    return B.cupy().cuda.runtime.getDevice() if is_available() else -1


current_device_idx = current_device_index


def set_device_index(device):
    if not is_available():
        raise RuntimeError("ember.accelerator.set_device_index: no accelerator is available "
                           "(ember's accelerator is a CUDA GPU through cupy)")
    idx = device.index if isinstance(device, B.device) else int(device)
    B.cupy().cuda.Device(idx).use()


set_device_idx = set_device_index


def synchronize(device=None):
    if is_available():
        B.cupy().cuda.Device().synchronize()
