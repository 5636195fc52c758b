"""dtypes are numpy dtype objects, so ``x.dtype is ember.float32`` holds and costs nothing.

PyTorch's promotion rules differ from numpy's in two places that matter and are handled
here: an integer/bool tensor combined with a float (tensor or Python scalar) becomes the
float's dtype (numpy would pick float64), and a 0-dim tensor does not widen a dimensioned
tensor of the same category.
"""
from __future__ import annotations

import numpy as np

try:
    import ml_dtypes as _ml

    bfloat16 = np.dtype(_ml.bfloat16)
except Exception:  # pragma: no cover - ml_dtypes is a dependency, but stay importable
    bfloat16 = None

float16 = half = np.dtype(np.float16)
float32 = float = np.dtype(np.float32)
float64 = double = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = short = np.dtype(np.int16)
int32 = int = np.dtype(np.int32)
int64 = long = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool = np.dtype(np.bool_)  # noqa: A001 - mirrors torch.bool
complex64 = cfloat = np.dtype(np.complex64)
complex128 = cdouble = np.dtype(np.complex128)

_builtin_float = __builtins__["float"] if isinstance(__builtins__, dict) else __builtins__.float
_builtin_int = __builtins__["int"] if isinstance(__builtins__, dict) else __builtins__.int
_builtin_bool = __builtins__["bool"] if isinstance(__builtins__, dict) else __builtins__.bool

_state = {"default": float32}

ALL = [float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128]
if bfloat16 is not None:
    ALL.append(bfloat16)

_NAMES = {d: n for n, d in [("float16", float16), ("float32", float32), ("float64", float64),
                           ("int8", int8), ("int16", int16), ("int32", int32), ("int64", int64),
                           ("uint8", uint8), ("bool", bool), ("complex64", complex64),
                           ("complex128", complex128)]}
if bfloat16 is not None:
    _NAMES[bfloat16] = "bfloat16"


def name(dt) -> str:
    """``'float32'`` for ``ember.float32`` (used by reprs and error messages)."""
    dt = np.dtype(dt)
    return _NAMES.get(dt, str(dt))


def get_default_dtype():
    return _state["default"]


def set_default_dtype(dt):
    dt = np.dtype(dt)
    if dt not in (float16, float32, float64) and dt != bfloat16:
        raise TypeError(f"default dtype must be a floating point type, got {name(dt)}")
    _state["default"] = dt


def to_dtype(dt):
    """Normalize a dtype argument (ember/numpy dtype, numpy type, Python type or name)."""
    if dt is None:
        return None
    if dt is _builtin_float:
        return _state["default"]
    if dt is _builtin_int:
        return int64
    if dt is _builtin_bool:
        return bool
    if isinstance(dt, str) and dt == "bfloat16":
        if bfloat16 is None:
            raise TypeError("bfloat16 needs the ml_dtypes package")
        return bfloat16
    try:
        return np.dtype(dt)
    except TypeError:
        raise TypeError(f"not a dtype: {dt!r}") from None


def is_floating(dt) -> _builtin_bool:
    return dt.kind == "f" or dt == bfloat16


def is_complex(dt) -> _builtin_bool:
    return dt.kind == "c"


def _category(dt):
    k = dt.kind
    if k == "b":
        return 0
    if k in "iu":
        return 1
    if k == "f" or dt == bfloat16:
        return 2
    return 3


def promote_types(a, b):
    """PyTorch's ``promote_types`` for two tensor dtypes."""
    if a is b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if a == bfloat16 or b == bfloat16:
        other = b if a == bfloat16 else a
        return bfloat16 if other == bfloat16 else (float32 if other == float16 else other)
    return np.promote_types(a, b)


def result_type(a, b):
    """Result dtype of a binary op on two arrays, with PyTorch's 0-dim rule."""
    da, db = a.dtype, b.dtype
    if da is db:
        return da
    ca, cb = _category(da), _category(db)
    if ca == cb and (a.ndim == 0) != (b.ndim == 0):
        return db if a.ndim == 0 else da
    return promote_types(da, db)


def scalar_result_type(dt, scalar):
    """dtype of ``tensor <op> python_scalar`` (the scalar is weak, as in PyTorch)."""
    t = type(scalar)
    if t is _builtin_float:
        return dt if (dt.kind in "fc" or dt == bfloat16) else _state["default"]
    if t is _builtin_int:
        return int64 if dt.kind == "b" else dt
    if t is _builtin_bool:
        return dt
    if t is complex:
        return dt if dt.kind == "c" else (complex128 if dt == float64 else complex64)
    return dt
