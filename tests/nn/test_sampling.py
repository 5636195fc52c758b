"""Sampling functionals against PyTorch: pad, interpolate, grid_sample, affine_grid,
pixel_shuffle/unshuffle (forward, backward, double backward where PyTorch has it, float64
gradcheck), plus errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from optest import Const, check_op


def lib_of(x):
    return F if isinstance(x, ember.Tensor) else TF


# --------------------------------------------------------------------------- pad

PADS = [  # (input shape, pad, mode)
    ((2, 5), (1, 2), "constant"), ((1, 2, 5), (2, 1), "constant"),
    ((1, 2, 3, 4), (1, 0, -1, 2), "constant"), ((1, 1, 2, 3, 3), (1, 1, 0, 2, -1, 1), "constant"),
    ((2, 3, 4), (0, 0, -1, 0, 1, 1), "constant"),
    ((2, 5), (2, 3), "reflect"), ((1, 2, 5), (3, 1), "reflect"),
    ((1, 2, 3, 4), (1, 3, 2, 0), "reflect"), ((2, 4, 3), (2, 2, 1, 1), "reflect"),
    ((1, 1, 3, 3, 4), (1, 2, 2, 1, 0, 2), "reflect"), ((2, 3, 3, 4), (1, 1, 1, 1, 2, 1), "reflect"),
    ((2, 5), (4, 1), "replicate"), ((1, 2, 3), (2, 3), "replicate"),
    ((1, 2, 3, 4), (1, 3, 2, 0), "replicate"), ((1, 1, 2, 3, 2), (2, 1, 0, 1, 3, 1), "replicate"),
    ((2, 5), (2, 5), "circular"), ((1, 2, 4), (3, 1), "circular"),
    ((1, 2, 3, 4), (1, 3, 2, 0), "circular"), ((1, 1, 2, 3, 2), (1, 1, 2, 1, 1, 2), "circular"),
    ((1, 2, 5), (-1, 2), "circular"), ((1, 2, 5), (-2, 1), "reflect"),
    ((1, 2, 5), (-1, 2), "replicate"),
]


@pytest.mark.parametrize("shape,p,mode", PADS)
def test_pad(shape, p, mode, device):
    f = (lambda x: lib_of(x).pad(x, p, mode=mode))
    check_op(f, f, [shape], device=device)


def test_pad_value():
    f = (lambda x: lib_of(x).pad(x, (1, 2, 0, 1), value=-2.5))
    check_op(f, f, [(2, 3)])


@pytest.mark.parametrize("shape,p,mode", [
    ((2, 3), (1, 1, 1), "constant"), ((2, 3), (1, 1, 1, 1, 1, 1), "constant"),
    ((1, 2, 3), (3, 0), "reflect"), ((5,), (1, 1), "reflect"), ((1, 2, 3), (1, 1), "wrap"),
    ((1, 2, 3), (4, 0), "circular"), ((2, 3), (1, 1, 1, 1), "replicate"),
    ((1, 1, 2), (-3, 0), "constant"), ((1, 2, 4, 3), (2, 2), "reflect"),
    ((2, 3), (1, 1, 1, 1), "circular"),
])
def test_pad_errors_match_torch(shape, p, mode):
    with pytest.raises(Exception) as te:
        TF.pad(torch.zeros(shape), p, mode=mode)
    with pytest.raises(type(te.value)):
        F.pad(ember.zeros(*shape), p, mode=mode)


# --------------------------------------------------------------------------- interpolate

def interp(**kw):
    return lambda x: lib_of(x).interpolate(x, **kw)


INTERP = [  # (input shape, kwargs)
    ((2, 2, 5), dict(size=9, mode="nearest")),
    ((2, 2, 9), dict(scale_factor=0.45, mode="nearest")),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="nearest")),
    ((1, 2, 4, 5), dict(scale_factor=(2.0, 1.7), mode="nearest")),
    ((1, 2, 4, 5), dict(scale_factor=2, mode="nearest")),
    ((1, 1, 3, 2, 4), dict(size=(5, 4, 3), mode="nearest")),
    ((1, 1, 3, 2, 4), dict(scale_factor=(1.5, 1.0, 0.8), mode="nearest")),
    ((2, 2, 5), dict(size=8, mode="nearest-exact")),
    ((1, 2, 5, 7), dict(scale_factor=(0.6, 1.3), mode="nearest-exact")),
    ((1, 1, 3, 2, 4), dict(size=(2, 5, 6), mode="nearest-exact")),
    ((2, 2, 5), dict(size=9, mode="linear", align_corners=False)),
    ((2, 2, 5), dict(size=9, mode="linear", align_corners=True)),
    ((2, 2, 9), dict(scale_factor=0.5, mode="linear")),
    ((2, 2, 6), dict(scale_factor=1.7, mode="linear", recompute_scale_factor=True)),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=False)),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
    ((1, 2, 6, 5), dict(scale_factor=(0.5, 1.5), mode="bilinear")),
    ((1, 2, 6, 5), dict(scale_factor=1.3, mode="bilinear", align_corners=True)),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="bicubic", align_corners=False)),
    ((1, 2, 4, 5), dict(size=(9, 8), mode="bicubic", align_corners=True)),
    ((1, 2, 8, 7), dict(scale_factor=(0.5, 0.7), mode="bicubic")),
    ((1, 1, 3, 2, 4), dict(size=(5, 4, 3), mode="trilinear", align_corners=False)),
    ((1, 1, 3, 2, 4), dict(scale_factor=(1.5, 2.0, 0.6), mode="trilinear", align_corners=True)),
    ((2, 2, 7), dict(size=3, mode="area")),
    ((1, 2, 7, 6), dict(size=(3, 4), mode="area")),
    ((1, 2, 7, 6), dict(scale_factor=0.5, mode="area")),
    ((1, 1, 4, 5, 3), dict(size=(2, 3, 5), mode="area")),
    ((1, 2, 9, 8), dict(size=(4, 3), mode="bilinear", antialias=True)),
    ((1, 2, 9, 8), dict(size=(4, 3), mode="bilinear", antialias=True, align_corners=True)),
    ((1, 2, 9, 8), dict(scale_factor=(0.4, 1.5), mode="bilinear", antialias=True)),
    ((1, 2, 9, 8), dict(size=(4, 5), mode="bicubic", antialias=True)),
    ((1, 2, 9, 8), dict(scale_factor=0.6, mode="bicubic", antialias=True, align_corners=True)),
    ((1, 2, 4, 3), dict(size=(7, 6), mode="bicubic", antialias=True)),
    ((1, 2, 9, 8), dict(size=(4, 5), mode="lanczos", antialias=True)),
    ((1, 2, 4, 5), dict(size=(4, 5), mode="bilinear")),
    ((1, 2, 4, 5), dict(size=(4, 5), mode="nearest")),
    ((2, 1, 5, 33), dict(size=(3, 33), mode="bilinear")),  # long rows: batched GEMMs
]


@pytest.mark.parametrize("shape,kw", INTERP, ids=[f"{k['mode']}-{i}" for i, (_, k) in
                                                  enumerate(INTERP)])
def test_interpolate(shape, kw, device):
    check_op(interp(**kw), interp(**kw), [shape], device=device)


def test_interpolate_fast_backward_matches_torch():
    # the raw path (no create_graph) of each axis operator
    for shape, kw in INTERP[::3]:
        check_op(interp(**kw), interp(**kw), [shape], gradgrad=False, gradcheck=False)


def _random_interp_cases(n, seed):
    rng = np.random.default_rng(seed)
    cases = []
    for nd, modes in [(3, ["nearest", "nearest-exact", "linear", "area"]),
                      (4, ["nearest", "nearest-exact", "bilinear", "bicubic", "area"]),
                      (5, ["nearest", "nearest-exact", "trilinear", "area"])]:
        for mode in modes:
            for trial in range(n):
                sp = tuple(int(v) for v in rng.integers(1, 12, nd - 2))
                ac = None if mode in ("nearest", "nearest-exact", "area") else bool(trial % 2)
                if trial % 2:
                    kw = dict(size=tuple(int(v) for v in rng.integers(1, 15, nd - 2)))
                else:
                    sf = tuple(float(v) for v in np.round(rng.uniform(0.3, 3.2, nd - 2), 2))
                    if min(s * f for s, f in zip(sp, sf)) < 1:
                        continue
                    rc = [None, True, False][trial % 3]
                    kw = dict(scale_factor=sf, recompute_scale_factor=rc)
                cases.append(((2, 2) + sp, dict(mode=mode, align_corners=ac, **kw)))
    return cases


def test_interpolate_forward_random_sizes():
    """Many sizes and scale factors: indices and weights exactly as PyTorch picks them."""
    rng = np.random.default_rng(0)
    for shape, kw in _random_interp_cases(8, 1):
        x = rng.standard_normal(shape).astype(np.float32)
        e = F.interpolate(ember.tensor(x), **kw).numpy()
        t = TF.interpolate(torch.from_numpy(x), **kw).numpy()
        assert e.shape == t.shape, (shape, kw)
        np.testing.assert_allclose(e, t, atol=2e-5, rtol=1e-4, err_msg=str((shape, kw)))


def test_interpolate_antialias_random_sizes():
    rng = np.random.default_rng(2)
    for mode in ["bilinear", "bicubic", "lanczos"]:
        for _ in range(12):
            sp = tuple(int(v) for v in rng.integers(2, 24, 2))
            # output width 1 is left out: PyTorch 2.13's CPU kernel repeats the first row
            size = (int(rng.integers(1, 24)), int(rng.integers(2, 24)))
            ac = False if mode == "lanczos" else bool(rng.integers(2))
            x = rng.standard_normal((1, 2) + sp).astype(np.float32)
            kw = dict(size=size, mode=mode, antialias=True, align_corners=ac)
            e = F.interpolate(ember.tensor(x), **kw).numpy()
            t = TF.interpolate(torch.from_numpy(x), **kw).numpy()
            np.testing.assert_allclose(e, t, atol=3e-5, rtol=1e-4, err_msg=str((sp, kw)))


def test_interpolate_uint8_and_int():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 3, 9, 7)).astype(np.uint8)
    for kw in [dict(size=(4, 5), mode="bilinear", antialias=True),
               dict(size=(12, 5), mode="bicubic"), dict(size=(5, 11), mode="nearest")]:
        e = F.interpolate(ember.tensor(x), **kw)
        t = TF.interpolate(torch.from_numpy(x), **kw).numpy()
        assert e.dtype == ember.uint8
        # PyTorch's uint8 kernels use fixed-point weights: allow one unit of rounding
        assert np.abs(e.numpy().astype(int) - t.astype(int)).max() <= 1
    xi = ember.arange(6).reshape(1, 1, 6)
    np.testing.assert_array_equal(F.interpolate(xi, size=3).numpy(), [[[0, 2, 4]]])


def test_interpolate_identity_is_a_copy():
    x = ember.randn(1, 2, 3, 3, requires_grad=True)
    y = F.interpolate(x, size=(3, 3), mode="bilinear")
    assert y is not x and y.grad_fn is not None
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())


def test_upsample_aliases_warn_and_match():
    x = np.random.default_rng(4).standard_normal((1, 2, 3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [(F.upsample(ember.tensor(x), scale_factor=2, mode="bilinear"),
                  TF.upsample(torch.from_numpy(x), scale_factor=2, mode="bilinear")),
                 (F.upsample_nearest(ember.tensor(x), size=(5, 6)),
                  TF.upsample_nearest(torch.from_numpy(x), size=(5, 6))),
                 (F.upsample_bilinear(ember.tensor(x), scale_factor=1.5),
                  TF.upsample_bilinear(torch.from_numpy(x), scale_factor=1.5))]
    for e, t in pairs:
        np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-5, rtol=1e-5)
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample_nearest(ember.tensor(x), scale_factor=2)


X3, X4, X5 = ember.zeros(1, 2, 5), ember.zeros(1, 2, 5, 5), ember.zeros(1, 2, 3, 3, 3)


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: F.interpolate(X4), ValueError, "either size or scale_factor should be defined"),
    (lambda: F.interpolate(X4, size=3, scale_factor=2), ValueError, "only one of size"),
    (lambda: F.interpolate(X4, size=(3, 3, 3)), ValueError,
     "Input and output must have the same number of spatial dimensions"),
    (lambda: F.interpolate(X4, scale_factor=(2, 2, 2)), ValueError,
     "Input and scale_factor must have the same number of spatial dimensions"),
    (lambda: F.interpolate(X4, size=3, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful"),
    (lambda: F.interpolate(X4, size=3, align_corners=True), ValueError,
     "align_corners option can only be set"),
    (lambda: F.interpolate(X3, size=3, mode="bilinear"), NotImplementedError,
     "Got 3D input, but bilinear mode needs 4D input"),
    (lambda: F.interpolate(X4, size=3, mode="linear"), NotImplementedError,
     "Got 4D input, but linear mode needs 3D input"),
    (lambda: F.interpolate(X5, size=3, mode="bicubic"), NotImplementedError,
     r"Only 3D, 4D and 5D input Tensors supported \(got 5D\)"),
    (lambda: F.interpolate(X4, size=3, mode="foo"), NotImplementedError, r"\(got foo\)"),
    (lambda: F.interpolate(X3, size=3, mode="linear", antialias=True), ValueError,
     "Anti-alias option is restricted"),
    (lambda: F.interpolate(X4, size=0), RuntimeError,
     r"greater than 0, but got input \(H: 5, W: 5\) output \(H: 0, W: 0\)"),
    (lambda: F.interpolate(X4, size=3, mode="lanczos"), ValueError,
     "Lanczos mode requires antialias=True"),
    (lambda: F.interpolate(X4, size=(3, 3.0)), TypeError, "expected size to be one of int"),
    (lambda: F.interpolate(ember.zeros(2, 5), size=3), NotImplementedError, r"\(got 2D\)"),
    (lambda: F.interpolate(X4, size=3, mode="area", align_corners=False), ValueError,
     "align_corners option can only be set"),
])
def test_interpolate_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


# --------------------------------------------------------------------------- grid_sample

GS = [(nd, mode, pm, ac) for nd in (4, 5) for mode in ("bilinear", "nearest", "bicubic")
      for pm in ("zeros", "border", "reflection") for ac in (False, True)
      if not (nd == 5 and mode == "bicubic")]


@pytest.mark.parametrize("nd,mode,pm,ac", GS)
def test_grid_sample(nd, mode, pm, ac):
    rng = np.random.default_rng(len(GS) * nd + hash((mode, pm, ac)) % 97)
    sp = (4, 3) if nd == 4 else (3, 2, 3)
    osp = (3, 2) if nd == 4 else (2, 2, 2)
    grid = rng.uniform(-1.4, 1.4, (2,) + osp + (nd - 2,)).astype(np.float32)
    f = (lambda x, g: lib_of(x).grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=ac))
    check_op(f, f, [(2, 3) + sp, grid], gradgrad=False, atol=2e-5)


def test_grid_sample_grads_device(device):
    grid = np.random.default_rng(5).uniform(-1.2, 1.2, (1, 3, 4, 2)).astype(np.float32)
    f = (lambda x, g: lib_of(x).grid_sample(x, g, padding_mode="border", align_corners=False))
    check_op(f, f, [(1, 2, 5, 4), grid], gradgrad=False, device=device)


def test_grid_sample_input_only_and_grid_only():
    grid = np.random.default_rng(6).uniform(-1, 1, (1, 2, 2, 2)).astype(np.float32)
    f = (lambda x, g: lib_of(x).grid_sample(x, g, align_corners=True))
    check_op(f, f, [(1, 2, 3, 3), Const(grid)], gradgrad=False, gradcheck=False)
    x = np.random.default_rng(7).standard_normal((1, 2, 3, 3)).astype(np.float32)
    check_op(lambda g, x: F.grid_sample(x, g, align_corners=True),
             lambda g, x: TF.grid_sample(x, g, align_corners=True), [grid, Const(x)],
             gradgrad=False, gradcheck=False)


def test_grid_sample_identity_grid():
    x = ember.randn(2, 3, 5, 4)
    theta = ember.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2)
    for ac in (False, True):
        g = F.affine_grid(theta, (2, 3, 5, 4), align_corners=ac)
        y = F.grid_sample(x, g, align_corners=ac)
        np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-5)


def test_grid_sample_double_backward_raises():
    x = ember.randn(1, 1, 3, 3, requires_grad=True)
    g = ember.zeros(1, 2, 2, 2).uniform_(-1, 1).requires_grad_()
    y = F.grid_sample(x, g, align_corners=False)
    (gx, gg) = ember.autograd.grad(y.sum(), [x, g], create_graph=True)
    with pytest.raises(RuntimeError, match="double backward"):
        (gg.sum() + gx.sum()).backward()


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: F.grid_sample(X4, ember.zeros(1, 3, 3, 3), align_corners=False), RuntimeError,
     "expected grid to have size 2 in last dimension"),
    (lambda: F.grid_sample(X4, ember.zeros(2, 3, 3, 2), align_corners=False), RuntimeError,
     "expected grid and input to have same batch size"),
    (lambda: F.grid_sample(X4, ember.zeros(1, 3, 3, 2), mode="foo"), ValueError,
     "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"),
    (lambda: F.grid_sample(X4, ember.zeros(1, 3, 3, 2), padding_mode="foo"), ValueError,
     "expected padding_mode to be 'zeros', 'border', or 'reflection'"),
    (lambda: F.grid_sample(X3, ember.zeros(1, 3, 1), align_corners=False), RuntimeError,
     "expected 4D or 5D input"),
    (lambda: F.grid_sample(X5, ember.zeros(1, 2, 2, 2, 3), mode="bicubic",
                           align_corners=False), RuntimeError, "bicubic interpolation only"),
    (lambda: F.grid_sample(X4, ember.zeros(1, 3, 3, 2, dtype=ember.float64),
                           align_corners=False), RuntimeError, "same dtype"),
])
def test_grid_sample_errors(fn, exc, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match):
            fn()


def test_grid_sample_warns_on_default_align_corners():
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(X4, ember.zeros(1, 3, 3, 2))


# --------------------------------------------------------------------------- affine_grid

@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 2, 3, 2, 4)])
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid(size, ac, device):
    shape = (2, 2, 3) if len(size) == 4 else (2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = (lambda th: lib_of(th).affine_grid(th, size, align_corners=ac))
        check_op(f, f, [shape], device=device)


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 3), False), NotImplementedError,
     "affine_grid only supports 4D and 5D sizes"),
    (lambda: F.affine_grid(ember.zeros(1, 3, 3), (1, 1, 3, 3), False), ValueError,
     "Expected a batch of 2D affine matrices of shape Nx2x3"),
    (lambda: F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2, 3, 3), False), ValueError,
     "Expected a batch of 3D affine matrices of shape Nx3x4"),
    (lambda: F.affine_grid(ember.zeros(1, 2, 3, dtype=ember.int32), (1, 1, 3, 3), False),
     ValueError, "Expected theta to have floating point type"),
    (lambda: F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 0, 3), False), ValueError,
     "Expected non-zero, positive output size"),
    (lambda: F.affine_grid(ember.zeros(2, 2, 3), (1, 1, 3, 3), False), RuntimeError,
     "batch"),
])
def test_affine_grid_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


# --------------------------------------------------------------------------- pixel shuffle

@pytest.mark.parametrize("shape,r", [((1, 8, 2, 3), 2), ((2, 9, 2, 2), 3), ((4, 3, 2), 1),
                                     ((2, 1, 18, 2, 1), 3)])
def test_pixel_shuffle(shape, r, device):
    f = (lambda x: lib_of(x).pixel_shuffle(x, r))
    check_op(f, f, [shape], device=device)


@pytest.mark.parametrize("shape,r", [((1, 2, 4, 6), 2), ((2, 1, 6, 3), 3), ((3, 4, 2), 2)])
def test_pixel_unshuffle(shape, r, device):
    f = (lambda x: lib_of(x).pixel_unshuffle(x, r))
    check_op(f, f, [shape], device=device)


def test_pixel_shuffle_roundtrip():
    x = ember.randn(2, 12, 3, 5)
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(),
                                  x.numpy())


@pytest.mark.parametrize("fn,match", [
    (lambda: F.pixel_shuffle(X4, 3), "divisible by the square of upscale_factor"),
    (lambda: F.pixel_shuffle(ember.zeros(5), 2), "at least 3 dimensions"),
    (lambda: F.pixel_shuffle(X4, 0), "positive upscale_factor"),
    (lambda: F.pixel_unshuffle(X4, 2), "height to be divisible by downscale_factor"),
    (lambda: F.pixel_unshuffle(ember.zeros(1, 1, 4, 5), 2), "width to be divisible"),
    (lambda: F.pixel_unshuffle(X4, 0), "positive downscale_factor"),
])
def test_pixel_shuffle_errors(fn, match):
    with pytest.raises(RuntimeError, match=match):
        fn()


@pytest.mark.parametrize("n_out", [457, 131, 900])
def test_interpolate_nearest_long_axis(n_out):
    # more than 256 inputs: the segment-sum backward takes its reduceat path
    f = interp(size=n_out, mode="nearest")
    check_op(f, f, [(1, 2, 300)], gradgrad=False, gradcheck=False)


@pytest.mark.parametrize("shape,kw", [
    ((1, 2, 3, 300), dict(size=(3, 140), mode="bilinear", antialias=True)),
    ((1, 1, 200, 3), dict(size=(450, 3), mode="bicubic")),
    ((1, 2, 400), dict(size=100, mode="linear")),
    ((1, 1, 2, 260, 2), dict(size=(2, 300, 2), mode="trilinear", align_corners=True)),
    ((1, 1, 300, 2), dict(size=(170, 2), mode="area")),
])
def test_interpolate_long_axes_banded(shape, kw):
    # big interpolation matrices are applied on their band only (block GEMMs)
    check_op(interp(**kw), interp(**kw), [shape], gradgrad=False, gradcheck=False)


@pytest.mark.parametrize("shape,kw", [INTERP[1], INTERP[15], INTERP[19], INTERP[24],
                                      INTERP[28]])
def test_interpolate_gradgradcheck(shape, kw):
    # the backward is itself differentiable (in the incoming gradient)
    x = ember.tensor(np.random.default_rng(8).standard_normal(shape), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: F.interpolate(t, **kw), [x])
