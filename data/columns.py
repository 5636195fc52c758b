"""Column selection for ``map``/``filter`` on tuple, list and dict samples.

``input_col``: None (the whole sample), a key/index, or a list of them (passed as separate
arguments). ``output_col``: None (replace the input column; with several input columns the
first one is replaced and the others removed), a key/index, or -1 to append to a sequence.

    >>> from ember.data.columns import column_fn
    >>> column_fn(lambda a: a * 2, 1, None)((1, 2, 3))
    (1, 4, 3)
    >>> column_fn(lambda a, b: a + b, ["x", "y"], "z")({"x": 1, "y": 2})
    {'x': 1, 'y': 2, 'z': 3}
"""
from __future__ import annotations


def _is_multi(col):
    return isinstance(col, (list, tuple))


def _set(sample, out_col, value, drop=()):
    if isinstance(sample, dict):
        d = dict(sample)
        for c in drop:
            del d[c]
        d[out_col] = value
        return d
    if not isinstance(sample, (list, tuple)):
        raise TypeError(f"input_col/output_col need a tuple, list or dict sample, "
                        f"got {type(sample).__name__}")
    seq = list(sample)
    if out_col == -1:
        seq.append(value)
    else:
        seq[out_col] = value
    for c in sorted(drop, reverse=True):
        del seq[c]
    return tuple(seq) if isinstance(sample, tuple) else seq


class _Columns:
    """Picklable ``sample -> new sample`` applying ``fn`` to selected columns."""

    def __init__(self, fn, cols, out, drop, multi):
        self.fn, self.cols, self.out, self.drop, self.multi = fn, cols, out, drop, multi

    def __call__(self, x):
        if self.multi:
            return _set(x, self.out, self.fn(*[x[c] for c in self.cols]), self.drop)
        return _set(x, self.out, self.fn(x[self.cols]))


class _Select:
    """Picklable ``sample -> fn(selected columns)``."""

    def __init__(self, fn, cols, multi):
        self.fn, self.cols, self.multi = fn, cols, multi

    def __call__(self, x):
        if self.multi:
            return self.fn(*[x[c] for c in self.cols])
        return self.fn(x[self.cols])


def column_fn(fn, input_col=None, output_col=None):
    """A function ``sample -> new sample`` applying ``fn`` to the selected columns."""
    if input_col is None:
        if output_col is not None:
            raise ValueError("output_col must be None when input_col is None")
        return fn
    if _is_multi(output_col):
        raise ValueError("output_col must be a single key or index")
    if _is_multi(input_col):
        cols = list(input_col)
        if not cols:
            raise ValueError("input_col must not be an empty list")
        if output_col is None:
            return _Columns(fn, cols, cols[0], cols[1:], True)
        return _Columns(fn, cols, output_col, (), True)
    return _Columns(fn, input_col, input_col if output_col is None else output_col, (), False)


def select_fn(fn, input_col=None):
    """A function ``sample -> fn(selected columns)`` (for ``filter``)."""
    if input_col is None:
        return fn
    if _is_multi(input_col):
        return _Select(fn, list(input_col), True)
    return _Select(fn, input_col, False)
