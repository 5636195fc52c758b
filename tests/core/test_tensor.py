"""The Tensor object: factories, dtypes, devices, conversions (numpy, dlpack, Python), repr,
pickling and the Python protocols, against PyTorch where it computes the same thing."""
import copy
import math
import pickle

import numpy as np
import pytest
import torch

import ember

pytestmark = [pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def tname(dt):
    return str(dt).replace("torch.", "")


def same(e, t, what="", atol=1e-6, rtol=1e-5):
    """Same shape, dtype and values as the torch tensor."""
    assert isinstance(e, ember.Tensor), what
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {e.shape} != {tuple(t.shape)}"
    assert ember.dtypes.name(e.dtype) == tname(t.dtype), f"{what}: {e.dtype} != {t.dtype}"
    te = t.detach()
    ev = e.detach()
    if te.dtype == torch.bfloat16:
        te, ev = te.float(), ev.float()
    np.testing.assert_allclose(np.asarray(ev.array, dtype=np.float64) if ev.dtype.kind != "b"
                               else ev.array, te.numpy().astype(np.float64)
                               if te.dtype != torch.bool else te.numpy(),
                               atol=atol, rtol=rtol, err_msg=what)


def lib_call(expr):
    """Evaluate ``expr`` (using ``L.`` for the library) with ember and with torch."""
    out = []
    for lib in (ember, torch):
        out.append(eval(expr.replace("L.", lib.__name__ + "."),
                        {"ember": ember, "torch": torch, "np": np, "math": math}))
    return out


# ------------------------------------------------------------------------------- factories

FACTORY_CASES = [
    "L.tensor([1.0, 2.5])", "L.tensor([1, 2])", "L.tensor([True, False])", "L.tensor([1, 2.5])",
    "L.tensor([True, 1])", "L.tensor(3.5)", "L.tensor(7)", "L.tensor(True)", "L.tensor([])",
    "L.tensor([[]])", "L.tensor([[1, 2], [3, 4]], dtype=L.float64)",
    "L.tensor([1.7, -2.7], dtype=L.int32)", "L.tensor([0, 2], dtype=L.bool)",
    "L.tensor(np.array([1, 2], np.int32))", "L.tensor(np.array([1.5], np.float64))",
    "L.tensor(np.float64(2.5))", "L.tensor(np.arange(6.0).reshape(2, 3).T)",
    "L.tensor(np.array([1, 2], np.uint8))", "L.tensor([1, 2], dtype=L.float16)",
    "L.tensor([1.5, 2], dtype=L.bfloat16)", "L.tensor([1 + 2j])",
    "L.tensor([L.tensor(1.5), L.tensor(2.0)])", "L.tensor([[L.tensor(1), 2]])",
    "L.tensor(L.tensor([1, 2]), dtype=L.float32)", "L.tensor((1, 2, 3))",
    "L.as_tensor([1, 2])", "L.as_tensor(np.arange(3.0))", "L.as_tensor(2.5)",
    "L.as_tensor(np.arange(3), dtype=L.float32)",
    "L.zeros(2, 3)", "L.zeros((2, 3))", "L.zeros([2, 3])", "L.zeros(())", "L.zeros(0, 3)",
    "L.zeros(2, dtype=L.int32)", "L.ones(3)", "L.ones((1, 2), dtype=L.bool)",
    "L.ones(2, dtype=L.float64)", "L.full((2, 3), 1.5)", "L.full((2,), 7)", "L.full((2,), True)",
    "L.full((2,), 3, dtype=L.float64)", "L.full((), 2.5)", "L.full((2,), L.tensor(4.0))",
    "L.zeros_like(L.ones(2, 3, dtype=L.int32))", "L.ones_like(L.zeros(2, dtype=L.float64))",
    "L.full_like(L.ones(2), 7)", "L.full_like(L.ones(2, dtype=L.int64), 2.7)",
    "L.zeros_like(L.ones(2), dtype=L.int8)", "L.ones_like(L.tensor(3.0))",
    "L.empty(2, 3).shape", "L.empty((0,)).dtype", "L.empty_like(L.ones(2, dtype=L.int16)).dtype",
    "L.arange(5)", "L.arange(2, 7)", "L.arange(5, 0, -1)", "L.arange(0, 10, 3)",
    "L.arange(0, 1, 0.1)", "L.arange(1, 2.5, 0.5)", "L.arange(10, 0, -3.5)", "L.arange(3.0)",
    "L.arange(0, 5, dtype=L.float32)", "L.arange(0, 5, 2, dtype=L.float64)",
    "L.arange(-1.0, 1.0, 0.25)", "L.arange(5, 5)", "L.arange(0, -3, -1)",
    "L.arange(L.tensor(3))", "L.arange(0.5, 3)", "L.arange(4, dtype=L.int32)",
    "L.linspace(0, 1, 5)", "L.linspace(-1, 1, 7, dtype=L.float64)", "L.linspace(2, 3, 1)",
    "L.linspace(0, 1, 0)", "L.linspace(3, -3, 4)", "L.logspace(0, 2, 3)",
    "L.eye(3)", "L.eye(2, 3)", "L.eye(3, 2)", "L.eye(3, dtype=L.int32)", "L.eye(0)",
    "L.tensor([1.0, 2.0]).new_zeros(3)", "L.tensor([1.0]).new_ones((2, 2), dtype=L.int64)",
    "L.tensor([1.0]).new_full((2,), 3)", "L.tensor([1], dtype=L.int32).new_tensor([1.5, 2])",
    "L.tensor([1.0], dtype=L.float64).new_tensor([1, 2])",
    "L.tensor([1.0], dtype=L.float64).new_empty(2).dtype",
]


@pytest.mark.parametrize("expr", FACTORY_CASES)
def test_factories_match_torch(expr):
    e, t = lib_call(expr)
    if isinstance(t, torch.Tensor):
        same(e, t, expr)
    elif isinstance(t, torch.dtype):
        assert ember.dtypes.name(e) == tname(t), expr
    else:
        assert tuple(e) == tuple(t), expr


@pytest.mark.parametrize("expr,err", [
    ("L.tensor([[1, 2], [3]])", ValueError), ("L.tensor([[1, 2], 3])", (ValueError, TypeError)),
    ("L.zeros(2, -1)", RuntimeError), ("L.ones(-1)", RuntimeError),
    ("L.arange(0, 3, 0)", RuntimeError), ("L.tensor('abc')", TypeError),
    ("L.from_numpy([1, 2])", TypeError), ("L.full((-2,), 1.0)", RuntimeError),
])
def test_factory_errors(expr, err):
    for lib in (ember, torch):
        with pytest.raises(err):
            eval(expr.replace("L.", lib.__name__ + "."), {"ember": ember, "torch": torch})


def test_ragged_message_names_the_dim():
    with pytest.raises(ValueError, match="length 2 at dim 1 .*length 1"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="at dim 2"):
        ember.tensor([[[1], [2]], [[1], [2, 3]]])


def test_tensor_copies_and_requires_grad():
    a = np.array([1.0, 2.0], np.float32)
    t = ember.tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0]
    s = ember.tensor([1.0, 2.0])
    c = ember.tensor(s)
    s.array[0] = 5.0
    assert c.tolist() == [1.0, 2.0]
    r = ember.tensor([1.0], requires_grad=True)
    assert r.requires_grad and r.is_leaf and r.grad is None
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2], requires_grad=True)
    for f in (ember.zeros, ember.ones, ember.empty, ember.rand, ember.randn):
        assert f(2, requires_grad=True).requires_grad
    assert ember.full((2,), 1.0, requires_grad=True).requires_grad
    assert ember.arange(3.0, requires_grad=True).requires_grad


