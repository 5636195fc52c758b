"""Segment ops: reductions and a softmax over the sequences of a jagged batch.

Each public function takes a ``JaggedTensor``, or a packed ``values`` Tensor (n, *F) with
``offsets`` (batch + 1) or ``lengths`` (batch) -- the form rec's embedding bags use:

    >>> import ember
    >>> from ember.jagged import segment_sum, segment_max
    >>> v = ember.tensor([[1.0], [2.0], [3.0], [4.0]])
    >>> segment_sum(v, ember.tensor([0, 1, 1, 4]))
    tensor([[1.],
            [0.],
            [9.]])
    >>> segment_max(v, lengths=[1, 0, 3]).indices
    tensor([[ 0],
            [-1],
            [ 3]])

Every op is differentiable, and its backward is written with differentiable ops, so
higher-order gradients work: ``segment_sum`` and ``segment_expand`` (each sequence's row
repeated over its rows) are each other's backward, and so are the argmax scatter/gather
pair behind ``segment_max``.
"""
from __future__ import annotations

from collections import namedtuple

from .. import _backend as B
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record, saved_output
from ..ops._util import wrap
from . import _arrays as A
from ._layout import Layout

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_softmax", "segment_expand"]

segment_max_result = namedtuple("segment_max", ["values", "indices"])


def _parts(data, offsets, lengths, op):
    """``(values, layout)`` from a JaggedTensor or a values Tensor with offsets/lengths."""
    from .._tensor import Tensor
    from .tensor import JaggedTensor

    if isinstance(data, JaggedTensor):
        if offsets is not None or lengths is not None:
            raise TypeError(f"{op}: offsets/lengths come from the JaggedTensor; pass only it")
        return data._values, data._layout
    if not isinstance(data, Tensor):
        raise TypeError(f"{op}: expected a JaggedTensor or a values Tensor, got "
                        f"{type(data).__name__}")
    if data.ndim < 1:
        raise ValueError(f"{op}: values must have a leading (packed) dimension, got a 0-d tensor")
    return data, Layout.build(data.shape[0], offsets, lengths, xp=B.namespace(data.array))


def _check_float(values, op):
    if values.dtype.kind != "f" and str(values.dtype) != "bfloat16":
        raise TypeError(f"{op}: expected floating point values, got {values.dtype}")


# ------------------------------------------------------------------------------------ sum

class SegmentSumBackward(Node):
    __slots__ = ("layout",)

    def backward(self, g):
        return (_expand(g, self.layout),)


class SegmentExpandBackward(Node):
    __slots__ = ("layout",)

    def backward(self, g):
        return (_sum(g, self.layout),)


def _sum(values, layout):
    out = wrap(A.segment_sum(values.array, layout))
    if STATE.enabled and values.requires_grad:
        n = new_node(SegmentSumBackward)
        n.layout = layout
        record(n, out, values)
    return out


def _expand(g, layout):
    out = wrap(A.segment_expand(g.array, layout))
    if STATE.enabled and g.requires_grad:
        n = new_node(SegmentExpandBackward)
        n.layout = layout
        record(n, out, g)
    return out


def segment_sum(data, offsets=None, *, lengths=None):
    """The sum of each sequence: (batch, *F); an empty sequence sums to 0."""
    values, layout = _parts(data, offsets, lengths, "segment_sum")
    return _sum(values, layout)


def segment_expand(data, offsets=None, *, lengths=None):
    """The adjoint of ``segment_sum``: row ``b`` of ``data`` (batch, *F) repeated over the
    rows of sequence ``b``, giving (n, *F) (n = offsets[-1]). With a JaggedTensor the
    result is a JaggedTensor of the same layout; its values are what is repeated."""
    from .tensor import JaggedTensor

    if isinstance(data, JaggedTensor):
        raise TypeError("segment_expand: pass the per-sequence Tensor (batch, *F) and the "
                        "offsets or lengths to repeat it over")
    layout = Layout.build(None, offsets, lengths, xp=B.namespace(data.array))
    if data.shape[0] != layout.batch_size:
        raise ValueError(f"segment_expand: data has {data.shape[0]} rows for "
                         f"{layout.batch_size} sequences")
    return _expand(data, layout)


