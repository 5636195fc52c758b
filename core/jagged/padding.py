"""Packed <-> padded conversions, each the other's backward.

Both go through a layout's ``PadMap`` for the padded length (built once per layout and
length, then reused): ``slots[k]`` is the flat grid slot (``b * length + t``) of packed row
``rows[k]`` (all rows when none is cut off). Slots are distinct, so the packed -> padded
direction is an assignment into a filled grid and padded -> packed a gather; no scatter-add.

    >>> import ember
    >>> from ember.jagged import jagged_to_padded, padded_to_jagged
    >>> v = ember.tensor([1.0, 2.0, 3.0])
    >>> p = jagged_to_padded(v, lengths=[2, 0, 1], padding_value=-1.0)
    >>> p
    tensor([[ 1.,  2.],
            [-1., -1.],
            [ 3., -1.]])
    >>> padded_to_jagged(p, lengths=[2, 0, 1])
    tensor([1., 2., 3.])
"""
from __future__ import annotations

from .. import _backend as B
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ..ops._util import wrap
from ._layout import Layout

__all__ = ["jagged_to_padded", "padded_to_jagged"]


class ToPaddedBackward(Node):
    __slots__ = ("layout", "map")

    def backward(self, g):
        return (_gather(g, self.layout, self.map),)


class FromPaddedBackward(Node):
    __slots__ = ("layout", "map")

    def backward(self, g):
        return (_scatter(g, self.layout, self.map, 0),)


def _scatter(values, layout, pm, padding_value):
    """(n, *F) packed -> (batch, length, *F) padded, ``padding_value`` in the empty slots."""
    d = values.array
    xp = B.namespace(d)
    S, L, feat = layout.batch_size, pm.length, d.shape[1:]
    out = xp.full((S * L,) + feat, padding_value, d.dtype)
    out[pm.slots] = d if pm.rows is None else d[pm.rows]
    res = wrap(out.reshape((S, L) + feat))
    if STATE.enabled and values.requires_grad:
        n = new_node(ToPaddedBackward)
        n.layout, n.map = layout, pm
        record(n, res, values)
    return res


def _gather(padded, layout, pm):
    """(batch, length, *F) padded -> (n, *F) packed (rows cut off by the length get 0)."""
    d = padded.array
    xp = B.namespace(d)
    flat = d.reshape((d.shape[0] * d.shape[1],) + d.shape[2:])
    if pm.rows is None:
        out = flat[pm.slots]
    else:
        out = xp.zeros((layout.n,) + d.shape[2:], d.dtype)
        out[pm.rows] = flat[pm.slots]
    res = wrap(out)
    if STATE.enabled and padded.requires_grad:
        n = new_node(FromPaddedBackward)
        n.layout, n.map = layout, pm
        record(n, res, padded)
    return res


def to_padded(values, layout, padding_value=0.0, max_length=None):
    return _scatter(values, layout, layout.pad_map(max_length), padding_value)


def from_padded(padded, layout):
    """Packed values of ``padded`` (batch, length, *F) for ``layout`` (its lengths <= length)."""
    if padded.ndim < 2:
        raise ValueError(f"from_padded: padded must be (batch, length, *features), got shape "
                         f"{tuple(padded.shape)}")
    S, L = padded.shape[0], padded.shape[1]
    if S != layout.batch_size:
        raise ValueError(f"from_padded: padded has batch {S} but there are "
                         f"{layout.batch_size} lengths")
    if layout.max_length > L:
        raise ValueError(f"from_padded: a length of {layout.max_length} does not fit the "
                         f"padded length {L}")
    return _gather(padded, layout, layout.pad_map(L))


def jagged_to_padded(values, offsets=None, *, lengths=None, max_length=None,
                     padding_value=0.0):
    """Packed ``values`` (n, *F) with ``offsets`` or ``lengths`` -> (batch, max_length, *F),
    ``padding_value`` after each sequence; ``max_length`` (default: the longest) cuts longer
    sequences. Differentiable in ``values``."""
    layout = Layout.build(values.shape[0], offsets, lengths, xp=B.namespace(values.array))
    return to_padded(values, layout, padding_value, max_length)


def padded_to_jagged(padded, offsets=None, *, lengths=None):
    """The first ``lengths[b]`` rows of each ``padded[b]`` (batch, length, *F), packed:
    (sum(lengths), *F). Differentiable in ``padded``."""
    layout = Layout.build(None, offsets, lengths, xp=B.namespace(padded.array))
    return from_padded(padded, layout)
