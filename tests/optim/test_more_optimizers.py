"""Adadelta, ASGD, Rprop and LBFGS against torch: trajectories (float32 MLP, float64
Rosenbrock), state dicts (layout, values, round trip, resuming from torch's), in-place steps and
argument checks."""
import copy
import doctest
import importlib
import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.optim
from optim_parity import Pair, assert_same_state_dict, ember_loss

# -- Adadelta, ASGD, Rprop: the MLP of optim_parity, 20 steps, float32 --------------------------
CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4)),
    ("Adadelta", dict(weight_decay=0.1)),
    ("Adadelta", dict(lr=0.3, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5)),
    ("ASGD", dict(lr=0.05, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, weight_decay=0.05, maximize=True)),
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.7), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.01, maximize=True)),
]


def _id(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("name,kw", CASES, ids=[_id(c) for c in CASES])
def test_matches_torch(name, kw):
    pair = Pair(name, kw)
    pair.step(20)
    assert pair.max_diff() < 1e-5
    assert_same_state_dict(pair.oe.state_dict(), pair.ot.state_dict())


def test_asgd_averages_after_t0():
    """``ax`` copies the parameters until step t0, then averages them (mu = 1/(t - t0))."""
    pair = Pair("ASGD", dict(lr=0.05, t0=4))
    pair.step(4)
    p0 = pair.pe[0]
    np.testing.assert_array_equal(pair.oe.state[p0]["ax"].numpy(), p0.detach().numpy())
    pair.step(6)
    st = pair.oe.state[p0]
    assert float(st["mu"]) == pytest.approx(1 / 6)
    assert not np.array_equal(st["ax"].numpy(), p0.detach().numpy())
    np.testing.assert_allclose(st["ax"].numpy(), pair.ot.state[pair.pt[0]]["ax"].numpy(),
                               atol=1e-6)


def _rosen_params(lib, dtype):
    rng = np.random.default_rng(3)
    xy = np.array([-1.2, 1.0], dtype)
    w = (rng.standard_normal((3, 4)) * 0.5).astype(dtype)
    return [lib.tensor(xy.copy(), requires_grad=True), lib.tensor(w.copy(), requires_grad=True)]


def _rosen_loss(params, sign=1.0):
    """Rosenbrock in the first parameter plus a weighted quadratic in the second."""
    xy, w = params
    x, y = xy[0], xy[1]
    quad = ((w - 0.3) ** 2).sum() * 3.0
    return ((1 - x) ** 2 + 100 * (y - x * x) ** 2 + quad) * sign


F64_CASES = [
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.05)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("ASGD", dict(lr=5e-4, lambd=1e-2, t0=10)),
    ("ASGD", dict(lr=5e-4, t0=5, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.02, etas=(0.4, 1.5), step_sizes=(1e-4, 0.1), maximize=True)),
]


@pytest.mark.parametrize("name,kw", F64_CASES, ids=[_id(c) for c in F64_CASES])
def test_float64_rosenbrock_matches_torch(name, kw):
    """30 steps on Rosenbrock (+ a quadratic) in float64, close to machine precision
    (``maximize`` climbs the negated loss)."""
    sign = -1.0 if kw.get("maximize") else 1.0
    pe, pt = _rosen_params(ember, np.float64), _rosen_params(torch, np.float64)
    oe = getattr(ember.optim, name)(pe, **kw)
    ot = getattr(torch.optim, name)(pt, **kw)
    start = [p.detach().numpy().copy() for p in pe]
    for _ in range(30):
        for opt, ps in ((oe, pe), (ot, pt)):
            opt.zero_grad()
            _rosen_loss(ps, sign).backward()
            opt.step()
    for a, b, s in zip(pe, pt, start):
        assert a.dtype == ember.float64
        assert not np.allclose(a.detach().numpy(), s)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)
    assert_same_state_dict(oe.state_dict(), ot.state_dict(), atol=1e-12)


GROUPS = [([0, 1], dict(lr=0.03)), ([2, 3], {})]
ROUND_TRIP = [CASES[3], CASES[5], CASES[7], CASES[9], CASES[10]]