def test_as_tensor_shares_memory():
    a = np.arange(4.0)
    t = ember.as_tensor(a)
    assert t.dtype == ember.float64
    a[0] = 42.0
    assert t.tolist()[0] == 42.0
    t.array[1] = -1.0
    assert a[1] == -1.0
    c = ember.as_tensor(a, dtype=ember.float32)  # a dtype change must copy
    c.array[2] = 7.0
    assert a[2] == 2.0
    x = ember.ones(3)
    assert ember.as_tensor(x) is x
    assert ember.as_tensor(x, dtype=ember.float64).dtype == ember.float64


def test_from_numpy_zero_copy_both_ways():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.dtype == ember.int32 and t.shape == (2, 3)
    a[0, 0] = 100
    assert t.tolist()[0][0] == 100
    t.add_(1)
    assert a[0, 0] == 101 and a[1, 2] == 6
    back = t.numpy()
    assert back is a or np.shares_memory(back, a)
    v = a.T  # non-contiguous view: still no copy, same strides
    tv = ember.from_numpy(v)
    assert np.shares_memory(tv.numpy(), a) and tv.shape == (3, 2)
    assert tv.stride() == tuple(torch.from_numpy(v).stride())
    assert not tv.is_contiguous()


# ------------------------------------------------------------------------------- random

