"""rec's ``JaggedTensor``: ``ember.jagged.JaggedTensor`` plus optional per-value ``weights``."""
from __future__ import annotations

import numpy as np

import ember
from ember.jagged import JaggedTensor as _JaggedTensor

from ._util import as_tensor, host


class JaggedTensor(_JaggedTensor):
    """One sparse feature over a batch: ``values`` (the ids, or any per-value rows) cut into
    ``batch_size`` lists by ``lengths`` or ``offsets``, with an optional ``weights`` tensor
    holding one score per value (per-sample weights for a weighted embedding bag).

    For the batch ``[[10, 11], [], [12]]`` with weights ``[[.5, 1.], [], [2.]]``::

        values   (3,)   | 10  11 | 12 |
        weights  (3,)   | .5  1. | 2. |
                        0        2    3
        offsets  (4,)   [0, 2, 2, 3]        (batch_size + 1)
        lengths  (3,)   [2, 0, 1]

    The layout (offsets, lengths and every index map built from them) comes from
    ``ember.jagged.JaggedTensor``, so the segment ops (``sum``, ``mean``, ``max``) and the
    padded conversions work on it too. Arguments follow torchrec's order: ``values``,
    ``weights``, ``lengths``, ``offsets``.

    >>> import ember
    >>> from ember.rec import JaggedTensor
    >>> jt = JaggedTensor(ember.tensor([10, 11, 12]), lengths=[2, 0, 1],
    ...                   weights=ember.tensor([0.5, 1.0, 2.0]))
    >>> jt.offsets().tolist(), [t.tolist() for t in jt.to_dense()]
    ([0, 2, 2, 3], [[10, 11], [], [12]])
    >>> jt.to_padded_dense(padding_value=-1).tolist()
    [[10, 11], [-1, -1], [12, -1]]
    """

    __slots__ = ("_weights",)

    def __reduce__(self):
        return (JaggedTensor, (self.values(), self._weights, None, self.offsets()))

    def __init__(self, values, weights=None, lengths=None, offsets=None, *, validate=True):
        values = as_tensor(values, "JaggedTensor: values")
        super().__init__(values, offsets=offsets, lengths=lengths, validate=validate)
        self._weights = _check_weights(as_tensor(weights, "JaggedTensor: weights", like=values),
                                       values.shape[0], "JaggedTensor")

    @classmethod
    def _make(cls, values, layout, weights):
        out = object.__new__(JaggedTensor)
        out._values, out._layout, out._weights = values, layout, weights
        return out

    def _with_values(self, values):
        return JaggedTensor._make(values, self._layout, self._weights)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def empty(is_weighted=False, device=None, values_dtype=None, weights_dtype=None):
        """A JaggedTensor of batch size 0 (int64 values, float32 weights by default)."""
        v = ember.empty(0, dtype=values_dtype or ember.int64, device=device)
        w = ember.empty(0, dtype=weights_dtype or ember.float32, device=device) \
            if is_weighted else None
        return JaggedTensor(v, w, offsets=ember.zeros(1, dtype=ember.int64, device=device))

    @staticmethod
    def from_dense(values, weights=None):
        """From a list of 1-D (or (n_i, *F)) tensors, one per batch entry, and optionally
        their weights (one tensor per entry, same lengths)."""
        base = _JaggedTensor.from_tensors([as_tensor(v, "JaggedTensor.from_dense: values")
                                           for v in values])
        w = None
        if weights is not None:
            ws = [as_tensor(x, "JaggedTensor.from_dense: weights") for x in weights]
            if len(ws) != len(values):
                raise ValueError(f"JaggedTensor.from_dense: {len(values)} value tensors but "
                                 f"{len(ws)} weight tensors")
            w = ws[0] if len(ws) == 1 else ember.cat(ws, 0)
        out = JaggedTensor._make(base._values, base._layout, None)
        out._weights = _check_weights(w, base._values.shape[0], "JaggedTensor.from_dense")
        return out

    @staticmethod
    def from_dense_lengths(values, lengths, weights=None):
        """From a padded (batch, max_length, *F) ``values`` and ``lengths``: the first
        ``lengths[b]`` entries of each row (``weights`` padded the same way)."""
        lengths = as_tensor(lengths, "JaggedTensor.from_dense_lengths: lengths", integer=True)
        base = _JaggedTensor.from_padded(as_tensor(values, "values"), lengths)
        w = None
        if weights is not None:
            w = _JaggedTensor.from_padded(as_tensor(weights, "weights"), lengths).values()
        return JaggedTensor._make(base._values, base._layout, w)

    # ------------------------------------------------------------------ the parts
    def weights(self):
        """The per-value weights; raises when this JaggedTensor has none."""
        if self._weights is None:
            raise ValueError("JaggedTensor: this JaggedTensor has no weights (use "
                             "weights_or_none())")
        return self._weights

    def weights_or_none(self):
        return self._weights

    def lengths_or_none(self):
        return self.lengths()

    def offsets_or_none(self):
        return self.offsets()

    # ------------------------------------------------------------------ conversions
    def to_dense(self):
        """The values of each batch entry, as a list of views."""
        return list(self.unbind())

    def to_dense_weights(self):
        """The weights of each batch entry, as a list of views (None without weights)."""
        if self._weights is None:
            return None
        h = self._layout.host_offsets.tolist()
        return [self._weights[h[k]:h[k + 1]] for k in range(len(h) - 1)]

    def to_padded_dense(self, desired_length=None, padding_value=0.0):
        """(batch_size, desired_length or max length, *F): each entry's values, then
        ``padding_value``; longer entries are cut."""
        return self.to_padded(padding_value, desired_length)

    def to_padded_dense_weights(self, desired_length=None, padding_value=0.0):
        """The weights padded like ``to_padded_dense`` (None without weights)."""
        if self._weights is None:
            return None
        w = self._weights
        return self.apply(lambda _: w).to_padded(padding_value, desired_length)

    def to(self, *args, **kwargs):
        """Values and weights to a device (``dtype=`` casts the values only)."""
        base = super().to(*args, **kwargs)
        w = self._weights
        if w is not None and base.device != w.device:
            w = w.to(base.device)
        return JaggedTensor._make(base._values, base._layout, w)

    def detach(self):
        w = None if self._weights is None else self._weights.detach()
        return JaggedTensor._make(self._values.detach(), self._layout, w)

    def __getitem__(self, i):
        """``jt[i]``: entry ``i``'s values (a view); ``jt[a:b]``: a JaggedTensor of entries
        ``a..b-1`` with their weights."""
        if not isinstance(i, slice):
            return super().__getitem__(i)
        n = self._layout.batch_size
        a, b, step = i.indices(n)
        if step != 1:
            raise IndexError(f"JaggedTensor: slices must be contiguous (step 1), got step {step}")
        b = max(a, b)
        lay, r0, r1 = self._layout.slice(a, b)
        w = None if self._weights is None else self._weights[r0:r1]
        return JaggedTensor._make(self._values[r0:r1], lay, w)

    def __repr__(self):
        base = super().__repr__()
        if self._weights is None:
            return base
        return base[:-1] + ", weighted=True)"

    def __str__(self):
        vals = [host(t).tolist() for t in self.to_dense()]
        if self._weights is None:
            return f"JaggedTensor({vals})"
        ws = [np.round(host(t), 4).tolist() for t in self.to_dense_weights()]
        return f"JaggedTensor(values={vals}, weights={ws})"


def _check_weights(w, n, who):
    if w is None:
        return None
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{who}: weights must be 1-D with one weight per value ({n}), got "
                         f"shape {tuple(w.shape)}")
    return w
