"""Fused SGD step kernel against its numpy reference (float32/float64, odd sizes, every
option, non-contiguous and float16 falling back, complex as real views), the reference
against torch.optim.SGD, and ``ember.optim.SGD`` taking the kernel."""
import importlib.util
import itertools

import numpy as np
import pytest
import torch

import ember
from ember import kernels

needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None,
    reason="numba is not installed: only the numpy references can be tested")

TOL = {np.float32: dict(rtol=2e-6, atol=2e-7), np.float64: dict(rtol=1e-13, atol=1e-15)}
OPTIONS = list(itertools.product([0.0, 0.9], [0.0, 0.01], [False, True], [False, True],
                                 [0.0, 0.3]))  # momentum, wd, nesterov, maximize, dampening


def _valid(mom, nest, damp):
    return not (nest and (mom == 0 or damp != 0))


def _jobs(shapes, dt, mom, wd, nest, maximize, damp, first, seed):
    rng = np.random.default_rng(seed)
    jobs = []
    for s in shapes:
        arrays = (rng.standard_normal(s).astype(dt), rng.standard_normal(s).astype(dt))
        if mom:
            arrays += (rng.standard_normal(s).astype(dt),)
        jobs.append((arrays, (wd, maximize, 0.1, mom, 1.0 - damp, nest, first)))
    return jobs


def _copy(jobs):
    return [(tuple(a.copy() for a in arrays), h) for arrays, h in jobs]


@needs_numba
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("mom,wd,nest,maximize,damp", OPTIONS)
def test_sgd_step_matches_reference(dt, mom, wd, nest, maximize, damp):
    if not _valid(mom, nest, damp):
        pytest.skip("nesterov needs momentum and no dampening")
    k = kernels.lookup("sgd_step")
    assert k.cpu is not k.reference
    for first in (True, False):
        jobs = _jobs([(1,), (7, 13), (65536 * 2 + 3,)], dt, mom, wd, nest, maximize, damp,
                     first, seed=int(first))
        ref = _copy(jobs)
        before = _copy(jobs)
        k.cpu(jobs)
        k.reference(ref)
        for (a, _), (b, _) in zip(jobs, ref):
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, **TOL[dt])
        for (a, _), (b, _) in zip(jobs, before):
            assert not np.array_equal(a[0], b[0])  # every parameter was updated


@needs_numba
def test_sgd_step_fallbacks_noncontiguous_float16_complex():
    k = kernels.lookup("sgd_step")
    rng = np.random.default_rng(2)
    big = rng.standard_normal((6, 10))
    p = big[:, ::2]                                   # non-contiguous: the reference
    g, b = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    h = (0.01, False, 0.1, 0.9, 1.0, True, False)
    want = [x.copy() for x in (p, g, b)]
    k.reference([(tuple(want), h)])
    k.cpu([((p, g, b), h)])
    np.testing.assert_allclose(p, want[0], rtol=1e-13)
    np.testing.assert_allclose(b, want[2], rtol=1e-13)
    p16, g16 = np.ones(5, np.float16), np.ones(5, np.float16)
    k.cpu([((p16, g16), (0.0, False, 0.5, 0.0, 1.0, False, False))])
    assert p16.dtype == np.float16 and (p16 == 0.5).all()
    pc = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    gc = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    want = pc - np.complex64(0.1) * gc
    k.cpu([((pc, gc), (0.0, False, 0.1, 0.0, 1.0, False, False))])
    np.testing.assert_allclose(pc, want, rtol=1e-6)


@pytest.mark.parametrize("mom,wd,nest,maximize,damp", OPTIONS)
def test_sgd_reference_matches_torch(mom, wd, nest, maximize, damp):
    if not _valid(mom, nest, damp):
        pytest.skip("nesterov needs momentum and no dampening")
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(11)
    grads = [rng.standard_normal(11) for _ in range(3)]
    tp = torch.from_numpy(p0.copy()).requires_grad_()
    opt = torch.optim.SGD([tp], lr=0.1, momentum=mom, dampening=damp, weight_decay=wd,
                          nesterov=nest, maximize=maximize)
    p, b = p0.copy(), np.zeros(11)
    for i, g in enumerate(grads):
        tp.grad = torch.from_numpy(g.copy())
        opt.step()
        arrays = (p, g.copy()) + ((b,) if mom else ())
        kernels.lookup("sgd_step").reference([(arrays, (wd, maximize, 0.1, mom, 1.0 - damp,
                                                         nest, i == 0))])
    np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-13, atol=1e-15)


@needs_numba
def test_optim_sgd_uses_kernel(monkeypatch):
    calls = []
    k = kernels.lookup("sgd_step")
    orig = k.cpu
    monkeypatch.setattr(k, "cpu", lambda jobs: (calls.append(len(jobs)), orig(jobs))[1])
    w = ember.tensor(np.ones(5, np.float32), requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.5, momentum=0.9, nesterov=True, weight_decay=0.1)
    tw = torch.ones(5, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.5, momentum=0.9, nesterov=True, weight_decay=0.1)
    for _ in range(3):
        w.grad = ember.ones(5)
        tw.grad = torch.ones(5)
        opt.step()
        topt.step()
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-6)
    assert calls == [1, 1, 1]