RANDOM_CALLS = [
    ("rand", lambda g: ember.rand(2, 3, generator=g)),
    ("rand_f64", lambda g: ember.rand((4,), dtype=ember.float64, generator=g)),
    ("randn", lambda g: ember.randn(5, generator=g)),
    ("randint", lambda g: ember.randint(0, 10, (6,), generator=g)),
    ("randint_high", lambda g: ember.randint(5, (3,), generator=g)),
    ("randperm", lambda g: ember.randperm(7, generator=g)),
    ("normal", lambda g: ember.normal(2.0, 3.0, (4,), generator=g)),
    ("normal_t", lambda g: ember.normal(ember.zeros(3), ember.ones(3), generator=g)),
    ("bernoulli", lambda g: ember.bernoulli(ember.full((8,), 0.5), generator=g)),
    ("multinomial", lambda g: ember.multinomial(ember.tensor([0.2, 0.3, 0.5]), 5,
                                                replacement=True, generator=g)),
    ("uniform_", lambda g: ember.empty(4).uniform_(-1, 1, generator=g)),
    ("normal_", lambda g: ember.empty(4).normal_(generator=g)),
]


@pytest.mark.parametrize("name,call", RANDOM_CALLS, ids=[c[0] for c in RANDOM_CALLS])
def test_random_reproducible(name, call):
    ember.manual_seed(123)
    a = call(None)
    ember.manual_seed(123)
    b = call(None)
    assert a.tolist() == b.tolist(), "manual_seed must reproduce the default stream"
    c = call(None)
    assert c.tolist() != b.tolist() or name == "bernoulli", "the stream must advance"
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    assert call(g1).tolist() == call(g2).tolist(), "same seed, same generator stream"
    ember.manual_seed(123)
    g3 = ember.Generator().manual_seed(8)
    call(g3)  # drawing from a private generator leaves the default stream alone
    assert call(None).tolist() == a.tolist()


def test_generator_state_round_trip():
    g = ember.Generator().manual_seed(5)
    ember.rand(3, generator=g)
    state = g.get_state()
    assert isinstance(state, ember.Tensor) and state.dtype == ember.uint8
    x = ember.randn(4, generator=g)
    g.set_state(state)
    assert ember.randn(4, generator=g).tolist() == x.tolist()
    other = ember.Generator()
    other.set_state(state)  # a state moves between generators
    assert ember.randn(4, generator=other).tolist() == x.tolist()
    assert other.initial_seed() == 5 == g.initial_seed()
    st = ember.get_rng_state()
    p = ember.randperm(10)
    ember.set_rng_state(st)
    assert ember.randperm(10).tolist() == p.tolist()
    assert ember.manual_seed(3) is ember.default_generator and ember.initial_seed() == 3
    assert ember.Generator().manual_seed(-1).initial_seed() == \
        torch.Generator().manual_seed(-1).initial_seed()
    s = ember.seed()
    assert ember.initial_seed() == s