@pytest.mark.parametrize("name,kw", ROUND_TRIP, ids=[_id(c) for c in ROUND_TRIP])
def test_state_dict_round_trip(name, kw):
    """Save at step 10, load into a fresh optimizer (from ember's and from torch's state dict),
    continue 10 steps: the same params as the uninterrupted run and as torch."""
    pair = Pair(name, kw, spec=GROUPS)
    pair.step(10)
    sd = copy.deepcopy(pair.oe.state_dict())
    resumed = []
    for source in (sd, pair.ot.state_dict()):
        fresh = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pair.pe]
        opt = getattr(ember.optim, name)(
            [dict(params=[fresh[i] for i in idx], **o) for idx, o in GROUPS], **kw)
        opt.load_state_dict(source)
        resumed.append((opt, fresh))
    for _ in range(10):
        for opt, ps in resumed:
            opt.zero_grad()
            ember_loss(ps, pair.t).backward()
            opt.step()
        pair.step()
    for a, b in zip(resumed[0][1], pair.pe):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert pair.max_diff() < 1e-5
    for a, b in zip(resumed[1][1], pair.pt):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)
    assert_same_state_dict(resumed[0][0].state_dict(), pair.ot.state_dict())
    assert pair.oe.param_groups[0]["lr"] == 0.03


@pytest.mark.parametrize("name,kw", [("Adadelta", dict(lr=0.5, weight_decay=0.1)),
                                     ("ASGD", dict(lr=0.05, t0=2, maximize=True)),
                                     ("Rprop", dict(lr=0.02))])
def test_complex_params_match_torch(name, kw):
    """Complex parameters update real and imaginary parts as separate reals (torch's
    view_as_real), here with a transposed, non-contiguous gradient."""
    rng = np.random.default_rng(5)
    w0 = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(np.complex64)
    we = ember.tensor(w0.copy(), requires_grad=True)
    wt = torch.tensor(w0.copy(), requires_grad=True)
    oe = getattr(ember.optim, name)([we], **kw)
    ot = getattr(torch.optim, name)([wt], **kw)
    for _ in range(8):
        g = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(
            np.complex64).T
        we.grad = ember.Tensor._make(g)
        wt.grad = torch.tensor(np.ascontiguousarray(g))
        oe.step()
        ot.step()
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    assert_same_state_dict(oe.state_dict(), ot.state_dict())


INPLACE = [("Adadelta", dict(lr=0.5, weight_decay=0.1)),
           ("ASGD", dict(lr=0.01, t0=1, weight_decay=0.1)),
           ("Rprop", dict(lr=0.01, maximize=True))]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[c[0] for c in INPLACE])
def test_large_params_in_place_and_match_torch(name, kw):
    """A parameter big enough for the chunked (and threaded) path, with a transposed gradient
    (cut in row blocks): same trajectory as torch, the same buffers every step, and no arrays
    allocated in the steady state."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((600, 500)).astype(np.float32)
    we = ember.tensor(w0.copy(), requires_grad=True)
    wt = torch.tensor(w0.copy(), requires_grad=True)
    oe = getattr(ember.optim, name)([we], **kw)
    ot = getattr(torch.optim, name)([wt], **kw)
    grads = [rng.standard_normal((500, 600)).astype(np.float32).T for _ in range(3)]
    for i in range(6):
        we.grad = ember.Tensor._make(grads[i % 3])
        wt.grad = torch.tensor(np.ascontiguousarray(grads[i % 3]))
        oe.step()
        ot.step()
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-5)
    assert_same_state_dict(oe.state_dict(), ot.state_dict())

    we.grad = ember.tensor(np.ascontiguousarray(grads[0]))
    ptrs = [(k, v.array.ctypes.data) for k, v in oe.state[we].items()]
    version = we._version_count
    oe.step()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(5):
            oe.step()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    domain = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    grown = sum(d.size_diff for d in after.filter_traces(domain).compare_to(
        before.filter_traces(domain), "filename"))
    assert grown == 0
    assert [(k, v.array.ctypes.data) for k, v in oe.state[we].items()] == ptrs
    assert we._version_count == version + 6 and we.grad_fn is None


def test_sparse_gradients_refused():
    from ember.sparse import RowSparseGrad

    for name in ("Adadelta", "ASGD", "Rprop"):
        w = ember.zeros(4, 2, requires_grad=True)
        w.grad = RowSparseGrad(np.array([1]), np.ones((1, 2), np.float32), (4, 2))
        with pytest.raises(RuntimeError, match=f"{name} does not support sparse gradients"):
            getattr(ember.optim, name)([w]).step()


# -- LBFGS -------------------------------------------------------------------------------------
def _rosen2(params):
    """Rosenbrock over two 1-element parameters (x, y): LBFGS's flat vector spans both."""
    x, y = params
    return ((1 - x) ** 2 + 100 * (y - x * x) ** 2).sum()


