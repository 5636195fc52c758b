"""The autograd engine: backward/grad, accumulation, retain/create graph and higher orders,
hooks, grad modes, custom Functions, anomaly detection, version counters, deep graphs,
memory release and gradcheck. Compared with PyTorch wherever it computes the same thing."""
import gc
import math
import time
import weakref

import numpy as np
import pytest
import torch

import ember
from ember.autograd import Function, once_differentiable

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy on 0 * inf (anomaly)


@pytest.fixture(autouse=True)
def _restore_modes():
    """A failing test must not leave grad mode or anomaly mode switched for the next one."""
    yield
    ember.set_grad_enabled(True)
    ember.autograd.set_detect_anomaly(False)


def pair(values, requires_grad=True, dtype=np.float32):
    """The same leaf as an ember and a torch tensor."""
    a = np.array(values, dtype=dtype)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def close(e, t, what="", atol=1e-5):
    te = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    ev = np.asarray(e.detach().array) if isinstance(e, ember.Tensor) else np.asarray(e)
    assert ev.shape == te.shape, f"{what}: shape {ev.shape} != {te.shape}"
    np.testing.assert_allclose(ev, te, atol=atol, rtol=1e-4, err_msg=what)


# ------------------------------------------------------------------------------ backward

def test_backward_scalar_and_with_gradient():
    ex, tx = pair([1.0, -2.0, 3.0])
    (ex * ex * 3).sum().backward()
    (tx * tx * 3).sum().backward()
    close(ex.grad, tx.grad)
    ey, ty = pair([[1.0, 2.0], [0.5, -1.0]])
    g = [[1.0, -1.0], [2.0, 0.5]]
    (ey.exp() * 2).backward(ember.tensor(g))
    (ty.exp() * 2).backward(torch.tensor(g))
    close(ey.grad, ty.grad)
    ez, tz = pair([2.0])
    (ez * 3).backward(gradient=ember.tensor([2.0]))
    (tz * 3).backward(gradient=torch.tensor([2.0]))
    close(ez.grad, tz.grad)
    ember.autograd.backward([(ez * ez).sum()], [ember.tensor(1.0)])
    assert ez.grad.tolist() == [10.0]


