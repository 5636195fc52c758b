"""The per-op fast paths: ``a + b`` on two plain tensors of one dtype, relu's own backward node,
and the engine's in-place sums of several gradient contributions. Each fast path must give
exactly what the general path (and PyTorch) gives: values, hooks, retain_grad, version
checks, anomaly mode, double backward, broadcasting and non-contiguous inputs."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F


@pytest.fixture(autouse=True)
def _restore_modes():
    yield
    ember.set_grad_enabled(True)
    ember.autograd.set_detect_anomaly(False)


def pair(a, requires_grad=True):
    a = np.asarray(a)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def close(e, t, atol=1e-6):
    np.testing.assert_allclose(np.asarray(e.detach().array), t.detach().numpy(), atol=atol,
                               rtol=1e-6)


RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------- add fast path

def test_add_chain_matches_torch_and_sums_shared_leaf():
    a, ta = pair(RNG.standard_normal(4).astype(np.float32))
    b, tb = pair(RNG.standard_normal(4).astype(np.float32))
    s, ts = a, ta
    for _ in range(100):
        s, ts = s + b, ts + tb
    g = np.arange(4, dtype=np.float32)
    s.backward(ember.tensor(g))
    ts.backward(torch.tensor(g))
    close(s, ts, 1e-4)
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)
    # the root gradient the caller passed was not summed into in place
    np.testing.assert_array_equal(g, np.arange(4, dtype=np.float32))
    assert s.grad_fn.name() == "AddBackward"


def test_add_fast_path_broadcast_dtype_and_scalar_fall_back_correctly():
    x, tx = pair(RNG.standard_normal((3, 4)).astype(np.float32))
    b, tb = pair(RNG.standard_normal(4).astype(np.float32))
    d, td = pair(RNG.standard_normal((3, 4)))  # float64: promotes
    out = (x + b) + d + 2.5
    tout = (tx + tb) + td + 2.5
    assert out.dtype == ember.float64
    out.sum().backward()
    tout.sum().backward()
    close(out, tout)
    for e, t in ((x, tx), (b, tb), (d, td)):
        close(e.grad, t.grad)
        assert e.grad.dtype == e.dtype and e.grad.shape == e.shape


def test_add_non_contiguous_and_views():
    base, tbase = pair(RNG.standard_normal((4, 6)).astype(np.float32))
    u, tu = base.t(), tbase.t()           # non-contiguous
    v, tv = base[:, ::2].t(), tbase[:, ::2].t()
    out = (u[:3] + v) * 2
    tout = (tu[:3] + tv) * 2
    close(out, tout)
    out.sum().backward()
    tout.sum().backward()
    close(base.grad, tbase.grad)


def test_add_fast_path_hooks_retain_grad_and_version_counter():
    a, ta = pair(RNG.standard_normal(5).astype(np.float32))
    b, tb = pair(RNG.standard_normal(5).astype(np.float32))
    seen = []
    a.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    ta.register_hook(lambda g: g * 2)
    c, tc = a + b, ta + tb
    c.retain_grad()
    tc.retain_grad()
    (c * c).sum().backward()
    (tc * tc).sum().backward()
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)
    close(c.grad, tc.grad)
    assert len(seen) == 1
    # a saved input changed in place is still caught (mul saves c, c is the add's output)
    x, _ = pair(RNG.standard_normal(3).astype(np.float32))
    y = x + x
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_add_double_backward_and_grad_mode():
    a, ta = pair(RNG.standard_normal(3))
    b, tb = pair(RNG.standard_normal(3))
    y, ty = (a + b) ** 3, (ta + tb) ** 3
    (ga,) = ember.autograd.grad(y.sum(), [a], create_graph=True)
    (tga,) = torch.autograd.grad(ty.sum(), [ta], create_graph=True)
    close(ga, tga)
    ga.sum().backward()
    tga.sum().backward()
    close(b.grad, tb.grad)
    with ember.no_grad():
        assert (a + b).grad_fn is None and not (a + b).requires_grad


def test_add_anomaly_mode_names_the_op():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = a + b
        assert "test_overhead_paths" in y.grad_fn._extra["trace"]
        with pytest.raises(RuntimeError, match="AddBackward' returned nan"):
            y.backward(ember.tensor([float("nan"), 1.0]))


# ------------------------------------------------------------------------------- relu node

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_matches_torch_non_contiguous(dtype):
    xd = RNG.standard_normal((6, 5)).astype(dtype)
    xd[0, 0] = 0.0  # relu'(0) is 0, as in PyTorch
    x, tx = pair(xd)
    y, ty = x.t().relu(), tx.t().relu()
    g = RNG.standard_normal((5, 6)).astype(dtype)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    close(y, ty)
    close(x.grad, tx.grad)
    assert x.grad.dtype == x.dtype
    assert y.grad_fn.name() == "ReluBackward"


def test_relu_double_backward_and_inplace_check():
    x, tx = pair(RNG.standard_normal(7))
    y, ty = F.relu(x) ** 2, torch.relu(tx) ** 2
    (g,) = ember.autograd.grad(y.sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), [tx], create_graph=True)
    close(g, tg)
    g.sum().backward()
    tg.sum().backward()
    close(x.grad, tx.grad)
    z = x.relu()
    w = z.sum()
    z.mul_(2)  # relu's saved output changed
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        w.backward()
    with pytest.raises(TypeError, match="relu is not supported for bool"):
        ember.tensor([True, False]).relu()
    assert ember.tensor([-2, 3]).relu().tolist() == [0, 3]  # integers keep their dtype


def test_relu_backward_twice_needs_retain_graph():
    x = ember.randn(4, requires_grad=True)
    y = x.relu().sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# ------------------------------------------------------------------------------- engine sums

def test_engine_in_place_sums_do_not_alias_shared_gradients():
    """A node whose output feeds several consumers sums their gradients; the first sum
    allocates (the parts may be shared: one consumer hands the same array to two edges),
    later ones add in place. No user-visible tensor may change afterwards."""
    x, tx = pair(RNG.standard_normal(6).astype(np.float32))
    h, th = x * 3, tx * 3
    seen = []
    h.register_hook(lambda g: seen.append(g))
    th.register_hook(lambda g: None)
    out = h + h + h + (h * h)   # four contributions into h's buffer, two of them one array
    tout = th + th + th + (th * th)
    keep = []
    out.register_hook(lambda g: keep.append(g))
    out.sum().backward()
    tout.sum().backward()
    close(x.grad, tx.grad)
    assert len(seen) == 1
    close(seen[0], th.grad if th.grad is not None else 3 + 2 * th.detach())
    np.testing.assert_array_equal(keep[0].numpy(), np.ones(6, np.float32))


def test_engine_leaf_used_many_times_hooks_see_sum_once():
    w, tw = pair(RNG.standard_normal(3).astype(np.float32))
    calls = []
    w.register_hook(lambda g: calls.append(g.numpy().copy()))
    terms = [w * float(i) for i in range(1, 6)]
    tterms = [tw * float(i) for i in range(1, 6)]
    sum(terms[1:], terms[0]).sum().backward()
    sum(tterms[1:], tterms[0]).sum().backward()
    close(w.grad, tw.grad)
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0], np.full(3, 15.0))
    # a second backward accumulates into the existing .grad in place
    g0 = w.grad
    (w * 2).sum().backward()
    assert w.grad is g0
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 17.0))


def test_engine_sums_mixed_dtypes_and_create_graph():
    x, tx = pair(RNG.standard_normal(4).astype(np.float32))
    y = x.double() * 2 + x * 3       # float64 and float32 contributions into x
    ty = tx.double() * 2 + tx * 3
    (g,) = ember.autograd.grad(y.sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), [tx], create_graph=True)
    close(g, tg)
    assert g.dtype == ember.float32


def test_mlp_step_matches_torch():
    """The MLP step the benchmarks time: Linear, ReLU, cross_entropy, SGD, against torch."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 20)).astype(np.float32)
    y = rng.integers(0, 5, 16)
    m = ember.nn.Sequential(ember.nn.Linear(20, 32), ember.nn.ReLU(), ember.nn.Linear(32, 32),
                            ember.nn.ReLU(), ember.nn.Linear(32, 5))
    tm = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                             torch.nn.ReLU(), torch.nn.Linear(32, 5))
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    ex, ey, tx, ty = ember.tensor(x), ember.tensor(y), torch.tensor(x), torch.tensor(y)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        loss, tloss = F.cross_entropy(m(ex), ey), torch.nn.functional.cross_entropy(tm(tx), ty)
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        close(loss, tloss, 1e-5)
    for (k, v), tv in zip(m.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(v.numpy(), tv.numpy(), atol=1e-5, err_msg=k)


# ------------------------------------------------------------------------------- linear

@pytest.mark.parametrize("shape_x,shape_w,bias", [
    ((16, 512), (256, 512), True),      # 8-32 rows: the (W x^T)^T product
    ((2, 6, 300), (260, 300), False),   # leading dims flattened to 12 rows, no bias
    ((8, 256), (256, 256), True),
    ((64, 300), (256, 300), True),      # the plain product
    ((16, 40), (30, 40), True),
])
def test_linear_paths_match_torch(shape_x, shape_w, bias):
    rng = np.random.default_rng(3)
    x, tx = pair(rng.standard_normal(shape_x).astype(np.float32))
    w, tw = pair(rng.standard_normal(shape_w).astype(np.float32) / 16)
    b, tb = pair(rng.standard_normal(shape_w[0]).astype(np.float32))
    y = F.linear(x, w, b if bias else None)
    ty = torch.nn.functional.linear(tx, tw, tb if bias else None)
    assert y.is_contiguous() and y.shape == tuple(ty.shape)
    close(y, ty, 1e-4)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad, 1e-4)
    close(w.grad, tw.grad, 1e-4)
    if bias:
        close(b.grad, tb.grad, 1e-4)
    with ember.no_grad():
        z = F.linear(x, w, b if bias else None)
    assert z.grad_fn is None
    close(z, ty, 1e-4)
    with pytest.raises(RuntimeError, match="bias has dtype"):
        F.linear(x, w, b.double())


