"""ember.jagged segment ops against torch.segment_reduce, a padded torch reference and
numpy loops: forward, gradients, double backward; compiled kernels and the references."""
import numpy as np
import pytest
import torch

import ember
from ember import kernels
from ember.jagged import (JaggedTensor, segment_expand, segment_max, segment_mean,
                          segment_softmax, segment_sum)
from ember.jagged import _arrays as A
from ember.jagged._layout import Layout

LENGTHS = [3, 0, 1, 5, 0, 2, 4]
HAVE_NUMBA = kernels.available()


@pytest.fixture
def numpy_mode():
    """ember.kernels in "numpy" mode (as under ``EMBER_KERNELS=numpy``): no compiled code."""
    old = kernels.set_mode("numpy")
    assert not kernels.available()
    yield
    kernels.set_mode(old)


@pytest.fixture(params=["compiled", "reference"])
def path(request):
    """Every test taking it runs through the compiled kernels and through the references."""
    if request.param == "compiled":
        if not HAVE_NUMBA:
            pytest.skip("numba is not installed: only the reference path runs")
        yield request.param
        return
    request.getfixturevalue("numpy_mode")
    yield request.param


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def _data(lengths=LENGTHS, feat=(4,), dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((sum(lengths),) + feat).astype(dtype)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ torch padded

def _t_padded(tv, lengths, fill):
    """(batch, L, *F) padded torch tensor (differentiable) and its (batch, L) mask."""
    L = max(lengths) if lengths else 0
    mask = torch.arange(L)[None, :] < torch.tensor(lengths, dtype=torch.long)[:, None]
    p = torch.full((len(lengths), L) + tuple(tv.shape[1:]), fill, dtype=tv.dtype)
    p = p.masked_scatter(mask.reshape(mask.shape + (1,) * (tv.ndim - 1)).expand_as(p), tv)
    return p, mask


def _bmask(mask, nd):
    return mask.reshape(mask.shape + (1,) * nd)


def torch_sum(tv, lengths):
    p, _ = _t_padded(tv, lengths, 0.0)
    return p.sum(1)


def torch_mean(tv, lengths):
    n = torch.tensor(lengths, dtype=tv.dtype).clamp(min=1)
    return torch_sum(tv, lengths) / n.reshape((-1,) + (1,) * (tv.ndim - 1))


def torch_max(tv, lengths):
    p, mask = _t_padded(tv, lengths, -float("inf"))
    m = p.amax(1) if p.shape[1] else p.sum(1)
    empty = _bmask(~mask.any(1), tv.ndim - 1)
    return torch.where(empty, torch.zeros((), dtype=tv.dtype), m)


def torch_softmax(tv, lengths):
    p, mask = _t_padded(tv, lengths, -float("inf"))
    y = torch.softmax(p, 1)
    return y[mask]  # the valid slots, row-major: the packed order


OPS = {"sum": (segment_sum, torch_sum), "mean": (segment_mean, torch_mean),
       "max": (lambda *a, **k: segment_max(*a, **k).values, torch_max),
       "softmax": (segment_softmax, torch_softmax)}


def _check_against_torch(op, x, lengths, dtype):
    """Forward, gradient and double backward of ``op`` against the padded torch twin."""
    e_fn, t_fn = OPS[op]
    ev = ember.tensor(x, requires_grad=True)
    tv = torch.tensor(x, requires_grad=True)
    eo = e_fn(ev, lengths=lengths)
    to = t_fn(tv, lengths)
    np.testing.assert_allclose(_np(eo), to.detach().numpy(), **_tol(dtype))
    rng = np.random.default_rng(5)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    (eg,) = ember.autograd.grad(eo, ev, ember.tensor(g), create_graph=True)
    (tg,) = torch.autograd.grad(to, tv, torch.from_numpy(g), create_graph=True)
    np.testing.assert_allclose(_np(eg), tg.detach().numpy(), **_tol(dtype))
    if not tg.requires_grad:  # linear in x (sum, mean, max's selection): no second order
        return
    w = rng.standard_normal(x.shape).astype(dtype)
    (egg,) = ember.autograd.grad((eg * ember.tensor(w)).sum(), ev)
    (tgg,) = torch.autograd.grad((tg * torch.from_numpy(w)).sum(), tv)
    np.testing.assert_allclose(_np(egg), tgg.numpy(), **_tol(dtype))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "softmax"])
