"""Property tests (hypothesis): indexing against numpy (and PyTorch where the two differ),
and broadcasting of binary ops against numpy."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4)


# ----------------------------------------------------------------------------- index expressions

@st.composite
def index_cases(draw, ints_with_arrays, numpy_layout_only=False):
    """(shape, key): a random index expression of ints, slices, None, one Ellipsis, integer
    index arrays (broadcasting together) or one bool mask. ``ints_with_arrays=False`` keeps
    ints out of expressions that have index arrays: there numpy applies the ints together with
    the arrays while PyTorch applies them first, and the result layouts differ.
    ``numpy_layout_only=True`` keeps None and Ellipsis out of them for the same reason (numpy
    counts either as separating the index arrays even when the Ellipsis stands for no dims,
    PyTorch does not; ember follows PyTorch, checked by ``test_getitem_matches_torch``)."""
    shape = draw(shapes)
    nd = len(shape)
    if draw(st.integers(0, 5)) == 0:  # one bool mask over the leading dims
        k = draw(st.integers(1, nd))
        mask = draw(hnp.arrays(np.bool_, shape[:k]))
        return shape, (mask,) if draw(st.booleans()) else mask
    n_use = draw(st.integers(0, nd))
    use_arrays = draw(st.booleans())
    ell = None if numpy_layout_only and use_arrays else draw(st.none() | st.integers(0, n_use))
    dims = [i if ell is None or i < ell else nd - n_use + i for i in range(n_use)]
    bshape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    items = []
    for i, d in enumerate(dims):
        if i == ell:
            items.append(...)
        n = shape[d]
        choices = ["slice", "slice"]
        if n > 0 and (ints_with_arrays or not use_arrays):
            choices.append("int")
        if use_arrays and n > 0:
            choices += ["array", "array"]
        kind = draw(st.sampled_from(choices))
        if kind == "slice":
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.integers(1, 3))
            items.append(slice(start, stop, step))
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        else:
            # a shape that broadcasts *to* bshape (each dim bshape's or 1, leading dims
            # optional), so that all index arrays of one key broadcast together
            lead = draw(st.integers(0, len(bshape) - 1))
            ashape = tuple(b if draw(st.booleans()) else 1 for b in bshape[lead:])
            dt = draw(st.sampled_from([np.int64, np.int32]))
            items.append(draw(hnp.arrays(dt, ashape, elements=st.integers(-n, n - 1))))
    if ell == n_use:
        items.append(...)
    if not (numpy_layout_only and use_arrays) and draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), None)
    return shape, tuple(items)


def _has_arrays(key):
    return any(isinstance(k, np.ndarray) for k in (key if isinstance(key, tuple) else (key,)))


def _to(key, conv):
    if isinstance(key, tuple):
        return tuple(_to(k, conv) for k in key)
    return conv(key) if isinstance(key, np.ndarray) else key


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@SETTINGS
@given(index_cases(ints_with_arrays=False, numpy_layout_only=True), st.booleans())
def test_getitem_matches_numpy(case, as_tensors):
    shape, key = case
    a = _data(shape)
    x = ember.from_numpy(a)
    ekey = _to(key, ember.tensor) if as_tensors else key
    want = a[key]
    got = x[ekey]
    assert got.shape == want.shape
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    if not _has_arrays(key):
        # basic indexing: a view sharing memory (unless empty)
        if want.size:
            assert np.shares_memory(got.numpy(), a)


@SETTINGS
@given(index_cases(ints_with_arrays=True))
def test_getitem_matches_torch(case):
    shape, key = case
    a = _data(shape)
    want = torch.from_numpy(a)[_to(key, torch.from_numpy)]
    got = ember.tensor(a)[_to(key, ember.tensor)]
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@SETTINGS
@given(index_cases(ints_with_arrays=False, numpy_layout_only=True), st.integers(0, 2**16))
def test_getitem_grad_matches_numpy(case, seed):
    shape, key = case
    a = _data(shape)
    x = ember.tensor(a, dtype=ember.float64, requires_grad=True)
    w = np.random.default_rng(seed).standard_normal(a[key].shape)
    (x[key] * ember.tensor(w)).sum().backward()
    # reference: every element of x[key] came from one position of x; add w there
    pos = np.arange(a.size).reshape(shape)[key]
    want = np.bincount(pos.ravel(), w.ravel(), minlength=a.size).reshape(shape)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)


@st.composite
def setitem_cases(draw):
    shape, key = draw(index_cases(ints_with_arrays=False, numpy_layout_only=True))
    rshape = np.empty(shape)[key].shape
    scalar = draw(st.integers(0, 4)) == 0
    if scalar:
        return shape, key, None
    k = draw(st.integers(0, len(rshape)))  # a shape that broadcasts *to* rshape
    vshape = tuple(s if draw(st.booleans()) else 1 for s in rshape[len(rshape) - k:])
    if draw(st.integers(0, 4)) == 0:
        vshape = (1,) + vshape  # PyTorch (and numpy) drop leading size-1 dims of the value
    return shape, key, vshape


def _reduce_to(g, shape):
    """``g`` summed down to ``shape`` (the reverse of broadcasting; leading 1s kept)."""
    lead = g.ndim - len(shape)
    if lead < 0:
        return g.reshape(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


@SETTINGS
@given(setitem_cases(), st.booleans())
def test_setitem_matches_numpy(case, as_tensors):
    shape, key, vshape = case
    a = _data(shape)
    v = 2.5 if vshape is None else _data(vshape, 1) + 10
    want = a.copy()
    want[key] = v if vshape is None or len(vshape) <= want[key].ndim else v.reshape(vshape[1:])
    x = ember.tensor(a)
    x[_to(key, ember.tensor) if as_tensors else key] = v if vshape is None else ember.tensor(v)
    np.testing.assert_array_equal(x.numpy(), want)
    assert x._version_count == 1


@SETTINGS
@given(setitem_cases(), st.integers(0, 2**16))
def test_setitem_grad_matches_numpy(case, seed):
    shape, key, vshape = case
    assume(vshape is not None)
    a = _data(shape)
    pos = np.arange(a.size).reshape(shape)[key]
    assume(len(np.unique(pos)) == pos.size)  # repeated positions: which write wins is unspecified
    x = ember.tensor(a, dtype=ember.float64, requires_grad=True)
    v = ember.tensor(_data(vshape, 1), dtype=ember.float64, requires_grad=True)
    w = np.random.default_rng(seed).standard_normal(shape)
    y = x * 1
    y[key] = v
    (y * ember.tensor(w)).sum().backward()
    kept = np.ones(shape)
    kept[key] = 0
    np.testing.assert_allclose(x.grad.numpy(), w * kept, rtol=1e-12, atol=1e-12)
    gv = w[key]
    want_v = _reduce_to(gv, vshape[1:] if len(vshape) > gv.ndim else vshape).reshape(vshape)
    np.testing.assert_allclose(v.grad.numpy(), want_v, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- broadcasting

BINARY = [
    ("add", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a * b, np.multiply),
    ("maximum", ember.maximum, np.maximum),
    ("where", lambda a, b: ember.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b)),
]


@pytest.mark.parametrize("name,op,ref", BINARY, ids=[b[0] for b in BINARY])
@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3))
def test_broadcasting_matches_numpy(name, op, ref, shapes):
    sa, sb = shapes.input_shapes
    a, b = _data(sa, 2), _data(sb, 3)
    x = ember.tensor(a, requires_grad=True)
    y = ember.tensor(b, requires_grad=True)
    out = op(x, y)
    want = ref(a, b)
    assert out.shape == shapes.result_shape == want.shape
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6)
    if out.numel():
        out.sum().backward()
        # the gradient comes back reduced to each input's own shape
        assert x.grad.shape == sa and y.grad.shape == sb
    if name == "add":
        np.testing.assert_allclose(x.grad.numpy(), _reduce_to(np.ones(want.shape), sa))
        np.testing.assert_allclose(y.grad.numpy(), _reduce_to(np.ones(want.shape), sb))


def _broadcasts(sa, sb):
    try:
        np.broadcast_shapes(sa, sb)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("name,op,ref", BINARY, ids=[b[0] for b in BINARY])
@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
       hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_non_broadcastable_shapes_raise(name, op, ref, sa, sb):
    assume(not _broadcasts(sa, sb))
    x, y = ember.tensor(_data(sa)), ember.tensor(_data(sb))
    with pytest.raises((RuntimeError, ValueError), match=r"broadcast|must match") as e:
        op(x, y)
    msg = str(e.value)
    # the message names the sizes that clash
    assert any(str(s) in msg for s in set(sa) | set(sb))
