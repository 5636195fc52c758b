"""Write an op test once, run it against PyTorch (forward, backward, double backward) and a
float64 numerical gradcheck, on every backend.

    check_op(lambda x, y: x * y, lambda x, y: x * y, [(3, 4), (4,)])

``inputs`` entries: a shape tuple (random float input, requires grad), a numpy array (used as
is; floats require grad unless ``grad=False``), or ``Const(value)`` (passed to both as is).
"""
from __future__ import annotations

import numpy as np
import torch

import ember


class Const:
    """A non-tensor argument, or a tensor that must not require grad (``Const(array)``)."""

    def __init__(self, value):
        self.value = value


def _make_inputs(specs, dtype, rng, low, high, noncontig):
    arrays = []
    for s in specs:
        if isinstance(s, Const):
            arrays.append(s)
        elif isinstance(s, tuple):
            a = rng.uniform(low, high, size=s).astype(dtype)
            arrays.append(a)
        else:
            arrays.append(np.asarray(s))
    if noncontig:
        out = []
        for a in arrays:
            if isinstance(a, np.ndarray) and a.ndim >= 2:
                # same values, transposed memory: a view that is not C-contiguous
                t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
                out.append(np.swapaxes(t, -1, -2))
            else:
                out.append(a)
        arrays = out
    return arrays


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _to_ember(arrays, device, grad):
    out = []
    for a in arrays:
        if isinstance(a, Const):
            v = a.value
            out.append(ember.tensor(v, device=device) if isinstance(v, np.ndarray) else v)
        else:
            t = ember.from_numpy(a.copy() if not a.flags.c_contiguous else a) if device == "cpu" \
                else ember.tensor(a, device=device)
            if device == "cpu" and not a.flags.c_contiguous:
                t = ember.Tensor._make(a)
            if grad and _is_float(a):
                t.requires_grad_(True)
            out.append(t)
    return out


def _to_torch(arrays, grad):
    out = []
    for a in arrays:
        if isinstance(a, Const):
            v = a.value
            out.append(torch.from_numpy(np.require(v, requirements="C")) if isinstance(v, np.ndarray) else v)
        else:
            t = torch.from_numpy(np.array(a))
            if grad and _is_float(a):
                t.requires_grad_(True)
            out.append(t)
    return out


def _outs(r):
    if isinstance(r, (tuple, list)):
        return list(r)
    return [r]


def _np(x):
    if isinstance(x, ember.Tensor):
        return np.asarray(x.detach().cpu().array if not x.is_cpu else x.detach().array)
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # force: torch's ZeroTensor grads
    return np.asarray(x)


def assert_close(e, t, atol, rtol, what):
    ea, ta = _np(e), _np(t)
    assert ea.shape == ta.shape, f"{what}: shape {ea.shape} != torch {ta.shape}"
    if ta.dtype != np.bool_ and ea.dtype != ta.dtype:
        assert ea.dtype == ta.dtype, f"{what}: dtype {ea.dtype} != torch {ta.dtype}"
    np.testing.assert_allclose(ea.astype(np.float64) if ea.dtype.kind != "b" else ea,
                               ta.astype(np.float64) if ta.dtype.kind != "b" else ta,
                               atol=atol, rtol=rtol, err_msg=what)


def check_op(ember_fn, torch_fn, inputs, *, dtype=np.float32, low=-2.0, high=2.0, grad=True,
             gradgrad=True, gradcheck=True, noncontig=False, atol=1e-5, rtol=1e-4,
             device="cpu", seed=0, check_dtype=True):
    rng = np.random.default_rng(seed)
    arrays = _make_inputs(inputs, dtype, rng, low, high, noncontig)
    has_float = any(_is_float(a) for a in arrays)
    grad = grad and has_float

    ex = _to_ember(arrays, device, grad)
    tx = _to_torch(arrays, grad)
    eo = _outs(ember_fn(*ex))
    to = _outs(torch_fn(*tx))
    assert len(eo) == len(to), f"{len(eo)} outputs, torch gives {len(to)}"
    for i, (e, t) in enumerate(zip(eo, to)):
        if check_dtype and isinstance(t, torch.Tensor):
            tdt = str(t.dtype).replace("torch.", "")
            assert ember.dtypes.name(e.dtype) == tdt, f"output {i}: dtype {e.dtype} != torch {tdt}"
        assert_close(e, t, atol, rtol, f"forward output {i}")
    if not grad:
        return
    e_in = [e for e in ex if isinstance(e, ember.Tensor) and e.requires_grad]
    t_in = [t for t in tx if isinstance(t, torch.Tensor) and t.requires_grad]
    diff = [(e, t) for e, t in zip(eo, to) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not diff:
        return
    g_np = [rng.standard_normal(t.shape).astype(_np(t).dtype) for _, t in diff]
    eg_out = [ember.tensor(g, device=device) for g in g_np]
    tg_out = [torch.from_numpy(g) for g in g_np]
    eg = ember.autograd.grad([e for e, _ in diff], e_in, eg_out, create_graph=gradgrad,
                             allow_unused=True)
    tg = torch.autograd.grad([t for _, t in diff], t_in, tg_out, create_graph=gradgrad,
                             allow_unused=True)
    for i, (e, t) in enumerate(zip(eg, tg)):
        if t is None:
            assert e is None or np.all(_np(e) == 0), f"grad {i}: torch has none"
            continue
        assert e is not None, f"grad {i}: ember returned None, torch has one"
        assert_close(e, t, atol * 10, rtol * 10, f"grad of input {i}")
    if gradgrad:
        pairs = [(e, t) for e, t in zip(eg, tg) if t is not None and t.requires_grad
                 and e is not None and e.requires_grad]
        if pairs:
            v_np = [rng.standard_normal(t.shape).astype(_np(t).dtype) for _, t in pairs]
            es = sum(((e * ember.tensor(v, device=device)).sum() for (e, _), v in zip(pairs, v_np)),
                     ember.tensor(0.0, dtype=pairs[0][0].dtype, device=device))
            ts = sum((t * torch.from_numpy(v)).sum() for (_, t), v in zip(pairs, v_np))
            egg = ember.autograd.grad([es], e_in, allow_unused=True)
            tgg = torch.autograd.grad([ts], t_in, allow_unused=True)
            for i, (e, t) in enumerate(zip(egg, tgg)):
                if t is None:
                    assert e is None or np.allclose(_np(e), 0, atol=atol), \
                        f"double grad {i}: torch has none"
                    continue
                assert e is not None, f"double grad {i}: ember returned None"
                assert_close(e, t, atol * 100, rtol * 100, f"double grad of input {i}")
    if gradcheck and device == "cpu":
        arr64 = [a.astype(np.float64) if _is_float(a) else a for a in arrays]
        x64 = _to_ember(arr64, device, True)
        assert ember.autograd.gradcheck(ember_fn, x64, eps=1e-6, atol=1e-5, rtol=1e-3)