@pytest.mark.parametrize("feat", [(), (4,), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_padded_torch(op, feat, dtype, path):
    _check_against_torch(op, _data(feat=feat, dtype=dtype), LENGTHS, dtype)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "softmax"])
@pytest.mark.parametrize("lengths", [[6], [0], [0, 0, 3], [1, 1, 1, 1], [2, 0]])
def test_single_and_empty_sequences(op, lengths, path):
    _check_against_torch(op, _data(lengths, feat=(3,)), lengths, np.float64)


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_torch_segment_reduce(op, dtype, path):
    """torch.segment_reduce on the non-empty segments (it gives NaN/-inf for empty ones,
    ember gives 0), forward and gradient (no ties in random data: max's gradient is
    unambiguous)."""
    x = _data(feat=(5,), dtype=dtype, seed=3)
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    ev = ember.tensor(x, requires_grad=True)
    tv = torch.tensor(x, requires_grad=True)
    fn = OPS[op][0]
    eo = fn(ev, ember.tensor(offsets))
    to = torch.segment_reduce(tv, op, offsets=torch.from_numpy(offsets), axis=0)
    full = np.array(LENGTHS) > 0
    np.testing.assert_allclose(_np(eo)[full], to.detach().numpy()[full], **_tol(dtype))
    assert (_np(eo)[~full] == 0).all()
    g = np.random.default_rng(4).standard_normal(tuple(to.shape)).astype(dtype)
    g[~full] = 0  # torch's gradient for its NaN/-inf empty outputs is not defined here
    (eg,) = ember.autograd.grad(eo, ev, ember.tensor(g))
    (tg,) = torch.autograd.grad(to, tv, torch.from_numpy(g))
    np.testing.assert_allclose(_np(eg), tg.numpy(), **_tol(dtype))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "softmax"])
def test_gradcheck_and_gradgradcheck(op, path):
    fn = OPS[op][0]
    x = ember.tensor(_data(feat=(2,), seed=7), requires_grad=True)

    def f(v):
        return fn(v, lengths=LENGTHS) ** 2  # squared: max/sum/mean get a second order too

    assert ember.autograd.gradcheck(f, [x])
    assert ember.autograd.gradgradcheck(f, [x])


def test_segment_expand_is_sum_adjoint():
    g = ember.tensor(_data(lengths=[1] * 7, feat=(3,)), requires_grad=True)
    out = segment_expand(g, lengths=LENGTHS)
    np.testing.assert_array_equal(_np(out), np.repeat(_np(g), LENGTHS, axis=0))
    assert ember.autograd.gradcheck(lambda t: segment_expand(t, lengths=LENGTHS) ** 2, [g])
    assert ember.autograd.gradgradcheck(lambda t: segment_expand(t, lengths=LENGTHS) ** 2, [g])
    with pytest.raises(ValueError, match="7 rows for 2 sequences"):
        segment_expand(g, lengths=[1, 2])


# ------------------------------------------------------------------------------ max details

def _max_loop(x, lengths, empty):
    """numpy loop reference: max and first argmax per segment and column (NaN wins)."""
    off = np.concatenate([[0], np.cumsum(lengths)])
    flat = x.reshape(len(x), -1)
    out = np.full((len(lengths), flat.shape[1]), empty, x.dtype)
    arg = np.full(out.shape, -1, np.int64)
    for s in range(len(lengths)):
        seg = flat[off[s]:off[s + 1]]
        for d in range(flat.shape[1]):
            col = seg[:, d]
            if col.size == 0:
                continue
            nan = np.flatnonzero(np.isnan(col))
            i = nan[0] if nan.size else int(np.argmax(col))
            out[s, d], arg[s, d] = col[i], off[s] + i
    shape = (len(lengths),) + x.shape[1:]
    return out.reshape(shape), arg.reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_indices_ties_nan_and_empty_value(dtype, path):
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, (sum(LENGTHS), 3, 2)).astype(dtype)  # many ties
    x[4, 1, 0] = np.nan
    x[9, 0, 1] = -np.inf
    for empty in (0.0, -np.inf, 7.0):
        r = segment_max(ember.tensor(x), lengths=LENGTHS, empty_value=empty)
        ref, arg = _max_loop(x, LENGTHS, empty)
        np.testing.assert_array_equal(_np(r.values), ref)
        np.testing.assert_array_equal(_np(r.indices), arg)
        assert r.indices.dtype == ember.int64
    # the gradient goes to the argmax row only, even among ties
    ev = ember.tensor(x, requires_grad=True)
    r = segment_max(ev, lengths=LENGTHS)
    g = rng.standard_normal(tuple(r.values.shape)).astype(dtype)
    (eg,) = ember.autograd.grad(r.values, ev, ember.tensor(g))
    want = np.zeros_like(x).reshape(len(x), -1)
    a, gf = arg.reshape(len(LENGTHS), -1), g.reshape(len(LENGTHS), -1)
    for s, d in zip(*np.nonzero(a >= 0)):
        want[a[s, d], d] = gf[s, d]
    np.testing.assert_array_equal(_np(eg), want.reshape(x.shape))