def _rosen2_params(lib, dtype, start):
    v = np.array(start, dtype)
    return [lib.tensor(v[:1].copy(), requires_grad=True),
            lib.tensor(v[1:].copy(), requires_grad=True)]


_LS_RNG = np.random.default_rng(0)
_LS_X = _LS_RNG.standard_normal((16, 4))
_LS_Y = _LS_X @ _LS_RNG.standard_normal((3, 4)).T + 0.5 + 0.1 * _LS_RNG.standard_normal((16, 3))


def _linear_model(nn_lib, lib, dtype):
    """A tiny least-squares model: nn.Linear(4, 3) from fixed weights, mean squared error."""
    rng = np.random.default_rng(1)
    model = nn_lib.Linear(4, 3, dtype=getattr(lib, np.dtype(dtype).name))
    with lib.no_grad():
        model.weight.copy_(lib.tensor((rng.standard_normal((3, 4)) * 0.1).astype(dtype)))
        model.bias.copy_(lib.tensor(np.zeros(3, dtype)))
    x, y = lib.tensor(_LS_X.astype(dtype)), lib.tensor(_LS_Y.astype(dtype))
    return list(model.parameters()), lambda ps: ((model(x) - y) ** 2).mean()


class LbfgsPair:
    """An ember and a torch LBFGS on the same problem, stepped with their own closures."""

    def __init__(self, problem, dtype, kw, start=(-1.2, 1.0)):
        if problem == "rosen":
            self.pe = _rosen2_params(ember, dtype, start)
            self.pt = _rosen2_params(torch, dtype, start)
            self.fe = self.ft = _rosen2
        else:
            self.pe, self.fe = _linear_model(ember.nn, ember, dtype)
            self.pt, self.ft = _linear_model(torch.nn, torch, dtype)
        self.kw = kw
        self.oe = ember.optim.LBFGS(self.pe, **kw)
        self.ot = torch.optim.LBFGS(self.pt, **kw)

    @staticmethod
    def closure(opt, params, fn):
        def closure():
            opt.zero_grad()
            loss = fn(params)
            loss.backward()
            return loss
        return closure

    def step(self):
        le = self.oe.step(self.closure(self.oe, self.pe, self.fe))
        lt = self.ot.step(self.closure(self.ot, self.pt, self.ft))
        return float(le), float(lt.detach())

    def params(self):
        return (np.concatenate([p.detach().numpy().ravel() for p in self.pe]),
                np.concatenate([p.detach().numpy().ravel() for p in self.pt]))


def assert_lbfgs_state_like_torch(se, st, rtol, atol, values=True):
    """Same keys in the same order, same kinds (0-d/1-d Tensor, list, int, float, None) and
    (with ``values``) close values."""
    assert list(se) == list(st)
    for key, vt in st.items():
        ve = se[key]
        if isinstance(vt, list):
            assert isinstance(ve, list) and len(ve) == len(vt), key
            pairs = list(zip(ve, vt))
        else:
            pairs = [(ve, vt)]
        for a, b in pairs:
            if isinstance(b, torch.Tensor):
                assert isinstance(a, ember.Tensor), key
                an, bn = a.numpy(), b.detach().numpy()
                assert an.shape == bn.shape and an.dtype == bn.dtype, key
                if values:
                    np.testing.assert_allclose(an, bn, rtol=rtol, atol=atol, err_msg=key)
            elif b is None:
                assert a is None, key
            else:
                assert type(a) is type(b), (key, a, b)
                if values:
                    assert a == pytest.approx(b, rel=rtol, abs=atol), key


