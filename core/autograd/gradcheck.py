"""Numerical gradient checks (central differences in float64)."""
from __future__ import annotations

import numpy as np


def _tensors(inputs):
    from .._tensor import Tensor

    return [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]


def _flat_outputs(out):
    from .._tensor import Tensor

    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _numerical_jacobian(fn, inputs, targets, eps):
    """Jacobian blocks J[k][j] of shape (out_k.size, in_j.size) by central differences."""
    from .grad_mode import no_grad

    with no_grad():
        outs0 = _flat_outputs(fn(*inputs))
        jac = [[np.zeros((o.array.size, t.array.size)) for t in targets] for o in outs0]
        for j, t in enumerate(targets):
            arr = t.array
            for i, idx in enumerate(np.ndindex(arr.shape)):
                orig = arr[idx].item()
                arr[idx] = orig + eps
                plus = [np.array(o.array, dtype=np.float64).reshape(-1)
                        for o in _flat_outputs(fn(*inputs))]
                arr[idx] = orig - eps
                minus = [np.array(o.array, dtype=np.float64).reshape(-1)
                         for o in _flat_outputs(fn(*inputs))]
                arr[idx] = orig
                for k in range(len(outs0)):
                    jac[k][j][:, i] = (plus[k] - minus[k]) / (2 * eps)
    return outs0, jac


def _analytical_jacobian(fn, inputs, targets):
    from .._tensor import Tensor
    from . import grad as autograd_grad

    outs = _flat_outputs(fn(*inputs))
    jac = [[np.zeros((o.array.size, t.array.size)) for t in targets] for o in outs]
    for k, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for r in range(o.array.size):
            g = np.zeros(o.array.size, dtype=o.array.dtype)
            g[r] = 1
            grads = autograd_grad([o], targets, [Tensor._make(g.reshape(o.array.shape))],
                                  retain_graph=True, allow_unused=True)
            for j, gj in enumerate(grads):
                if gj is not None:
                    jac[k][j][r, :] = np.asarray(gj.array, dtype=np.float64).reshape(-1)
    return jac


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0):
    """Compare analytical gradients of ``fn`` at ``inputs`` with central differences.

    Inputs that require grad should be float64. Returns True, or raises (or returns False with
    ``raise_exception=False``) naming the output/input pair and the largest difference.
    """
    from .._tensor import Tensor

    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    targets = _tensors(inputs)
    for t in targets:
        if t.dtype != np.float64:
            import warnings

            warnings.warn(f"gradcheck input of dtype {t.dtype} is not float64; the check may "
                          "fail from rounding alone")
    _, num = _numerical_jacobian(fn, inputs, targets, eps)
    ana = _analytical_jacobian(fn, inputs, targets)
    for k in range(len(num)):
        for j in range(len(targets)):
            a, n = ana[k][j], num[k][j]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                diff = np.abs(a - n).max()
                msg = (f"Jacobian mismatch for output {k} with respect to input {j}: max abs "
                       f"difference {diff:.3g}\nnumerical:\n{n}\nanalytical:\n{a}")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, gen_non_contig_grad_outputs=False, seed=0):
    """Check second derivatives: gradcheck of the map (inputs, grad_outputs) -> input grads."""
    from .._tensor import Tensor
    from . import grad as autograd_grad
    from .grad_mode import enable_grad

    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    targets_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _flat_outputs(fn(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [Tensor._make(rng.standard_normal(o.array.shape).astype(o.array.dtype))
                        .requires_grad_(True) for o in outs if o.requires_grad]
    n_in = len(inputs)

    def first_grads(*args):
        xs, gos = args[:n_in], args[n_in:]
        with enable_grad():  # the numerical pass runs under no_grad: this map needs a graph
            os_ = [o for o in _flat_outputs(fn(*xs)) if o.requires_grad]
            tg = [xs[i] for i in targets_idx]
            gs = autograd_grad(os_, tg, list(gos), create_graph=True, allow_unused=True)
        res = []
        for g, t in zip(gs, tg):
            res.append(g if g is not None else t * 0)
        return tuple(res)

    return gradcheck(first_grads, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    pass
