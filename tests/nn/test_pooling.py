"""Max/avg/lp/adaptive pools and max_unpool against PyTorch: outputs, indices, gradients,
double backward, and the error messages."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from optest import Const, check_op

import ember
import ember.nn.functional as F


def _both(name, *args, **kw):
    e, t = getattr(F, name), getattr(TF, name)
    return (lambda x: e(x, *args, **kw)), (lambda x: t(x, *args, **kw))


def _indices_equal(name, x, *args, **kw):
    eo, ei = getattr(F, name)(ember.tensor(x), *args, return_indices=True, **kw)
    to, ti = getattr(TF, name)(torch.from_numpy(x), *args, return_indices=True, **kw)
    np.testing.assert_array_equal(eo.numpy(), to.numpy())
    assert ei.dtype == ember.int64
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


MAXPOOL = [  # name, input shape, args, kwargs
    ("max_pool2d", (2, 3, 7, 7), (3,), dict(stride=2, padding=1)),
    ("max_pool2d", (2, 2, 8, 7), ((2, 3),), dict(stride=(2, 1), dilation=(2, 1), padding=(1, 1))),
    ("max_pool2d", (1, 2, 7, 6), (2,), dict(ceil_mode=True, padding=1)),
    ("max_pool2d", (2, 6, 5), (2,), {}),  # unbatched, non-overlapping
    ("max_pool1d", (2, 3, 11), (3,), dict(stride=2, padding=1, ceil_mode=True)),
    ("max_pool1d", (2, 9), (2,), dict(dilation=3)),
    ("max_pool3d", (1, 2, 5, 4, 5), (2,), dict(stride=(1, 2, 2), padding=(1, 0, 1))),
]


@pytest.mark.parametrize("name,xs,args,kw", MAXPOOL)
def test_max_pool_grid(name, xs, args, kw):
    check_op(*_both(name, *args, **kw), [xs])
    x = np.random.default_rng(1).standard_normal(xs).astype(np.float32)
    _indices_equal(name, x, *args, **kw)


def test_max_pool_ties_nan_and_inf_follow_torch():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (2, 2, 7, 7)).astype(np.float32)  # many ties: first max wins
    _indices_equal("max_pool2d", x, 3, stride=2, padding=1, ceil_mode=True)
    y = x.copy()
    y[0, 0, 1, 1] = y[0, 0, 1, 2] = np.nan  # NaN propagates; the last NaN of a window wins
    _indices_equal("max_pool2d", y, 3, stride=1, padding=1)
    z = np.full((1, 1, 3, 3), -np.inf, np.float32)  # all -inf: first in-bounds position
    _indices_equal("max_pool2d", z, 2, padding=1)
    _indices_equal("adaptive_max_pool1d", np.array([[[1, 3, 3, 0, np.nan, 2, np.nan]]],
                                                   np.float32), 2)


def test_max_pool_integer_and_noncontiguous():
    x = np.random.default_rng(0).integers(-50, 50, (2, 3, 6, 6))
    np.testing.assert_array_equal(F.max_pool2d(ember.tensor(x), 2, padding=1).numpy(),
                                  TF.max_pool2d(torch.from_numpy(x), 2, padding=1).numpy())
    check_op(*_both("max_pool2d", 3, stride=2, padding=1), [(2, 3, 6, 7)], noncontig=True)


def test_max_pool_with_indices_aliases():
    x = ember.randn(1, 2, 6, 6)
    out, idx = F.max_pool2d_with_indices(x, 2)
    np.testing.assert_array_equal(out.numpy(), F.max_pool2d(x, 2).numpy())
    assert tuple(idx.shape) == (1, 2, 3, 3)


def test_max_unpool_against_torch(device):
    rng = np.random.default_rng(0)
    for shape, size in [((2, 3, 6, 6), None), ((2, 3, 6, 7), (6, 7)), ((2, 3, 6, 7), (2, 3, 6, 7))]:
        x = rng.standard_normal(shape).astype(np.float32)
        tout, tidx = TF.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
        check_op(lambda v, i: F.max_unpool2d(v, i, 2, output_size=size),
                 lambda v, i: TF.max_unpool2d(v, i, 2, output_size=size),
                 [tout.numpy(), Const(tidx.numpy())], device=device)
    # (overlapping windows could repeat an index: the unpooled gradient is then ambiguous)
    o1, i1 = TF.max_pool1d(torch.from_numpy(x[0]), 2, stride=3, return_indices=True)
    check_op(lambda v, i: F.max_unpool1d(v, i, 2, stride=3, output_size=[7]),
             lambda v, i: TF.max_unpool1d(v, i, 2, stride=3, output_size=[7]),
             [o1.numpy(), Const(i1.numpy())])


AVGPOOL = [
    ("avg_pool2d", (2, 3, 7, 7), (3,), dict(stride=2, padding=1)),
    ("avg_pool2d", (2, 3, 7, 6), (3,), dict(stride=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", (1, 2, 6, 7), ((3, 2),), dict(stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (1, 2, 6, 7), (3,), dict(stride=2, padding=1, ceil_mode=True,
                                            count_include_pad=False)),
    ("avg_pool2d", (2, 2, 6, 6), (3,), dict(padding=1, divisor_override=5)),
    ("avg_pool2d", (3, 5, 5), (2,), {}),  # unbatched
    ("avg_pool1d", (2, 3, 6), (3,), dict(stride=2, padding=1, ceil_mode=True)),
    ("avg_pool1d", (2, 3, 9), (4,), dict(stride=3, padding=2, count_include_pad=False)),
    ("avg_pool3d", (1, 2, 4, 5, 4), (2,), dict(stride=(1, 2, 2), padding=1, ceil_mode=True)),
]


@pytest.mark.parametrize("name,xs,args,kw", AVGPOOL)
def test_avg_pool_grid(name, xs, args, kw):
    check_op(*_both(name, *args, **kw), [xs])


def test_avg_pool_integer_truncates_like_torch():
    x = np.array([[[-7, 2, 3, 5, 1]]])
    np.testing.assert_array_equal(F.avg_pool1d(ember.tensor(x), 2).numpy(),
                                  TF.avg_pool1d(torch.from_numpy(x), 2).numpy())


def test_avg_pool_float16_accumulates_in_float32():
    x = np.random.default_rng(0).standard_normal((1, 2, 8, 8)).astype(np.float16)
    out = F.avg_pool2d(ember.tensor(x), 4)
    assert out.dtype == ember.float16
    ref = TF.avg_pool2d(torch.from_numpy(x), 4).numpy()
    np.testing.assert_allclose(out.numpy().astype(np.float32), ref.astype(np.float32),
                               atol=2e-3)


@pytest.mark.parametrize("name,xs,out", [
    ("adaptive_avg_pool2d", (2, 3, 7, 9), (3, 4)),  # windows that overlap and differ in size
    ("adaptive_avg_pool2d", (2, 3, 8, 6), (4, None)),
    ("adaptive_avg_pool2d", (2, 3, 7, 7), 1),
    ("adaptive_avg_pool2d", (3, 8, 8), 4),  # divides: a plain average pool
    ("adaptive_avg_pool1d", (2, 3, 10), 4),
    ("adaptive_avg_pool3d", (1, 2, 5, 4, 3), (2, 3, 2)),
    ("adaptive_max_pool2d", (2, 3, 7, 9), (3, 4)),
    ("adaptive_max_pool2d", (3, 5, 5), 5),
    ("adaptive_max_pool1d", (2, 3, 10), 3),
    ("adaptive_max_pool3d", (1, 2, 5, 4, 3), (2, 3, 2)),
])
def test_adaptive_pools(name, xs, out):
    check_op(*_both(name, out), [xs])
    if "max" in name:
        x = np.random.default_rng(3).standard_normal(xs).astype(np.float32)
        _indices_equal(name, x, out)


@pytest.mark.parametrize("name,xs,args,kw", [
    ("lp_pool2d", (2, 3, 7, 7), (2, 3), dict(stride=2, ceil_mode=True)),
    ("lp_pool1d", (2, 3, 8), (3, 2), {}),
    ("lp_pool3d", (1, 2, 4, 4, 4), (2, 2), {}),
])
def test_lp_pool(name, xs, args, kw):
    check_op(*_both(name, *args, **kw), [xs], low=0.5, high=2.0)


def test_pool_grads_stay_float32():
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    y = F.max_pool2d(x, 3, 2, 1) + F.avg_pool2d(x, 3, 2, 1) + F.adaptive_avg_pool2d(x, 3)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == ember.float32


def _raises(match, fn, exc=RuntimeError):
    with pytest.raises(exc, match=match):
        fn()


def test_pool_errors():
    x = ember.randn(2, 4, 8, 8)
    _raises("pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 "
            "and dilation=1", lambda: F.max_pool2d(x, 3, padding=2))
    _raises(r"Given input size: \(4x8x8\). Calculated output size: \(4x0x0\). Output size is "
            "too small", lambda: F.max_pool2d(x, 9))
    _raises("kernel_size must either be a single int, or a tuple of two ints",
            lambda: F.max_pool2d(x, (2, 2, 2)))
    _raises("stride should be greater than zero", lambda: F.max_pool2d(x, 2, stride=0))
    _raises("dilation should be greater than zero", lambda: F.max_pool2d(x, 2, dilation=0))
    _raises(r"Expected 3D or 4D \(batch mode\) tensor", lambda: F.max_pool2d(ember.randn(8, 8), 2))
    _raises("divisor must be not zero", lambda: F.avg_pool2d(x, 2, divisor_override=0))
    _raises("Expected 3D or 4D tensor", lambda: F.adaptive_avg_pool2d(ember.randn(8, 8), 2))
    _raises("non-zero size for non-batch dimensions",
            lambda: F.adaptive_max_pool2d(ember.randn(2, 4, 0, 3), 2))
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    _raises(r"invalid output_size \"\(3, 3\)\" \(dim 0 must be between 6 and 10\)",
            lambda: F.max_unpool2d(F.max_pool2d(x, 2), idx, 2, output_size=(3, 3)), ValueError)
    _raises(r"Found an invalid max index: \d+ \(output volumes are of size 8x8\)",
            lambda: F.max_unpool2d(F.max_pool2d(x, 2), idx + 100, 2))
    _raises("should be type int64", lambda: F.max_unpool2d(F.max_pool2d(x, 2), idx.int(), 2))


def test_pool_output_sizes_match_torch():
    for L in range(5, 12):
        for k, s, p in [(3, 2, 1), (2, 2, 0), (3, 3, 1), (4, 3, 2)]:
            for ceil in (False, True):
                x = ember.randn(1, 1, L)
                t = torch.zeros(1, 1, L)
                assert F.max_pool1d(x, k, s, p, ceil_mode=ceil).shape[-1] == \
                    TF.max_pool1d(t, k, s, p, ceil_mode=ceil).shape[-1]
                assert F.avg_pool1d(x, k, s, p, ceil_mode=ceil).shape[-1] == \
                    TF.avg_pool1d(t, k, s, p, ceil_mode=ceil).shape[-1]
    assert math.isfinite(float(F.avg_pool1d(ember.ones(1, 1, 6), 3, 2, 1, True).sum()))
