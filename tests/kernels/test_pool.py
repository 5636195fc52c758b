"""The compiled 2-D max pool against its reference and torch (values, indices, gradients,
NaN and -inf windows, padding, dilation, ceil_mode, non-contiguous inputs)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

from .test_kernels import DTYPES, compiled, needs_numba

CASES = [  # (H, W, kernel, stride, padding, dilation, ceil_mode)
    (7, 9, (3, 3), (2, 2), (1, 1), (1, 1), False),   # ResNet's stem pool
    (8, 8, (2, 2), (2, 2), (0, 0), (1, 1), False),
    (9, 11, (3, 2), (1, 3), (1, 0), (2, 1), False),
    (10, 7, (3, 3), (2, 2), (0, 1), (1, 1), True),
    (5, 5, (5, 5), (1, 1), (2, 2), (1, 1), False),
    (1, 6, (1, 3), (1, 2), (0, 1), (1, 1), True),
]


def _torch(x, k, s, p, d, ceil):
    t = torch.from_numpy(x).requires_grad_()
    v, i = torch.nn.functional.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    return t, v, i


@needs_numba
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_max_pool2d_kernel_matches_reference_and_torch(dt, case):
    H, W, k, s, p, d, ceil = case
    rng = np.random.default_rng(H * W)
    x = rng.integers(-3, 4, (2, 3, H, W)).astype(dt)  # ties: the first maximum must win
    x[0, 0, 0, :2] = np.nan
    x[1, 2] = -np.inf
    t, tv, ti = _torch(x, k, s, p, d, ceil)
    O = tuple(tv.shape[2:])
    cpu, ref = compiled("max_pool2d")
    v1, i1 = cpu(x, k, s, p, d, O)
    v2, i2 = ref(x, k, s, p, d, O)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(v1, tv.detach().numpy())
    # torch breaks ties its own way (its vectorised loop): indices compared without ties
    xu = rng.permutation(x.size).reshape(x.shape).astype(dt)
    xu[0, 0, 0, :2] = np.nan
    np.testing.assert_array_equal(cpu(xu, k, s, p, d, O)[1], _torch(xu, k, s, p, d, ceil)[2])
    # non-contiguous input (a channel-strided view)
    big = np.repeat(x, 2, axis=1)[:, ::2]
    np.testing.assert_array_equal(cpu(big, k, s, p, d, O)[1], i1)
    g = rng.standard_normal(tv.shape).astype(dt)
    bwd, bref = compiled("max_pool2d_backward")
    gx = bwd(g, i1, (H, W))
    np.testing.assert_allclose(gx, bref(g, i1, (H, W)), rtol=1e-6, atol=1e-6)
    t, tv, ti = _torch(xu, k, s, p, d, ceil)
    tv.backward(torch.from_numpy(g))
    np.testing.assert_allclose(bwd(g, cpu(xu, k, s, p, d, O)[1], (H, W)), t.grad.numpy(),
                               rtol=1e-6, atol=1e-6)


@needs_numba
def test_functional_max_pool2d_grad_and_double_backward_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 13, 12))
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ey, ei = F.max_pool2d(ex, 3, 2, 1, return_indices=True)
    ty, ti = torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    (eg,) = ember.autograd.grad((ey * ey).sum(), ex, create_graph=True)
    (tg,) = torch.autograd.grad((ty * ty).sum(), tx, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    (egg,) = ember.autograd.grad(eg.sum(), ex)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(egg.numpy(), tgg.numpy(), rtol=1e-12)
    # unbatched (C, H, W)
    np.testing.assert_array_equal(F.max_pool2d(ember.from_numpy(x[0]), 2).numpy(),
                                  torch.nn.functional.max_pool2d(torch.from_numpy(x[0]), 2))


def test_bad_input_is_named():
    cpu = compiled("max_pool2d")[0]
    with pytest.raises(ValueError, match="x must be"):
        cpu(np.zeros((2, 3), np.float32), (2, 2), (2, 2), (0, 0), (1, 1), (1, 1))