def test_max_integers_no_grad():
    x = np.array([[3, 1], [2, 5], [7, 0]], np.int64)
    r = segment_max(ember.tensor(x), lengths=[2, 0, 1])
    assert _np(r.values).tolist() == [[3, 5], [0, 0], [7, 0]]
    assert _np(r.indices).tolist() == [[0, 1], [-1, -1], [2, 2]]
    assert _np(segment_sum(ember.tensor(x), lengths=[2, 0, 1])).tolist() == [[5, 6], [0, 0],
                                                                             [7, 0]]


# ------------------------------------------------------------------------------ API details

def test_jagged_tensor_methods_match_functions():
    x = _data(feat=(3,))
    jt = JaggedTensor(ember.tensor(x), lengths=LENGTHS)
    np.testing.assert_array_equal(_np(jt.sum()), _np(segment_sum(jt)))
    np.testing.assert_array_equal(_np(jt.mean()), _np(segment_mean(jt)))
    m = jt.max(empty_value=-1.0)
    assert (_np(m.values)[[1, 4]] == -1).all()
    sm = jt.softmax()
    assert isinstance(sm, JaggedTensor) and sm._layout is jt._layout
    want = (np.array(LENGTHS) > 0)[:, None] * np.ones(3)  # each non-empty sequence sums to 1
    np.testing.assert_allclose(_np(sm.sum()), want)
    with pytest.raises(TypeError, match="pass only it"):
        segment_sum(jt, lengths=LENGTHS)


def test_functional_errors():
    v = ember.zeros(5, 2)
    with pytest.raises(ValueError, match="must equal the number of values"):
        segment_sum(v, ember.tensor([0, 2, 4]))
    with pytest.raises(ValueError, match="non-decreasing"):
        segment_max(v, [0, 3, 2, 5])
    with pytest.raises(TypeError, match="floating point"):
        segment_mean(ember.zeros(5, dtype=ember.int64), lengths=[5])
    with pytest.raises(TypeError, match="floating point"):
        segment_softmax(ember.zeros(5, dtype=ember.int64), lengths=[5])
    with pytest.raises(TypeError, match="JaggedTensor or a values Tensor"):
        segment_sum(np.zeros(5), lengths=[5])


def test_mean_of_empty_is_zero():
    out = segment_mean(ember.ones(3, 2), lengths=[0, 3, 0])
    assert _np(out).tolist() == [[0, 0], [1, 1], [0, 0]]


def test_softmax_rows_sum_to_one_and_large_values():
    x = _data(feat=(2,)) * 300  # exp would overflow without the max shift
    y = _np(segment_softmax(ember.tensor(x), lengths=LENGTHS))
    assert np.isfinite(y).all()
    s = np.add.reduceat(y, np.cumsum([0] + LENGTHS[:-1])[np.array(LENGTHS) > 0], axis=0)
    np.testing.assert_allclose(s, 1.0, rtol=1e-12)


def test_saved_output_modified_in_place_is_caught():
    ev = ember.tensor(_data(), requires_grad=True)
    y = segment_softmax(ev, lengths=LENGTHS)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


# ------------------------------------------------------------------------------ kernels

@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("feat", [(), (5,), (2, 3)])
def test_compiled_kernels_equal_references(dtype, feat):
    rng = np.random.default_rng(9)
    lengths = rng.integers(0, 6, 300)
    lengths[:5] = 0
    lengths[-3:] = 0
    x = rng.integers(-4, 4, (int(lengths.sum()),) + feat).astype(dtype)  # ties
    x.reshape(-1)[::97] = np.nan
    lay = Layout.build(x.shape[0], None, lengths)
    assert A._kernel("segment_sum", x) is kernels.lookup("segment_sum").cpu
    np.testing.assert_allclose(A.segment_sum(x, lay), A.segment_sum_reference(x, lay),
                               rtol=1e-6)
    m1, a1 = A.segment_max(x, lay, 0.0)
    m0, a0 = A.segment_max_reference(x, lay)
    empty = lengths == 0
    m0[empty] = 0.0
    np.testing.assert_array_equal(m1, m0)
    np.testing.assert_array_equal(a1, a0)
    ref, arg = _max_loop(x, lengths, 0.0)
    np.testing.assert_array_equal(m0, ref)
    np.testing.assert_array_equal(a0, arg)