def test_random_distributions():
    ember.manual_seed(0)
    n = 20000
    u = ember.rand(n)
    assert u.dtype == ember.float32 and 0 <= u.array.min() and u.array.max() < 1
    assert abs(u.array.mean() - 0.5) < 0.02
    z = ember.randn(n, dtype=ember.float64)
    assert z.dtype == ember.float64 and abs(z.array.mean()) < 0.03 and abs(z.array.std() - 1) < 0.03
    assert ember.rand(3, dtype=ember.float16).dtype == ember.float16
    r = ember.randint(-3, 4, (n,))
    assert r.dtype == ember.int64 and r.array.min() == -3 and r.array.max() == 3
    assert ember.randint(0, 5, (2,), dtype=ember.int32).dtype == ember.int32
    p = ember.randperm(50)
    assert sorted(p.tolist()) == list(range(50)) and p.dtype == ember.int64
    assert ember.randperm(0).shape == (0,)
    m = ember.normal(ember.full((n,), 3.0), ember.full((n,), 2.0))
    assert abs(m.array.mean() - 3) < 0.1 and abs(m.array.std() - 2) < 0.1
    assert ember.normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    assert ember.normal(ember.zeros(2, 1), 1.0).shape == (2, 1)
    assert ember.normal(1.0, ember.ones(2, 3)).shape == (2, 3)
    b = ember.bernoulli(ember.full((n,), 0.25))
    assert b.dtype == ember.float32 and set(np.unique(b.array)) <= {0.0, 1.0}
    assert abs(b.array.mean() - 0.25) < 0.02
    assert ember.bernoulli(ember.tensor([0.0, 1.0, 1.0, 0.0])).tolist() == [0.0, 1.0, 1.0, 0.0]
    w = ember.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
    s = ember.multinomial(w, 4000, replacement=True)
    assert s.shape == (2, 4000) and s.dtype == ember.int64
    assert abs((s.array[0] == 1).mean() - 0.75) < 0.03 and (s.array[1] == 2).all()
    nr = ember.multinomial(ember.tensor([1.0, 1.0, 1.0, 0.0]), 3)
    assert sorted(nr.tolist()) == [0, 1, 2]  # without replacement: distinct, never weight 0
    with pytest.raises(RuntimeError):
        ember.multinomial(ember.tensor([1.0, 0.0]), 2)
    with pytest.raises(RuntimeError):
        ember.multinomial(ember.tensor([-1.0, 2.0]), 1)
    x = ember.empty(n).uniform_(-2, 3)
    assert x.array.min() >= -2 and x.array.max() < 3
    assert ember.rand_like(ember.ones(2, 3, dtype=ember.float64)).dtype == ember.float64
    assert ember.randn_like(ember.ones(2, 3)).shape == (2, 3)
    ri = ember.randint_like(ember.ones(4), 5, 8)
    assert ri.dtype == ember.float32 and set(ri.tolist()) <= {5.0, 6.0, 7.0}


# ------------------------------------------------------------------------------- dtypes

