"""Every op of core/ops/elementwise.py against PyTorch: forward, backward, double backward and a
float64 gradcheck (tests/core/optest.py) over tables of cases; dtype promotion with tensors and
Python scalars; and every in-place variant (values, version counter, autograd rules)."""
import operator

import numpy as np
import pytest
import torch

import ember
from ember.ops import elementwise as E
from optest import Const, assert_close, check_op

NAN, INF = float("nan"), float("inf")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy on nan/inf inputs


def fn(name, *a, **k):
    """``lib.name(*inputs, *a, **k)`` with lib = ember or torch, picked from the first tensor."""
    def f(*xs):
        lib = ember if any(isinstance(x, ember.Tensor) for x in xs) else torch
        return getattr(lib, name)(*xs, *a, **k)
    f.__name__ = name
    return f


def meth(name, *a, **k):
    def f(x, *rest):
        return getattr(x, name)(*rest, *a, **k)
    f.__name__ = name
    return f


def arr(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


def _lib(x):
    return ember if isinstance(x, ember.Tensor) else torch


def to_both(values, dtype=None):
    """The same data as an ember and a torch tensor (``dtype`` a name like 'int32')."""
    a = np.array(values) if dtype is None else np.array(values, dtype=dtype)
    return ember.tensor(a), torch.from_numpy(a.copy())


def same(e, t, what="", atol=1e-6, rtol=1e-5):
    """ember result equals torch's: value, shape and dtype."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{what}: ember gave {type(e).__name__}"
        tdt = str(t.dtype).replace("torch.", "")
        assert ember.dtypes.name(e.dtype) == tdt, f"{what}: dtype {e.dtype} != torch {tdt}"
        te = t.detach()
        if te.dtype == torch.bfloat16:
            te = te.float()
        assert_close(e.float() if tdt == "bfloat16" else e, te, atol, rtol, what)
    else:
        assert e == t, f"{what}: {e!r} != torch {t!r}"


LOOSE = {"float16": {"atol": 2e-3, "rtol": 2e-3}, "bfloat16": {"atol": 2e-2, "rtol": 2e-2}}


def same_grad(e, t, what, atol=1e-5):
    """Gradients agree; ``None`` counts as zeros (torch sometimes materializes zeros)."""
    if t is None or e is None:
        other = t if e is None else e
        assert other is None or not np.asarray(other.detach().numpy()).any(), \
            f"{what}: one side is None, the other non-zero"
        return
    same(e, t, what, atol=atol)


def both(f, e_args, t_args, what="", atol=1e-6, rtol=1e-5):
    """Run ``f`` on both libraries: either both raise, or the results agree."""
    try:
        t = f(*t_args)
    except Exception as exc:  # torch refuses: ember must refuse too
        with pytest.raises(Exception):
            f(*e_args)
        return type(exc)
    e = f(*e_args)
    same(e, t, what, atol, rtol)
    return None


# ----------------------------------------------------------------------------------- tables

# unary: name -> (low, high) domain of the random inputs
UNARY = {
    "exp": (-2, 2), "exp2": (-2, 2), "expm1": (-2, 2), "log": (0.3, 2), "log2": (0.3, 2),
    "log10": (0.3, 2), "log1p": (-0.6, 2), "sqrt": (0.3, 2), "rsqrt": (0.3, 2),
    "sin": (-2, 2), "cos": (-2, 2), "tan": (-1.2, 1.2), "asin": (-0.8, 0.8),
    "acos": (-0.8, 0.8), "atan": (-2, 2), "sinh": (-2, 2), "cosh": (-2, 2), "tanh": (-2, 2),
    "asinh": (-2, 2), "acosh": (1.3, 3), "atanh": (-0.8, 0.8), "sigmoid": (-3, 3),
    "erf": (-2, 2), "erfc": (-2, 2), "reciprocal": (0.3, 2), "square": (-2, 2), "neg": (-2, 2),
    "abs": (-2, 2), "relu": (-2, 2), "sign": (-2, 2), "floor": (-2, 2), "ceil": (-2, 2),
    "trunc": (-2, 2), "frac": (-2, 2), "arcsin": (-0.8, 0.8), "arccos": (-0.8, 0.8),
    "arctan": (-2, 2), "arcsinh": (-2, 2), "arccosh": (1.3, 3), "arctanh": (-0.8, 0.8),
    "negative": (-2, 2), "absolute": (-2, 2), "sgn": (-2, 2), "fix": (-2, 2),
    "conj": (-2, 2),
}
# piecewise-constant ops: torch's first gradient is a constant zero (no double backward graph)
FLAT = {"sign", "sgn", "floor", "ceil", "trunc", "fix", "round"}
# first gradient independent of the input: double backward is zero/None on both sides
assert set(UNARY) | {"round", "nan_to_num"} >= set(E._UNARY), "a unary op is missing a row"

UNARY_SHAPES = [[(2, 3)], [()], [(0, 3)], [(2, 1, 3)]]


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=lambda s: str(s[0]))
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function(name, shape, device):
    lo, hi = UNARY[name]
    check_op(fn(name), fn(name), shape, low=lo, high=hi, device=device,
             gradgrad=name not in FLAT)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_method_noncontig(name, device):
    lo, hi = UNARY[name]
    check_op(meth(name), meth(name), [(3, 4)], low=lo, high=hi, noncontig=True, device=device,
             gradgrad=name not in FLAT)


INT_VALUES = np.array([[3, -1, 0], [5, -7, 2]])
POS_INT_VALUES = np.array([[3, 1, 2], [5, 7, 2]])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool", "float16",
                                   "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_dtypes(name, dtype):
    """Integer/bool inputs: the result dtype (int ops keep int, math goes to float32) and
    values match torch, or both refuse."""
    vals = POS_INT_VALUES if dtype in ("uint8",) or name in ("log", "log2", "log10", "sqrt",
                                                             "rsqrt", "reciprocal", "acosh",
                                                             "arccosh") else INT_VALUES
    if dtype.startswith("float"):
        vals = vals / 4.0 + (1.5 if name in ("acosh", "arccosh") else 0.0)
        if name in ("asin", "acos", "atanh", "arcsin", "arccos", "arctanh"):
            vals = vals / 8.0
    e, t = to_both(vals.astype(dtype))
    both(fn(name), [e], [t], f"{name}({dtype})", **LOOSE.get(dtype, {}))


# binary: name -> (function of both libraries, low, high)
BINARY = {
    "add": (fn("add"), -2, 2), "add_alpha": (fn("add", alpha=2.5), -2, 2),
    "sub": (fn("sub"), -2, 2), "sub_alpha": (fn("sub", alpha=-1.5), -2, 2),
    "subtract": (fn("subtract"), -2, 2), "rsub": (fn("rsub"), -2, 2),
    "rsub_alpha": (fn("rsub", alpha=3), -2, 2),
    "mul": (fn("mul"), -2, 2), "multiply": (fn("multiply"), -2, 2),
    "div": (fn("div"), 0.5, 2), "divide": (fn("divide"), 0.5, 2),
    "true_divide": (fn("true_divide"), 0.5, 2),
    "remainder": (fn("remainder"), 0.3, 2), "fmod": (fn("fmod"), 0.3, 2),
    "pow": (fn("pow"), 0.5, 2), "maximum": (fn("maximum"), -2, 2),
    "minimum": (fn("minimum"), -2, 2), "fmax": (fn("fmax"), -2, 2), "fmin": (fn("fmin"), -2, 2),
    "atan2": (fn("atan2"), -2, 2), "arctan2": (fn("arctan2"), -2, 2),
    "xlogy": (fn("xlogy"), 0.3, 2), "hypot": (fn("hypot"), -2, 2),
    "logaddexp": (fn("logaddexp"), -2, 2),
    "op_add": (operator.add, -2, 2), "op_sub": (operator.sub, -2, 2),
    "op_mul": (operator.mul, -2, 2), "op_truediv": (operator.truediv, 0.5, 2),
    "op_mod": (operator.mod, 0.3, 2), "op_pow": (operator.pow, 0.5, 2),
    "m_add": (meth("add"), -2, 2), "m_sub": (meth("sub", alpha=2), -2, 2),
    "m_mul": (meth("mul"), -2, 2), "m_div": (meth("div"), 0.5, 2),
    "m_pow": (meth("pow"), 0.5, 2), "m_remainder": (meth("remainder"), 0.3, 2),
    "m_fmod": (meth("fmod"), 0.3, 2), "m_maximum": (meth("maximum"), -2, 2),
    "m_minimum": (meth("minimum"), -2, 2), "m_atan2": (meth("atan2"), -2, 2),
    "m_xlogy": (meth("xlogy"), 0.3, 2), "m_hypot": (meth("hypot"), -2, 2),
    "m_logaddexp": (meth("logaddexp"), -2, 2),
}
BINARY_SHAPES = [
    [(2, 3), (2, 3)], [(2, 3), (3,)], [(2, 1, 3), (2, 1)], [(), (2, 3)], [(2, 3), ()],
    [(), ()], [(0, 3), (3,)], [(2, 0), (1, 1)],
]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, shapes, device):
    f, lo, hi = BINARY[name]
    check_op(f, f, shapes, low=lo, high=hi, device=device)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_noncontig(name, device):
    f, lo, hi = BINARY[name]
    check_op(f, f, [(3, 4), (3, 4)], low=lo, high=hi, noncontig=True, device=device)
    check_op(f, f, [(4, 3), (3,)], low=lo, high=hi, noncontig=True, device=device)


def test_binary_one_side_constant(device):
    """Only one operand requires grad (the other's edge is None)."""
    x = arr([[0.5, 1.5, 2.0], [1.0, 0.7, 1.2]])
    for name in ("mul", "div", "pow", "atan2", "maximum", "remainder", "hypot", "xlogy"):
        f = fn(name)
        check_op(f, f, [(2, 3), Const(x)], low=0.5, high=2, device=device)
        check_op(f, f, [Const(x), (2, 3)], low=0.5, high=2, device=device)


TIE_A = arr([[1.0, 2.0, -1.0], [0.5, 3.0, 3.0]])
TIE_B = arr([[1.0, 0.0, -1.0], [2.0, 3.0, 1.0]])


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_maxmin_ties_split_gradient(name):
    check_op(fn(name), fn(name), [TIE_A, TIE_B], gradcheck=False)


def test_pow_special_points():
    """0 ** positive exponents (gradient of the exponent is 0 there), negative bases with
    integral exponents."""
    base = arr([[0.0, 2.0, -1.5], [0.0, 1.0, -2.0]])
    expo = arr([[2.0, 0.5, 2.0], [3.0, 0.0, 3.0]])
    # (torch's double gradient is nan at base 0, ember's 0: compare the first gradient)
    check_op(fn("pow"), fn("pow"), [base, expo], gradcheck=False, gradgrad=False)
    for e in (0, 1, 2, 3, -1, 0.5, 2.5, -2.0):
        b = arr([[0.5, 2.0, 1.5], [1.0, 0.7, 1.3]])
        check_op(lambda x: x ** e, lambda x: x ** e, [b])
        check_op(fn("pow", e), fn("pow", e), [b])
    for s in (2, 0.5, 2.5):
        check_op(lambda x: s ** x, lambda x: s ** x, [(2, 3)])
        check_op(lambda x: ember.pow(s, x), lambda x: torch.pow(s, x), [(2, 3)])


@pytest.mark.parametrize("case", [
    ("lerp_scalar", fn("lerp", weight=0.3), [(2, 3), (2, 3)]),
    ("lerp_tensor_w", fn("lerp"), [(2, 3), (3,), (2, 1)]),
    ("lerp_bcast", fn("lerp", weight=0.7), [(3,), (2, 3)]),
    ("addcmul", fn("addcmul"), [(2, 3), (2, 3), (3,)]),
    ("addcmul_value", fn("addcmul", value=-0.5), [(2, 3), (1, 3), (2, 1)]),
    ("addcdiv", fn("addcdiv", value=2.0), [(2, 3), (2, 3), (2, 3)]),
    ("addcdiv_bcast", fn("addcdiv"), [(3,), (2, 3), (2, 1)]),
    ("clamp", fn("clamp", -0.5, 0.8), [(2, 3)]),
    ("clamp_min_only", fn("clamp", min=-0.5), [(2, 3)]),
    ("clamp_max_only", fn("clamp", max=0.5), [(2, 3)]),
    ("clip", fn("clip", -0.5, 0.8), [(2, 3)]),
    ("clamp_min", fn("clamp_min", 0.1), [(2, 3)]),
    ("clamp_max", fn("clamp_max", 0.1), [(2, 3)]),
    ("clamp_tensor", fn("clamp"), [(2, 3), (3,), (2, 1)]),
    ("m_clamp", meth("clamp", min=-1, max=1), [(2, 3)]),
    ("m_lerp", meth("lerp", 0.25), [(2, 3), (2, 3)]),
    ("m_addcmul", meth("addcmul", value=3), [(2, 3), (2, 3), (2, 3)]),
], ids=lambda c: c[0])
def test_ternary_and_clamp(case, device):
    _, f, shapes = case
    lo, hi = (0.5, 2) if "addcdiv" in case[0] else (-2, 2)
    check_op(f, f, shapes, low=lo, high=hi, device=device)
    check_op(f, f, shapes, low=lo, high=hi, noncontig=True, device=device)


def test_clamp_tensor_bounds_noncontig_empty(device):
    check_op(fn("clamp"), fn("clamp"), [(4, 3), (4, 3), Const(np.full((4, 3), 0.5, np.float32))],
             noncontig=True, device=device)
    check_op(fn("clamp", -1, 1), fn("clamp", -1, 1), [(0, 2)], device=device)
    check_op(fn("clamp", -1, 1), fn("clamp", -1, 1), [()], device=device)


def test_round_and_nan_to_num(device):
    x = arr([[0.5, 1.5, 2.5, -0.5], [-1.5, 1.24, 1.26, -2.345]])
    for f in (fn("round"), fn("round", decimals=1), meth("round", decimals=2)):
        check_op(f, f, [x], gradgrad=False, gradcheck=False, device=device)
    bad = arr([[NAN, INF, -INF, 1.0], [2.0, -3.0, NAN, 0.5]])
    for f in (fn("nan_to_num"), fn("nan_to_num", nan=1.0, posinf=10.0, neginf=-10.0),
              meth("nan_to_num", 2.0)):
        check_op(f, f, [bad], gradcheck=False, device=device)
    check_op(fn("nan_to_num"), fn("nan_to_num"), [(2, 3)], device=device)


# ------------------------------------------------------------------ comparison, logic, bitwise

CMP = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
       "not_equal", "logical_and", "logical_or", "logical_xor", "isclose"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
PRED = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"]
A = arr([[1.0, 2.0, NAN, INF], [-INF, 0.0, -0.0, 3.0]])
Bv = arr([[1.0, 3.0, NAN, INF], [-INF, 0.0, 1.0, 2.0]])


@pytest.mark.parametrize("name", CMP)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "float32"),
                                    ("int32", "int64"), ("bool", "bool"),
                                    ("uint8", "int8"), ("float64", "float16")], ids=str)
