"""Value estimators: the loop functions and their vectorised twins against plain float64
reference loops written here (one scalar per step), on [B, T, F] with dones and terminations
mid-trajectory; gamma/lambda as floats and tensors; both kernel modes; gradients."""
import numpy as np
import pytest

import ember
from ember import kernels
from ember.rl.objectives.value import functional as F

B, T = 3, 23


# ----------------------------------------------------------------------------- references
def per_step(x, shape):
    return np.broadcast_to(np.asarray(x, np.float64), shape)


def ref_gae(gamma, lmbda, v, nv, r, done, term):
    g, lm = per_step(gamma, r.shape), per_step(lmbda, r.shape)
    adv = np.zeros(r.shape)
    for b in range(r.shape[0]):
        for f in range(r.shape[2]):
            nxt = 0.0
            for t in reversed(range(r.shape[1])):
                boot = 0.0 if term[b, t, f] else g[b, t, f] * nv[b, t, f]
                delta = r[b, t, f] + boot - v[b, t, f]
                carry = 0.0 if done[b, t, f] else g[b, t, f] * lm[b, t, f] * nxt
                nxt = adv[b, t, f] = delta + carry
    return adv, adv + v


def ref_td_lambda(gamma, lmbda, nv, r, done, term, rolling=True):
    """G_t = r_t + g ((1 - l) V'_t + l (V'_t if the trajectory ends at t else G_{t+1}))."""
    g, lm = per_step(gamma, r.shape), per_step(lmbda, r.shape)
    n = r.shape[1]
    out = np.zeros(r.shape)
    for b in range(r.shape[0]):
        for f in range(r.shape[2]):
            vp = [0.0 if term[b, t, f] else nv[b, t, f] for t in range(n)]
            for k in (range(n) if not rolling else [None]):
                nxt = None
                for t in reversed(range(k or 0, n)):
                    gg = g[b, t if k is None else k, f]
                    ll = lm[b, t if k is None else k, f]
                    ends = done[b, t, f] or t == n - 1
                    after = vp[t] if ends else nxt
                    nxt = r[b, t, f] + gg * ((1 - ll) * vp[t] + ll * after)
                    if k is None:
                        out[b, t, f] = nxt
                if k is not None:
                    out[b, k, f] = nxt
    return out


def ref_td1(gamma, nv, r, done, term, rolling=True):
    """G_t = r_t + g_t * (0 if terminated, V(s'_t) if done or last step, else G_{t+1})."""
    g = per_step(gamma, r.shape)
    n = r.shape[1]
    out = np.zeros(r.shape)
    for b in range(r.shape[0]):
        for f in range(r.shape[2]):
            for k in (range(n) if not rolling else [None]):
                nxt = None
                for t in reversed(range(k or 0, n)):
                    gg = g[b, t if k is None else k, f]
                    if term[b, t, f]:
                        nxt = r[b, t, f]
                    elif done[b, t, f] or t == n - 1:
                        nxt = r[b, t, f] + gg * nv[b, t, f]
                    else:
                        nxt = r[b, t, f] + gg * nxt
                    if k is None:
                        out[b, t, f] = nxt
                if k is not None:
                    out[b, k, f] = nxt
    return out


def ref_reward2go(r, done, gamma):
    out = np.zeros(r.shape)
    for b in range(r.shape[0]):
        for f in range(r.shape[2]):
            nxt = 0.0
            for t in reversed(range(r.shape[1])):
                nxt = out[b, t, f] = r[b, t, f] + (0.0 if done[b, t, f] else gamma * nxt)
    return out


# ----------------------------------------------------------------------------- data
def data(seed=0, feats=1, term_anywhere=False):
    rng = np.random.default_rng(seed)
    shape = (B, T, feats)
    v, nv, r = (rng.standard_normal(shape) for _ in range(3))
    done = rng.random(shape) < 0.2
    term = done & (rng.random(shape) < 0.5)
    if term_anywhere:  # terminated without done: torchrl's formulas still define the result
        term = term | (rng.random(shape) < 0.05)
    done[0, 5] = True        # a truncation and a termination mid-trajectory, for sure
    term[0, 5] = False
    done[1, 9] = term[1, 9] = True
    gamma = 0.8 + 0.19 * rng.random(shape)
    lmbda = 0.5 + 0.5 * rng.random(shape)
    return dict(v=v, nv=nv, r=r, done=done, term=term, gamma=gamma, lmbda=lmbda)