DTYPE_NAMES = ["float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "bool", "complex64", "complex128"]
ALIASES = {"half": "float16", "float": "float32", "double": "float64", "short": "int16",
           "int": "int32", "long": "int64", "cfloat": "complex64", "cdouble": "complex128"}


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtypes(name):
    dt = getattr(ember, name)
    assert ember.dtypes.name(dt) == name == tname(getattr(torch, name))
    vals = [[0, 1, 2], [3, 4, 5]]
    e = ember.tensor(vals, dtype=dt)
    t = torch.tensor(vals, dtype=getattr(torch, name))
    assert e.dtype is dt or e.dtype == dt
    same(e, t, name)
    assert e.element_size() == t.element_size()
    assert e.is_floating_point() == t.is_floating_point()
    assert e.is_complex() == t.is_complex()
    for tgt in ("float32", "int64", "bool", "float64"):
        same(e.to(getattr(ember, tgt)), t.to(getattr(torch, tgt)), f"{name} -> {tgt}")
    assert isinstance(dt, ember.dtype)
    implied = ("float32", "int64", "bool", "complex64")  # torch's repr omits these too
    assert (f"dtype=ember.{name}" in repr(e)) == (name not in implied)
    assert ("dtype=" in repr(e)) == ("dtype=" in repr(t))


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_dtype_aliases(alias, name):
    assert getattr(ember, alias) == getattr(ember, name)
    assert tname(getattr(torch, alias)) == name


def test_bfloat16_arithmetic_stays_bfloat16():
    e = ember.tensor([1.5, 2.0, -3.25]).to(ember.bfloat16)
    t = torch.tensor([1.5, 2.0, -3.25]).to(torch.bfloat16)
    for f in (lambda x: x * 2.5, lambda x: x + x, lambda x: x.exp(), lambda x: x / 3,
              lambda x: -x, lambda x: x.sum(), lambda x: x.float()):
        same(f(e), f(t), "bfloat16", atol=2e-2, rtol=2e-2)
    assert e.bfloat16() is e or e.bfloat16().dtype == ember.bfloat16
    assert ember.zeros(2, dtype=ember.bfloat16).dtype == ember.bfloat16


def test_default_dtype():
    assert ember.get_default_dtype() == ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.get_default_dtype() == ember.float64
        assert ember.tensor([1.5]).dtype == ember.float64
        assert ember.zeros(2).dtype == ember.float64 and ember.rand(2).dtype == ember.float64
        assert ember.arange(2.0).dtype == ember.float64 and ember.full((1,), 2.0).dtype == \
            ember.float64
        assert ember.tensor([1, 2]).dtype == ember.int64  # ints are unaffected
        assert (ember.tensor([1, 2]) / 2).dtype == ember.float64
        assert repr(ember.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == \
            "tensor([1.5000], dtype=ember.float32)"
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="floating"):
        ember.set_default_dtype(ember.int32)
    assert ember.get_default_dtype() == ember.float32


def test_dtype_arguments_accept_python_types_and_names():
    assert ember.zeros(2, dtype=float).dtype == ember.float32
    assert ember.zeros(2, dtype=int).dtype == ember.int64
    assert ember.zeros(2, dtype=bool).dtype == ember.bool
    assert ember.zeros(2, dtype="bfloat16").dtype == ember.bfloat16
    assert ember.zeros(2, dtype=np.float16).dtype == ember.float16
    with pytest.raises(TypeError, match="dtype"):
        ember.zeros(2, dtype="not-a-dtype")


def test_promote_types_and_result_type():
    pairs = [("int8", "uint8"), ("bool", "int32"), ("int64", "float16"), ("float16", "bfloat16"),
             ("float32", "float64"), ("uint8", "bool"), ("int32", "float32")]
    for a, b in pairs:
        e = ember.promote_types(getattr(ember, a), getattr(ember, b))
        t = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert ember.dtypes.name(e) == tname(t), (a, b)
    assert ember.result_type(ember.tensor([1, 2]), 2.5) == ember.float32
    assert ember.result_type(ember.tensor([1.0]), ember.tensor(1.0, dtype=ember.float64)) == \
        ember.float32


# ------------------------------------------------------------------------------- devices

def test_device_parsing_and_equality():
    cpu = ember.device("cpu")
    assert cpu.type == "cpu" and cpu.index is None and str(cpu) == "cpu"
    assert repr(cpu) == repr(torch.device("cpu")) == "device(type='cpu')"
    c1 = ember.device("cuda:1")
    assert c1.type == "cuda" and c1.index == 1 and str(c1) == "cuda:1"
    assert repr(c1) == repr(torch.device("cuda:1"))
    assert ember.device("cuda", 1) == c1 and ember.device(c1) is c1
    assert ember.device("cuda") != ember.device("cuda:0")  # as in torch: no index != index 0
    assert torch.device("cuda") != torch.device("cuda:0")
    assert cpu == ember.device("cpu") and cpu != c1 and cpu == "cpu"
    assert hash(ember.device("cuda:1")) == hash(c1)
    assert {cpu: 1}[ember.device("cpu")] == 1
    assert pickle.loads(pickle.dumps(c1)) == c1
    assert ember.zeros(2).device == cpu and ember.zeros(2, device="cpu").device == cpu
    for bad in ("gpu", "cuda:x", "cuda:-1", "cpu:0:1"):
        with pytest.raises((ValueError, RuntimeError), match="device"):
            ember.device(bad)
    with pytest.raises(ValueError, match="index"):
        ember.device("cuda:0", 1)
    with pytest.raises(AttributeError):
        cpu.type = "cuda"


def test_to_and_cpu():
    x = ember.tensor([1.5, -2.0])
    assert x.to("cpu") is x and x.cpu() is x and x.to(ember.float32) is x
    assert x.to(ember.device("cpu"), ember.float32) is x
    y = x.to(ember.float64)
    assert y.dtype == ember.float64 and y.tolist() == [1.5, -2.0]
    assert x.to("cpu", ember.int64).tolist() == [1, -2]
    assert x.to(dtype=ember.int32).dtype == ember.int32
    assert x.to(ember.zeros(1, dtype=ember.float16)).dtype == ember.float16
    c = x.to(ember.float32, copy=True)
    assert c is not x and not np.shares_memory(c.array, x.array)
    for m, dt in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                  ("long", "int64"), ("int", "int32"), ("short", "int16"), ("char", "int8"),
                  ("byte", "uint8"), ("bool", "bool"), ("bfloat16", "bfloat16")):
        e, t = getattr(x, m)(), getattr(torch.tensor([1.5, -2.0]), m)()
        assert ember.dtypes.name(e.dtype) == tname(t.dtype) == dt, m
    # differentiable dtype change
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a.to(ember.float64)
    (b * b).sum().backward()
    assert a.grad.dtype == ember.float32 and a.grad.tolist() == [2.0, 4.0]
    assert x.type() == "ember.float32" and x.type(ember.float64).dtype == ember.float64
    assert x.type_as(ember.zeros(1, dtype=ember.int16)).dtype == ember.int16


