"""Every compiled kernel against its numpy reference (float32/float64, odd shapes,
non-contiguous inputs), and the references against torch where torch has the op."""
import importlib.util

import numpy as np
import pytest
import torch

from ember import kernels
from ember.kernels import adam, depthwise, norm, scan, segment

needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None,
    reason="numba is not installed: only the numpy references can be tested")

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}
DTYPES = [np.float32, np.float64]


def compiled(name):
    k = kernels.lookup(name)
    assert k.cpu is not None and k.cpu is not k.reference
    return k.cpu, k.reference


def noncontig(a):
    """The same values in a non-contiguous view (every other element of a bigger array)."""
    big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    v = big[..., ::2]
    assert np.array_equal(v, a, equal_nan=True)
    assert a.shape[-1] < 2 or a.size == 0 or not v.flags.c_contiguous
    return v


def close(a, b, dt, scale=1.0):
    tol = TOL[dt]
    np.testing.assert_allclose(a, b, rtol=tol["rtol"] * scale, atol=tol["atol"] * scale)


# ---------------------------------------------------------------------------- depthwise

DW_CASES = [  # (N, C, H, W, m, (KH, KW), stride, padding, dilation)
    (2, 3, 7, 9, 1, (3, 3), 1, 1, 1),
    (1, 4, 8, 5, 1, (3, 3), 2, 1, 1),
    (2, 2, 9, 11, 1, (5, 5), 1, 2, 1),
    (1, 3, 10, 10, 2, (3, 3), 1, 0, 1),
    (2, 3, 6, 13, 1, (3, 5), (2, 1), (0, 2), (1, 2)),
    (1, 2, 12, 12, 1, (5, 5), 2, 2, 1),
    (1, 2, 9, 8, 3, (4, 2), (1, 3), (2, 1), (2, 1)),
    (3, 1, 5, 5, 1, (1, 1), 1, 0, 1),
    (1, 2, 4, 4, 1, (3, 3), 1, 3, 1),  # padding wider than the kernel reaches
    (2, 3, 11, 12, 1, (5, 5), 2, 2, 2),  # width stride 2 with dilation: phases of a dilated tap
    (1, 2, 10, 13, 2, (3, 4), (1, 3), (1, 2), 1),  # width stride 3, channel multiplier
    (1, 2, 4, 4, 1, (3, 3), 2, 3, 1),  # strided, padding wider than the kernel reaches
]


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", DW_CASES)
def test_depthwise_matches_reference(dt, case):
    N, C, H, W, m, k, s, p, d = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W)).astype(dt)
    w = rng.standard_normal((C * m, 1) + k).astype(dt)
    b = rng.standard_normal(C * m).astype(dt)
    fwd, fwd_ref = compiled("depthwise_conv2d")
    y = fwd(x, w, b, s, p, d)
    close(y, fwd_ref(x, w, b, s, p, d), dt)
    close(fwd(noncontig(x), w, None, s, p, d), fwd_ref(x, w, None, s, p, d), dt)
    g = rng.standard_normal(y.shape).astype(dt)
    bx, bx_ref = compiled("depthwise_conv2d_backward_input")
    close(bx(noncontig(g), w, x.shape, s, p, d), bx_ref(g, w, x.shape, s, p, d), dt)
    bw, bw_ref = compiled("depthwise_conv2d_backward_weight")
    close(bw(x, noncontig(g), k, s, p, d), bw_ref(x, g, k, s, p, d), dt, scale=10)


