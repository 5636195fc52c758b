"""Special functions (core/ops/special.py, ember.special) against torch: forward, backward,
double backward and a float64 gradcheck (optest.check_op); edge values (poles, +-inf, nan,
the tails of erfinv/ndtri/log_ndtr); and a float64 accuracy sweep against scipy."""
import math

import numpy as np
import pytest
import scipy.special as sp
import torch

import ember
import ember.special as es
from ember.ops import _specfun as F
from ember.ops import special as S
from optest import Const, assert_close, check_op

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def both(x, dtype=np.float64):
    a = np.asarray(x, dtype=dtype)
    return ember.tensor(a), torch.from_numpy(a.copy())


# (ember fn, torch fn, low, high)
UNARY = {
    "lgamma": (S.lgamma, torch.lgamma, 0.1, 6.0),
    "lgamma_neg": (S.lgamma, torch.lgamma, -3.9, -3.1),
    "digamma": (S.digamma, torch.digamma, 0.2, 6.0),
    "digamma_neg": (S.digamma, torch.digamma, -2.9, -2.1),
    "erfinv": (S.erfinv, torch.erfinv, -0.95, 0.95),
    "i0": (es.i0, torch.special.i0, -4.0, 4.0),
    "i0e": (es.i0e, torch.special.i0e, -4.0, 4.0),
    "i1": (es.i1, torch.special.i1, -4.0, 4.0),
    "i1e": (es.i1e, torch.special.i1e, -4.0, 4.0),
    "ndtr": (es.ndtr, torch.special.ndtr, -3.0, 3.0),
    "ndtri": (es.ndtri, torch.special.ndtri, 0.02, 0.98),
    "log_ndtr": (es.log_ndtr, torch.special.log_ndtr, -5.0, 3.0),
    "sinc": (S.sinc, torch.sinc, -2.0, 2.0),
    "entr": (es.entr, torch.special.entr, 0.1, 3.0),
    "logit": (S.logit, torch.logit, 0.05, 0.95),
    "expit": (es.expit, torch.special.expit, -3.0, 3.0),
    "deg2rad": (S.deg2rad, torch.deg2rad, -200.0, 200.0),
    "rad2deg": (S.rad2deg, torch.rad2deg, -3.0, 3.0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_against_torch(name, dtype):
    ef, tf, lo, hi = UNARY[name]
    check_op(ef, tf, [(3, 5)], dtype=dtype, low=lo, high=hi,
             rtol=1e-4 if dtype == np.float32 else 1e-7, atol=1e-5 if dtype == np.float32 else 1e-8)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma(n):
    check_op(lambda x: S.polygamma(n, x), lambda x: torch.polygamma(n, x), [(4, 3)],
             dtype=np.float64, low=0.3, high=5.0, rtol=1e-7, atol=1e-8)
    check_op(lambda x: S.SpecialOps.polygamma(x, n),
             lambda x: x.polygamma(n), [(6,)], dtype=np.float32, low=-2.9, high=-2.1,
             gradcheck=False, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma(p):
    lo = (p - 1) / 2 + 0.1
    check_op(lambda x: S.mvlgamma(x, p), lambda x: torch.mvlgamma(x, p), [(3, 4)],
             dtype=np.float64, low=lo, high=lo + 4, rtol=1e-7)
    check_op(lambda x: es.multigammaln(x, p), lambda x: torch.special.multigammaln(x, p),
             [(5,)], dtype=np.float32, low=lo, high=lo + 4, gradcheck=False)
    with pytest.raises(RuntimeError, match="greater than"):
        S.mvlgamma(ember.tensor([0.0]), 3)


def test_logit_eps_and_xlog1py():
    check_op(lambda x: S.logit(x, 0.2), lambda x: torch.logit(x, 0.2), [(20,)], dtype=np.float64,
             low=0.0, high=1.0, gradcheck=False)
    check_op(es.xlog1py, torch.special.xlog1py, [(3, 4), (4,)], dtype=np.float64, low=0.1, high=2)
    e, t = both([0.0, 0.0, 1.0, 2.0])
    e2, t2 = both([1.0, np.nan, -0.5, 3.0])
    assert_close(es.xlog1py(e, e2), torch.special.xlog1py(t, t2), 1e-12, 1e-12, "xlog1py edge")
    assert_close(es.xlog1py(e, 2.0), torch.special.xlog1py(t, 2.0), 1e-12, 1e-12, "scalar")
    assert_close(es.xlog1py(3.0, e2), torch.special.xlog1py(3.0, t2), 1e-12, 1e-12, "scalar x")


def test_zeta():
    check_op(es.zeta, torch.special.zeta, [Const(np.array([2.0, 3.5, 5.0])), (4, 3)],
             dtype=np.float64, low=0.2, high=4.0, rtol=1e-7)
    # d/dx has no torch formula: float64 gradcheck and scipy finite differences
    x = ember.tensor([1.5, 2.0, 4.25], dtype=ember.float64, requires_grad=True)
    q = ember.tensor([0.3, 1.0, 2.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(es.zeta, (x, q), eps=1e-6, atol=1e-6)
    (gx,) = ember.autograd.grad(es.zeta(x, q).sum(), [x])
    h = 1e-6
    xs, qs = x.detach().numpy(), q.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), (sp.zeta(xs + h, qs) - sp.zeta(xs - h, qs)) / (2 * h),
                               rtol=1e-6)
    # differentiating d/dx again refuses clearly
    (gx,) = ember.autograd.grad(es.zeta(x, q).sum(), [x], create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice"):
        gx.sum().backward()
    # scalars on either side, integer tensors, and the domain edges
    e, t = both([1.0, 2.0, -1.0, -1.5])
    assert_close(es.zeta(2.0, e), torch.special.zeta(2.0, t), 1e-10, 1e-10, "scalar x")
    e, t = both([0.5, 1.0, 2.0, 3.0])
    assert_close(es.zeta(e, 1.0), torch.special.zeta(t, 1.0), 1e-10, 1e-10, "scalar q")
    ei, ti = ember.tensor([2, 3]), torch.tensor([2, 3])
    assert_close(es.zeta(ei, ei), torch.special.zeta(ti, ti), 1e-6, 1e-6, "int")


EDGES = {
    "lgamma": (S.lgamma, torch.lgamma, [0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 1e-30, 1e-8,
                                         -1e-8, 1e5, 1e300, math.inf, -math.inf, math.nan]),
    "digamma": (S.digamma, torch.digamma, [0.0, -0.0, -1.0, -3.0, -0.5, 1e-8, -1e-8, 1e5, 1e300,
                                           math.inf, -math.inf, math.nan]),
    "erfinv": (S.erfinv, torch.erfinv, [-1.0, 1.0, 0.0, 1.5, -2.0, 1 - 1e-12, -1 + 1e-15, 1e-20,
                                        0.5, 0.999999, math.nan]),
    "ndtri": (es.ndtri, torch.special.ndtri, [0.0, 1.0, 0.5, 1e-300, 1e-20, 1 - 1e-16, -0.1,
                                              1.1, math.nan]),
    "log_ndtr": (es.log_ndtr, torch.special.log_ndtr, [-40.0, -1e3, 10.0, 40.0, 0.0, -math.inf,
                                                       math.inf, math.nan]),
    # ndtr's lower tail is kept (torch rounds it to 0: compared with an absolute tolerance)
    "ndtr": (es.ndtr, torch.special.ndtr, [-40.0, -10.0, 10.0, 0.0, -math.inf, math.inf]),
    # i0(+-inf) is inf here (torch gives nan)
    "i0": (es.i0, torch.special.i0, [0.0, 30.0, -29.9, 100.0, 700.0, 800.0, -800.0, math.nan]),
    "i0e": (es.i0e, torch.special.i0e, [0.0, 30.0, -29.9, 100.0, 1e6, -1e6, math.nan]),
    "i1": (es.i1, torch.special.i1, [0.0, 30.0, -29.9, -100.0, 700.0, -800.0, math.nan]),
    "i1e": (es.i1e, torch.special.i1e, [0.0, 30.0, -29.9, -100.0, 1e6, -1e6, math.nan]),
    "sinc": (S.sinc, torch.sinc, [0.0, 1.0, -3.0, 1e-20, 0.5, math.inf, math.nan]),
    "entr": (es.entr, torch.special.entr, [0.0, -1.0, 1.0, math.inf, math.nan]),
}


@pytest.mark.parametrize("name", sorted(EDGES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_values(name, dtype):
    ef, tf, vals = EDGES[name]
    e, t = both(vals, dtype)
    r, rt = ef(e), tf(t)
    assert r.dtype == ember.float32 if dtype == np.float32 else ember.float64
    a, b = r.numpy().astype(np.float64), rt.numpy().astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{name} nan at {vals}")
    np.testing.assert_allclose(a, b, rtol=3e-6 if dtype == np.float32 else 1e-10,
                               atol=1e-20 if name == "ndtr" else 0, err_msg=name)


def test_infinities_and_tails():
    for f in (es.i0, es.i1):
        np.testing.assert_array_equal(f(ember.tensor([math.inf])).numpy(), [math.inf])
    np.testing.assert_allclose(es.ndtr(ember.tensor([-10.0], dtype=ember.float64)).numpy(),
                               sp.ndtr(-10.0), rtol=1e-12)
    x = np.array([5.0, 7.0, 12.0, 26.0])
    e, t = both(x)
    assert_close(es.erfc(e), torch.special.erfc(t), 0, 1e-12, "erfc tail")
    check_op(es.erfc, torch.special.erfc, [(4,)], dtype=np.float64, low=-3, high=3)


def test_integer_inputs_give_default_float():
    ei, ti = ember.tensor([1, 2, 5]), torch.tensor([1, 2, 5])
    for ef, tf in [(S.lgamma, torch.lgamma), (S.digamma, torch.digamma), (S.sinc, torch.sinc),
                   (es.i0, torch.special.i0), (S.deg2rad, torch.deg2rad),
                   (es.ndtr, torch.special.ndtr), (es.entr, torch.special.entr)]:
        r, rt = ef(ei), tf(ti)
        assert r.dtype == ember.float32, ef.__name__
        assert_close(r, rt, 1e-6, 1e-6, ef.__name__)


def test_accuracy_against_scipy_float64():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-30, 30, 3000), rng.uniform(0, 3, 1000),
                        np.logspace(-10, 8, 300), -np.logspace(-10, 1.4, 300) - 0.3])
    x = x[np.abs(x - np.round(x)) > 1e-3]  # away from the poles
    for ef, sf in [(F.lgamma, sp.gammaln), (F.digamma, sp.digamma), (F.i0, sp.i0),
                   (F.i0e, sp.i0e), (F.i1, sp.i1), (F.i1e, sp.i1e), (F.ndtr, sp.ndtr),
                   (F.log_ndtr, sp.log_ndtr)]:
        a, b = ef(x), sf(x)
        ok = np.isfinite(b) & (np.abs(b) > 1e-300)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-9, err_msg=ef.__name__)
    for n in (1, 2, 3, 6):
        np.testing.assert_allclose(F.polygamma(n, x), sp.polygamma(n, x), rtol=1e-9)
    p = np.concatenate([rng.uniform(0, 1, 3000), np.logspace(-300, -1, 300),
                        1 - np.logspace(-15, -1, 100)])
    np.testing.assert_allclose(F.ndtri(p), sp.ndtri(p), rtol=1e-10)
    y = np.concatenate([rng.uniform(-1, 1, 3000), 1 - np.logspace(-16, -1, 100)])
    np.testing.assert_allclose(F.erfinv(y), sp.erfinv(y), rtol=1e-10)
    s, q = rng.uniform(1.05, 30, 2000), rng.uniform(0.01, 50, 2000)
    np.testing.assert_allclose(F.zeta(s, q), sp.zeta(s, q), rtol=1e-10)



def test_heaviside():
    e, t = both([-1.5, 0.0, 2.0, -0.0])
    v, vt = both([0.5])
    assert_close(S.heaviside(e, v), torch.heaviside(t, vt), 0, 0, "heaviside")
    ei, ti = ember.tensor([-2, 0, 3]), torch.tensor([-2, 0, 3])
    assert_close(S.heaviside(ei, ember.tensor(7)), torch.heaviside(ti, torch.tensor(7)), 0, 0,
                 "int")
    with pytest.raises(RuntimeError, match="different dtypes"):
        S.heaviside(e, ember.tensor([0.5], dtype=ember.float32))


def test_float_power():
    check_op(lambda x, y: S.float_power(x, y), torch.float_power, [(3, 4), (4,)], dtype=np.float32,
             low=0.5, high=2.0)
    check_op(lambda x: S.float_power(x, 2.5), lambda x: torch.float_power(x, 2.5), [(5,)],
             dtype=np.float32, low=0.5, high=2.0)
    ei, ti = ember.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    assert_close(S.float_power(ei, 2), torch.float_power(ti, 2), 0, 0, "int")
    assert_close(S.float_power(2, ei), torch.float_power(2, ti), 0, 0, "scalar base")
    r = S.SpecialOps.float_power(ei, ei)
    assert r.dtype == ember.float64


def test_frexp_ldexp():
    vals = np.array([-3.5, 0.0, 1.0, 1e-30, 7e5, 0.3], np.float32)
    check_op(lambda x: S.frexp(x), lambda x: torch.frexp(x), [vals], gradcheck=False)
    m, e = S.frexp(ember.tensor(vals))
    assert e.dtype == ember.int32 and m.dtype == ember.float32
    check_op(S.ldexp, torch.ldexp, [(3, 4), Const(np.array([1.0, -2.0, 3.0, 0.0], np.float32))],
             dtype=np.float32)
    # integer exponents (torch's own gradient is wrong for negative ones: forward only)
    check_op(S.ldexp, torch.ldexp, [(3, 4), Const(np.array([1, -2, 3, 0]))], grad=False)
    ei, ti = ember.tensor([1, 2]), torch.tensor([1, 2])
    assert_close(S.ldexp(ei, ei), torch.ldexp(ti, ti), 0, 0, "int ldexp")
    with pytest.raises(RuntimeError):
        S.frexp(ember.tensor([1, 2]))


def test_methods_and_inplace():
    x = ember.tensor([0.5, 1.5, 2.5])
    t = torch.tensor([0.5, 1.5, 2.5])
    for name in ["lgamma", "digamma", "erfinv", "i0", "sinc", "deg2rad", "rad2deg"]:
        if name == "erfinv":
            xe, xt = x / 3, t / 3
        else:
            xe, xt = x, t
        assert_close(getattr(S.SpecialOps, name)(xe), getattr(xt, name)(), 1e-6, 1e-5, name)
        y = xe.clone()
        getattr(S.SpecialOps, name + "_")(y)
        assert_close(y, getattr(xt.clone(), name + "_")(), 1e-6, 1e-5, name + "_")
    y = x.clone()
    S.SpecialOps.polygamma_(y, 2)
    assert_close(y, t.clone().polygamma_(2), 1e-5, 1e-5, "polygamma_")
    with pytest.raises(RuntimeError, match="float64"):
        S.SpecialOps.float_power_(x.clone(), 2)


def test_special_namespace_aliases():
    x = ember.tensor([0.5, 2.0, 7.0])
    assert es.gammaln is S.lgamma and es.psi is S.digamma
    np.testing.assert_allclose(es.gammaln(x).numpy(), torch.special.gammaln(
        torch.tensor([0.5, 2.0, 7.0])).numpy(), rtol=1e-6)
    for name in ["erf", "erfc", "expm1", "exp2", "log1p"]:
        np.testing.assert_allclose(getattr(es, name)(x).numpy(), getattr(torch.special, name)(
            torch.tensor([0.5, 2.0, 7.0])).numpy(), rtol=1e-5)
    y = ember.tensor([[1.0, 2.0], [3.0, 0.5]])
    yt = torch.tensor([[1.0, 2.0], [3.0, 0.5]])
    assert_close(es.logsumexp(y, 1), torch.special.logsumexp(yt, 1), 1e-6, 1e-6, "lse")
    assert_close(es.softmax(y, 0), torch.special.softmax(yt, 0), 1e-6, 1e-6, "softmax")
    assert_close(es.log_softmax(y, 1, dtype=ember.float64),
                 torch.special.log_softmax(yt, 1, dtype=torch.float64), 1e-6, 1e-6, "lsm")
    assert_close(es.xlogy(y, y), torch.special.xlogy(yt, yt), 1e-6, 1e-6, "xlogy")
    for name in es.__all__:
        assert hasattr(torch.special, name), name