def E(x, dtype):
    if x.dtype == np.bool_:
        return ember.tensor(x)
    return ember.tensor(x, dtype=dtype)


@pytest.fixture(params=["auto", "numpy"])
def kmode(request):
    old = kernels.set_mode(request.param)
    yield request.param
    kernels.set_mode(old)


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == ember.float32 else dict(rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- GAE
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("feats", [1, 2])
@pytest.mark.parametrize("tensor_params", [False, True])
def test_gae_loop_and_vec_equal_reference(kmode, dtype, feats, tensor_params):
    d = data(feats=feats, term_anywhere=True)
    g, lm = (d["gamma"], d["lmbda"]) if tensor_params else (0.97, 0.9)
    adv_ref, tgt_ref = ref_gae(g, lm, d["v"], d["nv"], d["r"], d["done"], d["term"])
    gg = E(g, dtype) if tensor_params else g
    ll = E(lm, dtype) if tensor_params else lm
    args = [E(d[k], dtype) for k in ("v", "nv", "r", "done", "term")]
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, tgt = fn(gg, ll, *args)
        assert adv.dtype == dtype and adv.shape == (B, T, feats)
        np.testing.assert_allclose(adv.numpy(), adv_ref, **tol(dtype))
        np.testing.assert_allclose(tgt.numpy(), tgt_ref, **tol(dtype))


def test_gae_terminated_defaults_to_done_and_scalar_tensor_params():
    d = data()
    ref, _ = ref_gae(0.9, 0.95, d["v"], d["nv"], d["r"], d["done"], d["done"])
    args = [E(d[k], ember.float64) for k in ("v", "nv", "r", "done")]
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, _ = fn(ember.tensor(0.9, dtype=ember.float64),
                    ember.tensor([0.95], dtype=ember.float64), *args)
        np.testing.assert_allclose(adv.numpy(), ref, rtol=1e-10)


# ----------------------------------------------------------------------------- TD(lambda)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("params,rolling", [
    ("float", None), ("tensor", None), ("tensor_gamma_only", None), ("tensor", False),
    ("tensor_gamma_only", False)])
def test_td_lambda_loop_and_vec_equal_reference(kmode, dtype, params, rolling):
    d = data(feats=2, term_anywhere=True)
    g = 0.97 if params == "float" else d["gamma"]
    lm = d["lmbda"] if params == "tensor" else 0.9
    ref = ref_td_lambda(g, lm, d["nv"], d["r"], d["done"], d["term"], rolling is not False)
    gg = g if params == "float" else E(g, dtype)
    ll = E(lm, dtype) if params == "tensor" else lm
    args = [E(d[k], dtype) for k in ("nv", "r", "done", "term")]
    for fn in (F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate):
        out = fn(gg, ll, *args, rolling_gamma=rolling)
        np.testing.assert_allclose(out.numpy(), ref, **tol(dtype))
    v = E(d["v"], dtype)
    for fn in (F.td_lambda_advantage_estimate, F.vec_td_lambda_advantage_estimate):
        adv = fn(gg, ll, v, *args, rolling_gamma=rolling)
        np.testing.assert_allclose(adv.numpy(), ref - d["v"], **tol(dtype))


def test_rolling_false_needs_per_step_params():
    d = data()
    args = [E(d[k], ember.float64) for k in ("nv", "r", "done")]
    for fn in (F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate):
        with pytest.raises(RuntimeError, match="rolling_gamma=False"):
            fn(0.9, 0.9, *args, rolling_gamma=False)
    with pytest.raises(RuntimeError, match="rolling_gamma=False"):
        F.td1_return_estimate(0.9, *args, rolling_gamma=False)


