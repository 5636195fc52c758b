"""``JaggedTensor``: a batch of variable-length sequences, packed without padding."""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from ._layout import Layout
from . import padding as P
from . import segment as S


class JaggedTensor:
    """A batch of ``batch_size`` sequences of different lengths, stored as one packed
    ``values`` tensor (total_length, *features) and int64 ``offsets`` (batch_size + 1):
    sequence ``b`` is ``values[offsets[b]:offsets[b + 1]]``.

    For the sequences ``[a0 a1 a2]``, ``[]``, ``[c0]``, ``[d0 d1]``::

        values   (6, *F)   | a0 a1 a2 | c0 | d0 d1 |
                           0          3    4       6
        offsets  (5,)      [0, 3, 3, 4, 6]        (batch_size + 1; offsets[-1] = len(values))
        lengths  (4,)      [3, 0, 1, 2]           (offsets[b + 1] - offsets[b])

        to_padded()        (4, 3, *F)             mask()
                           | a0 a1 a2 |           [[1 1 1]
                           | .  .  .  |            [0 0 0]
                           | c0 .  .  |            [1 0 0]
                           | d0 d1 .  |            [1 1 0]]

    Per-token work runs on ``values`` directly (``jt.apply(F.gelu)`` keeps the layout);
    per-sequence work goes through the segment ops (``jt.sum()``, ``mean``, ``max``,
    ``softmax``) or the padded form. Everything is differentiable back to ``values``.

    >>> import ember
    >>> jt = ember.jagged.as_jagged([[1.0, 2.0, 3.0], [], [4.0]])
    >>> jt
    JaggedTensor(batch_size=3, lengths=[3, 0, 1], feature_shape=(), dtype=float32, device=cpu)
    >>> jt.to_padded()
    tensor([[1., 2., 3.],
            [0., 0., 0.],
            [4., 0., 0.]])
    >>> jt.sum()
    tensor([6., 0., 4.])

    Construction checks the layout (offsets start at 0, never decrease and end at
    ``len(values)``; lengths are >= 0 and sum to ``len(values)``); ``validate=False`` skips
    the checks for offsets already known good. The offsets and every index map derived
    from them (segment ids, positions, padded <-> packed maps, masks) belong to a layout
    object that the JaggedTensors made from this one share, so each map is built once.

    Subclasses that carry more per-value state (rec's per-value ``weights``) override
    ``_with_values``, through which every method returning a new JaggedTensor of the same
    layout goes.
    """

    __slots__ = ("_values", "_layout", "__weakref__")

    def __reduce__(self):
        # values and offsets only (subclasses with more state define their own): the
        # layout's cached index maps are rebuilt on demand, so it crosses processes
        return (JaggedTensor, (self.values(), self.offsets()))

    def __init__(self, values, offsets=None, lengths=None, *, validate=True):
        from .._tensor import Tensor

        if not isinstance(values, Tensor):
            from ..factories import as_tensor

            values = as_tensor(values)
        if values.ndim < 1:
            raise ValueError("JaggedTensor: values must have a leading (packed) dimension, got "
                             "a 0-d tensor")
        self._values = values
        self._layout = Layout.build(values.shape[0], offsets, lengths,
                                    xp=B.namespace(values.array), validate=validate)

    @classmethod
    def _from_parts(cls, values, layout):
        out = object.__new__(JaggedTensor)
        out._values, out._layout = values, layout
        return out

    def _with_values(self, values):
        """A JaggedTensor of this layout holding ``values`` (same number of rows)."""
        return JaggedTensor._from_parts(values, self._layout)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_tensors(cls, tensors):
        """Pack a list of tensors (length_i, *F) sharing ``*F``, dtype and device. The
        result's values are their concatenation, so gradients flow back to each one."""
        from ..ops.shape import cat

        tensors = list(tensors)
        if not tensors:
            raise ValueError("JaggedTensor.from_tensors: needs at least one tensor (the feature "
                             "shape and dtype come from them)")
        feat, dt = tuple(tensors[0].shape[1:]), tensors[0].dtype
        for i, t in enumerate(tensors):
            if t.ndim < 1:
                raise ValueError(f"JaggedTensor.from_tensors: tensor {i} is 0-d; each sequence "
                                 "needs a leading length dimension")
            if tuple(t.shape[1:]) != feat or t.dtype != dt:
                raise ValueError(f"JaggedTensor.from_tensors: tensor {i} has shape "
                                 f"{tuple(t.shape)} and dtype {t.dtype}; expected (length, "
                                 f"*{feat}) of dtype {dt} like tensor 0")
        lengths = np.array([t.shape[0] for t in tensors], np.int64)
        values = tensors[0] if len(tensors) == 1 else cat(tensors, 0)
        lay = Layout.build(values.shape[0], None, lengths, xp=np, validate=False)
        return cls._from_parts(values, lay.to(values.device))

    @classmethod
    def from_padded(cls, padded, lengths):
        """From ``padded`` (batch, length, *F) and ``lengths`` (batch,): the first
        ``lengths[b]`` rows of ``padded[b]``. Differentiable in ``padded``; the index map is
        cached, so ``to_padded()`` back to the same length reuses it."""
        lay = Layout.build(None, None, lengths, xp=B.namespace(padded.array))
        return cls._from_parts(P.from_padded(padded, lay), lay)

    # ------------------------------------------------------------------ the parts
    def values(self):
        """The packed values (total_length, *F), as stored (no copy; shares the graph)."""
        return self._values

    def offsets(self):
        """int64 (batch_size + 1,): where each sequence starts, then the total length."""
        return _index_tensor(self._layout.offsets)

    def lengths(self):
        """int64 (batch_size,): each sequence's length."""
        return _index_tensor(self._layout.lengths)

    def segment_ids(self):
        """int64 (total_length,): the sequence each packed row belongs to."""
        return _index_tensor(self._layout.segment_ids())

    def positions(self):
        """int64 (total_length,): each packed row's position within its sequence."""
        return _index_tensor(self._layout.positions())

    @property
    def batch_size(self) -> int:
        return self._layout.batch_size

    def __len__(self):
        return self._layout.batch_size

    @property
    def max_length(self) -> int:
        """The longest sequence's length (0 for an empty batch)."""
        return self._layout.max_length

    @property
    def feature_shape(self):
        return tuple(self._values.shape[1:])

    def numel(self) -> int:
        """Number of elements stored (padding excluded)."""
        return self._values.numel()

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self):
        return self._values.device

    @property
    def requires_grad(self):
        return self._values.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._values.requires_grad_(requires_grad)
        return self

    def detach(self):
        return self._with_values(self._values.detach())

    # ------------------------------------------------------------------ sequences
    def __getitem__(self, i):
        """``jt[i]``: sequence ``i`` as a (length_i, *F) view of the values; ``jt[a:b]``:
        a JaggedTensor of sequences ``a..b-1`` (values a view)."""
        n = self._layout.batch_size
        if isinstance(i, slice):
            a, b, step = i.indices(n)
            if step != 1:
                raise IndexError("JaggedTensor: slices must be contiguous (step 1), got step "
                                 f"{step}")
            b = max(a, b)
            lay, r0, r1 = self._layout.slice(a, b)
            return JaggedTensor._from_parts(self._values[r0:r1], lay)
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"JaggedTensor indices must be integers or slices, not "
                            f"{type(i).__name__}")
        k = int(i) + n if i < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"JaggedTensor index {int(i)} is out of range for batch size {n}")
        h = self._layout.host_offsets
        return self._values[int(h[k]):int(h[k + 1])]

    def unbind(self):
        """The sequences as a tuple of (length_i, *F) views of the values."""
        h = self._layout.host_offsets.tolist()
        v = self._values
        return tuple(v[h[k]:h[k + 1]] for k in range(len(h) - 1))

    def __iter__(self):
        return iter(self.unbind())

    # ------------------------------------------------------------------ conversions
    def to(self, *args, **kwargs):
        """``Tensor.to`` on the values (device and/or dtype); the offsets follow the device."""
        values = self._values.to(*args, **kwargs)
        if values is self._values:
            return self
        lay = self._layout.to(values.device)
        if lay is self._layout:
            return self._with_values(values)
        return JaggedTensor._from_parts(values, lay)

    def apply(self, fn):
        """``fn(values)`` as a JaggedTensor of this layout: for per-row ops (activations,
        linear layers, norms over the features) that keep the number of rows."""
        out = fn(self._values)
        from .._tensor import Tensor

        if not isinstance(out, Tensor) or out.ndim < 1 or out.shape[0] != self._values.shape[0]:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"JaggedTensor.apply: fn must return a Tensor with "
                             f"{self._values.shape[0]} rows (one per value), got {got}")
        return self._with_values(out)

    def to_padded(self, padding_value=0.0, max_length=None):
        """(batch_size, max_length, *F), ``padding_value`` after each sequence; a
        ``max_length`` below the longest sequence cuts the longer ones."""
        return P.to_padded(self._values, self._layout, padding_value, max_length)

    def mask(self, max_length=None):
        """bool (batch_size, max_length): True where ``to_padded`` holds a value."""
        return _index_tensor(self._layout.mask(max_length))

    def jagged_to_padded_index(self, max_length=None):
        """int64 (total_length,): each packed row's flat slot ``b * max_length + t`` in the
        padded grid, -1 for a row cut off by ``max_length``. Built once per length."""
        lay = self._layout
        return _index_tensor(lay.pad_map(max_length).jagged_to_padded(lay))

    def padded_to_jagged_index(self, max_length=None):
        """int64 (batch_size * max_length,): the packed row at each flat slot of the padded
        grid, -1 for padding. Built once per length."""
        lay = self._layout
        return _index_tensor(lay.pad_map(max_length).padded_to_jagged(lay))

    # ------------------------------------------------------------------ segment ops
    def sum(self):
        """Per-sequence sums (batch_size, *F); see ``ember.jagged.segment_sum``."""
        return S.segment_sum(self)

    def mean(self):
        """Per-sequence means (batch_size, *F); 0 for an empty sequence."""
        return S.segment_mean(self)

    def max(self, empty_value=0.0):
        """``(values, indices)`` per sequence; see ``ember.jagged.segment_max``."""
        return S.segment_max(self, empty_value=empty_value)

    def softmax(self):
        """Softmax over each sequence's rows, per feature: a JaggedTensor of this layout."""
        return S.segment_softmax(self)

    def __repr__(self):
        lens = self._layout.lengths
        if lens.shape[0] > 8:
            h = B.to_device(lens[:4], B.device("cpu")).tolist()
            t = B.to_device(lens[-2:], B.device("cpu")).tolist()
            shown = "[" + ", ".join(map(str, h)) + ", ..., " + ", ".join(map(str, t)) + "]"
        else:
            shown = str(B.to_device(lens, B.device("cpu")).tolist())
        grad = ", requires_grad=True" if self._values.requires_grad else ""
        return (f"JaggedTensor(batch_size={self.batch_size}, lengths={shown}, "
                f"feature_shape={self.feature_shape}, dtype={self._values.dtype}, "
                f"device={self.device}{grad})")