@pytest.mark.parametrize("case", DW_CASES)
def test_depthwise_reference_matches_torch(case):
    N, C, H, W, m, k, s, p, d = case
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((N, C, H, W)), requires_grad=True)
    w = torch.tensor(rng.standard_normal((C * m, 1) + k), requires_grad=True)
    y = torch.nn.functional.conv2d(x, w, None, s, p, d, C)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)))
    gx, gw = torch.autograd.grad(y, (x, w), g)
    xa, wa, ga = x.detach().numpy(), w.detach().numpy(), g.numpy()
    get = kernels.get  # the path ember takes: compiled when numba is there
    np.testing.assert_allclose(get("depthwise_conv2d", xa)(xa, wa, None, s, p, d),
                               y.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        get("depthwise_conv2d_backward_input", ga)(ga, wa, xa.shape, s, p, d), gx.numpy(),
        rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        get("depthwise_conv2d_backward_weight", xa)(xa, ga, k, s, p, d), gw.numpy(),
        rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("impl", ["get", "reference"])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_asymmetric_padding_by_output_size(impl, stride):
    """``padding`` pads the low side; ``out_size`` sets the high side (as ember's conv
    geometry does): compare with torch on an explicitly padded input."""
    rng = np.random.default_rng(9)
    x = torch.tensor(rng.standard_normal((2, 3, 7, 8)), requires_grad=True)
    w = torch.tensor(rng.standard_normal((3, 1, 3, 3)), requires_grad=True)
    lo, hi = (1, 0), (0, 2)  # (top, left), (bottom, right)
    y = torch.nn.functional.conv2d(
        torch.nn.functional.pad(x, (lo[1], hi[1], lo[0], hi[0])), w, None, stride, 0, 1, 3)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)))
    gx, gw = torch.autograd.grad(y, (x, w), g)
    xa, wa, ga = x.detach().numpy(), w.detach().numpy(), g.numpy()

    def k(name):
        return (kernels.get(name, xa) if impl == "get" else kernels.lookup(name).reference)

    out = k("depthwise_conv2d")(xa, wa, None, stride, lo, 1, out_size=tuple(y.shape[2:]))
    np.testing.assert_allclose(out, y.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k("depthwise_conv2d_backward_input")(ga, wa, xa.shape, stride,
                                                                    lo, 1), gx.numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k("depthwise_conv2d_backward_weight")(xa, ga, 3, stride, lo, 1),
                               gw.numpy(), rtol=1e-11, atol=1e-11)


def test_depthwise_rejects_bad_shapes():
    x = np.zeros((1, 3, 5, 5), np.float32)
    with pytest.raises(ValueError, match="C\\*m, 1, KH, KW"):
        depthwise.depthwise_conv2d_reference(x, np.zeros((4, 1, 3, 3), np.float32))
    with pytest.raises(ValueError, match="too small"):
        depthwise.depthwise_conv2d(x, np.zeros((3, 1, 7, 7), np.float32))
    with pytest.raises(ValueError, match="g has shape"):
        depthwise.depthwise_conv2d_backward_input(np.zeros((1, 4, 3, 3), np.float32),
                                                  np.zeros((3, 1, 3, 3), np.float32), x.shape)


# ---------------------------------------------------------------------------- layer norm

@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (33, 257), (5, 1536)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_reference(dt, shape, affine):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
    w = rng.standard_normal(shape[1]).astype(dt) if affine else None
    b = rng.standard_normal(shape[1]).astype(dt) if affine else None
    fwd, ref = compiled("layer_norm")
    y, mean, rstd = fwd(noncontig(x), w, b, 1e-5)
    ry, rmean, rrstd = ref(x, w, b, 1e-5)
    assert y.dtype == mean.dtype == rstd.dtype == dt
    for a, r in ((y, ry), (mean, rmean), (rstd, rrstd)):
        close(a, r, dt, scale=5)
    g = rng.standard_normal(shape).astype(dt)
    bwd, bref = compiled("layer_norm_backward")
    got = bwd(noncontig(g), x, mean, rstd, w, affine)
    want = bref(g, x, rmean, rrstd, w, affine)
    for a, r in zip(got, want):
        if r is None:
            assert a is None
        else:
            assert a.dtype == dt
            close(a, r, dt, scale=20)


