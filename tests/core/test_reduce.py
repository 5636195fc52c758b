"""Reductions, scans, sorting and softmax against PyTorch: forward, backward, double backward
and a float64 gradcheck (tests/core/optest.py), over tables of cases."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.ops import reduce as R
from optest import check_op

NAN, INF = float("nan"), float("inf")


class Dt:
    """A dtype argument, resolved to ``ember.<name>`` or ``torch.<name>`` at call time."""

    def __init__(self, name):
        self.name = name


def _resolve(lib, a, k):
    a = [getattr(lib, v.name) if isinstance(v, Dt) else v for v in a]
    k = {n: getattr(lib, v.name) if isinstance(v, Dt) else v for n, v in k.items()}
    return a, k


def meth(name, *a, **k):
    """``x.name(*a, **k)`` on either library."""
    def f(x, *rest):
        a2, k2 = _resolve(ember if isinstance(x, ember.Tensor) else torch, a, k)
        return getattr(x, name)(*rest, *a2, **k2)
    return f


def fn(name, *a, **k):
    """``lib.name(x, ..., *a, **k)`` with lib = ember or torch, picked from the first input."""
    def f(*xs):
        lib = ember if isinstance(xs[0], ember.Tensor) else torch
        a2, k2 = _resolve(lib, a, k)
        return getattr(lib, name)(*xs, *a2, **k2)
    return f


def arr(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


TIES = arr([[1.0, 3.0, 3.0, 0.5], [2.0, -1.0, 2.0, 0.0]])        # two-way ties only
TIES3 = arr([[2.0, 2.0, 2.0], [1.0, 5.0, 5.0]])
ONE_ZERO = arr([[2.0, 0.0, 3.0, 0.5], [1.5, -1.0, 2.0, 0.7]])
ZEROS = arr([[0.0, 2.0, 0.0, 0.5], [1.5, 0.0, 2.0, 0.0], [1.0, 2.0, 0.5, -1.5]])
WITH_NAN = arr([[1.0, NAN, 2.0], [NAN, NAN, -1.0]])
BIG = arr([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]])
SMALL_INTS = arr([[1.0, 2.0, 1.0, 3.0, 2.0, 1.0], [4.0, 4.0, 0.0, 0.0, 5.0, 5.0]])
DISTINCT = arr([[0.3, -1.2, 2.5, 0.9], [1.1, 0.2, -0.7, 1.9]])
CUM_TIES = arr([[3.0, 1.0, 3.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0, 0.0]])
CUM_TIES_MIN = arr([[3.0, 1.0, 1.0, 2.0, 0.5], [0.0, 0.0, 1.0, -1.0, -1.0]])
INTS = np.array([[3, -1, 4, 1], [5, 9, -2, 6]], dtype=np.int32)
BOOLS = np.array([[True, False, True], [False, False, True]])

NO_GC = {"gradcheck": False}
FLAT = {"gradgrad": False}  # the first gradient is piecewise constant (torch: a ZeroTensor)

DIFFERENTIABLE = [
    # sum / mean / nansum / nanmean
    ("sum", meth("sum"), [(2, 3)], {}),
    ("sum_dim", meth("sum", 1), [(2, 3)], {"noncontig": True}),
    ("sum_neg_keep", meth("sum", -1, keepdim=True), [(2, 3, 2)], {}),
    ("sum_tuple", meth("sum", (0, 2)), [(2, 3, 2)], {"noncontig": True}),
    ("sum_list_neg", meth("sum", [-1, 0], keepdim=True), [(2, 3, 2)], {}),
    ("sum_empty_dims", meth("sum", ()), [(2, 3)], {}),
    ("sum_dtype", meth("sum", 1, dtype=Dt("float64")), [(2, 3)], {}),
    ("sum_empty", meth("sum", 0), [(0, 3)], {}),
    ("sum_empty_all", meth("sum"), [(0, 3)], {}),
    ("sum_scalar", meth("sum", 0), [()], {}),
    ("fn_sum", fn("sum", dim=1, keepdim=True), [(2, 3)], {}),
    ("nansum", meth("nansum"), [WITH_NAN], {}),
    ("nansum_dim", meth("nansum", 1, keepdim=True), [WITH_NAN], {}),
    ("mean", meth("mean"), [(2, 3)], {}),
    ("mean_tuple_keep", meth("mean", (0, -1), keepdim=True), [(2, 3, 2)], {"noncontig": True}),
    ("mean_dtype", meth("mean", 0, dtype=Dt("float64")), [(2, 3)], {}),
    ("mean_empty", meth("mean", 0), [(0, 2)], {}),
    ("nanmean", meth("nanmean", 1), [WITH_NAN], {}),
    # prod, including zeros
    ("prod", meth("prod"), [(2, 3)], {"low": 0.5, "high": 1.5}),
    ("prod_dim", meth("prod", 1), [(3, 4)], {"noncontig": True}),
    ("prod_neg_keep", meth("prod", -2, keepdim=True), [(3, 2)], {}),
    ("prod_one_zero", meth("prod", 1), [ONE_ZERO], {}),
    ("prod_one_zero_all", meth("prod"), [ONE_ZERO], {}),
    ("prod_zeros", meth("prod", 1), [ZEROS], {}),
    ("prod_zeros_dim0", meth("prod", 0, keepdim=True), [ZEROS], {}),
    ("prod_zeros_all", meth("prod"), [ZEROS], {}),
    ("prod_empty", meth("prod", 0), [(0, 2)], {}),
    # max / min / amax / amin
    ("max", meth("max"), [(2, 3)], {}),
    ("max_ties", meth("max"), [TIES], {}),
    ("min_ties", meth("min"), [arr([[0.0, 1.0], [0.0, 2.0]])], {}),
    ("max_dim", meth("max", 1), [(2, 3)], {"noncontig": True}),
    ("max_dim_keep", meth("max", -1, keepdim=True), [(2, 3)], {}),
    ("min_dim", meth("min", 0), [(3, 2)], {}),
    ("max_dim_ties", meth("max", 1), [TIES], NO_GC),
    ("min_dim_ties", meth("min", 1), [TIES], NO_GC),
    ("max_scalar_dim", meth("max", 0), [()], {}),
    ("max_kw", lambda x: x.max(dim=0, keepdim=True), [(2, 3)], {}),
    ("max_binary", fn("max"), [(2, 3), (3,)], {}),
    ("min_binary", fn("min"), [(2, 3), (2, 1)], {}),
    ("amax", meth("amax"), [(2, 3)], {}),
    ("amax_tuple", meth("amax", (0, 2)), [(2, 3, 2)], {"noncontig": True}),
    ("amax_ties", meth("amax", 1, keepdim=True), [TIES], {}),
    ("amin_ties", meth("amin", -1), [TIES], {}),
    ("amax_ties3", meth("amax", 1), [TIES3], NO_GC),
    # var / std / var_mean / std_mean
    ("var", meth("var"), [(2, 3)], {}),
    ("var_dim", meth("var", 1), [(2, 4)], {"noncontig": True}),
    ("var_tuple_keep", meth("var", (0, 2), keepdim=True), [(2, 3, 2)], {}),
    ("var_correction0", meth("var", -1, correction=0), [(2, 3)], {}),
    ("var_correction2", meth("var", 0, correction=2), [(4, 2)], {}),
    ("var_unbiased_false", meth("var", 1, False), [(2, 3)], {}),
    ("var_unbiased_only", meth("var", False), [(2, 3)], {}),
    ("std", meth("std"), [(2, 3)], {}),
    ("std_dim_keep", meth("std", 0, keepdim=True), [(3, 2)], {"noncontig": True}),
    ("std_constant", meth("std", 1), [arr([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])], {}),
    ("var_mean", fn("var_mean", 1), [(2, 3)], {}),
    ("std_mean", fn("std_mean", (0, 1), correction=0, keepdim=True), [(2, 3)], {}),
    # norm
    ("norm", meth("norm"), [(2, 3)], {}),
    ("norm_fro_dims", meth("norm", "fro", (0, 1)), [(2, 3, 2)], {}),
    ("norm_p1", meth("norm", 1, 1), [(2, 3)], FLAT),
    ("norm_p2_keep", meth("norm", 2, -1, True), [(2, 3)], {"noncontig": True}),
    ("norm_p3", meth("norm", 3, 0), [(3, 2)], {}),
    ("norm_p1_5", meth("norm", 1.5), [(2, 3)], {}),
    ("norm_p0_5", meth("norm", 0.5, 1), [(2, 3)], {"low": 0.2}),
    ("norm_inf", meth("norm", INF, 1), [(2, 3)], FLAT),
    ("norm_neg_inf", meth("norm", -INF), [(2, 3)], FLAT),
    ("norm_inf_ties", meth("norm", INF), [arr([1.0, 2.0, 2.0, -2.0])], {**NO_GC, **FLAT}),
    ("norm_p0", meth("norm", 0, 1), [arr([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])], {}),
    # at a zero norm torch's double gradient is NaN, ember's is 0
    ("norm_zero_row", meth("norm", 2, 1), [arr([[0.0, 0.0], [3.0, 4.0]])], FLAT),
    ("norm_p3_zero_row", meth("norm", 3, 1), [arr([[0.0, 0.0], [3.0, -4.0]])], {}),
    ("norm_dtype", meth("norm", dtype=Dt("float64")), [(2, 3)], {}),
    # logsumexp / softmax / log_softmax
    ("logsumexp", meth("logsumexp", 1), [(2, 3)], {}),
    ("logsumexp_tuple_keep", meth("logsumexp", (0, 2), True), [(2, 3, 2)], {"noncontig": True}),
    ("logsumexp_big", meth("logsumexp", -1), [BIG], {}),
    ("logsumexp_empty", meth("logsumexp", 0), [(0, 2)], {}),
    ("logsumexp_int", meth("logsumexp", 0), [INTS], {}),
    ("softmax", meth("softmax", -1), [(2, 3)], {"noncontig": True}),
    ("softmax_dim0", meth("softmax", 0), [(3, 2, 2)], {}),
    ("softmax_big", meth("softmax", 1), [BIG], {}),
    ("softmax_dtype", meth("softmax", 1, dtype=Dt("float64")), [(2, 3)], {}),
    ("softmax_scalar", meth("softmax", 0), [()], {}),
    ("fn_softmax", fn("softmax", 1), [(2, 3)], {}),
    ("log_softmax", meth("log_softmax", 1), [(2, 3)], {"noncontig": True}),
    ("log_softmax_big", meth("log_softmax", -1), [BIG], {}),
    ("fn_log_softmax", fn("log_softmax", 0), [(3, 2)], {}),
    # scans
    ("cumsum", meth("cumsum", 1), [(2, 4)], {"noncontig": True}),
    ("cumsum_neg", meth("cumsum", -2), [(3, 2, 2)], {}),
    ("cumsum_dtype", meth("cumsum", 0, dtype=Dt("float64")), [(3, 2)], {}),
    ("cumsum_scalar", meth("cumsum", 0), [()], {}),
    ("cumsum_empty", meth("cumsum", 0), [(0, 2)], {}),
    ("cumprod", meth("cumprod", 1), [(2, 4)], {"noncontig": True}),
    ("cumprod_one_zero", meth("cumprod", 1), [ONE_ZERO], {}),
    ("cumprod_zeros", meth("cumprod", 1), [ZEROS], {}),
    ("cumprod_zeros_dim0", meth("cumprod", 0), [ZEROS], {}),
    ("cumprod_zero_first", meth("cumprod", -1), [arr([[0.0, 2.0, 3.0], [4.0, 5.0, 0.0]])], {}),
    ("cummax", meth("cummax", 1), [(2, 4)], {"noncontig": True}),
    ("cummin", meth("cummin", 0), [(4, 2)], {}),
    ("cummax_ties", meth("cummax", 1), [CUM_TIES], NO_GC),
    ("cummin_ties", meth("cummin", -1), [CUM_TIES_MIN], NO_GC),
    ("cummax_scalar", meth("cummax", 0), [()], {}),
    ("logcumsumexp", meth("logcumsumexp", 1), [(2, 4)], {"noncontig": True}),
    ("logcumsumexp_dim0", meth("logcumsumexp", 0), [(3, 2)], {}),
    ("logcumsumexp_big", meth("logcumsumexp", 1), [arr([[-1000.0, 0.0, 1000.0],
                                                         [5.0, -300.0, 4.0]])], {}),
    # sorting and selection
    ("sort", meth("sort"), [(2, 4)], {"noncontig": True}),
    ("sort_dim0_desc", meth("sort", 0, True), [(3, 2)], {}),
    ("sort_stable_ties", meth("sort", dim=1, stable=True), [SMALL_INTS], NO_GC),
    ("sort_desc_stable_ties", meth("sort", dim=1, descending=True, stable=True), [SMALL_INTS],
     NO_GC),
    ("sort_scalar", meth("sort"), [()], {}),
    ("msort", meth("msort"), [(3, 2)], {}),
    ("topk", meth("topk", 2), [(2, 5)], {"noncontig": True}),
    ("topk_small_dim0", meth("topk", 2, 0, False), [(4, 2)], {}),
    ("topk_partition", meth("topk", 2, -1), [(2, 20)], {"gradcheck": False}),
    ("topk_partition_small", meth("topk", 2, largest=False), [(1, 20)], {"gradcheck": False}),
    ("topk_k0", meth("topk", 0), [(2, 3)], {}),
    ("kthvalue", meth("kthvalue", 2), [(2, 4)], {"noncontig": True}),
    ("kthvalue_keep", meth("kthvalue", 3, 0, True), [(3, 2)], {}),
    ("median_all", meth("median"), [(3, 3)], {}),
    ("median_all_even", meth("median"), [(2, 2)], {}),
    ("median_all_ties", meth("median"), [arr([1.0, 2.0, 2.0, 3.0])], {}),
    ("median_dim", meth("median", 1), [(2, 4)], {"noncontig": True}),
    ("median_dim_keep", meth("median", 0, True), [(3, 2)], {}),
    ("median_dim_ties", meth("median", 1), [SMALL_INTS], NO_GC),
    ("nanmedian_dim", meth("nanmedian", 1), [WITH_NAN], NO_GC),
    ("mode", meth("mode", 1), [SMALL_INTS], NO_GC),
    ("mode_dim0_keep", meth("mode", 0, True), [SMALL_INTS.T.copy()], NO_GC),
    # diff
    ("diff", meth("diff"), [(2, 4)], {"noncontig": True}),
    ("diff_n2_dim0", meth("diff", 2, 0), [(4, 2)], {}),
    ("diff_n_big", meth("diff", 5), [(2, 3)], {}),
    ("diff_prepend_append", lambda x, p, a: x.diff(1, 1, prepend=p, append=a),
     [(2, 3), (2, 1), (2, 2)], {}),
]


@pytest.mark.parametrize("op,inputs,opts", [pytest.param(f, i, o, id=n) for n, f, i, o in
                                            DIFFERENTIABLE])
def test_differentiable(op, inputs, opts, device):
    check_op(op, op, inputs, device=device, **opts)


NON_FLOAT = [
    ("sum_int32", meth("sum"), [INTS]),
    ("sum_int_dim", meth("sum", 1, keepdim=True), [INTS]),
    ("sum_bool", meth("sum", 0), [BOOLS]),
    ("sum_uint8", meth("sum"), [np.array([200, 100], dtype=np.uint8)]),
    ("sum_int_dtype", meth("sum", dtype=Dt("float32")), [INTS]),
    ("nansum_int", meth("nansum", 1), [INTS]),
    ("mean_int_dtype", meth("mean", 1, dtype=Dt("float32")), [INTS]),
    ("prod_int", meth("prod", 1), [INTS]),
    ("prod_bool", meth("prod"), [BOOLS]),
    ("cumsum_int32", meth("cumsum", 1), [INTS]),
    ("cumsum_bool", meth("cumsum", 0), [BOOLS]),
    ("cumprod_bool", meth("cumprod", 1), [BOOLS]),
    ("cumprod_int_dtype", meth("cumprod", 1, dtype=Dt("float32")), [INTS]),
    ("max_int", meth("max"), [INTS]),
    ("max_int_dim", meth("max", 1), [INTS]),
    ("min_bool_dim", meth("min", 1), [BOOLS]),
    ("amax_int", meth("amax", 0), [INTS]),
    ("amin_bool", meth("amin", 1), [BOOLS]),
    ("argmax", meth("argmax"), [INTS]),
    ("argmax_keep", meth("argmax", keepdim=True), [INTS]),
    ("argmax_dim", meth("argmax", 1), [TIES]),
    ("argmin_dim_keep", meth("argmin", -1, True), [TIES]),
    ("argmin_scalar", meth("argmin", 0), [np.array(2.0, dtype=np.float32)]),
    ("cummax_int", meth("cummax", 1), [INTS]),
    ("cummin_bool", meth("cummin", 1), [BOOLS]),
    ("cummax_nan", meth("cummax", 1), [arr([[1.0, NAN, 3.0, NAN, 0.0]])]),
    ("cummin_nan", meth("cummin", 0), [arr([3.0, NAN, 1.0, NAN, 0.0])]),
    ("max_nan_dim", meth("max", 1), [WITH_NAN]),
    ("max_nan", meth("max"), [WITH_NAN]),
    ("amin_nan", meth("amin", 1), [WITH_NAN]),
    ("all", meth("all"), [BOOLS]),
    ("all_dim_keep", meth("all", 1, True), [BOOLS]),
    ("any_tuple", meth("any", (0, 1)), [BOOLS]),
    ("any_float", meth("any", 0), [arr([[0.0, 0.0], [0.0, 2.0]])]),
    ("all_int", meth("all", -1), [INTS]),
    ("all_uint8", meth("all"), [np.array([1, 2], dtype=np.uint8)]),
    ("any_uint8_dim", meth("any", 0), [np.array([[0, 2], [0, 0]], dtype=np.uint8)]),
    ("all_empty", meth("all"), [np.zeros((0, 2), dtype=bool)]),
    ("any_empty_dim", meth("any", 0), [np.zeros((0, 2), dtype=bool)]),
    ("count_nonzero", meth("count_nonzero"), [INTS * (INTS > 0)]),
    ("count_nonzero_dims", meth("count_nonzero", (0, 1)), [BOOLS]),
    ("count_nonzero_dim", meth("count_nonzero", -1), [arr([[0.0, 1.0], [0.0, 0.0]])]),
    ("sort_int_desc", meth("sort", 1, True), [INTS]),
    ("sort_bool", meth("sort", stable=True), [BOOLS]),
    ("sort_nan", meth("sort", 1), [WITH_NAN]),
    ("sort_nan_desc", meth("sort", 1, True), [WITH_NAN]),
    ("argsort", meth("argsort", 1), [INTS]),
    ("argsort_desc_stable", meth("argsort", dim=1, descending=True, stable=True), [SMALL_INTS]),
    ("topk_int", meth("topk", 2, 1), [INTS]),
    ("topk_nan", meth("topk", 1, 1), [WITH_NAN]),
    ("kthvalue_int", meth("kthvalue", 2, 1), [INTS]),
    ("median_int", meth("median"), [INTS]),
    ("median_int_dim", meth("median", 1), [INTS]),
    ("median_nan", meth("median"), [WITH_NAN]),
    ("median_nan_dim", meth("median", 1), [arr([[1.0, NAN, 0.0, NAN], [1.0, 2.0, 3.0, 4.0]])]),
    ("median_empty", meth("median"), [np.zeros(0, dtype=np.float32)]),
    ("nanmedian", meth("nanmedian"), [WITH_NAN]),
    ("mode_int", meth("mode"), [np.array([[3, 1, 3, 1, 2], [1, 3, 1, 3, 2]])]),
    ("mode_scalar", meth("mode"), [np.array(2.0, dtype=np.float32)]),
    ("diff_int", meth("diff", 2), [INTS]),
    ("diff_bool", meth("diff", 1, 0), [BOOLS]),
    ("logsumexp_bool", meth("logsumexp", 1), [BOOLS]),
]


@pytest.mark.parametrize("op,inputs", [pytest.param(f, i, id=n) for n, f, i in NON_FLOAT])
def test_non_float_and_nan(op, inputs, device):
    check_op(op, op, inputs, device=device, grad=False)


@pytest.mark.parametrize("kwargs", [
    {}, {"return_inverse": True}, {"return_counts": True},
    {"return_inverse": True, "return_counts": True},
    {"dim": 0, "return_inverse": True, "return_counts": True},
    {"dim": 1, "return_inverse": True}, {"dim": -1},
])
@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
def test_unique(name, kwargs, device):
    data = np.array([[1, 2, 1, 1], [0, 2, 1, 1], [1, 2, 1, 1], [1, 2, 1, 1]], dtype=np.int64)
    check_op(meth(name, **kwargs), meth(name, **kwargs), [data], device=device)
    floats = arr([3.0, NAN, 1.0, 1.0, NAN, 3.0, 2.0])
    if "dim" not in kwargs:
        check_op(fn(name, **kwargs), fn(name, **kwargs), [floats], device=device, grad=False)
        check_op(meth(name, **kwargs), meth(name, **kwargs), [np.zeros(0, np.int64)],
                 device=device)


@pytest.mark.parametrize("case", [
    ([1, 3, 1, 0, 3, 3], None, 0),
    ([1, 3, 1], None, 6),
    ([], None, 3),
    ([2, 0, 2], [0.5, 1.5, 2.0], 0),
    ([2, 0, 2], [0.5, 1.5, 2.0], 5),
])
@pytest.mark.parametrize("wdtype", [np.float32, np.float64, np.int64])
def test_bincount(case, wdtype, device):
    values, weights, minlength = case
    inputs = [np.array(values, dtype=np.int64)]
    if weights is not None:
        inputs.append(np.array(weights).astype(wdtype))
    op = (lambda x, *w: x.bincount(*w, minlength=minlength))
    check_op(op, op, inputs, device=device, grad=False)


@pytest.mark.parametrize("data,bins,lo,hi", [
    ([1.0, 2.0, 1.0, 4.0, 5.0], 4, 0, 0),
    ([0.1, 0.5, 0.9, 1.5, -0.2, 1.0], 5, 0, 1),
    ([2.0, 2.0], 3, 0, 0),
    ([], 3, 0, 0),
    ([0.25, 0.7, 3.3, 2.9, 1.2], 7, -1, 4),
])
def test_histc(data, bins, lo, hi, device):
    op = meth("histc", bins, lo, hi)
    check_op(op, op, [arr(data)], device=device, grad=False)
    check_op(op, op, [np.array(data, dtype=np.float64)], device=device, grad=False)


# --------------------------------------------------------------------------- semantics

def test_return_types():
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    r = x.max(1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    assert r.indices.dtype == ember.int64
    v, i = ember.sort(x, descending=True)
    assert i.dtype == ember.int64 and v.tolist() == [[5.0, 2.0, 1.0], [7.0, 3.0, 0.0]]
    for name, args in [("min", (0,)), ("topk", (1,)), ("kthvalue", (1,)), ("median", (1,)),
                       ("mode", (1,)), ("cummax", (1,)), ("cummin", (0,)), ("sort", ())]:
        r = getattr(x, name)(*args)
        assert type(r).__name__ == name and isinstance(r, tuple) and len(r) == 2
        assert r.indices.dtype == ember.int64
    assert ember.return_types.topk is type(x.topk(1))


def test_int_results_and_float_promotion():
    i = ember.tensor([[1, 2], [3, 4]], dtype=ember.int32)
    assert i.sum().dtype == ember.int64
    assert ember.tensor([True, True]).sum().item() == 2
    assert i.cumsum(0).dtype == ember.int64
    assert i.prod().dtype == ember.int64 and i.prod().item() == 24
    assert i.float().mean().dtype == ember.float32
    assert i.logsumexp(1).dtype == ember.float32  # ints become the default float dtype
    h = ember.tensor([1.0, 2.0], dtype=ember.float16)
    for r in (h.sum(), h.mean(), h.var(), h.std(), h.norm(), h.logsumexp(0), h.cumsum(0),
              h.softmax(0), h.prod()):
        assert r.dtype == ember.float16


def test_max_of_two_tensors_is_maximum():
    a, b = ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])
    assert ember.max(a, b).tolist() == [3.0, 5.0]
    assert a.min(b).tolist() == [1.0, 2.0]
    assert ember.max(a, other=b).tolist() == [3.0, 5.0]


def test_topk_unsorted_and_values_match():
    x = ember.tensor(np.random.default_rng(1).permutation(50).astype(np.float32))
    v, i = x.topk(5, sorted=False)
    assert sorted(v.tolist()) == [45.0, 46.0, 47.0, 48.0, 49.0]
    assert x.numpy()[i.numpy()].tolist() == v.tolist()


def test_no_graph_without_grad():
    x = ember.randn(3, 4, requires_grad=True)
    with ember.no_grad():
        for r in (x.sum(), x.mean(1), x.prod(1), x.max(1).values, x.amax(), x.var(), x.norm(),
                  x.logsumexp(1), x.softmax(1), x.cumsum(0), x.cumprod(1), x.sort(1).values,
                  x.topk(2).values, x.median(), x.logcumsumexp(1), x.cummax(1).values):
            assert r.grad_fn is None and not r.requires_grad
    y = ember.randn(3, 4)  # nothing requires grad: no graph either
    assert y.sum(1).grad_fn is None and y.softmax(1).grad_fn is None


def test_grad_fn_names():
    x = ember.randn(2, 3, requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward"
    assert x.prod(1).grad_fn.name() == "ProdBackward"
    assert x.softmax(1).grad_fn.name() == "SoftmaxBackward"
    assert x.max(1).indices.grad_fn is None


def test_prod_saved_tensor_modified_in_place():
    x = ember.randn(2, 3, requires_grad=True)
    y = x * 1
    z = y.prod(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_softmax_rows_sum_to_one_and_stable():
    x = ember.tensor([[1e4, 1e4 + 1, -1e4], [0.0, 0.0, 0.0]])
    s = x.softmax(-1)
    assert np.allclose(s.sum(-1).numpy(), 1.0)
    assert np.isfinite(x.log_softmax(-1).numpy()).all()
    assert np.isfinite(x.logsumexp(1).numpy()).all()
    assert x.logsumexp(1).tolist()[0] == pytest.approx(1e4 + 1 + math.log1p(math.exp(-1)))
    assert ember.tensor([[-INF, -INF]]).logsumexp(1).tolist() == [-INF]


def test_cumprod_grad_with_zeros_first_and_second_order():
    # first order without create_graph takes the O(n) array path; with create_graph the
    # differentiable one; both must agree with torch
    data = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1.5, 2.0, 0.5, 1.0]])
    g = np.random.default_rng(0).standard_normal(data.shape)
    for create in (False, True):
        x = ember.tensor(data, requires_grad=True)
        (gx,) = ember.autograd.grad([x.cumprod(1)], [x], [ember.tensor(g)], create_graph=create)
        t = torch.tensor(data, requires_grad=True)
        (gt,) = torch.autograd.grad([t.cumprod(1)], [t], [torch.tensor(g)])
        np.testing.assert_allclose(gx.detach().numpy(), gt.numpy(), rtol=1e-12, atol=1e-12)


def test_doubling_scan_matches_accumulate():
    # the cupy path of the scans (no ufunc.accumulate there), run here with numpy arrays
    class _NotNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

    d = np.random.default_rng(0).standard_normal((3, 13)).astype(np.float32)
    d[1, 4] = np.nan
    for name in ("maximum", "minimum", "logaddexp"):
        for ax in (0, 1):
            with np.errstate(invalid="ignore"):
                got = R._scan(_NotNumpy(), name, d, ax)
                want = getattr(np, name).accumulate(d, axis=ax)
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_add_repeated_positions():
    from ember.ops.index import _add_at

    out = np.zeros(5, dtype=np.float32)
    _add_at(out, 0, np.array([3, 1, 3, 3, 0]), np.array([1, 2, 3, 4, 5], np.float32))
    assert out.tolist() == [5.0, 2.0, 0.0, 8.0, 0.0]


def test_var_std_arguments():
    x = ember.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    t = torch.tensor(x.numpy())
    np.testing.assert_allclose(x.var(1, unbiased=False).numpy(), t.var(1, unbiased=False).numpy())
    np.testing.assert_allclose(x.std(True).numpy(), t.std(True).numpy(), rtol=1e-6)
    assert math.isnan(ember.tensor([1.0]).var().item())
    assert ember.tensor([1.0, 2.0]).var(correction=3).item() == INF
    with pytest.raises(RuntimeError, match="only one of"):
        x.var(1, unbiased=True, correction=0)


# --------------------------------------------------------------------------- errors

ERRORS = [
    (lambda x: x.sum(2), IndexError, r"expected to be in range of \[-2, 1\], but got 2"),
    (lambda x: x.mean(-3), IndexError, r"range of \[-2, 1\]"),
    (lambda x: x.max(5), IndexError, r"range of \[-2, 1\]"),
    (lambda x: x.softmax(2), IndexError, r"range of \[-2, 1\]"),
    (lambda x: x.cumsum(-3), IndexError, r"range of \[-2, 1\]"),
    (lambda x: x.sort(2), IndexError, r"range of \[-2, 1\]"),
    (lambda x: x.amax((0, 0)), RuntimeError, "appears multiple times"),
    (lambda x: x.long().mean(), RuntimeError, "mean\\(\\): could not infer output dtype.*int64"),
    (lambda x: x.long().var(), RuntimeError, "floating point.*int64"),
    (lambda x: x.long().norm(), RuntimeError, "vector_norm.*floating point.*int64"),
    (lambda x: x.long().softmax(0), RuntimeError, "softmax\\(\\): expected a floating point"),
    (lambda x: x.long().nanmean(), RuntimeError, "nanmean"),
    (lambda x: x.long().logcumsumexp(0), RuntimeError, "logcumsumexp"),
    (lambda x: ember.zeros(0).max(), RuntimeError,
     "Expected reduction dim to be specified for input.numel\\(\\) == 0"),
    (lambda x: ember.zeros(0, 3).max(0), IndexError, "reduction dim 0 to have non-zero size"),
    (lambda x: ember.zeros(0, 3).amax(0), IndexError, "amax\\(\\).*dim 0 to have non-zero"),
    (lambda x: ember.zeros(0, 3).amin(), RuntimeError, "amin\\(\\): Expected reduction dim"),
    (lambda x: ember.zeros(0).argmax(), IndexError, "argmax"),
    (lambda x: ember.zeros(2, 0).median(1), IndexError, "median"),
    (lambda x: ember.zeros(2, 0).mode(1), IndexError, "mode"),
    (lambda x: ember.tensor([True]).argmax(), RuntimeError, "does not support bool"),
    (lambda x: x.topk(4, 1), RuntimeError, "k out of range.*size 3"),
    (lambda x: x.kthvalue(0, 1), RuntimeError, "out of range for dimension 1"),
    (lambda x: x.softmax(None), TypeError, "dim"),
    (lambda x: x.norm("nuc"), RuntimeError, "not supported"),
    (lambda x: ember.tensor([-1, 2]).bincount(), RuntimeError, "non-negative integral"),
    (lambda x: ember.tensor([[1, 2]]).bincount(), RuntimeError, "1-d"),
    (lambda x: ember.tensor([1, 2]).bincount(ember.tensor([1.0])), RuntimeError, "same length"),
    (lambda x: ember.tensor([1, 2]).histc(), RuntimeError, "histc"),
    (lambda x: x.histc(3, 2, 1), RuntimeError, "max must be larger than min"),
    (lambda x: ember.tensor(1.0).diff(), RuntimeError, "at least one-dimensional"),
    (lambda x: x.diff(prepend=ember.zeros(3, 1)), RuntimeError, "shape of prepend"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors(call, exc, msg):
    x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(exc, match=msg):
        call(x)