def _index_tensor(a):
    from ..ops._util import wrap

    return wrap(a)


def as_jagged(sequences, dtype=None, device=None):
    """A JaggedTensor from a list of sequences (tensors, arrays or nested lists; each
    (length_i, *F)); a JaggedTensor is returned as is (moved/cast when asked)."""
    if isinstance(sequences, JaggedTensor):
        if dtype is None and device is None:
            return sequences
        return sequences.to(device=device, dtype=dtype)
    from .._tensor import Tensor
    from ..factories import as_tensor

    seqs = [s if isinstance(s, Tensor) and dtype is None and device is None
            else as_tensor(s, dtype=dtype, device=device) for s in sequences]
    if seqs and dtype is None:  # an empty Python list reads as float32: follow the others
        kinds = {s.dtype for s in seqs if s.shape[0] > 0}
        if len(kinds) == 1:
            (dt,) = kinds
            seqs = [s if s.dtype == dt or s.shape[0] else s.to(dt) for s in seqs]
    if seqs:  # ``[]`` among (n, F) sequences reads as shape (0,): give it the others' shape
        feat = next((tuple(s.shape[1:]) for s in seqs if s.shape[0] > 0), None)
        if feat:
            seqs = [s.reshape((0,) + feat) if s.shape[0] == 0 and s.ndim == 1 else s
                    for s in seqs]
    return JaggedTensor.from_tensors(seqs)