def test_layer_norm_reference_matches_torch():
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((9, 31)), requires_grad=True)
    w = torch.tensor(rng.standard_normal(31), requires_grad=True)
    b = torch.tensor(rng.standard_normal(31), requires_grad=True)
    y = torch.nn.functional.layer_norm(x, (31,), w, b, 1e-5)
    g = torch.tensor(rng.standard_normal((9, 31)))
    grads = torch.autograd.grad(y, (x, w, b), g)
    xa, wa, ba = x.detach().numpy(), w.detach().numpy(), b.detach().numpy()
    out, mean, rstd = kernels.get("layer_norm", xa)(xa, wa, ba, 1e-5)
    np.testing.assert_allclose(out, y.detach().numpy(), rtol=1e-10, atol=1e-10)
    got = kernels.get("layer_norm_backward", xa)(g.numpy(), xa, mean, rstd, wa)
    for a, r in zip(got, grads):
        np.testing.assert_allclose(a, r.numpy(), rtol=1e-10, atol=1e-10)


@needs_numba
def test_layer_norm_nan_propagates():
    x = np.ones((2, 8), np.float32)
    x[1, 3] = np.nan
    y, _, _ = norm.layer_norm(x, None, None, 1e-5)
    assert np.isnan(y[1]).all() and not np.isnan(y[0]).any()


# ---------------------------------------------------------------------------- scans

def _episodes(T, B, dt, seed=0):
    rng = np.random.default_rng(seed)
    r = rng.standard_normal((T, B)).astype(dt)
    v = rng.standard_normal((T, B)).astype(dt)
    nv = rng.standard_normal((T, B)).astype(dt)
    done = rng.random((T, B)) < 0.1
    term = done & (rng.random((T, B)) < 0.5)
    return r, v, nv, done, term


def _gae_loop(r, v, nv, done, term, gamma, lmbda):
    """GAE written out in Python, one env at a time (the definition)."""
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        a = 0.0
        for t in reversed(range(T)):
            delta = r[t, b] + gamma * nv[t, b] * (not term[t, b]) - v[t, b]
            a = delta + gamma * lmbda * (not done[t, b]) * a
            adv[t, b] = a
    return adv


def _td_lambda_loop(r, nv, done, term, gamma, lmbda):
    T, B = r.shape
    ret = np.zeros((T, B))
    for b in range(B):
        g = nv[T - 1, b]
        for t in reversed(range(T)):
            g = nv[t, b] if done[t, b] else g
            g = r[t, b] + gamma * (not term[t, b]) * ((1 - lmbda) * nv[t, b] + lmbda * g)
            ret[t, b] = g
    return ret


@pytest.mark.parametrize("impl", ["get", "reference"])
def test_scans_match_the_definition(impl):
    r, v, nv, done, term = _episodes(37, 5, np.float64)
    gae_fn = kernels.get("gae", r) if impl == "get" else scan.gae_reference
    td_fn = (kernels.get("td_lambda_return", r) if impl == "get"
             else scan.td_lambda_return_reference)
    adv, target = gae_fn(r, v, nv, done, term, 0.97, 0.9)
    want = _gae_loop(r, v, nv, done, term, 0.97, 0.9)
    np.testing.assert_allclose(adv, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(target, want + v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(td_fn(r, nv, done, term, 0.97, 0.9),
                               _td_lambda_loop(r, nv, done, term, 0.97, 0.9),
                               rtol=1e-12, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (64, 3), (129, 2, 5), (2048, 8)])
def test_scans_match_reference(dt, shape):
    T = shape[0]
    rng = np.random.default_rng(3)
    r, v, nv = (rng.standard_normal(shape).astype(dt) for _ in range(3))
    done = rng.random(shape) < 0.05
    term = done & (rng.random(shape) < 0.5)
    gae_c, gae_r = compiled("gae")
    for a, b in zip(gae_c(noncontig(r), v, nv, done, term, 0.99, 0.95),
                    gae_r(r, v, nv, done, term, 0.99, 0.95)):
        assert a.shape == shape and a.dtype == dt
        close(a, b, dt, scale=10)
    # terminated defaults to done; done may be given as 0/1 numbers
    close(gae_c(r, v, nv, done.astype(dt))[0], gae_r(r, v, nv, done)[0], dt, scale=10)
    td_c, td_r = compiled("td_lambda_return")
    got = td_c(r, noncontig(nv), done, term, 0.9, 0.8)
    assert got.shape == shape and T == got.shape[0]
    close(got, td_r(r, nv, done, term, 0.9, 0.8), dt, scale=10)


def test_scans_reject_mismatched_shapes():
    r = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="one \\(T, \\*B\\) shape"):
        kernels.get("gae", r)(r, r, r, np.zeros((4, 3), bool))


