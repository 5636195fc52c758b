"""Collation: a list of samples becomes one batch of arrays, as ember Tensors.

``default_collate`` handles nested dicts, tuples, lists and namedtuples of numpy arrays,
Tensors, Python/numpy numbers, strings and bytes. Arrays of one shape are stacked; with
``ragged=True`` arrays (or number lists) of different lengths become ``Ragged(values,
offsets)``: ``values`` the concatenation along the first axis, ``offsets`` the start of each
sample (length ``batch + 1``), as in a CSR row pointer.

Number dtypes follow torch: Python floats become float64, ints int64, bools bool (cast with
``.float()`` for float32 models). Difference from ``torch.utils.data.default_collate``:
tuples stay tuples (torch returns lists).

    >>> import numpy as np
    >>> from ember.data import default_collate
    >>> samples = [{"x": np.zeros(3, np.float32), "y": 1}, {"x": np.ones(3, np.float32), "y": 2}]
    >>> b = default_collate(samples)
    >>> b["x"].shape, b["y"].tolist()
    ((2, 3), [1, 2])
    >>> r = default_collate([[1, 2, 3], [4]], ragged=True)
    >>> r.values.tolist(), r.offsets.tolist()
    ([1, 2, 3, 4], [0, 3, 4])
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ember import _backend as B


class Ragged(NamedTuple):
    """A batch of variable-length samples: ``values[offsets[i]:offsets[i+1]]`` is sample i."""

    values: Any
    offsets: Any


def shared_empty(shape, dtype=np.float32):
    """An uninitialised array to build a batch in. Inside a DataLoader worker it lives in
    shared memory, so a ``collate_fn`` that fills and returns it sends the batch to the main
    process without any copy; elsewhere it is ``np.empty``.

        >>> import numpy as np
        >>> from ember.data import shared_empty
        >>> def collate_normalized(images):          # uint8 HWC samples -> float32 NCHW
        ...     out = shared_empty((len(images), 3) + images[0].shape[:2], np.float32)
        ...     for i, im in enumerate(images):
        ...         np.multiply(im.transpose(2, 0, 1), 1 / 255, out=out[i], dtype=np.float32)
        ...     return out
        >>> collate_normalized([np.zeros((4, 4, 3), np.uint8)]).shape
        (1, 3, 4, 4)
    """
    from .worker import current_arena

    arena = current_arena()
    return np.empty(shape, dtype) if arena is None else arena.alloc(shape, dtype)


def _np_alloc(shape, dtype):
    return shared_empty(shape, dtype)


def _as_array(x):
    from ember import Tensor

    return x.array if isinstance(x, Tensor) else x


def _stack(arrays, alloc, ragged):
    first = arrays[0]
    xp = B.namespace(first)
    shape = first.shape
    dtype = first.dtype
    same = True
    for a in arrays:
        if a.shape != shape:
            same = False
        if a.dtype != dtype:
            dtype = np.result_type(dtype, a.dtype)
    if same:
        if xp is np:
            out = alloc((len(arrays),) + shape, dtype)
            np.stack(arrays, out=out)
            return out
        return xp.stack([a.astype(dtype, copy=False) for a in arrays])
    if not ragged:
        shapes = sorted({tuple(a.shape) for a in arrays})
        raise RuntimeError(
            f"default_collate: cannot stack arrays of different shapes {shapes[:4]}"
            f"{'...' if len(shapes) > 4 else ''}; pad them, or collate with ragged=True "
            "(values + offsets)")
    if any(a.ndim == 0 for a in arrays) or len({a.shape[1:] for a in arrays}) > 1:
        raise RuntimeError("default_collate(ragged=True): samples must differ only in their "
                           "first dimension, got shapes " + str([a.shape for a in arrays][:4]))
    lengths = np.fromiter((a.shape[0] for a in arrays), np.int64, len(arrays))
    offsets = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if xp is np:
        values = alloc((total,) + first.shape[1:], dtype)
        np.concatenate(arrays, axis=0, out=values)
    else:
        values = xp.concatenate([a.astype(dtype, copy=False) for a in arrays], axis=0)
    return Ragged(values, offsets)


def collate_arrays(batch, *, ragged=False, alloc=_np_alloc):
    """Like ``default_collate`` but leaves numpy/cupy arrays (no Tensors); ``alloc(shape,
    dtype)`` provides the output buffers of stacked arrays (by default ``shared_empty``:
    shared memory in DataLoader workers)."""
    from ember import Tensor

    if not isinstance(batch, (list, tuple)):
        raise TypeError(f"collate: expected a list of samples, got {type(batch).__name__}")
    if not batch:
        return []
    elem = batch[0]
    if isinstance(elem, (np.ndarray, Tensor)) or B.is_cuda_array(elem):
        return _stack([_as_array(x) for x in batch], alloc, ragged)
    if isinstance(elem, (bool, np.bool_)):
        return np.array(batch, dtype=np.bool_)
    if isinstance(elem, int):
        return np.array(batch, dtype=np.int64)
    if isinstance(elem, float):
        return np.array(batch, dtype=np.float64)
    if isinstance(elem, complex):
        return np.array(batch, dtype=np.complex128)
    if isinstance(elem, np.generic):
        return np.array(batch)
    if isinstance(elem, (str, bytes)) or elem is None:
        return list(batch)
    if isinstance(elem, Mapping):
        out = {k: collate_arrays([d[k] for d in batch], ragged=ragged, alloc=alloc)
               for k in elem}
        try:
            return type(elem)(out) if type(elem) is not dict else out
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate_arrays(list(s), ragged=ragged, alloc=alloc)
                            for s in zip(*batch)))
    if isinstance(elem, Sequence):
        n = len(elem)
        if any(len(x) != n for x in batch):
            if ragged and all(isinstance(v, (int, float, bool, np.generic))
                              for x in batch for v in x):
                return _stack([np.asarray(x) for x in batch], alloc, True)
            raise RuntimeError("default_collate: each sequence in the batch must have the "
                               "same length (got lengths "
                               f"{sorted({len(x) for x in batch})}); use ragged=True for "
                               "variable-length number lists")
        cols = [collate_arrays(list(s), ragged=ragged, alloc=alloc) for s in zip(*batch)]
        return tuple(cols) if isinstance(elem, tuple) else cols
    raise TypeError(f"default_collate: cannot collate samples of type {type(elem).__name__}; "
                    "pass collate_fn= to handle them")


def to_tensors(tree):
    """Replace every numpy/cupy array in a nested structure by an ember Tensor (no copy)."""
    from ember import Tensor

    if isinstance(tree, np.ndarray) or B.is_cuda_array(tree):
        return Tensor._make(tree)
    if isinstance(tree, Ragged):
        return Ragged(to_tensors(tree.values), to_tensors(tree.offsets))
    if isinstance(tree, dict):
        return {k: to_tensors(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(to_tensors(v) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_tensors(v) for v in tree)
    return tree


def default_collate(batch, *, ragged=False):
    """Collate a list of samples into Tensors (see the module docstring)."""
    return to_tensors(collate_arrays(batch, ragged=ragged))


def default_convert(sample):
    """Arrays in one sample become Tensors, the rest is unchanged (the ``batch_size=None``
    loader path)."""
    return to_tensors(sample)