def test_comparison(name, dtypes, device):
    da, db = dtypes
    def cast(v, dt):  # integer/bool operands: no nan/inf
        return np.nan_to_num(v, nan=5, posinf=7, neginf=-7).astype(dt) if dt[0] in "ibu" \
            else v.astype(dt)
    a, b = cast(A, da), cast(Bv, db)
    if "uint8" in dtypes:
        a, b = np.abs(a), np.abs(b)
    if name == "isclose" and da != db:
        return  # torch's isclose wants equal dtypes (ember promotes): covered below
    f = fn(name)
    check_op(f, f, [Const(a), Const(b)], grad=False, device=device)
    check_op(f, f, [Const(a), Const(b[0])], grad=False, device=device)       # broadcasting
    if not name.startswith(("isclose", "logical")):  # torch takes no scalars there
        g = meth(name)
        check_op(g, g, [Const(a), Const(b[:, :1])], grad=False, device=device)
        for s in (2, 0.5, True):
            check_op(lambda x: getattr(x, name)(s), lambda x: getattr(x, name)(s), [Const(a)],
                     grad=False, device=device)


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.lt, operator.le,
                                operator.gt, operator.ge], ids=lambda o: o.__name__)
def test_comparison_operators(op, device):
    check_op(op, op, [(2, 3), (3,)], grad=False, device=device)
    check_op(lambda x: op(x, 0.5), lambda x: op(x, 0.5), [(2, 3)], grad=False, device=device)
    check_op(lambda x: op(0.5, x), lambda x: op(0.5, x), [(2, 3)], grad=False, device=device)
    check_op(op, op, [(0, 3), (3,)], grad=False, device=device)


