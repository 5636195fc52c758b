"""Autograd for in-place ops on views (what PyTorch calls CopySlices).

A view shares memory with its base. When an in-place op with autograd writes through a view,
the base's history must change too: the base becomes "old base with the view's region replaced
by the op's result". The region is described by its memory geometry relative to the base
(shape, strides, byte offset), which covers every view numpy can make (slices, transposes,
reshapes, diagonals, ...), so no per-view-op bookkeeping is needed.
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, new_node, record
from ._util import wrap


def _ptr(a):
    return a.ctypes.data if type(a) is np.ndarray else a.data.ptr


class Layout:
    """Shape, dtype and memory order of a base array, to make zeros laid out like it."""
    __slots__ = ("shape", "dtype", "order", "xp")

    def __init__(self, arr):
        self.shape, self.dtype = arr.shape, arr.dtype
        self.order = "C" if arr.flags.c_contiguous else "F"
        self.xp = B.namespace(arr)

    def zeros(self, dtype=None):
        return self.xp.zeros(self.shape, self.dtype if dtype is None else dtype, order=self.order)


def geometry(view_arr, base_arr):
    """(shape, strides, byte offset) of ``view_arr`` inside ``base_arr``'s memory."""
    if not (base_arr.flags.c_contiguous or base_arr.flags.f_contiguous):
        raise RuntimeError(
            "in-place operation with autograd on a view whose base tensor is not contiguous: "
            "call .contiguous() on the base first")
    return view_arr.shape, view_arr.strides, _ptr(view_arr) - _ptr(base_arr)


def _region(arr, geom, layout):
    """The view of ``arr`` (laid out like the base) at ``geom``."""
    shape, strides, offset = geom
    flat = arr.reshape(-1, order=layout.order)
    return layout.xp.lib.stride_tricks.as_strided(flat[offset // arr.itemsize:], shape, strides)


def _as_layout(g, layout):
    if layout.order == "C" and g.flags.c_contiguous or layout.order == "F" and g.flags.f_contiguous:
        return g
    return layout.xp.asarray(g, order=layout.order)


class RegionBackward(Node):
    """``region(base)`` as a differentiable op: backward writes into zeros."""
    __slots__ = ("geom", "layout")

    def backward(self, g):
        return (embed_region(g, self.geom, self.layout),)


class EmbedBackward(Node):
    __slots__ = ("geom", "layout")

    def backward(self, g):
        return (take_region(g, self.geom, self.layout),)


def take_region(t, geom, layout):
    """Differentiable: the region ``geom`` of ``t`` (a tensor shaped like the base)."""
    arr = _as_layout(t.array, layout)
    out = wrap(_region(arr, geom, layout).copy())
    if STATE.enabled and t.requires_grad:
        n = new_node(RegionBackward)
        n.geom, n.layout = geom, layout
        record(n, out, t)
    return out


def embed_region(t, geom, layout):
    """Differentiable: zeros shaped like the base with ``t`` written into region ``geom``."""
    arr = layout.zeros(t.array.dtype)
    _region(arr, geom, layout)[...] = t.array
    out = wrap(arr)
    if STATE.enabled and t.requires_grad:
        n = new_node(EmbedBackward)
        n.geom, n.layout = geom, layout
        record(n, out, t)
    return out


class CopySlicesBackward(Node):
    """base_new = base_old with region replaced by ``value``."""
    __slots__ = ("geom", "layout")

    def backward(self, g):
        nx = self.next
        gb = gv = None
        if nx[0] is not None:
            mask = self.layout.xp.ones(self.layout.shape, g.array.dtype, order=self.layout.order)
            _region(mask, self.geom, self.layout)[...] = 0
            gb = g * wrap(mask)
        if nx[1] is not None:
            gv = take_region(g, self.geom, self.layout)
        return gb, gv


def rebase_view(view, result):
    """After ``result`` (carrying the autograd history of the view's new values) was written
    into ``view``'s memory, move the history onto the view's base and re-derive the view."""
    base = view._base
    if base.requires_grad and base.grad_fn is None and STATE.enabled:
        raise RuntimeError(
            "a view of a leaf tensor that requires grad is being used in an in-place operation; "
            "wrap it in ember.no_grad() or clone the leaf first")
    geom = geometry(view.array, base.array)
    layout = Layout(base.array)
    n = new_node(CopySlicesBackward)
    n.geom, n.layout = geom, layout
    record(n, base, base, result)
    _derive(view, base, geom, layout)


def _derive(view, base, geom, layout):
    r = new_node(RegionBackward)
    r.geom, r.layout = geom, layout
    record(r, view, base)
    view._out_nr = 0
    view._view_ver = view._version[0]


def rederive_view(view):
    """Give ``view`` the history "region of its base", after the base changed in place."""
    base = view._base
    _derive(view, base, geometry(view.array, base.array), Layout(base.array))
