"""Steps run in place: same buffers every step, no arrays allocated in the steady state, no
autograd graph, version counters bumped; the chunked/threaded paths agree with torch."""
import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.optim
from ember import _fused

DENSE = [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
         ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
         ("AdamW", dict(lr=0.01)),
         ("Adamax", dict(lr=0.01, weight_decay=0.1)),
         ("NAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
         ("RAdam", dict(lr=0.01, weight_decay=0.1)),
         ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
         ("Adagrad", dict(lr=0.1, weight_decay=0.1))]


def _ptr(t):
    return t.array.ctypes.data


@pytest.mark.parametrize("name,kw", DENSE, ids=[d[0] for d in DENSE])
def test_same_buffers_every_step(name, kw):
    rng = np.random.default_rng(0)
    ps = [ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
          for s in [(40, 30), (30,), ()]]
    for p in ps:
        p.grad = ember.tensor(rng.standard_normal(p.shape).astype(np.float32))
    opt = getattr(ember.optim, name)(ps, **kw)
    opt.step()
    opt.step()
    before = [(_ptr(p), [(k, _ptr(v)) for k, v in opt.state[p].items()
                         if isinstance(v, ember.Tensor)]) for p in ps]
    versions = [p._version_count for p in ps]
    for _ in range(3):
        opt.step()
    after = [(_ptr(p), [(k, _ptr(v)) for k, v in opt.state[p].items()
                        if isinstance(v, ember.Tensor)]) for p in ps]
    assert before == after
    assert [p._version_count for p in ps] == [v + 3 for v in versions]
    for p in ps:
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


@pytest.mark.parametrize("shape,name", [((600, 500), "Adam"), ((200, 100), "Adam"),
                                        ((600, 500), "RMSprop"), ((300, 200), "SGD")])
def test_no_allocation_in_steady_state(shape, name):
    """10 steps after warm-up allocate (nearly) nothing: the parameter is 1.2 MB at most, a
    single temporary array the size of a chunk (128 KB) would show."""
    rng = np.random.default_rng(0)
    p = ember.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    p.grad = ember.tensor(rng.standard_normal(shape).astype(np.float32))
    kw = dict(momentum=0.9, centered=True) if name == "RMSprop" else \
        dict(momentum=0.9) if name == "SGD" else {}
    opt = getattr(ember.optim, name)([p], lr=1e-3, **kw)
    for _ in range(3):
        opt.step()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before = tracemalloc.take_snapshot()
        for _ in range(10):
            opt.step()
        cur, peak = tracemalloc.get_traced_memory()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # numpy reports its array buffers in its own tracemalloc domain: none may be left over
    domain = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    grown = sum(d.size_diff for d in after.filter_traces(domain).compare_to(
        before.filter_traces(domain), "filename"))
    assert grown == 0
    # and none was made in between: the peak stays far below one chunk-sized array (128 KB);
    # what remains is Python's small-object churn (views, tuples, futures)
    assert peak - base < 65536


def test_threaded_and_strided_paths_match_torch():
    """A parameter large enough for the threaded path, with a transposed (non-contiguous)
    gradient as a Linear weight's is, and a 0-d parameter."""
    assert _fused.num_threads() >= 1
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((700, 500)).astype(np.float32)
    s0 = np.float32(0.5)
    we = ember.tensor(w0.copy(), requires_grad=True)
    se = ember.tensor(s0, requires_grad=True)
    wt = torch.tensor(w0.copy(), requires_grad=True)
    st = torch.tensor(s0, requires_grad=True)
    oe = ember.optim.Adam([we, se], lr=0.01, weight_decay=0.1)
    ot = torch.optim.Adam([wt, st], lr=0.01, weight_decay=0.1)
    for i in range(4):
        g = rng.standard_normal((500, 700)).astype(np.float32).T
        assert not g.flags.c_contiguous
        we.grad = ember.Tensor._make(g)
        wt.grad = torch.tensor(np.ascontiguousarray(g))
        se.grad = ember.tensor(np.float32(i - 1.5))
        st.grad = torch.tensor(np.float32(i - 1.5))
        oe.step()
        ot.step()
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(se.detach().numpy(), st.detach().numpy(), atol=1e-6)


def test_single_thread_setting_gives_same_result():
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal(300_000).astype(np.float32)
    g = rng.standard_normal(300_000).astype(np.float32)
    out = []
    old = _fused.num_threads()
    try:
        for n in (1, 2):
            _fused.set_num_threads(n)
            w = ember.tensor(w0.copy(), requires_grad=True)
            w.grad = ember.tensor(g)
            opt = ember.optim.AdamW([w], lr=0.01)
            opt.step()
            opt.step()
            out.append(w.detach().numpy().copy())
    finally:
        _fused.set_num_threads(old)
    np.testing.assert_array_equal(out[0], out[1])
    with pytest.raises(ValueError, match="n must be >= 1"):
        _fused.set_num_threads(0)


def test_float64_params_stay_float64_and_float32_state_is_float32():
    for dt in (ember.float32, ember.float64):
        w = ember.ones(5, dtype=dt, requires_grad=True)
        w.grad = ember.ones(5, dtype=dt)
        opt = ember.optim.NAdam([w], weight_decay=0.1)
        opt.step()
        assert w.dtype == dt
        assert all(v.dtype == dt for k, v in opt.state[w].items()
                   if k not in ("step", "mu_product"))
        assert opt.state[w]["step"].dtype == ember.float32


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("RMSprop", dict(lr=0.01, centered=True)),
                                     ("Adagrad", dict(lr=0.1))])
def test_device_matches_cpu(device, name, kw):
    """The same steps on ``device`` (cupy under -m cuda) as on the CPU, sparse rows included."""
    from ember.sparse import RowSparseGrad

    rng = np.random.default_rng(4)
    w0 = rng.standard_normal((50, 40)).astype(np.float32)
    grads = [rng.standard_normal((50, 40)).astype(np.float32) for _ in range(3)]
    out = []
    for dev in ("cpu", device):
        w = ember.tensor(w0, device=dev, requires_grad=True)
        opt = getattr(ember.optim, name)([w], **kw)
        for g in grads:
            w.grad = ember.tensor(g, device=dev)
            opt.step()
        if name in ("SGD", "Adagrad"):
            ids = np.array([3, 7, 3])
            vals = ember.tensor(grads[0][:3], device=dev).array
            idx = ember.tensor(ids, device=dev).array
            w.grad = RowSparseGrad(idx, vals, (50, 40))
            opt.step()
        out.append(w.detach().cpu().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_threaded_step_works_in_a_forked_child():
    import os

    w = ember.ones(400_000, requires_grad=True)
    w.grad = ember.ones(400_000)
    opt = ember.optim.SGD([w], lr=0.25)
    opt.step()  # the parent's thread pool exists now
    pid = os.fork()
    if pid == 0:  # the child: its copy of the pool has no threads
        ok = False
        try:
            opt.step()
            ok = float(w[0]) == 0.5 and float(w[-1]) == 0.5
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert float(w[0]) == 0.75