# ---------------------------------------------------------------------------- segments

SEG_CASES = [
    ((10,), [0, 3, 3, 10]),
    ((10, 4), [0, 0, 1, 6, 10, 10]),
    ((7, 2, 3), [2, 5, 5, 7]),          # the first rows belong to no segment
    ((6,), [0]),                        # no segment at all
    ((0, 3), [0, 0, 0]),                # no values, empty segments
    ((5, 33), [0, 5]),
]


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,offsets", SEG_CASES)
def test_segments_match_reference(dt, shape, offsets):
    rng = np.random.default_rng(4)
    v = rng.standard_normal(shape).astype(dt)
    off = np.array(offsets, np.int32)
    vv = noncontig(v) if v.ndim > 1 else v[::-1].copy()[::-1]
    for name in ("segment_sum", "segment_mean"):
        c, r = compiled(name)
        got = c(vv, off)
        assert got.shape == (len(offsets) - 1,) + shape[1:] and got.dtype == dt
        close(got, r(v, off), dt, scale=5)
    c, r = compiled("segment_max")
    (mx, arg), (rmx, rarg) = c(vv, off), r(v, off)
    np.testing.assert_array_equal(mx, rmx)
    np.testing.assert_array_equal(arg, rarg)
    assert arg.dtype == np.int64


@needs_numba
def test_segment_max_nan_and_ties():
    v = np.array([[1.0, 2.0], [np.nan, 2.0], [3.0, np.nan], [np.nan, 5.0]], np.float32)
    off = np.array([0, 4, 4])
    for fn in (segment.segment_max, segment.segment_max_reference):
        mx, arg = fn(v, off)
        assert np.isnan(mx[0]).all() and arg[0].tolist() == [1, 2]
        assert mx[1].tolist() == [-np.inf, -np.inf] and arg[1].tolist() == [-1, -1]
    mx, arg = segment.segment_max(np.array([2.0, 2.0, 1.0]), np.array([0, 3]))
    assert arg.tolist() == [0]


def test_segment_references_match_torch():
    rng = np.random.default_rng(5)
    v = rng.standard_normal((12, 3))
    off = np.array([0, 4, 4, 9, 12])
    for name, red in (("segment_sum", "sum"), ("segment_mean", "mean"),
                      ("segment_max", "max")):
        got = kernels.get(name, v)(v, off)
        got = got[0] if isinstance(got, tuple) else got
        want = torch.segment_reduce(torch.tensor(v), red, offsets=torch.tensor(off))
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


def test_segments_reject_bad_offsets():
    v = np.zeros(5, np.float32)
    for off in ([0, 3, 2], [0, 6], [-1, 2], [[0, 1]]):
        with pytest.raises(ValueError, match="offsets"):
            kernels.get("segment_sum", v)(v, np.array(off))


# ---------------------------------------------------------------------------- adam

def _adam_jobs(shapes, dt, amsgrad, seed):
    rng = np.random.default_rng(seed)
    jobs = []
    for s in shapes:
        arrays = [rng.standard_normal(s).astype(dt), rng.standard_normal(s).astype(dt),
                  rng.standard_normal(s).astype(dt) * 0.1, rng.random(s).astype(dt) * 0.01]
        if amsgrad:
            arrays.append(arrays[3] + rng.random(s).astype(dt) * 0.01)
        jobs.append(arrays)
    return jobs


