"""Top-level torch ops of core/ops/extra.py (construction, search), core/ops/stats.py
(distances, statistics, integration, sampling, nn.functional aliases) and core/ops/complex.py,
against torch: values, dtypes, gradients, double gradients and float64 gradchecks
(optest.check_op), and the errors torch raises."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.ops import complex as C
from ember.ops import extra as X
from ember.ops import stats as S
from optest import Const, assert_close, check_op


def pick(efn, tfn):
    """One callable for check_op that dispatches on the input library."""
    def f(*xs):
        return efn(*xs) if any(isinstance(x, ember.Tensor) for x in xs) else tfn(*xs)
    return f


def distinct(shape, seed=0, dtype=np.float32):
    """Values without ties (sorting and selection gradients are then unambiguous)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = rng.permutation(n).reshape(shape) / n * 4 - 2 + rng.uniform(0, 0.1, shape)
    return vals.astype(dtype)


# =========================================================================== complex

def test_complex_and_parts():
    check_op(lambda a, b: C.view_as_real(C.complex(a, b)),
             lambda a, b: torch.view_as_real(torch.complex(a, b)), [(3, 4), (4,)])
    check_op(lambda z: C.real(C.view_as_complex(z)),
             lambda z: torch.real(torch.view_as_complex(z)), [(3, 4, 2)])
    check_op(lambda z: C.imag(C.view_as_complex(z)),
             lambda z: torch.imag(torch.view_as_complex(z)), [(3, 4, 2)])
    check_op(lambda z: C.view_as_real(C.view_as_complex(z) * 1.0),
             lambda z: torch.view_as_real(torch.view_as_complex(z) * 1.0), [(5, 2)])
    check_op(lambda r, t: C.view_as_real(C.polar(r, t)),
             lambda r, t: torch.view_as_real(torch.polar(r, t)), [(3, 4), (3, 4)], low=0.2)
    check_op(lambda z: C.angle(C.view_as_complex(z)),
             lambda z: torch.angle(torch.view_as_complex(z)), [(4, 3, 2)])
    check_op(pick(C.angle, torch.angle), torch.angle, [(6,)], gradgrad=False)
    for dt in [np.float32, np.float64]:
        check_op(lambda a, b: C.view_as_real(C.complex(a, b)),
                 lambda a, b: torch.view_as_real(torch.complex(a, b)), [(2,), (2,)], dtype=dt)


def test_complex_views_share_memory():
    z = ember.tensor(np.array([1 + 2j, 3 - 4j], np.complex64))
    r = C.view_as_real(z)
    assert r.shape == (2, 2) and r.dtype == ember.float32
    r.array[0, 1] = 7.0
    assert z.array[0] == 1 + 7j
    re = C.real(z)
    re.array[1] = -1
    assert z.array[1] == -1 - 4j
    assert C.ComplexOps.real.fget(z).array.tolist() == [1.0, -1.0]
    assert C.ComplexOps.imag.fget(z).array.tolist() == [7.0, -4.0]
    w = C.view_as_complex(ember.tensor(np.arange(6, dtype=np.float64).reshape(3, 2)))
    assert w.dtype == ember.complex128 and w.shape == (3,)
    x = ember.randn(3)
    assert C.real(x) is x
    ea = C.angle(ember.tensor([-1.0, 0.0, 2.0, math.nan]))
    ta = torch.angle(torch.tensor([-1.0, 0.0, 2.0, math.nan]))
    assert_close(ea, ta, 0, 0, "real angle")
    assert C.angle(ember.tensor([-1, 2])).dtype == ember.float32


