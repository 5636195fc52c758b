"""Work split over threads (core/_parallel.py) gives the single-thread results bit for bit,
and the layers that use it match PyTorch on inputs large enough to be split."""
import threading

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import _parallel


@pytest.fixture
def threads():
    old = _parallel.num_threads()

    def use(n):
        _parallel.set_num_threads(n)
    yield use
    _parallel.set_num_threads(old)


def test_parallel_for_covers_the_range_once_and_uses_two_threads(threads):
    threads(2)
    seen, names = [], set()

    def fn(lo, hi):
        seen.extend(range(lo, hi))
        names.add(threading.current_thread().name)
    _parallel.parallel_for(fn, 1000, work=1 << 22)
    assert sorted(seen) == list(range(1000))
    assert len(names) == 2
    seen.clear()
    _parallel.parallel_for(fn, 1000, work=10)  # too little work: one call in this thread
    assert sorted(seen) == list(range(1000))


def test_parallel_for_raises_a_worker_error_after_all_ranges_ran(threads):
    threads(2)
    done = []

    def fn(lo, hi):
        done.append(lo)
        if lo > 0:
            raise KeyError("second half")
    with pytest.raises(KeyError, match="second half"):
        _parallel.parallel_for(fn, 10, work=1 << 22)
    assert sorted(done) == [0, 5]


def test_nested_parallel_for_runs_inline(threads):
    threads(2)
    out = []

    def inner(lo, hi):
        out.append((lo, hi))

    def outer(lo, hi):
        _parallel.parallel_for(inner, 4, work=1 << 22)
    _parallel.parallel_for(outer, 2, work=1 << 22)  # would deadlock if nested work queued
    assert sorted(out) == [(0, 2), (0, 4), (2, 4)]


def test_set_num_threads_is_ember_api_and_checks_its_argument(threads):
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    with pytest.raises(ValueError, match="n must be >= 1"):
        ember.set_num_threads(0)


def test_split_ufunc_matches_numpy_and_refuses_overlap(threads):
    threads(2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1 << 20).astype(np.float32)
    b = rng.standard_normal(1 << 20).astype(np.float32)
    out = np.empty_like(a)
    assert _parallel._splittable(a, b, out)
    _parallel.ufunc(np.add, a, b, out)
    np.testing.assert_array_equal(out, a + b)
    assert _parallel._splittable(a, np.float32(3), out)
    _parallel.ufunc(np.multiply, a, np.float32(3), out)
    np.testing.assert_array_equal(out, a * np.float32(3))
    _parallel.ufunc(np.negative, a, None, out)
    np.testing.assert_array_equal(out, -a)
    c, want = a.copy(), a.copy()
    np.add(want[1:], want[:-1], out=want[1:])
    assert not _parallel._splittable(c[1:], c[:-1], c[1:])  # overlapping: numpy's own call
    _parallel.ufunc(np.add, c[1:], c[:-1], c[1:])
    np.testing.assert_array_equal(c, want)
    assert not _parallel._splittable(a[:1000], b[:1000], out[:1000])  # small
    assert not _parallel._splittable(a.reshape(1024, 1024), b[:1024], out.reshape(1024, 1024))


def test_inplace_add_and_relu_on_big_tensors(threads):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
    y0 = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
    res = []
    for n in (1, 2):
        threads(n)
        x, y = ember.tensor(x0.copy()), ember.tensor(y0)
        v = x._version[0] if x._version is not None else None
        x += y
        x.relu_()
        assert x._version is None or x._version[0] != v
        res.append(x.numpy().copy())
    np.testing.assert_array_equal(res[0], res[1])
    np.testing.assert_array_equal(res[1], np.maximum(x0 + y0, 0))


def test_batch_norm_eval_big_input_matches_torch(threads):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 32, 48, 48)).astype(np.float32)
    rm = rng.standard_normal(32).astype(np.float32)
    rv = rng.uniform(0.5, 2, 32).astype(np.float32)
    w = rng.standard_normal(32).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    want = torch.nn.functional.batch_norm(*map(torch.from_numpy, (x, rm, rv, w, b)),
                                          training=False).numpy()
    got = []
    for n in (1, 2):
        threads(n)
        got.append(F.batch_norm(*map(ember.tensor, (x, rm, rv, w, b)), training=False).numpy())
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[1], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k,s", [(3, 1), (5, 2)])
def test_depthwise_conv_big_input_matches_torch(threads, k, s):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 48, 40, 40)).astype(np.float32)
    w = rng.standard_normal((48, 1, k, k)).astype(np.float32)
    xt, wt = (torch.from_numpy(a).requires_grad_() for a in (x, w))
    yt = torch.nn.functional.conv2d(xt, wt, stride=s, padding=k // 2, groups=48)
    g = rng.standard_normal(yt.shape).astype(np.float32)
    yt.backward(torch.from_numpy(g))
    outs = []
    for n in (1, 2):
        threads(n)
        xe, we = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
        ye = F.conv2d(xe, we, stride=s, padding=k // 2, groups=48)
        ye.backward(ember.tensor(g))
        outs.append([ye.detach().numpy(), xe.grad.numpy(), we.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(outs[1], (yt, xt.grad, wt.grad)):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("k,s,p,d,ceil", [(3, 2, 1, 1, False), (2, 2, 0, 1, True),
                                          (3, 1, 1, 2, False), (4, 3, 2, 1, True)])
def test_max_pool_inference_matches_torch_with_nan(threads, k, s, p, d, ceil):
    threads(2)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 32, 57, 45)).astype(np.float32)
    x[1, 3, 10, 10] = np.nan
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil).numpy()
    with ember.no_grad():
        got = F.max_pool2d(ember.tensor(x), k, s, p, d, ceil).numpy()
    np.testing.assert_array_equal(got, want)
    x3 = rng.standard_normal((2, 4, 9, 10, 11)).astype(np.float32)
    want3 = torch.nn.functional.max_pool3d(torch.from_numpy(x3), 3, 2, 1).numpy()
    np.testing.assert_array_equal(F.max_pool3d(ember.tensor(x3), 3, 2, 1).numpy(), want3)