def test_eq_none_and_hashable():
    x = ember.ones(2)
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert {x: 1}[x] == 1


@pytest.mark.parametrize("name", BITWISE)
@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int32", "int8"), ("bool", "bool"),
                                    ("uint8", "uint8"), ("bool", "int32")], ids=str)
def test_bitwise(name, dtypes, device):
    a = np.array([[3, 5, 0], [12, 1, 7]]).astype(dtypes[0])
    b = np.array([[6, 1, 0], [10, 1, 1]]).astype(dtypes[1])
    f = fn(name)
    check_op(f, f, [Const(a), Const(b)], grad=False, device=device)
    check_op(f, f, [Const(a), Const(b[0])], grad=False, device=device)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor],
                         ids=lambda o: o.__name__)
def test_bitwise_operators(op):
    for dt in ("int64", "int32", "bool", "uint8"):
        e1, t1 = to_both([[3, 5, 0], [12, 1, 7]], dt)
        e2, t2 = to_both([6, 1, 1], dt)
        both(op, [e1, e2], [t1, t2], f"{op.__name__} {dt}")
        for s in (1, True, 6):
            both(lambda a: op(a, s), [e1], [t1], f"{op.__name__} {dt} scalar {s}")
            both(lambda a: op(s, a), [e1], [t1], f"{op.__name__} scalar {s} {dt}")
    ef, tf = to_both([1.0, 2.0])
    both(op, [ef, ef], [tf, tf], "float operands")  # refused by both


@pytest.mark.parametrize("dt", ["int64", "int32", "uint8", "bool", "float32"])
def test_invert_and_bitwise_not(dt):
    e, t = to_both([[3, 0, 1], [7, 1, 0]], dt)
    both(operator.invert, [e], [t], f"~{dt}")
    both(fn("bitwise_not"), [e], [t], f"bitwise_not {dt}")