def test_cuda_without_gpu_is_a_clear_error():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ember.cuda.device_count() == 0
    for call in (lambda: ember.zeros(2).cuda(), lambda: ember.zeros(2).to("cuda"),
                 lambda: ember.zeros(2, device="cuda"), lambda: ember.tensor([1], device="cuda:0"),
                 lambda: ember.randn(2, device="cuda")):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            call()


@pytest.mark.cuda
def test_cuda_round_trip():
    x = ember.tensor([1.5, -2.0], requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device == ember.device("cuda:0") and "device='cuda:0'" in repr(y)
    (y * y).sum().backward()
    assert x.grad.tolist() == [3.0, -4.0]
    assert y.cpu().tolist() == [1.5, -2.0]
    with pytest.raises(TypeError, match="cpu"):
        y.detach().numpy()
    assert np.asarray(y.detach()).tolist() == [1.5, -2.0]


# ------------------------------------------------------------------------------- conversions

def test_numpy_zero_copy_and_grad_error():
    x = ember.tensor([1.0, 2.0, 3.0])
    n = x.numpy()
    assert isinstance(n, np.ndarray) and np.shares_memory(n, x.array)
    n[0] = 10.0
    assert x.tolist()[0] == 10.0
    g = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\)"):
        g.numpy()
    d = g.detach().numpy()
    assert np.shares_memory(d, g.array)
    assert g.numpy(force=True).tolist() == [1.0]


def test_item_tolist_and_python_scalars():
    for v in (2.5, 7, True):
        e, t = ember.tensor(v), torch.tensor(v)
        assert e.item() == t.item() and type(e.item()) is type(t.item())
    assert ember.tensor([[3.5]]).item() == 3.5
    with pytest.raises(RuntimeError, match="2 elements"):
        ember.tensor([1.0, 2.0]).item()
    for vals in ([[1, 2], [3, 4]], [1.5, 2.5], [True, False], 3.0, []):
        e, t = ember.tensor(vals), torch.tensor(vals)
        assert e.tolist() == t.tolist()
        assert type(e.tolist()) is type(t.tolist())
    assert type(ember.tensor([1, 2]).tolist()[0]) is int
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor(3.9)) == 3
    assert complex(ember.tensor(1.5)) == 1.5 + 0j
    assert [10, 20, 30][ember.tensor(1)] == 20  # __index__
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"
    assert format(ember.tensor([1.0])) == repr(ember.tensor([1.0]))


def test_array_protocol():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and np.shares_memory(a, x.array)
    b = np.asarray(x, dtype=np.float64)
    assert b.dtype == np.float64 and not np.shares_memory(b, x.array)
    assert np.array(x, copy=True) is not x.array and np.array(x).tolist() == x.tolist()
    g = ember.tensor([1.0], requires_grad=True)
    assert np.asarray(g).tolist() == [1.0]  # __array__ reads the values (as torch does)


