"""``repr`` of tensors in PyTorch's layout: ``tensor([1., 2.], requires_grad=True)``."""
from __future__ import annotations

import numpy as np

from . import _backend as B
from . import dtypes as D

_print = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    if profile == "default":
        _print.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        _print.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _print.update(precision=4, threshold=2 ** 62, edgeitems=3, linewidth=80)
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _print[k] = v
    _print["sci_mode"] = sci_mode


def format_tensor(t) -> str:
    arr = t.data if type(t.data) is np.ndarray else B.to_device(t.data, "cpu")
    if arr.dtype == D.bfloat16 or arr.dtype == D.float16:
        arr = arr.astype(np.float32)
    prefix = "tensor("
    suffix = []
    dev = t.device
    if dev.type != "cpu":
        suffix.append(f"device='{dev}'")
    default_dt = t.dtype in (D.get_default_dtype(), D.int64, D.bool)
    if arr.size == 0:
        body = "[]" if arr.ndim == 1 else "[]"
        suffix.append(f"size={tuple(arr.shape)}")
        if t.dtype != D.get_default_dtype():
            suffix.append(f"dtype=ember.{D.name(t.dtype)}")
    else:
        kw = dict(precision=_print["precision"], threshold=_print["threshold"],
                  edgeitems=_print["edgeitems"], max_line_width=_print["linewidth"],
                  separator=", ", prefix=prefix)
        if _print["sci_mode"] is not None:
            kw["suppress_small"] = not _print["sci_mode"]
        body = np.array2string(arr, **kw)
        if not default_dt:
            suffix.append(f"dtype=ember.{D.name(t.dtype)}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"