@pytest.mark.parametrize("name", PRED)
def test_predicates(name, device):
    f = fn(name)
    check_op(f, f, [Const(A)], grad=False, device=device)
    check_op(f, f, [Const(np.array([[1, -2], [0, 3]]))], grad=False, device=device)
    check_op(f, f, [Const(np.zeros((0, 2), np.float32))], grad=False, device=device)


def test_isclose_allclose_equal():
    a = arr([1.0, 2.0, NAN, 1e-9])
    b = arr([1.0 + 1e-6, 2.1, NAN, 0.0])
    ea, ta = ember.tensor(a), torch.from_numpy(a)
    eb, tb = ember.tensor(b), torch.from_numpy(b)
    ea2, ta2 = ember.tensor(a[:2]), torch.from_numpy(a[:2])
    eb2, tb2 = ember.tensor(b[:2]), torch.from_numpy(b[:2])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 1e-3, "rtol": 0}):
        same(ember.isclose(ea, eb, **kw), torch.isclose(ta, tb, **kw), str(kw))
        same(ea.isclose(eb, **kw), ta.isclose(tb, **kw), str(kw))
        assert ember.allclose(ea2, eb2, **kw) == torch.allclose(ta2, tb2, **kw)
        assert ember.allclose(ea, eb, **kw) == torch.allclose(ta, tb, **kw)
        assert ea.allclose(ea, **kw) == ta.allclose(ta, **kw)
    assert ember.equal(ea2, ember.tensor(a[:2]))
    assert not ember.equal(ea2, eb2)
    assert not ember.equal(ea, ea2)
    assert ea2.equal(ember.tensor(a[:2])) and torch.equal(ta2, torch.from_numpy(a[:2]))


def test_comparison_results_not_differentiable():
    x = ember.randn(3, requires_grad=True)
    for r in (x > 0, x == x, ember.isnan(x), ember.isclose(x, x), ember.logical_not(x),
              ember.signbit(x)):
        assert r.dtype == ember.bool and not r.requires_grad and r.grad_fn is None


# --------------------------------------------------------------------- division and rounding

def test_integer_division_and_rounding_modes():
    ints = [[7, -7, 3, 0], [-9, 9, 1, 10]]
    dens = [[2, 2, -2, 3], [4, -4, 1, 3]]
    for dt in ("int64", "int32", "int8", "uint8", "float32", "float64"):
        va = np.abs(ints) if dt == "uint8" else ints
        vb = np.abs(dens) if dt == "uint8" else dens
        ea, ta = to_both(va, dt)
        eb, tb = to_both(vb, dt)
        for mode in (None, "floor", "trunc"):
            both(lambda a, b: a.div(b, rounding_mode=mode), [ea, eb], [ta, tb], f"div {dt} {mode}")
            both(lambda a: a.div(3, rounding_mode=mode), [ea], [ta], f"div {dt} 3 {mode}")
            both(lambda a: a.div(2.5, rounding_mode=mode), [ea], [ta], f"div {dt} 2.5 {mode}")
        for f in (operator.truediv, operator.floordiv, operator.mod, fn("floor_divide"),
                  fn("remainder"), fn("fmod")):
            both(f, [ea, eb], [ta, tb], f"{f.__name__} {dt}")
            both(lambda a: f(a, 3), [ea], [ta], f"{f.__name__} {dt} by 3")
            both(lambda a: f(a, -2.5), [ea], [ta], f"{f.__name__} {dt} by -2.5")
    for dt in ("float32", "float64", "float16", "bfloat16"):
        ea, ta = ember.tensor([1.0, -1.0, 7.5, 0.3]).to(getattr(ember, dt)), \
            torch.tensor([1.0, -1.0, 7.5, 0.3]).to(getattr(torch, dt))
        for mode in ("floor", "trunc"):
            both(lambda a: a.div(0.1, rounding_mode=mode), [ea], [ta], f"{dt} {mode} by 0.1",
                 **LOOSE.get(dt, {}))
        both(lambda a: a // 0.1, [ea], [ta], f"{dt} // 0.1", **LOOSE.get(dt, {}))
        both(lambda a: a % 0.1, [ea], [ta], f"{dt} % 0.1", atol=1e-3, rtol=1e-2)
    with pytest.raises(ValueError, match="rounding_mode"):
        ember.ones(2).div(ember.ones(2), rounding_mode="round")


def test_rounding_division_gradient_is_zero():
    """div with a rounding mode is piecewise constant: torch gives a zero gradient."""
    for mode in ("floor", "trunc"):
        f = fn("div", rounding_mode=mode)
        check_op(f, f, [(2, 3), (2, 3)], low=0.5, high=3, gradgrad=False, gradcheck=False)
    # torch has no derivative for floor_divide; ember's is zero like div(rounding_mode=...)
    x = ember.tensor([1.5, -2.5], requires_grad=True)
    (g,) = ember.autograd.grad((x // 0.7).sum(), x)
    assert g.tolist() == [0.0, 0.0]


# ----------------------------------------------------------------------------- dtype promotion

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64",
          "bfloat16"]
PROMOTE_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, fn("maximum"),
               fn("atan2"), operator.eq, fn("remainder")]


def _mk(dt, shape, positive=False):
    vals = np.array([[1, 2, 3], [3, 1, 2]])[: shape[0] if shape else 1]
    a = vals.reshape(shape) if shape else np.array(2)
    if dt == "bfloat16":
        return (ember.tensor(a.astype(np.float32)).to(ember.bfloat16),
                torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16))
    return to_both(a.astype(dt))


@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
@pytest.mark.parametrize("dims", [("2d", "2d"), ("2d", "0d"), ("0d", "2d"), ("0d", "0d")],
                         ids=str)
def test_tensor_tensor_promotion(da, db, dims):
    """Result dtype of ``a <op> b`` for every pair of dtypes, with torch's rule that a 0-dim
    tensor does not widen a dimensioned tensor of the same category."""
    ea, ta = _mk(da, (2, 3) if dims[0] == "2d" else ())
    eb, tb = _mk(db, (2, 3) if dims[1] == "2d" else ())
    tol = LOOSE.get(da, LOOSE.get(db, {}))
    for f in PROMOTE_OPS:
        both(f, [ea, eb], [ta, tb], f"{getattr(f, '__name__', f)}({da}{dims[0]}, {db}{dims[1]})",
             **tol)