def test_dlpack_round_trip():
    x = ember.arange(6.0).reshape(2, 3)
    n = np.from_dlpack(x)
    assert n.shape == (2, 3) and np.shares_memory(n, x.array)
    back = ember.from_dlpack(n)
    assert back.shape == (2, 3) and np.shares_memory(back.array, x.array)
    t = torch.from_dlpack(x)  # torch reads ember through dlpack, no copy
    t[0, 0] = 42.0
    assert x.tolist()[0][0] == 42.0
    e = ember.from_dlpack(torch.arange(4, dtype=torch.int32))
    assert e.dtype == ember.int32 and e.tolist() == [0, 1, 2, 3]
    assert x.__dlpack_device__() == (1, 0)


# ------------------------------------------------------------------------------- repr

REPR_CASES = [
    "L.tensor([1., 2.])", "L.tensor([1., 2.], requires_grad=True)", "L.tensor([1, 2])",
    "L.tensor(3.5)", "L.tensor(3)", "L.tensor(3.)", "L.tensor([True, False])",
    "L.tensor([1.5, 2.25], dtype=L.float64)", "L.tensor([1, 2], dtype=L.int32)",
    "L.tensor([[1., 2.], [3., 4.]])", "L.zeros(0)", "L.zeros(0, 3)",
    "L.zeros(0, dtype=L.int64)", "L.zeros(2, 0, dtype=L.int32)", "L.zeros(2, 0, 3)",
    "L.tensor([1e-5, 1.0])", "L.tensor([1e10, 1.0])", "L.tensor([0.1, 100.5])",
    "L.arange(2000.)", "L.tensor([1., 2.], dtype=L.float16)",
    "L.tensor([1., 2.5], dtype=L.bfloat16)", "L.tensor([float('nan'), float('inf'), 1.])",
    "L.tensor([-1., 2.])", "L.tensor([1, 2], dtype=L.uint8)", "L.arange(12.).reshape(3, 4)",
    "L.tensor([123456.789, 1.0])", "L.tensor([[1.5], [2.5]])", "L.arange(3000).reshape(30, 100)",
    "L.arange(2400.).reshape(4, 6, 100) / 7", "L.arange(40.) / 3",
    "L.arange(-20, 20).reshape(2, 2, 10)", "L.tensor([float('nan')])", "L.tensor([0., -0.])",
    "L.tensor([1e-9, 0.5])", "L.tensor([-1e9, 2.])", "L.tensor([[True, False], [False, True]])",
    "L.arange(1001)", "L.tensor([1., -2.5], dtype=L.float64, requires_grad=True)",
    "L.tensor(float('-inf'))", "L.tensor([1, -300000000000])", "L.ones(2, 3, 4)",
    "L.arange(5000).reshape(10, 10, 50) > 2000", "L.tensor([0.5, 0.25, 0.125, 0.0625])",
    "L.tensor([[1e-3, 1e3], [1., 2.]])", "L.tensor([[-5., 5.]], dtype=L.float64)",
]


@pytest.mark.parametrize("expr", REPR_CASES)
def test_repr_matches_torch_layout(expr):
    e, t = lib_call(expr)
    assert repr(e) == repr(t).replace("torch.", "ember.")


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64", "int8", "bool"])
def test_repr_random_data_matches_torch(dt):
    """Random data over magnitudes and shapes (fixed/scientific, wrapping, summarization,
    suffixes moved to a new line)."""
    rng = np.random.default_rng(0)
    for shape in [(5,), (3, 4), (2, 3, 4), (40, 40), (2, 30, 30), (1100,), (7, 200), (9,)]:
        for scale in (1, 1e-6, 1e6, 1e9, 100, 3):
            a = rng.standard_normal(shape) * scale
            with np.errstate(all="ignore"):
                a = (a > 0) if dt == "bool" else a.astype(dt)
            for rg in ((False, True) if dt.startswith("float") else (False,)):
                e = ember.from_numpy(a.copy()).requires_grad_(rg)
                t = torch.from_numpy(a.copy()).requires_grad_(rg)
                assert repr(e) == repr(t).replace("torch.", "ember."), (shape, scale, rg)