def test_backward_errors():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=r"shape.*\[3\].*\[2\]"):
        (x * 2).backward(ember.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.tensor([1.0]).sum().backward()
    with ember.no_grad():
        y = x * 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_grad_accumulates_across_backward_calls():
    ex, tx = pair([1.0, 2.0])
    for _ in range(3):
        (ex * ex).sum().backward()
        (tx * tx).sum().backward()
    close(ex.grad, tx.grad)
    assert ex.grad.tolist() == [6.0, 12.0]
    ex.grad = None
    (ex * 4).sum().backward()
    assert ex.grad.tolist() == [4.0, 4.0]
    ex.grad.zero_()
    (ex * 1).sum().backward()
    assert ex.grad.tolist() == [1.0, 1.0]
    assert not ex.grad.requires_grad and ex.grad.grad_fn is None


def test_shared_gradients_are_not_aliased():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    g = ember.tensor([1.0, 1.0])
    c = a + b
    c.backward(g)
    a.grad.zero_()
    assert b.grad.tolist() == [1.0, 1.0] and g.tolist() == [1.0, 1.0]
    b.grad.mul_(5)
    assert g.tolist() == [1.0, 1.0]
    # the same leaf reached twice, and a leaf that is the root itself
    x = ember.tensor([1.0], requires_grad=True)
    (x + x).backward(ember.tensor([1.0]))
    assert x.grad.tolist() == [2.0]
    r = ember.tensor([2.0], requires_grad=True)
    go = ember.tensor([5.0])
    r.backward(go)
    r.grad.zero_()
    assert go.tolist() == [5.0]
    # (autograd.grad may return aliased results, as torch's does: they are not .grad)


def test_retain_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()
    x.grad = None
    z = (x.sin() * x).sum()
    z.backward(retain_graph=True)
    first = x.grad.tolist()
    z.backward()
    assert np.allclose(x.grad.tolist(), np.array(first) * 2)
    # torch agrees on the error
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = (tx.exp() * tx).sum()
    ty.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        ty.backward()


def test_graph_without_saved_tensors_can_be_rerun():
    """add/sum save nothing: a second backward works (as in torch)."""
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------------------ higher order

@pytest.mark.parametrize("name,f", [
    ("x**4", lambda x: x ** 4), ("sin", lambda x: x.sin()), ("exp*x", lambda x: x.exp() * x),
    ("tanh", lambda x: x.tanh()), ("log", lambda x: x.log()), ("sqrt", lambda x: x.sqrt()),
    ("sigmoid", lambda x: x.sigmoid()), ("1/x", lambda x: 1 / x), ("x*x*x", lambda x: x * x * x),
    ("pow_t", lambda x: x ** (x * 0.5)),
])
def test_third_derivative(name, f):
    ex, tx = pair([0.7, 1.3, 2.1])
    eg, tg = ex, tx
    for order in range(3):
        (eg,) = ember.autograd.grad(f(ex).sum() if order == 0 else eg.sum(), ex,
                                    create_graph=True)
        (tg,) = torch.autograd.grad(f(tx).sum() if order == 0 else tg.sum(), tx,
                                    create_graph=True)
        close(eg, tg, f"{name} derivative {order + 1}", atol=1e-4)
    x = ember.tensor([0.5, 1.0], dtype=ember.float64, requires_grad=True)
    if name == "x**4":
        (g1,) = ember.autograd.grad((x ** 4).sum(), x, create_graph=True)
        (g2,) = ember.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = ember.autograd.grad(g2.sum(), x, create_graph=True)
        (g4,) = ember.autograd.grad(g3.sum(), x)
        assert np.allclose(g3.tolist(), [24 * 0.5, 24 * 1.0]) and np.allclose(g4.tolist(), 24)


def test_backward_create_graph_accumulates_differentiable_grad():
    ex, tx = pair([1.0, 2.0])
    (ex ** 3).sum().backward(create_graph=True)
    (tx ** 3).sum().backward(create_graph=True)
    assert ex.grad.requires_grad and ex.grad.grad_fn is not None
    close(ex.grad, tx.grad)
    eg, tg = ex.grad, tx.grad
    ex.grad, tx.grad = None, None
    eg.sum().backward()
    tg.sum().backward()
    close(ex.grad, tx.grad)  # 6x


def test_hessian_vector_product():
    ex, tx = pair([[0.5, -1.0], [2.0, 0.3]])
    ew, tw = pair([[1.0, 2.0], [-1.0, 0.5]], requires_grad=False)
    v = [[1.0, 0.0], [0.5, -2.0]]
    for lib, x, w in ((ember, ex, ew), (torch, tx, tw)):
        loss = ((x @ w).tanh() ** 2).sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (hv,) = lib.autograd.grad(g, x, lib.tensor(v))
        if lib is ember:
            e_hv = hv
        else:
            close(e_hv, hv, "Hv")


# ------------------------------------------------------------------------------ autograd.grad

def test_autograd_grad_options():
    ex, tx = pair([1.0, 2.0, 3.0])
    eu, tu = pair([5.0])
    ey, ty = ex * ex, tx * tx
    eg = ember.autograd.grad(ey, [ex, eu], grad_outputs=ember.tensor([1.0, 0.5, 2.0]),
                             allow_unused=True, retain_graph=True)
    tg = torch.autograd.grad(ty, [tx, tu], grad_outputs=torch.tensor([1.0, 0.5, 2.0]),
                             allow_unused=True, retain_graph=True)
    close(eg[0], tg[0])
    assert eg[1] is None and tg[1] is None
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        ember.autograd.grad(ey.sum(), [ex, eu], retain_graph=True)
    (z,) = ember.autograd.grad(ey.sum(), [eu], allow_unused=True, materialize_grads=True,
                               retain_graph=True)
    assert z.tolist() == [0.0]
    assert ex.grad is None, "autograd.grad must not accumulate into .grad"
    # a single tensor as inputs gives a 1-tuple
    r = ember.autograd.grad(ey.sum(), ex)
    assert isinstance(r, tuple) and len(r) == 1
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.autograd.grad(ey.sum(), ember.tensor([1.0]))


def test_autograd_grad_non_leaf_inputs():
    ex, tx = pair([0.5, 1.5])
    res = []
    for lib, x in ((ember, ex), (torch, tx)):
        h = x.exp()
        m = h * 3
        out = (m * h).sum()
        res.append(lib.autograd.grad(out, [h, m, x]))
    for e, t in zip(*res):
        close(e, t)


def test_autograd_grad_multiple_outputs():
    ex, tx = pair([0.5, 1.5])
    res = []
    for lib, x in ((ember, ex), (torch, tx)):
        a, b = x.sin(), x.cos() * x
        res.append(lib.autograd.grad([a, b], x, [lib.ones(2), lib.tensor([2.0, -1.0])]))
    close(res[0][0], res[1][0])


def test_backward_inputs_argument():
    ex, tx = pair([1.0, 2.0])
    ew, tw = pair([3.0, 4.0])
    (ex * ew).sum().backward(inputs=[ex])
    (tx * tw).sum().backward(inputs=[tx])
    close(ex.grad, tx.grad)
    assert ew.grad is None and tw.grad is None


# ------------------------------------------------------------------------------ retain_grad

def test_retain_grad():
    ex, tx = pair([1.0, 2.0])
    outs = []
    for x in (ex, tx):
        h = x * 3
        h.retain_grad()
        h.retain_grad()  # twice is harmless
        k = h.exp()
        assert h.retains_grad and not k.retains_grad
        (k * h).sum().backward()
        outs.append(h)
    close(outs[0].grad, outs[1].grad)
    close(ex.grad, tx.grad)
    x = ember.tensor([1.0], requires_grad=True)
    x.retain_grad()  # no-op on a leaf
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]
    h = x * 2
    (h * 1).sum().backward()
    assert h.grad is None  # not retained