ROSEN_F64 = [
    (None, dict(), (-1.2, 1.0)),
    (None, dict(lr=0.5, max_iter=5), (-1.5, 2.0)),
    (None, dict(max_iter=4, history_size=3), (2.0, 2.0)),
    ("strong_wolfe", dict(), (-1.2, 1.0)),
    ("strong_wolfe", dict(lr=0.5, max_iter=5), (-1.5, 2.0)),
    ("strong_wolfe", dict(max_iter=4, history_size=3), (0.0, 0.0)),
]


@pytest.mark.parametrize("ls,kw,start", ROSEN_F64)
def test_lbfgs_rosenbrock_float64(ls, kw, start):
    """Six step() calls (each up to max_iter iterations), iterate by iterate: the same points,
    losses, evaluation counts and state as torch's (float64 differs from torch only where its
    fused multiply-adds round once and numpy's twice: ~1e-16 per operation)."""
    pair = LbfgsPair("rosen", np.float64, dict(kw, line_search_fn=ls), start)
    first = float(_rosen2(pair.pt).detach())
    for i in range(6):
        le, lt = pair.step()
        assert le == pytest.approx(lt, rel=1e-8, abs=1e-12)
        a, b = pair.params()
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
        se, st = pair.oe.state[pair.pe[0]], pair.ot.state[pair.pt[0]]
        assert (se["func_evals"], se["n_iter"]) == (st["func_evals"], st["n_iter"])
        if i == 0:  # far from the minimum every entry of the state is well-conditioned
            assert_lbfgs_state_like_torch(pair.oe.state_dict()["state"][0],
                                          pair.ot.state_dict()["state"][0], rtol=1e-8,
                                          atol=1e-12)
    assert float(_rosen2(pair.pe)) < first / 4  # it made progress
    # near the minimum the history holds differences of nearly equal numbers
    assert_lbfgs_state_like_torch(pair.oe.state_dict()["state"][0],
                                  pair.ot.state_dict()["state"][0], rtol=1e-4, atol=1e-9)


ROSEN_F32 = [
    (None, dict(max_iter=20), (-1.5, 2.0)),
    (None, dict(lr=0.5, max_iter=5), (-1.2, 1.0)),
    (None, dict(max_iter=5, history_size=3), (2.0, 2.0)),
    ("strong_wolfe", dict(max_iter=20), (2.0, 2.0)),
    ("strong_wolfe", dict(max_iter=5), (-1.2, 1.0)),
    ("strong_wolfe", dict(lr=0.5, max_iter=20), (-1.2, 1.0)),
    ("strong_wolfe", dict(max_iter=5, history_size=3), (0.0, 0.0)),
]


@pytest.mark.parametrize("ls,kw,start", ROSEN_F32)
def test_lbfgs_rosenbrock_float32(ls, kw, start):
    """float32 rounds as torch does (0-d tensors as float32 scalars, fused multiply-adds,
    ``number / tensor`` as a reciprocal), so even this chaotic problem follows torch's path
    to within a few ulps."""
    pair = LbfgsPair("rosen", np.float32, dict(kw, line_search_fn=ls), start)
    for _ in range(6):
        le, lt = pair.step()
        assert le == pytest.approx(lt, rel=1e-5, abs=1e-9)
        a, b = pair.params()
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    se, st = pair.oe.state_dict()["state"][0], pair.ot.state_dict()["state"][0]
    assert (se["func_evals"], se["n_iter"]) == (st["func_evals"], st["n_iter"])
    assert_lbfgs_state_like_torch(se, st, rtol=1e-3, atol=1e-5)