def test_repr_grad_fn_and_options():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert repr((x * 2).sum()).startswith("tensor(6., grad_fn=<")
    assert repr(x.detach()) == "tensor([1., 2.])"
    try:
        ember.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        for expr in ("L.tensor([1.2345, 2.5])", "L.arange(40.) / 3", "L.tensor([1e-5, 1.])"):
            e, t = lib_call(expr)
            assert repr(e) == repr(t).replace("torch.", "ember."), expr
        ember.set_printoptions(threshold=5, edgeitems=2)
        torch.set_printoptions(threshold=5, edgeitems=2)
        e, t = lib_call("L.arange(10)")
        assert repr(e) == repr(t)
        ember.set_printoptions(sci_mode=True)
        torch.set_printoptions(sci_mode=True)
        e, t = lib_call("L.tensor([1.5, 2.])")
        assert repr(e) == repr(t).replace("torch.", "ember.")
    finally:
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    assert repr(ember.tensor([1.5])) == "tensor([1.5000])"
    assert str(ember.tensor([1.5])) == "tensor([1.5000])"


# ------------------------------------------------------------------------------- protocols

def test_pickle_and_deepcopy():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.dtype == ember.float64 and y.requires_grad
    assert not np.shares_memory(y.array, x.array)
    for dt in (ember.int8, ember.bool, ember.bfloat16, ember.float16):
        z = ember.zeros(3, dtype=dt)
        assert pickle.loads(pickle.dumps(z)).dtype == dt
    x.grad = ember.ones(2, 2, dtype=ember.float64)
    d = copy.deepcopy(x)
    assert d is not x and d.tolist() == x.tolist() and d.requires_grad and d.is_leaf
    assert d.grad.tolist() == x.grad.tolist() and not np.shares_memory(d.grad.array, x.grad.array)
    d.array[0, 0] = -1.0
    assert x.tolist()[0][0] == 1.0
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]  # the memo keeps shared tensors shared
    with pytest.raises(RuntimeError, match="leaf"):
        copy.deepcopy(x * 2)
    c = copy.copy(ember.tensor([1.0]))
    assert c.tolist() == [1.0]


def test_len_iter_bool():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert len(x) == 3 == len(torch.zeros(3, 2))
    assert len(ember.zeros(0, 2)) == 0
    with pytest.raises(TypeError, match="0-d"):
        len(ember.tensor(1.0))
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert [v.item() for v in ember.tensor([7, 8])] == [7, 8]
    with pytest.raises(TypeError, match="0-d"):
        iter(ember.tensor(1.0))
    assert bool(ember.tensor([1.0])) and not bool(ember.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        if ember.zeros(2) > -1:
            pass


def test_iteration_is_differentiable():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    total = sum(r * (i + 1) for i, r in enumerate(x)).sum()
    total.backward()
    assert x.grad.tolist() == [[1.0, 1.0], [2.0, 2.0]]


def test_attributes_match_torch():
    e, t = ember.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert e.shape == tuple(t.shape) and e.size() == tuple(t.size())
    assert e.size(-1) == t.size(-1) and e.size(1) == t.size(1)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        e.size(3)
    assert e.dim() == e.ndim == e.ndimension() == 3
    assert e.numel() == e.nelement() == 24 == ember.numel(e)
    assert e.stride() == t.stride() and e.stride(0) == t.stride(0)
    assert e.element_size() == e.itemsize == 4 and e.nbytes == 96
    assert e.is_contiguous() and e.is_cpu and not e.is_cuda and e.get_device() == -1
    assert e.data_ptr() == e.array.ctypes.data
    assert ember.is_tensor(e) and not ember.is_tensor(np.zeros(1))
    assert ember.is_floating_point(e) and not ember.tensor([1]).is_floating_point()
    assert isinstance(ember.Tensor([1.0, 2.0]), ember.Tensor)
    assert ember.Tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
    assert ember.Tensor().shape == (0,)


def test_requires_grad_flags():
    x = ember.tensor([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([True]).requires_grad_()
    y = ember.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    ember.zeros(2, dtype=ember.complex64).requires_grad_()  # complex is allowed, as in torch


def test_subpackages_load_lazily():
    import subprocess
    import sys

    code = ("import sys, ember; assert 'ember.nn' not in sys.modules; "
            "assert ember.nn.Linear and 'ember.nn' in sys.modules; "
            "assert ember.optim.SGD; assert not hasattr(ember, 'no_such_thing')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