# ----------------------------------------------------------------------------- TD(1), TD(0)
@pytest.mark.parametrize("params,rolling", [("float", None), ("tensor", None),
                                            ("tensor", False)])
def test_td1_loop_and_vec_equal_reference(kmode, params, rolling):
    d = data(feats=1, term_anywhere=True)
    g = 0.95 if params == "float" else d["gamma"]
    ref = ref_td1(g, d["nv"], d["r"], d["done"], d["term"], rolling is not False)
    gg = g if params == "float" else E(g, ember.float64)
    args = [E(d[k], ember.float64) for k in ("nv", "r", "done", "term")]
    for fn in (F.td1_return_estimate, F.vec_td1_return_estimate):
        np.testing.assert_allclose(fn(gg, *args, rolling_gamma=rolling).numpy(), ref,
                                   rtol=1e-10)
    v = E(d["v"], ember.float64)
    for fn in (F.td1_advantage_estimate, F.vec_td1_advantage_estimate):
        np.testing.assert_allclose(fn(gg, v, *args, rolling_gamma=rolling).numpy(),
                                   ref - d["v"], rtol=1e-10, atol=1e-12)


def test_td0():
    d = data()
    nv, r, term, v = (E(d[k], ember.float64) for k in ("nv", "r", "term", "v"))
    want = d["r"] + 0.9 * (~d["term"]) * d["nv"]
    np.testing.assert_allclose(F.td0_return_estimate(0.9, nv, r, term).numpy(), want)
    np.testing.assert_allclose(
        F.td0_advantage_estimate(0.9, v, nv, r, E(d["done"], None), term).numpy(),
        want - d["v"])
    with pytest.warns(DeprecationWarning):
        old = F.td0_return_estimate(0.9, nv, r, done=term)
    np.testing.assert_allclose(old.numpy(), want)


def test_reward2go(kmode):
    d = data(feats=2)
    ref = ref_reward2go(d["r"], d["done"], 0.9)
    out = F.reward2go(E(d["r"], ember.float64), E(d["done"], None), 0.9)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    g = ember.full((B, T, 2), 0.9, dtype=ember.float64)
    np.testing.assert_allclose(F.reward2go(E(d["r"], ember.float64), E(d["done"], None),
                                           g).numpy(), ref, rtol=1e-10)


# ----------------------------------------------------------------------------- layout
def test_time_dim_layouts():
    d = data()
    ref, _ = ref_gae(0.9, 0.8, d["v"], d["nv"], d["r"], d["done"], d["term"])
    names = ("v", "nv", "r", "done", "term")
    tm = [E(np.ascontiguousarray(d[k].transpose(1, 0, 2)), ember.float64) for k in names]
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, _ = fn(0.9, 0.8, *tm, time_dim=0)   # [T, B, 1]
        assert adv.shape == (T, B, 1)
        np.testing.assert_allclose(adv.numpy().transpose(1, 0, 2), ref, rtol=1e-10)
        flat = [E(np.ascontiguousarray(d[k][..., 0]), ember.float64) for k in names]
        adv2, tgt2 = fn(0.9, 0.8, *flat, time_dim=-1)   # [B, T]
        assert adv2.shape == (B, T)
        np.testing.assert_allclose(adv2.numpy(), ref[..., 0], rtol=1e-10)
        one = [E(np.ascontiguousarray(d[k][0, :, 0]), ember.float64) for k in names]
        adv3, _ = fn(0.9, 0.8, *one, time_dim=-1)    # [T]
        np.testing.assert_allclose(adv3.numpy(), ref[0, :, 0], rtol=1e-10)
    tl = F.vec_td_lambda_return_estimate(0.9, 0.7, *tm[1:], time_dim=0)
    np.testing.assert_allclose(
        tl.numpy().transpose(1, 0, 2),
        ref_td_lambda(0.9, 0.7, d["nv"], d["r"], d["done"], d["term"]), rtol=1e-10)