LSQ = [(np.float64, None, dict()), (np.float64, "strong_wolfe", dict()),
       (np.float64, None, dict(lr=0.5, max_iter=5)),
       (np.float64, "strong_wolfe", dict(max_iter=4, history_size=3)),
       (np.float32, None, dict(max_iter=5)), (np.float32, "strong_wolfe", dict()),
       (np.float32, "strong_wolfe", dict(max_iter=4, history_size=3))]


@pytest.mark.parametrize("dtype,ls,kw", LSQ)
def test_lbfgs_least_squares_model(dtype, ls, kw):
    """nn.Linear fitted by mean squared error: the same iterates and losses as torch, and the
    normal equations' solution at the end."""
    f64 = dtype == np.float64
    rtol, atol = (1e-10, 1e-12) if f64 else (1e-5, 1e-6)
    pair = LbfgsPair("lsq", dtype, dict(kw, line_search_fn=ls))
    for _ in range(4):
        le, lt = pair.step()
        assert le == pytest.approx(lt, rel=rtol, abs=atol)
        a, b = pair.params()
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    xa = np.hstack([_LS_X, np.ones((16, 1))])
    sol = np.linalg.lstsq(xa, _LS_Y, rcond=None)[0]
    np.testing.assert_allclose(a, np.concatenate([sol[:4].T.ravel(), sol[4]]), atol=1e-4)
    se, st = pair.oe.state_dict()["state"][0], pair.ot.state_dict()["state"][0]
    # float32: after convergence the history holds rounding noise (torch's and ours differ
    # in their matmul sums), so only the layout is compared
    if f64:
        assert (se["func_evals"], se["n_iter"]) == (st["func_evals"], st["n_iter"])
    assert_lbfgs_state_like_torch(se, st, rtol=1e-5, atol=1e-8, values=f64)


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_state_dict_round_trip(ls):
    """Save after 2 steps, load into a fresh LBFGS (from ember's and from torch's state
    dict), continue 3 steps: the uninterrupted run's iterates (exactly from ember's state)
    and torch's."""
    kw = dict(line_search_fn=ls, max_iter=3, history_size=4)
    pair = LbfgsPair("rosen", np.float64, kw, (-1.5, 2.0))
    for _ in range(2):
        pair.step()
    sd = copy.deepcopy(pair.oe.state_dict())
    resumed = []
    for source in (sd, pair.ot.state_dict()):
        fresh = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pair.pe]
        opt = ember.optim.LBFGS(fresh, **kw)
        opt.load_state_dict(source)
        st = opt.state[fresh[0]]
        assert all(isinstance(v, ember.Tensor) for v in st["old_dirs"] + st["ro"])
        resumed.append((opt, fresh))
    for _ in range(3):
        for opt, ps in resumed:
            opt.step(LbfgsPair.closure(opt, ps, _rosen2))
        pair.step()
    a, b = pair.params()
    np.testing.assert_array_equal(np.concatenate([p.detach().numpy() for p in resumed[0][1]]), a)
    np.testing.assert_allclose(np.concatenate([p.detach().numpy() for p in resumed[1][1]]), b,
                               rtol=1e-9)
    assert_lbfgs_state_like_torch(resumed[1][0].state_dict()["state"][0],
                                  pair.ot.state_dict()["state"][0], rtol=1e-6, atol=1e-12)
    assert resumed[0][0].state_dict()["param_groups"] == pair.ot.state_dict()["param_groups"]


def test_lbfgs_stopping_rules_and_counters():
    # tolerance_grad met at the start: one evaluation, nothing moves, only the counters exist
    for opt_lib, lib in ((ember.optim, ember), (torch.optim, torch)):
        ps = _rosen2_params(lib, np.float64, (1.0, 1.0))
        opt = opt_lib.LBFGS(ps, tolerance_grad=1e-5)
        opt.step(LbfgsPair.closure(opt, ps, _rosen2))
        assert dict(opt.state[ps[0]]) == {"func_evals": 1, "n_iter": 0}
        assert [p.item() for p in ps] == [1.0, 1.0]
    # max_eval caps the closure calls of a step, line search included
    for ls in (None, "strong_wolfe"):
        pair = LbfgsPair("rosen", np.float64, dict(max_iter=50, max_eval=7, line_search_fn=ls))
        pair.step()
        se, st = pair.oe.state[pair.pe[0]], pair.ot.state[pair.pt[0]]
        assert se["func_evals"] == st["func_evals"] <= 8 and se["n_iter"] == st["n_iter"]
        a, b = pair.params()
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # a loss that stops changing ends the step (tolerance_change)
    pair = LbfgsPair("lsq", np.float64, dict(max_iter=100, tolerance_change=1e-4))
    pair.step()
    se, st = pair.oe.state[pair.pe[0]], pair.ot.state[pair.pt[0]]
    assert se["n_iter"] == st["n_iter"] < 100