# ------------------------------------------------------------------------------- axpy

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
def test_inplace_add_sub_with_alpha_on_large_arrays(dtype, transposed):
    """``p.sub_(g, alpha=lr)`` (the hand-written SGD update) on arrays past the fused
    threshold: the compiled one-pass path for contiguous arrays, the chunked one else."""
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((300, 260)).astype(dtype)
    g0 = rng.standard_normal((260, 300) if transposed else (300, 260)).astype(dtype)
    p = ember.tensor(p0)
    g = ember.tensor(g0).t() if transposed else ember.tensor(g0)
    gd = g0.T if transposed else g0
    v = p._version[0] if p._version is not None else 0
    p.sub_(g, alpha=0.01)
    np.testing.assert_allclose(p.numpy(), p0 - np.asarray(0.01, dtype) * gd, rtol=1e-6, atol=1e-6)
    assert p._version[0] == v + 1
    p.add_(g, alpha=2.5)
    np.testing.assert_allclose(p.numpy(), p0 - np.asarray(0.01, dtype) * gd + 2.5 * gd,
                               rtol=1e-5, atol=1e-5)
    tp = torch.tensor(p0)
    tp.sub_(torch.tensor(gd), alpha=0.01)
    tp.add_(torch.tensor(gd), alpha=2.5)
    close(p, tp, 1e-5)


# ------------------------------------------------------------------------------- sum / mean

@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_sum_mean_backward_raw_path_matches_torch(op, dim, keepdim):
    rng = np.random.default_rng(7)
    x, tx = pair(rng.standard_normal((3, 4, 5)))
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    y, ty = getattr(x, op)(**kw), getattr(tx, op)(**kw)
    g = rng.standard_normal(ty.shape)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad, 1e-12)
    assert x.grad.dtype == ember.float64 and x.grad.shape == (3, 4, 5)
    # second order still goes through ember ops
    x2, tx2 = pair(rng.standard_normal((3, 4, 5)))
    (gx,) = ember.autograd.grad((getattr(x2 * x2, op)(**kw) ** 2).sum(), [x2], create_graph=True)
    (tgx,) = torch.autograd.grad((getattr(tx2 * tx2, op)(**kw) ** 2).sum(), [tx2],
                                 create_graph=True)
    close(gx, tgx, 1e-10)
    gx.sum().backward()
    tgx.sum().backward()
    close(x2.grad, tx2.grad, 1e-10)