# ------------------------------------------------------------------------------------ mean

class SegmentMeanBackward(Node):
    __slots__ = ("layout", "inv")

    def backward(self, g):
        return (_expand(g * wrap(self.inv), self.layout),)


def segment_mean(data, offsets=None, *, lengths=None):
    """The mean of each sequence: (batch, *F); an empty sequence gives 0 (not NaN, as
    ``nn.EmbeddingBag`` does for an empty bag)."""
    values, layout = _parts(data, offsets, lengths, "segment_mean")
    _check_float(values, "segment_mean")
    d = values.array
    xp = B.namespace(d)
    counts = xp.maximum(layout.lengths, 1).astype(d.dtype)
    inv = (1 / counts).astype(d.dtype).reshape((-1,) + (1,) * (d.ndim - 1))
    s = A.segment_sum(d, layout)
    s *= inv
    out = wrap(s)
    if STATE.enabled and values.requires_grad:
        n = new_node(SegmentMeanBackward)
        n.layout, n.inv = layout, inv
        record(n, out, values)
    return out


# ------------------------------------------------------------------------------------ max

class SegmentMaxBackward(Node):
    """Gradient to the argmax rows (the first maximum of each sequence and column)."""

    __slots__ = ("index",)

    def backward(self, g):
        return (_argmax_scatter(g, self.index),)


class ArgmaxScatterBackward(Node):
    __slots__ = ("index",)

    def backward(self, g):
        return (_argmax_gather(g, self.index),)


class ArgmaxGatherBackward(Node):
    __slots__ = ("index",)

    def backward(self, g):
        return (_argmax_scatter(g, self.index),)


def _argmax_scatter(g, index):
    out = wrap(index.scatter(g.array))
    if STATE.enabled and g.requires_grad:
        n = new_node(ArgmaxScatterBackward)
        n.index = index
        record(n, out, g)
    return out


def _argmax_gather(x, index):
    out = wrap(index.gather(x.array))
    if STATE.enabled and x.requires_grad:
        n = new_node(ArgmaxGatherBackward)
        n.index = index
        record(n, out, x)
    return out


def segment_max(data, offsets=None, *, lengths=None, empty_value=0.0):
    """``(values, indices)``: the maximum of each sequence, per feature, (batch, *F), and the
    row of ``values`` holding it (the first one when tied; a NaN is the maximum of its
    sequence). An empty sequence gives ``empty_value`` (default 0, as ``nn.EmbeddingBag``
    gives for an empty bag; pass ``-inf`` for ``torch.segment_reduce``'s) and index -1. The
    gradient goes to the argmax rows only."""
    values, layout = _parts(data, offsets, lengths, "segment_max")
    out, arg = A.segment_max(values.array, layout, empty_value)
    res = wrap(out)
    if STATE.enabled and values.requires_grad:
        n = new_node(SegmentMaxBackward)
        n.index = A.ArgIndex(arg, values.shape[0])
        record(n, res, values)
    return segment_max_result(res, wrap(arg))


# ------------------------------------------------------------------------------------ softmax

class SegmentSoftmaxBackward(Node):
    __slots__ = ("layout",)

    def backward(self, g):
        (y,) = self.unpack()
        gy = g * y
        return (gy - y * _expand(_sum(gy, self.layout), self.layout),)


def segment_softmax(data, offsets=None, *, lengths=None):
    """Softmax over the rows of each sequence, separately for every feature: same shape as
    the values (a JaggedTensor in, a JaggedTensor out). ``exp(x - max)`` normalised by its
    sequence's sum; a sequence of only ``-inf`` gives NaN, as ``softmax`` does."""
    from .tensor import JaggedTensor

    values, layout = _parts(data, offsets, lengths, "segment_softmax")
    _check_float(values, "segment_softmax")
    e = A.segment_softmax(values.array, layout)
    out = wrap(e)
    if STATE.enabled and values.requires_grad:
        n = new_node(SegmentSoftmaxBackward)
        n.layout = layout
        record(n, out, values)
        n.saved = (saved_output(out),)
    return data._with_values(out) if isinstance(data, JaggedTensor) else out