SCALARS = [2, -3, 2.5, True, False]
SCALAR_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
              operator.mod, operator.pow, operator.lt, operator.eq]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_python_scalar_promotion(dt, scalar):
    """Python scalars are weak on both sides: ``int_tensor * 2.5`` is float32, never float64;
    ``float16_tensor + 1.0`` stays float16; bool tensors with ints become int64."""
    et, tt = _mk(dt, (2, 3))
    for f in SCALAR_OPS:
        name = f.__name__
        if scalar is False and f in (operator.truediv, operator.floordiv, operator.mod):
            continue  # division by zero
        tol = LOOSE.get(dt, {})
        both(lambda x: f(x, scalar), [et], [tt], f"{dt} {name} {scalar!r}", **tol)
        both(lambda x: f(scalar, x), [et], [tt], f"{scalar!r} {name} {dt}", **tol)


def test_no_float64_leak():
    i = ember.tensor([1, 2, 3])
    f = ember.tensor([1.0, 2.0])
    assert (i * 2.5).dtype == ember.float32
    assert (2.5 * i).dtype == ember.float32
    assert (f + 1.0).dtype == ember.float32
    assert (1.0 - f).dtype == ember.float32
    assert (i / i).dtype == ember.float32
    assert (i / 2).dtype == ember.float32
    assert (2 / i).dtype == ember.float32
    assert (f ** 2).dtype == ember.float32 and (2 ** f).dtype == ember.float32
    assert (f + ember.tensor([1.0], dtype=ember.float64)).dtype == ember.float64
    assert (f + ember.tensor(1.0, dtype=ember.float64)).dtype == ember.float32
    assert (i + ember.tensor(1, dtype=ember.int8)).dtype == ember.int64
    assert (ember.tensor([1], dtype=ember.int8) + ember.tensor(1000)).dtype == ember.int8
    assert (ember.tensor([1], dtype=ember.int8) + ember.tensor(1.0)).dtype == ember.float32
    assert ember.exp(i).dtype == ember.float32
    assert ember.sqrt(ember.tensor([4], dtype=ember.uint8)).dtype == ember.float32
    h = ember.tensor([1.0], dtype=ember.float16)
    assert (h * 2.5).dtype == ember.float16 and ember.sigmoid(h).dtype == ember.float16
    assert (np.float64(2.0) * f).dtype == ember.float32  # numpy scalars are weak too
    assert (f * np.float64(2.0)).dtype == ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (i * 2.5).dtype == ember.float64 and (i / i).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_numpy_operands():
    """An ndarray on either side behaves as a tensor operand (ndarray <op> Tensor defers)."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    x = ember.tensor([10.0, 20.0])
    r = a + x
    assert isinstance(r, ember.Tensor) and r.tolist() == [[11.0, 22.0], [13.0, 24.0]]
    assert isinstance(a * x, ember.Tensor) and isinstance(x - a, ember.Tensor)
    assert (a - x).tolist() == [[-9.0, -18.0], [-7.0, -16.0]]
    assert isinstance(a < x, ember.Tensor)


def test_bool_subtraction_and_neg_errors():
    b = ember.tensor([True, False])
    with pytest.raises((TypeError, RuntimeError), match="bool"):
        b - b
    with pytest.raises((TypeError, RuntimeError), match="bool"):
        -b
    with pytest.raises(RuntimeError, match="[Ii]ntegers to negative integer powers"):
        ember.tensor([2, 3]) ** -1


def test_device_mismatch_message(monkeypatch):
    """Without a GPU, simulate a CUDA array in the message builder: both devices are named."""
    from ember import _backend as B
    from ember.ops._util import device_error

    class FakeCuda:
        pass

    real = B.device_of
    monkeypatch.setattr(B, "device_of",
                        lambda a: B.device("cuda:0") if isinstance(a, FakeCuda) else real(a))
    msg = str(device_error("add", np.zeros(2), FakeCuda()))
    assert "add" in msg and "same device" in msg and "cpu" in msg and "cuda:0" in msg


@pytest.mark.cuda
def test_device_mismatch_raises_on_gpu():
    a, b = ember.ones(2), ember.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="cpu.*cuda:0|cuda:0.*cpu"):
        a + b
    with pytest.raises(RuntimeError, match="cpu.*cuda:0|cuda:0.*cpu"):
        b * a


# ------------------------------------------------------------------------------ in-place ops

# name -> (args, input domain, dtype-preserving on float32)
INPLACE = {
    "add_": ((0.5,), -2, 2), "sub_": ((0.5,), -2, 2), "mul_": ((1.5,), -2, 2),
    "div_": ((1.5,), -2, 2), "pow_": ((2,), 0.5, 2), "clamp_": ((-0.5, 0.5), -2, 2),
    "clip_": ((-0.5, 0.5), -2, 2), "clamp_min_": ((0.1,), -2, 2),
    "clamp_max_": ((0.1,), -2, 2), "neg_": ((), -2, 2), "abs_": ((), -2, 2),
    "exp_": ((), -2, 2), "log_": ((), 0.3, 2), "sqrt_": ((), 0.3, 2), "sigmoid_": ((), -2, 2),
    "tanh_": ((), -2, 2), "relu_": ((), -2, 2), "floor_": ((), -2, 2), "ceil_": ((), -2, 2),
    "round_": ((), -2, 2), "trunc_": ((), -2, 2), "reciprocal_": ((), 0.3, 2),
    "sin_": ((), -2, 2), "cos_": ((), -2, 2), "sign_": ((), -2, 2), "square_": ((), -2, 2),
    "remainder_": ((0.7,), -2, 2), "fmod_": ((0.7,), -2, 2), "erf_": ((), -2, 2),
    "nan_to_num_": ((), -2, 2), "exp2_": ((), -2, 2), "expm1_": ((), -2, 2),
    "log2_": ((), 0.3, 2), "log10_": ((), 0.3, 2), "log1p_": ((), -0.5, 2),
    "rsqrt_": ((), 0.3, 2), "tan_": ((), -1, 1), "asin_": ((), -0.8, 0.8),
    "acos_": ((), -0.8, 0.8), "atan_": ((), -2, 2), "sinh_": ((), -2, 2),
    "cosh_": ((), -2, 2), "asinh_": ((), -2, 2), "acosh_": ((), 1.3, 3),
    "atanh_": ((), -0.8, 0.8), "erfc_": ((), -2, 2), "frac_": ((), -2, 2),
    "fix_": ((), -2, 2), "negative_": ((), -2, 2), "absolute_": ((), -2, 2),
    "arcsin_": ((), -0.8, 0.8), "arctan_": ((), -2, 2), "sgn_": ((), -2, 2),
    "arccos_": ((), -0.8, 0.8), "arccosh_": ((), 1.3, 3), "arcsinh_": ((), -2, 2),
    "arctanh_": ((), -0.8, 0.8), "divide_": ((1.5,), -2, 2), "subtract_": ((0.5,), -2, 2),
    "multiply_": ((1.5,), -2, 2), "true_divide_": ((1.5,), -2, 2),
}
# ops taking a tensor operand: name -> (other shape, domain)
INPLACE_T = {
    "add_": -2, "sub_": -2, "mul_": -2, "div_": 0.5, "pow_": 0.5, "remainder_": 0.3,
    "fmod_": 0.3, "atan2_": -2, "hypot_": -2, "xlogy_": 0.3, "lerp_": -2, "copy_": -2,
    "maximum_": -2, "minimum_": -2, "clamp_": -2, "addcmul_": -2, "addcdiv_": 0.5,
    "fill_": -2, "arctan2_": -2,
}
TORCH_LACKS = {"maximum_", "minimum_"}  # ember extras: checked against the op
# torch has these in place, but not their derivative: compared against the op
TORCH_NO_GRAD = {"acosh_", "asinh_", "atanh_", "arccosh_", "arcsinh_", "arctanh_"}
# results that are not differentiable: values (int, bool and float) and dtype rules only
INPLACE_VALUES = ["bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_", "eq_", "ne_",
                  "lt_", "le_", "gt_", "ge_", "logical_and_", "logical_or_", "logical_xor_",
                  "logical_not_", "floor_divide_", "remainder_", "fmod_", "add_", "mul_",
                  "div_", "abs_", "neg_", "square_", "sign_", "clamp_", "zero_", "fill_",
                  "pow_", "relu_", "floor_", "exp_"]


def _t_inplace(name, x, *args, **kw):
    if name in TORCH_NO_GRAD and x.requires_grad:
        return x.copy_(getattr(torch, name[:-1])(x.clone(), *args, **kw))
    if name in TORCH_LACKS:  # through a clone: x itself is not saved by the op
        return x.copy_(getattr(torch, name[:-1])(x.clone(), *args, **kw))
    return getattr(x, name)(*args, **kw)


def _inplace_values(name, lo, hi):
    rng = np.random.default_rng(1)
    return rng.uniform(lo, hi, (2, 3)).astype(np.float32)


def test_every_inplace_method_is_tested():
    ember_inplace = {n for n in dir(ember.Tensor) if n.endswith("_") and not n.endswith("__")
                     and callable(getattr(ember.Tensor, n)) and n[:-1] in dir(ember.Tensor)
                     and hasattr(E.ElementwiseOps, n)}
    missing = ember_inplace - set(INPLACE) - set(INPLACE_T) - set(INPLACE_VALUES)
    assert not missing, f"in-place methods without a test row: {sorted(missing)}"
    torch_unary_inplace = {n + "_" for n in UNARY if hasattr(torch.Tensor, n + "_")}
    assert torch_unary_inplace <= set(dir(ember.Tensor)), \
        f"missing: {sorted(torch_unary_inplace - set(dir(ember.Tensor)))}"


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_scalar_forms(name):
    args, lo, hi = INPLACE[name]
    v = _inplace_values(name, lo, hi)
    e, t = ember.tensor(v), torch.from_numpy(v.copy())
    ver = e._version_count
    r = getattr(e, name)(*args)
    _t_inplace(name, t, *args)
    assert r is e, f"{name} must return self"
    assert e._version_count == ver + 1, f"{name} must bump the version counter once"
    same(e, t, name)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_autograd(name):
    """On a non-leaf: torch's gradient (through the history moved onto the tensor); on a
    leaf requiring grad: an error; under no_grad on a leaf: allowed, no history."""
    args, lo, hi = INPLACE[name]
    v = _inplace_values(name, lo, hi)
    ex = ember.tensor(v, requires_grad=True)
    tx = torch.tensor(v, requires_grad=True)
    ey = ex * 1.5
    ty = tx * 1.5
    getattr(ey, name)(*[a * 1.5 if isinstance(a, float) and name.startswith(("clamp", "clip"))
                        else a for a in args])
    _t_inplace(name, ty, *[a * 1.5 if isinstance(a, float) and name.startswith(("clamp", "clip"))
                           else a for a in args])
    same(ey, ty, f"{name} value")
    assert ey.grad_fn is not None and ey.requires_grad
    g = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    ey.backward(ember.tensor(g))
    ty.backward(torch.from_numpy(g))
    same_grad(ex.grad, tx.grad, f"{name} grad")

    leaf = ember.tensor(v, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(leaf, name)(*args)
    with ember.no_grad():
        getattr(leaf, name)(*args)
    assert leaf.grad_fn is None and leaf.requires_grad


@pytest.mark.parametrize("name", sorted(INPLACE_T))
@pytest.mark.parametrize("oshape", [(2, 3), (3,), ()], ids=str)
def test_inplace_tensor_operand(name, oshape):
    """Tensor operands (broadcast to self's shape); gradients reach both self's history and
    the operand."""
    lo = INPLACE_T[name]
    rng = np.random.default_rng(3)
    v = rng.uniform(lo, 2, (2, 3)).astype(np.float32)
    o = rng.uniform(lo, 2, oshape).astype(np.float32)
    if name == "fill_" and oshape != ():
        return
    extra = {"lerp_": (0.3,), "clamp_": (), "addcmul_": (), "addcdiv_": ()}.get(name, ())

    def call(x, other, lib):
        if name == "clamp_":
            return x.clamp_(min=other, max=other + 0.5)
        if name in ("addcmul_", "addcdiv_"):
            return getattr(x, name)(other, other * 0.5 + 1, value=0.5)
        return _t_inplace(name, x, other, *extra) if lib is torch \
            else getattr(x, name)(other, *extra)

    # no autograd: values
    e, t = ember.tensor(v), torch.from_numpy(v.copy())
    eo, to = ember.tensor(o), torch.from_numpy(o.copy())
    assert call(e, eo, ember) is e
    call(t, to, torch)
    same(e, t, f"{name} value")
    # autograd through self and the operand
    ex, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    eo, to = ember.tensor(o, requires_grad=True), torch.tensor(o, requires_grad=True)
    ey, ty = ex * 1.0, tx * 1.0
    call(ey, eo, ember)
    call(ty, to, torch)
    same(ey, ty, f"{name} value (grad)")
    g = rng.standard_normal((2, 3)).astype(np.float32)
    (ey * ember.tensor(g)).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    same_grad(ex.grad, tx.grad, f"{name} self grad")
    same_grad(eo.grad, to.grad, f"{name} other grad")


@pytest.mark.parametrize("name", INPLACE_VALUES)
@pytest.mark.parametrize("dt", ["int64", "int32", "uint8", "bool", "float32"])
def test_inplace_values_and_dtypes(name, dt):
    """The result is written in self's dtype; torch and ember agree on values, or both
    refuse (e.g. ``int_tensor.div_(2)``, ``bool.neg_()``)."""
    vals = [[3, 5, 0], [12, 1, 7]]
    other = {"fill_": (2,), "zero_": (), "clamp_": (1, 6), "pow_": (2,)}.get(name)
    scalars = (2, 1.5, True) if not name.startswith("logical") else ()  # torch: no scalars
    for o in ((other,) if other is not None else (None, *scalars)):
        if o is None and name not in ("bitwise_not_", "logical_not_", "abs_", "neg_", "square_",
                                      "sign_", "relu_", "floor_", "exp_"):
            e2, t2 = to_both([6, 2, 1], dt)
            o_e, o_t = (e2,), (t2,)
        elif o is None:
            o_e = o_t = ()
        else:
            o_e = o_t = o if isinstance(o, tuple) else (o,)
        e, t = to_both(vals, dt)
        ver = e._version_count
        what = f"{dt}.{name}{o_t}"
        try:
            getattr(t, name)(*o_t)
        except Exception:
            with pytest.raises(Exception):
                getattr(e, name)(*o_e)
            assert e.tolist() == to_both(vals, dt)[0].tolist(), f"{what}: refused but wrote"
            continue
        r = getattr(e, name)(*o_e)
        assert r is e, what
        assert e._version_count == ver + 1, what
        same(e, t, what)


@pytest.mark.parametrize("name", ["add_", "sub_"])
@pytest.mark.parametrize("alpha", [1, -0.5, 2])
def test_inplace_alpha(name, alpha):
    v = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    o = np.array([1.0, -2.0, 0.25], np.float32)
    e, t = ember.tensor(v), torch.from_numpy(v.copy())
    getattr(e, name)(ember.tensor(o), alpha=alpha)
    getattr(t, name)(torch.from_numpy(o), alpha=alpha)
    same(e, t, f"{name} alpha={alpha}")
    ex, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    eo, to = ember.tensor(o, requires_grad=True), torch.tensor(o, requires_grad=True)
    ey, ty = ex * 2, tx * 2
    getattr(ey, name)(eo, alpha=alpha)
    getattr(ty, name)(to, alpha=alpha)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    same(ex.grad, tx.grad, "self grad", atol=1e-5)
    same(eo.grad, to.grad, "other grad", atol=1e-5)


def test_inplace_operators():
    for op, iop in ((operator.add, operator.iadd), (operator.sub, operator.isub),
                    (operator.mul, operator.imul), (operator.truediv, operator.itruediv),
                    (operator.floordiv, operator.ifloordiv), (operator.mod, operator.imod),
                    (operator.pow, operator.ipow)):
        for o in (2, 1.5, "tensor"):
            v = np.array([[1.5, 2.5, 3.0], [0.5, 4.0, 7.0]], np.float32)
            e, t = ember.tensor(v), torch.from_numpy(v.copy())
            eo = ember.tensor([1.5, 2.0, 3.0]) if o == "tensor" else o
            to = torch.tensor([1.5, 2.0, 3.0]) if o == "tensor" else o
            e0, ver = e, e._version_count
            e = iop(e, eo)
            t = iop(t, to)
            assert e is e0, f"{iop.__name__} must work in place"
            assert e._version_count == ver + 1
            same(e, t, f"{iop.__name__} {o}")
    for iop in (operator.iand, operator.ior, operator.ixor):
        e, t = to_both([[3, 5, 0], [12, 1, 7]], "int32")
        e0 = e
        e = iop(e, 6)
        t = iop(t, 6)
        assert e is e0
        same(e, t, iop.__name__)


def test_inplace_dtype_rules():
    i = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(ember.tensor([1.5, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.div_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.exp_()
    i.add_(2)
    i.mul_(ember.tensor([True, False, True]))
    assert i.tolist() == [3, 0, 5] and i.dtype == ember.int64
    f = ember.tensor([1.0, 2.0])
    f.add_(ember.tensor([1, 2]))
    f.mul_(ember.tensor([2.0, 2.0], dtype=ember.float64))
    assert f.dtype == ember.float32 and f.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="shape"):
        ember.zeros(3).add_(ember.ones(2, 3))
    with pytest.raises(RuntimeError):
        ember.zeros(3).expand(2, 3).add_(1)  # broadcast view: read-only, like torch's error


def test_zero_fill_copy():
    e = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = e._version_count
    assert e.zero_() is e and e.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert e.fill_(2.5) is e and e.tolist() == [[2.5, 2.5], [2.5, 2.5]]
    assert e.fill_(ember.tensor(1.5)) is e and e.tolist() == [[1.5, 1.5], [1.5, 1.5]]
    assert e._version_count == v + 3
    src = ember.tensor([7, 8])  # int source, broadcast over rows
    assert e.copy_(src) is e and e.tolist() == [[7.0, 8.0], [7.0, 8.0]]
    assert e.dtype == ember.float32 and e._version_count == v + 4
    i = ember.zeros(2, dtype=ember.int32)
    i.copy_(ember.tensor([1.7, -2.7]))
    assert i.tolist() == torch.zeros(2, dtype=torch.int32).copy_(torch.tensor([1.7, -2.7])).tolist()
    with pytest.raises(RuntimeError, match="0-dim|0-dimension"):
        e.fill_(ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        e.copy_(ember.ones(3))
    # fill_/copy_ with autograd: torch's gradients
    for method in ("fill_", "copy_", "zero_"):
        ex, tx = ember.tensor([1.0, 2.0, 3.0], requires_grad=True), \
            torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        es, ts = ember.tensor(0.5, requires_grad=True), torch.tensor(0.5, requires_grad=True)
        ey, ty = ex * 2, tx * 2
        if method == "zero_":
            ey.zero_(), ty.zero_()
        else:
            getattr(ey, method)(es), getattr(ty, method)(ts)
        (ey * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
        (ty * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
        same(ey, ty, method)
        same_grad(ex.grad, tx.grad, f"{method} x.grad")
        same_grad(es.grad, ts.grad, f"{method} src.grad")
        with pytest.raises(RuntimeError, match="leaf"):
            args = () if method == "zero_" else (1.0,)
            getattr(ember.ones(2, requires_grad=True), method)(*args)


def test_saved_tensor_modified_inplace_raises():
    """An in-place change of a tensor saved for backward is caught at backward, naming the
    version numbers; the output of an op saving its own output (exp) is checked too."""
    for build in (lambda y: y.sin(), lambda y: y * y, lambda y: y.log(), lambda y: y.pow(3),
                  lambda y: y / ember.ones(3).add(1), lambda y: ember.maximum(y, y * 0),
                  lambda y: ember.atan2(y, y + 1), lambda y: y ** (y * 1)):
        x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
        y = x * 1
        z = build(y)
        y.add_(1)
        with pytest.raises(RuntimeError, match=r"modified by an in-place operation.*version 1, "
                                               r"expected version 0"):
            z.sum().backward()
    # ops that save their own output (exp, sqrt, tanh, sigmoid): changing the output
    for build in (lambda y: y.exp(), lambda y: y.sqrt(), lambda y: y.tanh(),
                  lambda y: y.sigmoid(), lambda y: y.reciprocal()):
        x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
        z = build(x)
        z.mul_(2)
        with pytest.raises(RuntimeError, match=r"output of .*shape \[3\].*version 1, expected "
                                               r"version 0"):
            z.sum().backward()
    # torch agrees these raise
    tx = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    ty = tx * 1
    tz = ty.sin()
    ty.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tz.sum().backward()


def test_inplace_not_saved_is_fine():
    """add saves nothing: modifying its input afterwards is allowed (as in torch)."""
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y + 1
    y.mul_(3)
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_inplace_chain_matches_torch():
    v = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    g = np.array([[1.0, -2.0, 0.5], [0.3, 1.0, 2.0]], np.float32)
    c = np.array([0.5, 2.0, -1.0], np.float32)

    def run(lib, x):
        y = x * 2
        y.add_(1).mul_(lib.tensor(c)).sin_().clamp_(max=0.9)
        y.add_(x, alpha=2.0).div_(3)
        w = y.exp() * 1
        w.sub_(x, alpha=0.5).addcmul_(x, x, value=0.25)
        return w

    ex = ember.tensor(v, requires_grad=True)
    tx = torch.tensor(v, requires_grad=True)
    tw = run(torch, tx)
    ew = run(ember, ex)
    same(ew, tw, "value")
    tw.backward(torch.from_numpy(g))
    ew.backward(ember.tensor(g))
    same(ex.grad, tx.grad, "grad", atol=1e-5)


def test_inplace_reshape_view_of_nonleaf():
    v = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    ex, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    ey, ty = ex * 1, tx * 1
    ey.view(3, 2).mul_(ember.tensor([2.0, -1.0]))
    ty.view(3, 2).mul_(torch.tensor([2.0, -1.0]))
    same(ey, ty, "value")
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    same(ex.grad, tx.grad, "grad", atol=1e-5)


def test_inplace_through_view_of_nonleaf():
    """In-place ops through two overlapping views of a non-leaf. ember's in-place ops save
    what their backward needs before writing, so the second write does not spoil the first
    op's saved output (PyTorch raises here, since exp_ saved the aliased view). The gradient
    must equal PyTorch's for the same computation written without the alias."""
    v = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    ex, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    ey, ty = ex * 1, tx * 1
    ey[:, 1].exp_()
    ty[:, 1] = ty[:, 1].exp()
    ey[0].mul_(3)
    ty[0] = ty[0] * 3
    same(ey, ty, "value")
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    same(ex.grad, tx.grad, "grad", atol=1e-5)


def test_inplace_double_backward():
    """create_graph through an in-place op: second derivative matches torch."""
    v = np.array([0.5, -1.0, 2.0], np.float32)
    ex, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    ey, ty = ex * 1, tx * 1
    ey.mul_(ex).sin_()
    ty.mul_(tx).sin_()
    (eg,) = ember.autograd.grad(ey.sum(), ex, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    same(eg, tg, "first")
    eg.sum().backward()
    tg.sum().backward()
    same(ex.grad, tx.grad, "second", atol=1e-5)


@pytest.mark.parametrize("shape", [(300, 700), (70000,), (3, 5)])
@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_inplace_alpha_large_and_aliased(shape, op):
    """The chunked path for big contiguous arrays, the fallbacks (small, non-contiguous,
    aliased operand) all equal the plain formula."""
    rng = np.random.default_rng(0)
    for layout in ("contig", "transposed", "alias"):
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        x = ember.tensor(a)
        if layout == "transposed" and len(shape) == 2:
            x = ember.tensor(np.ascontiguousarray(a.T)).T
        y = x if layout == "alias" else ember.tensor(b)
        want = x.numpy() + (1 if op == "add_" else -1) * 0.3 * y.numpy()
        with ember.no_grad():
            v = x._version_count
            getattr(x, op)(y, alpha=0.3)
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-6, atol=1e-6)
        assert x._version_count == v + 1