def test_shape_mismatch_is_an_error():
    x = ember.zeros(2, 5, 1)
    with pytest.raises(RuntimeError, match=r"reward=\[2, 4, 1\]"):
        F.vec_generalized_advantage_estimate(0.9, 0.9, x, x, ember.zeros(2, 4, 1),
                                             ember.zeros(2, 5, 1, dtype=ember.bool))
    with pytest.raises(RuntimeError, match="time_dim"):
        F.generalized_advantage_estimate(0.9, 0.9, x, x, x, x.bool(), time_dim=3)


# ----------------------------------------------------------------------------- kernel paths
def test_vec_uses_the_registry_kernel_in_each_mode(monkeypatch):
    entry = kernels.lookup("gae")
    calls = {"cpu": 0, "reference": 0}
    for name in calls:
        impl = getattr(entry, name)

        def counted(*a, _impl=impl, _name=name, **k):
            calls[_name] += 1
            return _impl(*a, **k)

        monkeypatch.setattr(entry, name, counted)
    d = data()
    args = [E(d[k], ember.float32) for k in ("v", "nv", "r", "done")]
    old = kernels.set_mode("numpy")
    try:
        F.vec_generalized_advantage_estimate(0.9, 0.9, *args)
        assert calls == {"cpu": 0, "reference": 1}
        if kernels.set_mode("auto") and kernels.available():
            F.vec_generalized_advantage_estimate(0.9, 0.9, *args)
            assert calls == {"cpu": 1, "reference": 1}
    finally:
        kernels.set_mode(old)


# ----------------------------------------------------------------------------- gradients
def _grads(fn, d, tensor_params, **kw):
    V, NV, R = (ember.tensor(d[k], requires_grad=True) for k in ("v", "nv", "r"))
    done, term = ember.tensor(d["done"]), ember.tensor(d["term"])
    G = ember.tensor(d["gamma"], requires_grad=True) if tensor_params else 0.9
    w = ember.tensor(np.random.default_rng(3).standard_normal(d["r"].shape))
    if fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, tgt = fn(G, 0.8, V, NV, R, done, term)
        loss = (adv * w).sum() + (tgt ** 2).sum()
    else:
        out = fn(G, 0.8, NV, R, done, term, **kw)
        loss = (out * w).sum() + (out ** 2).sum()
    loss.backward()
    return [x.grad.numpy() if x.grad is not None else None
            for x in (V, NV, R) + ((G,) if tensor_params else ())]


@pytest.mark.parametrize("pair", ["gae", "td_lambda"])
@pytest.mark.parametrize("tensor_params", [False, True])
def test_vec_gradients_equal_loop_gradients(kmode, pair, tensor_params):
    d = data(feats=2)
    loop, vec = {"gae": (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate),
                 "td_lambda": (F.td_lambda_return_estimate,
                               F.vec_td_lambda_return_estimate)}[pair]
    ga, gb = _grads(loop, d, tensor_params), _grads(vec, d, tensor_params)
    for a, b in zip(ga, gb):
        if a is None:
            assert b is None
        else:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-10)
    assert ga[1] is not None and np.abs(ga[1]).sum() > 0


def test_double_backward_through_the_kernel_scan(kmode):
    d = data()
    outs = []
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        V = ember.tensor(d["v"], requires_grad=True)
        adv, _ = fn(0.9, 0.8, V, ember.tensor(d["nv"]), ember.tensor(d["r"]),
                    ember.tensor(d["done"]))
        (g,) = ember.autograd.grad((adv ** 3).sum(), V, create_graph=True)
        (g * g).sum().backward()
        outs.append(V.grad.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-9)


def test_long_trajectory_float32_close_to_float64_loop():
    rng = np.random.default_rng(5)
    shape = (8, 2048, 1)
    v, nv, r = (rng.standard_normal(shape) for _ in range(3))
    done = rng.random(shape) < 0.01
    ref, _ = ref_gae(0.99, 0.95, v[:2], nv[:2], r[:2], done[:2], done[:2])
    adv, _ = F.vec_generalized_advantage_estimate(
        0.99, 0.95, *(ember.tensor(x, dtype=ember.float32) for x in (v, nv, r)),
        ember.tensor(done))
    np.testing.assert_allclose(adv.numpy()[:2], ref, rtol=1e-4, atol=1e-4)