# ------------------------------------------------------------------------------ hooks

def test_tensor_hooks_leaf_and_non_leaf():
    ex, tx = pair([1.0, 2.0])
    seen = {"ember": [], "torch": []}
    for key, x in (("ember", ex), ("torch", tx)):
        h = x * 2
        x.register_hook(lambda g, k=key: seen[k].append(("leaf", g.tolist())))
        h.register_hook(lambda g, k=key: seen[k].append(("h", g.tolist())))
        (h * h).sum().backward()
    assert seen["ember"] == seen["torch"]
    close(ex.grad, tx.grad)


def test_hook_modifies_gradient_and_removal():
    ex, tx = pair([1.0, 2.0])
    for x in (ex, tx):
        h = x.exp()
        h.register_hook(lambda g: g * 10)
        hd = x.register_hook(lambda g: g + 1)
        (h * 2).sum().backward(retain_graph=True)
        hd.remove()
        (h * 2).sum().backward()
    close(ex.grad, tx.grad)
    # a handle works as a context manager too
    y = ember.tensor([1.0], requires_grad=True)
    with y.register_hook(lambda g: g * 100):
        (y * 1).sum().backward()
    (y * 1).sum().backward()
    assert y.grad.tolist() == [101.0]
    with pytest.raises(RuntimeError, match="doesn't require"):
        ember.tensor([1.0]).register_hook(lambda g: g)


def test_post_accumulate_grad_hook():
    calls = []
    ex, tx = pair([1.0, 2.0])
    for x in (ex, tx):
        x.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.tolist()))
        (x * 3).sum().backward()
        (x * 1).sum().backward()
    assert calls[:2] == calls[2:] == [[3.0, 3.0], [4.0, 4.0]]
    with pytest.raises(RuntimeError, match="leaf"):
        (ex * 2).register_post_accumulate_grad_hook(lambda p: None)
    # an optimizer step inside the hook (in place under no_grad) sees the fresh grad
    w = ember.tensor([1.0, 1.0], requires_grad=True)

    def step(p):
        with ember.no_grad():
            p.sub_(p.grad * 0.5)
        p.grad = None
    w.register_post_accumulate_grad_hook(step)
    (w * ember.tensor([2.0, 4.0])).sum().backward()
    assert w.tolist() == [0.0, -1.0] and w.grad is None


def test_node_hooks():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.grad_fn.register_hook(lambda gin, gout: seen.append((gin[0].tolist(), gout[0].tolist())))
    y.sum().backward()
    assert seen == [([3.0, 3.0], [1.0, 1.0])]
    assert isinstance(y.grad_fn, ember.autograd.Node)
    fns = y.grad_fn.next_functions
    assert len(fns) >= 1 and type(fns[0][0]).__name__ == "AccumulateGrad"


# ------------------------------------------------------------------------------ grad modes

def test_grad_mode_context_managers():
    x = ember.tensor([1.0], requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            z = x * 2
        w = x * 2
    assert ember.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad and not w.requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)  # also works as a plain call
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()
    with ember.inference_mode():
        assert not ember.is_grad_enabled() and not (x * 2).requires_grad
    with ember.inference_mode(False):
        assert ember.is_grad_enabled()
    with ember.autograd.no_grad():
        pass
    try:
        with ember.no_grad():
            raise ValueError("boom")
    except ValueError:
        pass
    assert ember.is_grad_enabled(), "the previous mode is restored on exceptions"