HYPERS = [  # (decay, wd, maximize, w1, b2, c2, eps_s, k)
    (1.0, 0.0, False, 0.1, 0.999, 0.001, 1e-8 * 0.0316, -1e-3 * 0.0316 / 0.1),
    (1.0, 0.01, True, 0.1, 0.99, 0.01, 1e-6, -2e-3),
    (0.999, 0.0, False, 0.7, 0.9, 0.1, 1e-8, -1e-2),  # AdamW decay; lerp's other branch
]


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("hyper", HYPERS)
def test_adam_matches_reference(dt, amsgrad, hyper):
    shapes = [(1,), (3, 5), (70001,), (257, 3)]
    a = _adam_jobs(shapes, dt, amsgrad, 6)
    b = [[x.copy() for x in arrays] for arrays in a]
    a[1][1] = np.asfortranarray(a[1][1])  # a non-contiguous gradient: the reference path
    c, r = compiled("adam_step")
    for _ in range(3):
        c([(tuple(arrays), hyper) for arrays in a])
        r([(tuple(arrays), hyper) for arrays in b])
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            close(u, v, dt, scale=10)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_step_matches_torch(decoupled):
    """Three steps of torch.optim.Adam/AdamW against the kernel fed ember's hyper tuple."""
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal((50, 7))
    grads = [rng.standard_normal((50, 7)) for _ in range(3)]
    tp = torch.tensor(p0.copy(), requires_grad=True)
    lr, (b1, b2), eps, wd = 1e-2, (0.9, 0.999), 1e-8, 0.1
    opt = (torch.optim.AdamW if decoupled else torch.optim.Adam)([tp], lr=lr, betas=(b1, b2),
                                                                 eps=eps, weight_decay=wd)
    p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    step = kernels.get("adam_step", p)
    for t, g in enumerate(grads, 1):
        tp.grad = torch.tensor(g)
        opt.step()
        bc2 = (1 - b2 ** t) ** 0.5
        hyper = (1 - lr * wd if decoupled else 1.0, 0.0 if decoupled else wd, False, 1 - b1,
                 b2, 1 - b2, eps * bc2, -lr / (1 - b1 ** t) * bc2)
        step([((p, g, m, v), hyper)])
    np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_adam_complex_params_match_torch():
    """Complex parameters update real and imaginary parts as reals (torch's view_as_real)."""
    rng = np.random.default_rng(10)
    p0 = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(np.complex64)
    grads = [(rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(
        np.complex64) for _ in range(3)]
    tp = torch.tensor(p0.copy(), requires_grad=True)
    opt = torch.optim.Adam([tp], lr=1e-2)
    p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    step = kernels.get("adam_step", p)
    for t, g in enumerate(grads, 1):
        tp.grad = torch.tensor(g)
        opt.step()
        bc2 = (1 - 0.999 ** t) ** 0.5
        step([((p, g, m, v), (1.0, 0.0, False, 0.1, 0.999, 0.001, 1e-8 * bc2,
                              -1e-2 / (1 - 0.9 ** t) * bc2))])
    np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("hyper", HYPERS)
def test_adam_cuda_matches_reference(dt, amsgrad, hyper):
    import cupy

    a = _adam_jobs([(3, 5), (70001,)], dt, amsgrad, 8)
    ga = [[cupy.asarray(x) for x in arrays] for arrays in a]
    ga[0][1] = ga[0][1].T.copy().T  # a non-contiguous gradient
    step = kernels.get("adam_step", ga[0][0])
    assert step is kernels.lookup("adam_step").cuda
    for _ in range(3):
        step([(tuple(arrays), hyper) for arrays in ga])
        adam.adam_step_reference([(tuple(arrays), hyper) for arrays in a])
    for x, y in zip(a, ga):
        for u, v in zip(x, y):
            close(cupy.asnumpy(v), u, dt, scale=10)