def test_lbfgs_parameter_without_grad_and_defaults():
    """A parameter the loss does not use counts as a zero gradient; defaults are torch's."""
    pe = _rosen2_params(ember, np.float64, (-1.2, 1.0)) + [ember.ones(3, dtype=ember.float64,
                                                                         requires_grad=True)]
    pt = _rosen2_params(torch, np.float64, (-1.2, 1.0)) + [torch.ones(3, dtype=torch.float64,
                                                                        requires_grad=True)]
    oe, ot = ember.optim.LBFGS(pe), torch.optim.LBFGS(pt)
    assert oe.defaults == ot.defaults
    for _ in range(2):
        oe.step(LbfgsPair.closure(oe, pe[:2], _rosen2))
        ot.step(LbfgsPair.closure(ot, pt[:2], _rosen2))
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9)
    assert pe[2].tolist() == [1.0, 1.0, 1.0]


def test_lbfgs_argument_errors():
    w = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"doesn't support per-parameter options"):
        ember.optim.LBFGS([{"params": [w]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    opt = ember.optim.LBFGS([w])
    with pytest.raises(ValueError, match=r"doesn't support per-parameter options"):
        opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    with pytest.raises(ValueError, match=r"line_search_fn must be None or 'strong_wolfe', "
                                         r"got 'armijo'"):
        ember.optim.LBFGS([w], line_search_fn="armijo")
    with pytest.raises(ValueError, match=r"Invalid history_size value: 0"):
        ember.optim.LBFGS([w], history_size=0)
    with pytest.raises(TypeError, match=r"LBFGS.step\(\) needs a closure"):
        opt.step(None)
    opt.param_groups[0]["line_search_fn"] = "armijo"
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: ember.tensor(0.0))


# -- argument checks: the same ValueError text as torch's ---------------------------------------
BAD = [("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)),
       ("Adadelta", dict(eps=-1e-6)), ("Adadelta", dict(weight_decay=-0.1)),
       ("ASGD", dict(lr=-0.01)), ("ASGD", dict(weight_decay=-1)),
       ("Rprop", dict(lr=-0.1)), ("Rprop", dict(etas=(1.2, 0.5))), ("Rprop", dict(etas=(0.0, 1.2))),
       ("Rprop", dict(etas=(0.5, 1.0))), ("LBFGS", dict(lr=-1))]


@pytest.mark.parametrize("name,kw", BAD, ids=[_id(c) for c in BAD])
def test_bad_hyperparameters_match_torch_message(name, kw):
    with pytest.raises(ValueError) as tinfo:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(ValueError) as einfo:
        getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], **kw)
    assert str(einfo.value) == str(tinfo.value)


def test_constructor_signatures_and_defaults_match_torch():
    import inspect

    for name in ("Adadelta", "ASGD", "Rprop", "LBFGS"):
        se = inspect.signature(getattr(ember.optim, name))
        st = inspect.signature(getattr(torch.optim, name))
        assert [(p.name, p.kind, p.default) for p in se.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in st.parameters.values()], name
        oe = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)])
        ot = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
        assert oe.defaults == ot.defaults, name
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        ember.optim.Rprop([ember.zeros(2, requires_grad=True)], differentiable=True)


@pytest.mark.parametrize("name", ["ember.optim.adadelta", "ember.optim.asgd",
                                  "ember.optim.rprop", "ember.optim.lbfgs"])
def test_docstring_examples(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