def test_grad_mode_decorators_including_generators():
    x = ember.tensor([1.0], requires_grad=True)

    @ember.no_grad()
    def f(t):
        return t * 2

    @ember.enable_grad()
    def g(t):
        return t * 2

    @ember.inference_mode()
    def h(t):
        return t * 2

    @ember.set_grad_enabled(False)
    def k(t):
        return t * 2
    assert ember.is_grad_enabled(), "building a set_grad_enabled decorator must not leak"

    @ember.no_grad()
    def gen(t):
        for _ in range(2):
            r = yield t * 2
            assert not ember.is_grad_enabled()
            assert r == "sent" or r is None
        return "done"

    assert not f(x).requires_grad and not h(x).requires_grad and not k(x).requires_grad
    with ember.no_grad():
        assert g(x).requires_grad
    it = gen(x)
    first = next(it)
    assert not first.requires_grad
    assert ember.is_grad_enabled(), "the mode is switched only while the generator runs"
    assert not it.send("sent").requires_grad
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done"
    assert f.__name__ == "f"
    # bare decorator form, as torch accepts
    @ember.no_grad
    def bare(t):
        return t * 2

    @ember.inference_mode
    def bare_inf(t):
        return t * 2

    @ember.enable_grad
    def bare_en(t):
        return t * 2
    assert not bare(x).requires_grad and not bare_inf(x).requires_grad
    with ember.no_grad():
        assert bare_en(x).requires_grad
    assert bare.__name__ == "bare"


def test_grad_mode_is_thread_local():
    import threading

    out = {}

    def worker():
        out["enabled"] = ember.is_grad_enabled()
    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert out["enabled"] is True


# ------------------------------------------------------------------------------ detach

def test_detach_and_requires_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and np.shares_memory(d.array, y.array)
    d.add_(1)  # shares the version counter: the saved y is now stale for any op saving it
    assert y._version_count == d._version_count == 1
    z = y * 3
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    z.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1]).requires_grad_()
    w = (x * 1).detach().requires_grad_()
    assert w.is_leaf and w.requires_grad
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_detached_tensor_modified_then_backward_raises():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y.detach().mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


# ------------------------------------------------------------------------------ Function

class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulConst(Function):
    @staticmethod
    def forward(ctx, x, k, w):
        ctx.k = k
        ctx.save_for_backward(x, w)
        assert ctx.needs_input_grad == NEEDS[0]
        return x * w * k

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g * w * ctx.k if ctx.needs_input_grad[0] else None
        gw = g * x * ctx.k if ctx.needs_input_grad[2] else None
        return gx, None, gw


NEEDS = [None]


def test_function_basics_and_double_backward():
    x = ember.tensor([0.5, 1.0], dtype=ember.float64, requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn is not None and "Exp" in y.grad_fn.name()
    y.sum().backward()
    assert np.allclose(x.grad.tolist(), np.exp([0.5, 1.0]))
    (g,) = ember.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)  # backward written with ember ops: twice differentiable
    assert np.allclose(gg.tolist(), np.exp([0.5, 1.0]))
    assert ember.autograd.gradcheck(Exp.apply, (x,))
    assert ember.autograd.gradgradcheck(Exp.apply, (x,))
    with ember.no_grad():
        assert not Exp.apply(x).requires_grad