def test_complex_errors():
    with pytest.raises(RuntimeError, match="non-complex"):
        C.imag(ember.randn(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        C.complex(ember.randn(2), ember.randn(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        C.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        C.view_as_complex(ember.randn(3, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        C.view_as_complex(ember.randn(2, 4)[:, ::2])
    with pytest.raises(RuntimeError, match="complex tensors"):
        C.view_as_real(ember.randn(2))


# =========================================================================== construction

def test_cartesian_prod():
    check_op(X.cartesian_prod, torch.cartesian_prod, [(3,), (2,)])
    check_op(X.cartesian_prod, torch.cartesian_prod, [(2,), (3,), (2,)])
    a, b = ember.tensor([1, 2]), ember.tensor([3, 4, 5])
    assert_close(X.cartesian_prod(a, b), torch.cartesian_prod(torch.tensor([1, 2]),
                                                              torch.tensor([3, 4, 5])), 0, 0, "int")
    assert X.cartesian_prod(a) is a
    with pytest.raises(RuntimeError, match="same dtype"):
        X.cartesian_prod(a, ember.tensor([1.0]))


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("rep", [False, True])
def test_combinations(r, rep):
    check_op(lambda x: X.combinations(x, r, rep), lambda x: torch.combinations(x, r, rep), [(4,)])
    with pytest.raises(RuntimeError, match="1D"):
        X.combinations(ember.ones(2, 2))


def test_block_diag():
    check_op(X.block_diag, torch.block_diag, [(), (3,), (2, 2), (3, 1)])
    check_op(X.block_diag, torch.block_diag, [(2, 3)])
    ei = X.block_diag(ember.tensor([[1, 2]]), ember.tensor([3.0]))
    ti = torch.block_diag(torch.tensor([[1, 2]]), torch.tensor([3.0]))
    assert_close(ei, ti, 0, 0, "promotion")
    assert_close(X.block_diag(), torch.block_diag(), 0, 0, "empty")
    assert_close(X.block_diag(ember.zeros(0, 3), ember.ones(2, 0)),
                 torch.block_diag(torch.zeros(0, 3), torch.ones(2, 0)), 0, 0, "empty parts")
    with pytest.raises(RuntimeError, match="2 or fewer"):
        X.block_diag(ember.ones(1, 1, 1))


def test_tri_indices():
    for row, col in [(3, 4), (4, 3), (0, 3), (5, 5), (1, 1)]:
        for off in [-2, -1, 0, 1, 3]:
            assert_close(X.tril_indices(row, col, off), torch.tril_indices(row, col, off), 0, 0,
                         f"tril {row} {col} {off}")
            assert_close(X.triu_indices(row, col, off), torch.triu_indices(row, col, off), 0, 0,
                         f"triu {row} {col} {off}")
    assert X.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 6])
def test_rot90(k):
    check_op(lambda x: X.rot90(x, k), lambda x: torch.rot90(x, k), [(2, 3)])
    check_op(lambda x: X.rot90(x, k, (2, 0)), lambda x: torch.rot90(x, k, (2, 0)), [(2, 3, 4)])
    with pytest.raises(RuntimeError):
        X.rot90(ember.ones(3), k)
    with pytest.raises(RuntimeError):
        X.rot90(ember.ones(3, 3), k, (1, 1))


def test_diagflat_vander():
    for off in [-2, 0, 1]:
        check_op(lambda x: X.diagflat(x, off), lambda x: torch.diagflat(x, off), [(2, 2)])
    # torch 2.13's vander cannot backward (its cumprod is modified in place): values against
    # torch, gradients by float64 gradcheck and the closed form d/dx x^k = k x^(k-1)
    for N, inc in [(None, False), (4, False), (3, True), (1, True), (0, False)]:
        check_op(lambda x: X.vander(x, N, inc), lambda x: torch.vander(x, N, inc), [(4,)],
                 grad=False)
        x = ember.tensor([0.0, 1.5, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
        if N != 0 and N != 1:
            assert ember.autograd.gradcheck(lambda t: X.vander(t, N, inc), (x,))
            (g,) = ember.autograd.grad(X.vander(x, N, inc).sum(), [x])
            n = 4 if N is None else N
            xs = x.detach().numpy()
            want = sum(k * xs ** max(k - 1, 0) for k in range(1, n))
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
        ti = torch.vander(torch.tensor([1, 2, 3]), N, inc)
        assert_close(X.vander(ember.tensor([1, 2, 3]), N, inc), ti, 0, 0, "int vander")


def test_searchsorted_1d():
    seq = np.array([1.0, 3.0, 3.0, 5.0, 7.0], np.float32)
    vals = np.array([[0.0, 3.0, 4.0], [7.0, 8.0, 3.0]], np.float32)
    es, ts = ember.tensor(seq), torch.tensor(seq)
    ev, tv = ember.tensor(vals), torch.tensor(vals)
    for kw in [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}]:
        assert_close(X.searchsorted(es, ev, **kw), torch.searchsorted(ts, tv, **kw), 0, 0, str(kw))
    assert_close(X.searchsorted(es, 3.0), torch.searchsorted(ts, 3.0), 0, 0, "scalar")
    assert X.searchsorted(es, 3.0).shape == ()
    perm = np.array([2, 0, 4, 1, 3])
    unsorted = np.empty_like(seq)
    unsorted[perm] = seq
    sorter = np.argsort(unsorted, kind="stable")
    assert_close(X.searchsorted(ember.tensor(unsorted), ev, sorter=ember.tensor(sorter)),
                 torch.searchsorted(torch.tensor(unsorted), tv, sorter=torch.tensor(sorter)),
                 0, 0, "sorter")
    with pytest.raises(RuntimeError, match="opposites"):
        X.searchsorted(es, ev, right=True, side="left")


def test_searchsorted_batched():
    rng = np.random.default_rng(0)
    for n in [1, 2, 7, 16]:
        seq = np.sort(rng.integers(0, 10, (3, 2, n)), -1).astype(np.float64)
        seq[0, 0, -1] = np.nan
        vals = rng.integers(-1, 11, (3, 2, 5)).astype(np.float64)
        vals[1, 1, 0] = np.nan
        for right in [False, True]:
            e = X.searchsorted(ember.tensor(seq), ember.tensor(vals), right=right)
            t = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
            assert_close(e, t, 0, 0, f"n={n} right={right}")
    ie = X.searchsorted(ember.tensor([[1, 3], [2, 4]]), ember.tensor([[3], [3]]))
    assert_close(ie, torch.searchsorted(torch.tensor([[1, 3], [2, 4]]), torch.tensor([[3], [3]])),
                 0, 0, "int")
    with pytest.raises(RuntimeError, match="first N-1"):
        X.searchsorted(ember.ones(2, 3), ember.ones(3, 3))


def test_bucketize():
    b = np.array([1.0, 3.0, 5.0, 7.0], np.float32)
    v = np.array([[0.5, 3.0, 6.0], [7.0, 9.0, 1.0]], np.float32)
    for right in [False, True]:
        for i32 in [False, True]:
            assert_close(X.bucketize(ember.tensor(v), ember.tensor(b), right=right, out_int32=i32),
                         torch.bucketize(torch.tensor(v), torch.tensor(b), right=right,
                                         out_int32=i32), 0, 0, "bucketize")
    assert_close(X.bucketize(3, ember.tensor(b)), torch.bucketize(3, torch.tensor(b)), 0, 0, "s")


def test_aminmax_nonzero_detach():
    x = distinct((3, 4))
    check_op(lambda t: tuple(X.aminmax(t)), lambda t: tuple(torch.aminmax(t)), [x])
    for dim in [0, 1, -1]:
        for keep in [False, True]:
            check_op(lambda t: tuple(X.aminmax(t, dim=dim, keepdim=keep)),
                     lambda t: tuple(torch.aminmax(t, dim=dim, keepdim=keep)), [x])
    r = X.aminmax(ember.tensor([[1, 5], [3, 2]]), dim=0)
    assert r.min.tolist() == [1, 2] and r.max.tolist() == [3, 5]
    assert X.aminmax(ember.ones(2, 3), keepdim=True).min.shape == (1, 1)
    with pytest.raises(RuntimeError, match="empty"):
        X.aminmax(ember.ones(0))
    assert X.is_nonzero(ember.tensor([1.5])) is True
    assert X.is_nonzero(ember.tensor(0)) is False
    with pytest.raises(RuntimeError, match="more than one"):
        X.is_nonzero(ember.ones(2))
    with pytest.raises(RuntimeError, match="no values"):
        X.is_nonzero(ember.ones(0))
    y = ember.ones(2, requires_grad=True) * 2
    d = X.detach(y)
    assert not d.requires_grad and d.grad_fn is None and d.tolist() == [2.0, 2.0]


# =========================================================================== distances

@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_cdist_pdist_dist(p):
    gg = p not in (0.0, math.inf)
    # torch has no double backward for cdist/pdist: first order against torch only
    check_op(lambda a, b: S.cdist(a, b, p), lambda a, b: torch.cdist(
        a, b, p, compute_mode="donot_use_mm_for_euclid_dist"), [distinct((2, 4, 3)),
                                                                 distinct((2, 5, 3), 1)],
             gradgrad=False, gradcheck=p != 0.0)
    check_op(lambda a: S.pdist(a, p), lambda a: torch.pdist(a, p), [distinct((5, 3))],
             gradgrad=False, gradcheck=p != 0.0)
    # (torch's dist backward at p=0 returns an undefined tensor: values only there)
    check_op(lambda a, b: S.dist(a, b, p), lambda a, b: torch.dist(a, b, p),
             [distinct((3, 4)), distinct((4,), 2)], gradgrad=gg, grad=p != 0.0)


def test_cdist_mm_path():
    check_op(lambda a, b: S.cdist(a, b), lambda a, b: torch.cdist(a, b),
             [(30, 4), (27, 4)], dtype=np.float64, rtol=1e-6, atol=1e-7, gradgrad=False)


def test_renorm():
    for p, dim, maxnorm in [(2, 0, 1.0), (1, 1, 0.5), (3, -1, 2.0), (2, 1, 100.0)]:
        check_op(lambda x: S.renorm(x, p, dim, maxnorm),
                 lambda x: torch.renorm(x, p, dim, maxnorm), [(3, 4, 2)])
    with pytest.raises(RuntimeError, match="non-positive"):
        S.renorm(ember.ones(2, 2), 0, 0, 1.0)


# =========================================================================== statistics

def test_cov_corrcoef():
    check_op(S.cov, torch.cov, [(3, 6)])
    check_op(S.cov, torch.cov, [(6,)])
    check_op(lambda x: S.cov(x, correction=0), lambda x: torch.cov(x, correction=0), [(2, 5)])
    fw = np.array([1, 2, 0, 3, 1])
    aw = np.array([0.5, 1.0, 2.0, 0.1, 1.0], np.float32)
    check_op(lambda x: S.cov(x, fweights=ember.tensor(fw)),
             lambda x: torch.cov(x, fweights=torch.tensor(fw)), [(3, 5)])
    check_op(lambda x, a: S.cov(x, aweights=a), lambda x, a: torch.cov(x, aweights=a),
             [(3, 5), aw])
    check_op(lambda x, a: S.cov(x, correction=2, fweights=ember.tensor(fw), aweights=a),
             lambda x, a: torch.cov(x, correction=2, fweights=torch.tensor(fw), aweights=a),
             [(3, 5), aw])
    check_op(S.corrcoef, torch.corrcoef, [(3, 6)])
    check_op(S.corrcoef, torch.corrcoef, [(6,)], grad=False)
    ei = ember.tensor([[1, 2, 4], [0, 3, 1]])
    assert_close(S.cov(ei), torch.cov(torch.tensor([[1, 2, 4], [0, 3, 1]])), 1e-6, 1e-6, "int")
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        r = S.cov(ember.ones(2, 1))
    assert np.isnan(r.numpy()).all()
    with pytest.raises(RuntimeError, match="negative"):
        S.cov(ember.ones(2, 3), fweights=ember.tensor([1, -1, 1]))


MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile(mode, fn):
    ef, tf = getattr(S, fn), getattr(torch, fn)
    x = distinct((3, 5, 4))
    qs = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)
    for dim in [None, 0, 1, -1]:
        for keep in [False, True]:
            for q in [0.3, Const(qs), Const(np.array(0.6, np.float32))]:
                def e(t):
                    qq = ember.tensor(q.value).to(t.dtype) if isinstance(q, Const) else q
                    return ef(t, qq, dim, keep, interpolation=mode)

                def t_(t):
                    qq = torch.tensor(q.value).to(t.dtype) if isinstance(q, Const) else q
                    return tf(t, qq, dim, keep, interpolation=mode)
                check_op(e, t_, [x], gradgrad=False, gradcheck=dim == 1 and not keep)


def test_quantile_nan_and_errors():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan],
                  [4.0, 1.0, 2.0, 8.0]], np.float64)
    for fn in ["quantile", "nanquantile"]:
        for mode in MODES:
            assert_close(getattr(S, fn)(ember.tensor(x), 0.4, 1, interpolation=mode),
                         getattr(torch, fn)(torch.tensor(x), 0.4, 1, interpolation=mode),
                         1e-12, 1e-12, f"{fn} {mode}")
    t = ember.randn(4)
    with pytest.raises(RuntimeError, match="range"):
        S.quantile(t, 1.5)
    with pytest.raises(RuntimeError, match="same dtype"):
        S.quantile(t, ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="interpolation"):
        S.quantile(t, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="float or double"):
        S.quantile(ember.tensor([1, 2]), 0.5)


# =========================================================================== integration

def test_trapezoid():
    check_op(S.trapezoid, torch.trapezoid, [(3, 5)])
    check_op(lambda y: S.trapezoid(y, dx=0.5, dim=0), lambda y: torch.trapezoid(y, dx=0.5, dim=0),
             [(4, 3)])
    check_op(lambda y, x: S.trapezoid(y, x), lambda y, x: torch.trapezoid(y, x), [(3, 5), (5,)])
    check_op(lambda y, x: S.trapezoid(y, x, dim=0), lambda y, x: torch.trapezoid(y, x, dim=0),
             [(4, 3), (4, 3)])
    check_op(lambda y, x: S.trapz(y, x), lambda y, x: torch.trapz(y, x), [(2, 6), (6,)])
    check_op(lambda y: S.trapz(y, dx=2.0), lambda y: torch.trapz(y, dx=2.0), [(2, 6)])
    assert_close(S.trapezoid(ember.tensor([1, 2, 4])), torch.trapezoid(torch.tensor([1, 2, 4])),
                 0, 0, "int")
    assert_close(S.trapezoid(ember.ones(2, 0)), torch.trapezoid(torch.ones(2, 0)), 0, 0, "empty")
    with pytest.raises(RuntimeError, match="one `x` value"):
        S.trapezoid(ember.ones(4), ember.ones(3))


def test_cumulative_trapezoid():
    check_op(S.cumulative_trapezoid, torch.cumulative_trapezoid, [(3, 5)])
    check_op(lambda y: S.cumulative_trapezoid(y, dx=0.3, dim=0),
             lambda y: torch.cumulative_trapezoid(y, dx=0.3, dim=0), [(4, 3)])
    check_op(lambda y, x: S.cumulative_trapezoid(y, x),
             lambda y, x: torch.cumulative_trapezoid(y, x), [(3, 5), (5,)])
    assert S.cumulative_trapezoid(ember.ones(2, 0)).shape == (2, 0)


# =========================================================================== sampling, aliases

def test_poisson():
    ember.manual_seed(0)
    rates = ember.tensor([0.0, 0.5, 3.0, 40.0]).expand(20000, 4).contiguous()
    s = S.poisson(rates)
    assert s.dtype == ember.float32 and s.shape == (20000, 4)
    np.testing.assert_allclose(s.numpy().mean(0), [0.0, 0.5, 3.0, 40.0], rtol=0.03, atol=0.01)
    np.testing.assert_allclose(s.numpy().var(0), [0.0, 0.5, 3.0, 40.0], rtol=0.06, atol=0.01)
    assert (s.numpy() == np.round(s.numpy())).all()
    g = ember.Generator().manual_seed(3)
    a = S.poisson(ember.ones(5) * 2, g)
    b = S.poisson(ember.ones(5) * 2, ember.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()
    with pytest.raises(RuntimeError, match="rate"):
        S.poisson(ember.tensor([-1.0]))


def test_functional_aliases():
    x = distinct((4, 6))
    check_op(lambda a, b: S.cosine_similarity(a, b), lambda a, b: torch.cosine_similarity(a, b),
             [x, distinct((4, 6), 1)])
    check_op(lambda a, b: S.pairwise_distance(a, b, 3.0, keepdim=True),
             lambda a, b: torch.pairwise_distance(a, b, 3.0, keepdim=True),
             [x, distinct((4, 6), 1)])
    for red, tred in [("mean", 1), ("sum", 2), (0, 0)]:
        check_op(lambda a, p, n: S.triplet_margin_loss(a, p, n, 0.5, reduction=red),
                 lambda a, p, n: torch.triplet_margin_loss(a, p, n, 0.5, 2, 1e-6, False, tred),
                 [x, distinct((4, 6), 1), distinct((4, 6), 2)])
    y = ember.ones(1000)
    assert S.dropout(y, 0.5, False) is y or S.dropout(y, 0.5, False).tolist() == y.tolist()
    ember.manual_seed(1)
    d = S.dropout(y, 0.5, True).numpy()
    assert set(np.unique(d)) <= {0.0, 2.0} and 0.4 < (d == 0).mean() < 0.6
    assert S.alpha_dropout(y, 0.5, False).tolist() == y.tolist()
    assert S.feature_alpha_dropout(ember.ones(2, 3, 4), 0.2, True).shape == (2, 3, 4)


def test_method_mixins():
    x = ember.tensor(distinct((3, 4)))
    t = torch.tensor(x.numpy())
    assert_close(X.ExtraOps.rot90(x), t.rot90(), 0, 0, "rot90")
    assert_close(X.ExtraOps.diagflat(x), t.diagflat(), 0, 0, "diagflat")
    assert_close(S.StatsOps.quantile(x, 0.3, 1), t.quantile(0.3, 1), 1e-6, 1e-6, "quantile")
    assert_close(S.StatsOps.cov(x), t.cov(), 1e-6, 1e-6, "cov")
    assert_close(S.StatsOps.renorm(x, 2, 0, 0.5), t.renorm(2, 0, 0.5), 1e-6, 1e-6, "renorm")
    y = x.clone()
    S.StatsOps.renorm_(y, 2, 0, 0.5)
    assert_close(y, t.clone().renorm_(2, 0, 0.5), 1e-6, 1e-6, "renorm_")
    assert_close(S.StatsOps.dist(x, x * 2), t.dist(t * 2), 1e-6, 1e-6, "dist")