def test_reference_path_used_in_numpy_mode(numpy_mode):
    assert A._kernel("segment_sum", np.zeros((2, 2), np.float32)) is None
    assert A._kernel("segment_max", np.zeros((2, 2), np.float32)) is None


def test_reference_uses_no_ufunc_at(monkeypatch, numpy_mode):
    """The references reduce with reduceat / fancy assignment, never ``ufunc.at``."""

    def boom(*a, **k):
        raise AssertionError("ufunc.at used on a segment op path")

    x = ember.tensor(_data(feat=(3,)), requires_grad=True)
    for name in ("add", "maximum", "minimum"):
        monkeypatch.setattr(np, name, _NoAt(getattr(np, name), boom))
    try:
        for op in ("sum", "mean", "max", "softmax"):
            out = OPS[op][0](x, lengths=LENGTHS)
            out.sum().backward()
    finally:
        monkeypatch.undo()


class _NoAt:
    """A ufunc stand-in whose ``.at`` fails; everything else passes through."""

    def __init__(self, ufunc, at):
        self._u, self.at = ufunc, at

    def __call__(self, *a, **k):
        return self._u(*a, **k)

    def __getattr__(self, name):
        return getattr(self._u, name)


@pytest.mark.cuda
@pytest.mark.parametrize("op", ["sum", "mean", "max", "softmax"])
def test_cuda_matches_cpu(op):
    x = _data(feat=(3,), dtype=np.float32)
    x[2, 1] = np.nan if op == "max" else x[2, 1]
    fn = OPS[op][0]
    ec = ember.tensor(x, requires_grad=True)
    eg = ember.tensor(x, device="cuda", requires_grad=True)
    oc, og = fn(ec, lengths=LENGTHS), fn(eg, lengths=LENGTHS)
    np.testing.assert_allclose(_np(og), _np(oc), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(0).standard_normal(tuple(oc.shape)).astype(np.float32)
    (gc,) = ember.autograd.grad(oc, ec, ember.tensor(g))
    (gg,) = ember.autograd.grad(og, eg, ember.tensor(g, device="cuda"))
    np.testing.assert_allclose(_np(gg), _np(gc), rtol=1e-5, atol=1e-6)
    if op == "max":
        r1, r2 = segment_max(ec, lengths=LENGTHS), segment_max(eg, lengths=LENGTHS)
        np.testing.assert_array_equal(_np(r2.indices), _np(r1.indices))


class _NotNumpy:
    """numpy under another name: drives the cupy branches of the references on the CPU."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_cupy_branches_on_a_numpy_stand_in(monkeypatch):
    """The cupy code paths (segment ids by searchsorted, scatter_add/scatter_max by segment
    id, take instead of repeat) give the numpy paths' results; ``cupyx`` is stood in for by
    numpy's ``ufunc.at`` (fine in a test, never on a hot path)."""
    import sys
    import types

    fake = types.ModuleType("cupyx")
    fake.scatter_add = np.add.at
    fake.scatter_max = np.maximum.at
    monkeypatch.setitem(sys.modules, "cupyx", fake)
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 5, 40)
    lengths[[0, -1]] = 0
    x = rng.integers(-3, 3, (int(lengths.sum()), 2, 3)).astype(np.float32)
    x[5, 1, 2] = np.nan
    ref = Layout.build(x.shape[0], None, lengths)
    alt = Layout.build(x.shape[0], None, lengths)
    alt.xp = _NotNumpy()
    np.testing.assert_array_equal(alt.segment_ids(), ref.segment_ids())
    np.testing.assert_array_equal(alt.positions(), ref.positions())
    np.testing.assert_array_equal(A.segment_sum_reference(x, alt),
                                  A.segment_sum_reference(x, ref))
    for a, b in zip(A.segment_max_reference(x, alt), A.segment_max_reference(x, ref)):
        np.testing.assert_array_equal(a, b)
    g = rng.standard_normal((40, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(A.segment_expand(g, alt), A.segment_expand(g, ref))