def test_function_needs_input_grad_and_non_tensor_args():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([3.0, 4.0])
    NEEDS[0] = (True, False, False)
    y = MulConst.apply(x, 2.0, w)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 8.0]
    NEEDS[0] = (False, False, True)
    w.requires_grad_()
    MulConst.apply(ember.tensor([1.0, 2.0]), 2.0, w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_function_multiple_outputs_and_non_differentiable():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = ember.tensor(np.argsort(x.array))
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return x * 2, x * 3, idx

        @staticmethod
        def backward(ctx, g2, g3, gidx):
            assert gidx is None or not gidx.array.any()
            return g2 * 2 + g3 * 3

    x = ember.tensor([3.0, 1.0, 2.0], requires_grad=True)
    a, b, i = SortLike.apply(x)
    assert a.requires_grad and b.requires_grad and not i.requires_grad
    assert a.grad_fn is b.grad_fn
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]
    x.grad = None
    a, b, _ = SortLike.apply(x)
    a.sum().backward()  # b unused: its gradient is materialized as zeros
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_function_returning_input_unchanged():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = Ident.apply(x)
    assert y is not x and y.grad_fn is not None and x.is_leaf and x.grad_fn is None
    assert np.shares_memory(y.array, x.array)
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_function_wrong_number_or_shape_of_gradients():
    class TooFew(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    class BadShape(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooFew.apply(a, b).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0.*shape"):
        BadShape.apply(a).sum().backward()


def test_once_differentiable():
    class RawSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return ember.tensor(2 * x.array * g.array)

    x = ember.tensor([1.0, 3.0], requires_grad=True)
    RawSquare.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]
    (g,) = ember.autograd.grad(RawSquare.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [2.0, 6.0]
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()
    go = ember.ones(2, requires_grad=True)
    (g,) = ember.autograd.grad(RawSquare.apply(x), x, go, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        ember.autograd.grad(g.sum(), go)


def test_function_saved_tensor_version_check():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = Exp.apply(h)
    y.mul_(2)  # Exp saved its own output
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_function_mark_dirty():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.array += 1
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    v = h._version_count
    y = AddOneInplace.apply(h)
    assert y is h and h._version_count == v + 1 and y.tolist() == [3.0, 5.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------------------ anomaly

def test_detect_anomaly_names_the_op_and_trace():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        assert ember.autograd.is_anomaly_enabled()
        y = x.sqrt()  # d sqrt / dx at 0 is inf; times 0 gives nan
        z = (y * 0).sum()
        with pytest.raises(RuntimeError) as info:
            z.backward()
    msg = str(info.value)
    assert "SqrtBackward" in msg and "nan" in msg
    assert "test_autograd.py" in msg and "x.sqrt()" in msg, "the forward trace is shown"
    assert not ember.autograd.is_anomaly_enabled()
    # torch reports the same op
    tx = torch.tensor([0.0, 1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        tz = (tx.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match="SqrtBackward"):
            tz.backward()
    # without anomaly mode, the nan just flows into .grad
    x.grad = None
    (x.sqrt() * 0).sum().backward()
    assert math.isnan(x.grad.tolist()[0])


def test_detect_anomaly_decorator_and_switch():
    @ember.autograd.detect_anomaly()
    def run():
        return ember.autograd.is_anomaly_enabled()
    assert run() and not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled()
        x = ember.tensor([0.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="LogBackward"):
            (x.log() * 0).sum().backward()  # d log(x) / dx = 1/x: 0 * inf is nan
    except AssertionError:
        raise
    finally:
        ember.autograd.set_detect_anomaly(False)


# ------------------------------------------------------------------------------ versions

def test_version_counter():
    x = ember.tensor([1.0, 2.0])
    assert x._version_count == 0
    x.add_(1)
    x.mul_(2)
    x.zero_()
    assert x._version_count == 3
    v = x.view(2, 1)
    v.add_(1)
    assert x._version_count == v._version_count == 4
    x2 = ember.tensor([1.0], requires_grad=True)
    with ember.no_grad():
        x2.add_(1)
    assert x2._version_count == 1


def test_saved_tensor_modified_message():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"in-place.*shape \[2, 2\].*version 1, expected "
                                           r"version 0"):
        z.backward()
    # torch raises too
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    ty = tx * 1
    tz = (ty * ty).sum()
    ty.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tz.backward()


# ------------------------------------------------------------------------------ engine scale

def test_long_chain_is_iterative():
    x = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    y = x
    t0 = time.perf_counter()
    for _ in range(100_000):
        y = y * 1.0000001
    y.sum().backward()
    elapsed = time.perf_counter() - t0
    assert abs(x.grad.item() - 1.0000001 ** 100_000) < 1e-3
    assert elapsed < 30, f"100k-op chain took {elapsed:.1f}s"


def test_wide_graph_and_diamonds():
    ex, tx = pair([0.3, -0.4])
    res = []
    for x in (ex, tx):
        h = x
        for _ in range(20):  # each level uses the previous twice: 2**20 paths, linear work
            h = h.sin() + h * 0.5
        h.sum().backward()
        res.append(x.grad)
    close(res[0], res[1], "diamonds", atol=1e-4)


def test_graph_is_freed_after_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    big = x * 2
    ref = weakref.ref(big)
    out = (big * big).sum()  # MulBackward saves big
    del big
    gc.collect()
    assert ref() is not None, "the graph holds the saved tensor before backward"
    out.backward()
    gc.collect()
    assert ref() is None, "backward must release saved tensors"


def test_graph_is_freed_with_the_output():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp()
    node_ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node_ref() is None, "no reference cycle keeps the graph alive"


def test_retain_graph_keeps_saved_tensors():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    big = x * 2
    ref = weakref.ref(big)
    out = (big * big).sum()
    del big
    out.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    out.backward()
    gc.collect()
    assert ref() is None


# ------------------------------------------------------------------------------ gradcheck

def test_gradcheck_and_gradgradcheck_pass():
    a = ember.tensor(np.random.default_rng(0).uniform(0.5, 2, (2, 3)), requires_grad=True)
    b = ember.tensor(np.random.default_rng(1).uniform(0.5, 2, (3,)), requires_grad=True)
    for f in (lambda x, y: (x * y).sin(), lambda x, y: x / y + x.exp(),
              lambda x, y: (x ** y).sum(1), lambda x, y: ember.maximum(x, y) * x):
        assert ember.autograd.gradcheck(f, (a, b))
        assert ember.autograd.gradgradcheck(f, (a, b))
    assert ember.autograd.gradcheck(lambda x: (x * 2, x.sum()), (a,))  # several outputs


def test_gradcheck_fails_on_a_wrong_backward():
    class WrongSin(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.sin()  # should be cos

    class WrongSecond(Function):  # right first derivative, wrong second
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * (x.detach() * x.detach())

    x = ember.tensor([0.3, 1.2], dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(WrongSin.apply, (x,))
    assert ember.autograd.gradcheck(WrongSin.apply, (x,), raise_exception=False) is False
    assert ember.autograd.gradcheck(WrongSecond.apply, (x,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        ember.autograd.gradgradcheck(WrongSecond.apply, (x,))


def test_queue_callback_runs_once_at_the_end_of_backward():
    from ember.autograd.graph import queue_callback

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(t):
        seen.append(("hook", t.grad.tolist()))
        queue_callback(lambda: seen.append(("end", x.grad.tolist())))
        if len(seen) == 1:  # callbacks may queue callbacks
            queue_callback(lambda: queue_callback(lambda: seen.append(("nested",))))

    x.register_post_accumulate_grad_hook(hook)
    (x * x).sum().backward()
    assert seen == [("hook", [2.0, 4.0]), ("end", [2.0, 4.0]), ("nested",)]
    with pytest.raises(RuntimeError, match="only be called during a backward pass"):
        queue_callback(lambda: None)
    seen.clear()
    (x * 3).sum().backward()  # a second pass gets its own callbacks
    assert seen[:2] == [("hook", [5.0, 7.0]), ("end", [5.0, 7.0])]


def test_leaf_hooks_see_the_whole_gradient_once_like_torch():
    calls, tcalls = [], []
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: calls.append(("pre", g.tolist())))
    tx.register_hook(lambda g: tcalls.append(("pre", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(("post", t.grad.tolist())))
    tx.register_post_accumulate_grad_hook(lambda t: tcalls.append(("post", t.grad.tolist())))
    (x * x + x.exp().sum()).sum().backward()
    (tx * tx + tx.exp().sum()).sum().backward()
    assert len(calls) == len(tcalls) == 2
    for (k, a), (tk, b) in zip(calls, tcalls):
        assert k == tk
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_second_backward_accumulates_into_the_same_grad_array():
    w = ember.randn(3, 4, requires_grad=True)
    x = ember.randn(5, 3)
    (x @ w).sum().backward()
    g = w.grad
    first = g.numpy().copy()
    (x @ w).sum().backward()
    assert w.grad is g  # accumulated in place, as torch does
    np.testing.assert_allclose(g.numpy(), 2 * first, rtol=1e-6)
    b = ember.zeros(4, requires_grad=True)
    for _ in range(2):  # the first grad of a sum is a read-only broadcast view: copied once
        (b * 1).sum().backward()
    assert b.grad.tolist() == [2.0] * 4


def test_retained_grad_does_not_alias_a_leaf_grad():
    x = ember.ones(3, requires_grad=True)
    tx = torch.ones(3, requires_grad=True)
    for _ in range(2):
        y, ty = x + 0, tx + 0
        y.retain_grad()
        ty.retain_grad()
        y.sum().backward()
        ty.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())  # [1, 1, 1]
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())  # [2, 2, 2]
