"""``repr`` of tensors in PyTorch's layout: ``tensor([1., 2.], requires_grad=True)``.

Layout rules (those of PyTorch, so printed tensors read the same):

- floats: if every finite value is integral, ``1.`` style; otherwise fixed point with
  ``precision`` decimals, switching to scientific notation when the finite non-zero
  magnitudes span more than 1000x, exceed 1e8, or (non-integral only) go below 1e-4;
- every element is right-aligned to the widest one; rows wrap at ``linewidth``;
- more than ``threshold`` elements are summarized with ``...`` around ``edgeitems`` per side;
- ``dtype=`` is shown unless it is the default float dtype, int64 or bool; empty tensors
  show their ``size=`` unless 1-d.
"""
from __future__ import annotations

import math

import numpy as np

from . import _backend as B
from . import dtypes as D

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
             "sci_mode": None}
_print = dict(_DEFAULTS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Change how tensors print (same options as ``torch.set_printoptions``)."""
    if profile == "default":
        _print.update(_DEFAULTS)
    elif profile == "short":
        _print.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _print.update(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _print[k] = v
    _print["sci_mode"] = sci_mode


def _summarized(arr, edge):
    """The elements that will be printed (for the formatter's width)."""
    if arr.ndim == 0:
        return arr.reshape(1)
    if arr.shape[0] > 2 * edge:
        arr = np.concatenate([arr[:edge], arr[-edge:]])
    if arr.ndim == 1:
        return arr
    return np.concatenate([_summarized(a, edge).reshape(-1) for a in arr]) if len(arr) else \
        arr.reshape(-1)


def _make_formatter(sample, kind):
    """A function value -> string, and the common width."""
    if kind == "b":
        strs = ["True" if v else "False" for v in sample.tolist()]

        def fmt(v):
            return "True" if v else "False"
    elif kind in "iu":
        def fmt(v):
            return str(int(v))
        strs = [fmt(v) for v in sample.tolist()]
    else:
        prec = _print["precision"]
        vals = sample.astype(np.float64)
        finite = vals[np.isfinite(vals)]
        nz = np.abs(finite[finite != 0])
        integral = bool(np.all(finite == np.round(finite)))
        sci = False
        if nz.size:
            hi, lo = float(nz.max()), float(nz.min())
            sci = hi / lo > 1000.0 or hi > 1e8 or (not integral and lo < 1e-4)
        if _print["sci_mode"] is not None:
            sci = bool(_print["sci_mode"])

        def fmt(v):
            v = float(v)
            if not math.isfinite(v):
                return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
            if sci:
                return f"{v:.{prec}e}"
            if integral:
                return f"{v:.0f}."
            return f"{v:.{prec}f}"
        # alignment width from the finite non-zero values (as PyTorch): nan/inf/0 do not widen
        strs = [fmt(v) for v in finite[finite != 0].tolist()]
    width = max((len(s) for s in strs), default=1)
    return (lambda v: fmt(v).rjust(width)), width


def _vector(arr, indent, summarize, fmt, width):
    edge = _print["edgeitems"]
    vals = arr.tolist()
    if summarize and len(vals) > 2 * edge:
        items = [fmt(v) for v in vals[:edge]] + [" ..."] + [fmt(v) for v in vals[-edge:]]
    else:
        items = [fmt(v) for v in vals]
    per_line = max(1, int((_print["linewidth"] - indent) // (width + 2)))
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr, indent, summarize, fmt, width):
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt, width)
    edge = _print["edgeitems"]
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        parts = [_nested(arr[i], indent + 1, summarize, fmt, width) for i in range(edge)]
        parts.append("...")
        parts += [_nested(arr[i], indent + 1, summarize, fmt, width) for i in range(n - edge, n)]
    else:
        parts = [_nested(a, indent + 1, summarize, fmt, width) for a in arr]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def format_array(arr, indent=len("tensor(")) -> str:
    """The bracketed body of a tensor's repr."""
    if arr.dtype == D.bfloat16 or arr.dtype == D.float16:
        arr = arr.astype(np.float32)
    kind = arr.dtype.kind
    if kind == "c":  # complex: numpy's layout is good enough
        return np.array2string(arr, precision=_print["precision"], separator=", ",
                               prefix=" " * indent, max_line_width=_print["linewidth"])
    summarize = arr.size > _print["threshold"]
    sample = _summarized(arr, _print["edgeitems"]) if summarize else arr.reshape(-1)
    fmt, width = _make_formatter(sample, kind)
    if arr.ndim == 0:
        return fmt(arr.item()).strip()
    return _nested(arr, indent, summarize, fmt, width)


def format_tensor(t) -> str:
    arr = t.array if type(t.array) is np.ndarray else B.to_device(t.array, "cpu")
    prefix = "tensor("
    suffix = []
    dev = t.device
    if dev.type != "cpu":
        suffix.append(f"device='{dev}'")
    default_complex = D.complex128 if D.get_default_dtype() == D.float64 else D.complex64
    default_dt = t.dtype in (D.get_default_dtype(), D.int64, D.bool, default_complex)
    if dev.type == "meta":  # no values to show
        body = "..."
        suffix.append(f"size={tuple(arr.shape)}")
        default_dt = t.dtype == D.get_default_dtype()
    elif arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffix.append(f"size={tuple(arr.shape)}")
        default_dt = t.dtype == D.get_default_dtype()  # empty: only the default float is implied
    else:
        body = format_array(arr, len(prefix))
    if not default_dt:
        suffix.append(f"dtype=ember.{D.name(t.dtype)}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    out = prefix + body
    # suffixes go on the last line while it stays within linewidth (counting the ", " and
    # two more columns, as PyTorch does), else on a new line aligned after the prefix
    line = len(out) - out.rfind("\n") + 1
    for sfx in suffix:
        if line + len(sfx) + 2 > _print["linewidth"]:
            out += ",\n" + " " * len(prefix) + sfx
            line = len(prefix) + len(sfx)
        else:
            out += ", " + sfx
            line += len(sfx) + 2
    return out + ")"
