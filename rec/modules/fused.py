"""Fused sparse optimizers: the table update runs inside backward, on the touched rows only.

``fused_params={"optimizer": "rowwise_adagrad", "lr": 0.05, ...}`` on an embedding collection
registers, on each table's weight, a hook that runs when backward has summed that table's
gradient (row-sparse and coalesced: the distinct ids of the batch and one gradient row
each). The hook updates those rows of the table and of its optimizer state in place and
drops the gradient, so ``.grad`` is never stored and no step is needed: a 10M x 64 table
trains at the cost of the rows the batch touched. The state (``momentum1``, ``momentum2``,
``step``) is registered as buffers of the table's module, so it is in the collection's
``state_dict`` (``embedding_bags.<table>.momentum1``, ...) and training resumes exactly.

The rules, for a touched row ``w`` with gradient ``g`` at update ``t`` (the table's count of
updates, ``step``)::

    sgd               g += wd * w;  w -= lr * g
    adagrad           g += wd * w;  m += g * g;  w -= lr * g / (sqrt(m) + eps)      m: (N, D)
    rowwise_adagrad   g += wd * w;  m += mean(g * g);  w -= lr * g / (sqrt(m) + eps)  m: (N,)
                      (FBGEMM's EXACT_ROWWISE_ADAGRAD: one accumulator per row)
    adam              m1 += (1 - b1) * (g - m1);  m2 += (1 - b2) * (g * g - m2)
                      w *= 1 - lr * wd  (decoupled);  w -= lr * sqrt(1 - b2**t) / (1 - b1**t)
                                                       * m1 / (sqrt(m2) + eps)
                      (lazy Adam: ``torch.optim.SparseAdam``'s formula on the touched rows)

Defaults: ``lr=0.01, eps=1e-8, weight_decay=0, beta1=0.9, beta2=0.999,
initial_accumulator_value=0`` (the adagrads' starting ``m``). ``optimizer`` also takes an
``EmbOptimType``. The learning rates live in ``module.fused_optimizer.param_groups`` (one
group per table), so LR schedulers drive them; ``fused_optimizer.step()`` does nothing (the
update already happened) and exists so training loops that call it keep working.
"""
from __future__ import annotations

import enum

import numpy as np

import ember
from ember import _backend as B
from ember.optim import Optimizer

from ._scratch import buffer

_f32 = np.dtype(np.float32)


class EmbOptimType(enum.Enum):
    SGD = "sgd"
    ADAGRAD = "adagrad"
    ROWWISE_ADAGRAD = "rowwise_adagrad"
    ADAM = "adam"


_ALIASES = {"exact_sgd": "sgd", "exact_adagrad": "adagrad", "exact_rowwise_adagrad":
            "rowwise_adagrad", "exact_row_wise_adagrad": "rowwise_adagrad",
            "row_wise_adagrad": "rowwise_adagrad", "lazy_adam": "adam"}

_DEFAULTS = {"lr": 0.01, "eps": 1e-8, "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.999,
             "initial_accumulator_value": 0.0}


def parse_fused_params(fused_params):
    """``(EmbOptimType, hyper-parameters)`` from a ``fused_params`` dict; unknown keys are
    refused by name."""
    fp = dict(fused_params)
    if "optimizer" not in fp:
        raise ValueError("fused_params: 'optimizer' is required (one of "
                         f"{[m.value for m in EmbOptimType]})")
    opt = fp.pop("optimizer")
    if not isinstance(opt, EmbOptimType):
        name = str(getattr(opt, "name", opt)).lower()
        name = _ALIASES.get(name, name)
        try:
            opt = EmbOptimType(name)
        except ValueError:
            raise ValueError(f"fused_params: unknown optimizer {fused_params['optimizer']!r}; "
                             f"choose one of {[m.value for m in EmbOptimType]}") from None
    if "betas" in fp:
        fp["beta1"], fp["beta2"] = (float(b) for b in fp.pop("betas"))
    unknown = sorted(set(fp) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"fused_params: unknown keys {unknown}; accepted: "
                         f"{['optimizer'] + sorted(_DEFAULTS)} (and 'betas')")
    hp = dict(_DEFAULTS)
    hp.update({k: float(v) for k, v in fp.items()})
    if hp["lr"] < 0 or hp["eps"] < 0 or hp["weight_decay"] < 0:
        raise ValueError(f"fused_params: lr, eps and weight_decay must be >= 0, got {hp}")
    return opt, hp


def state_shapes(opt, num, dim):
    """``{buffer name: shape}`` of the optimizer state of a (num, dim) table."""
    if opt is EmbOptimType.ROWWISE_ADAGRAD:
        return {"momentum1": (num,)}
    if opt is EmbOptimType.ADAGRAD:
        return {"momentum1": (num, dim)}
    if opt is EmbOptimType.ADAM:
        return {"momentum1": (num, dim), "momentum2": (num, dim)}
    return {}


def reset_state(opt, hp, state):
    """Start values of the state arrays (in place)."""
    for name, a in state.items():
        a[...] = hp["initial_accumulator_value"] if name == "momentum1" and opt in (
            EmbOptimType.ADAGRAD, EmbOptimType.ROWWISE_ADAGRAD) else 0


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_CHUNK = 1 << 17  # elements per chunk of an update: the work buffers stay in cache


def apply_update(opt, hp, W, state, rows, g, t):
    """Update rows ``rows`` (unique) of table ``W`` and of ``state`` in place with their
    gradient ``g`` (len(rows), D) at update number ``t`` (>= 1).

    On numpy float32/float64 tables the ``sparse_row_update`` kernel updates the rows in
    place. Otherwise (fp16 tables, cupy) the rows go in chunks of ~128K elements: each
    chunk's rows of the table and of the state are gathered into reused buffers
    (``_scratch``), updated there (Adam with the ``adam_step`` kernel) and written back."""
    n = rows.shape[0]
    if n == 0:
        return
    hp = {k: float(hp[k]) for k in _DEFAULTS}
    if type(W) is np.ndarray and W.dtype in _KERNEL_DTYPES and g.dtype == W.dtype and all(
            a.dtype == W.dtype for a in state.values()):
        # ember.kernels' sparse_row_update: each touched row of the table and its state
        # read and written in place, once (the compiled kernel; its numpy reference in
        # EMBER_KERNELS=numpy mode)
        from ember import kernels

        kernels.get("sparse_row_update", W)(opt.value, W, state, rows, g, dict(hp, t=t))
        return
    if type(W) is not np.ndarray:
        _update_rows(opt, hp, W, state, rows, g, t, False)
        return
    step = max(1, _CHUNK // max(1, W.shape[1]))
    for c0 in range(0, n, step):
        _update_rows(opt, hp, W, state, rows[c0:c0 + step], g[c0:c0 + step], t, True)


def _take(src, rows, name, reuse):
    if reuse:
        out = buffer(name, (rows.shape[0],) + src.shape[1:], src.dtype)
        return np.take(src, rows, axis=0, out=out)
    return src.take(rows, axis=0)


def _update_rows(opt, hp, W, state, rows, g, t, reuse):
    xp = B.namespace(W)
    lr, eps, wd = hp["lr"], hp["eps"], hp["weight_decay"]
    w = _take(W, rows, "fused_w", reuse)
    low = w.dtype != _f32 and w.dtype.itemsize < 4      # fp16 tables: compute in float32
    if low:
        w = w.astype(_f32)
    dt = w.dtype
    g = g.astype(dt, copy=False)
    if not g.flags.c_contiguous:
        g = xp.ascontiguousarray(g)
    if opt is EmbOptimType.ADAM:
        b1, b2 = hp["beta1"], hp["beta2"]
        m = _take(state["momentum1"], rows, "fused_m", reuse)
        v = _take(state["momentum2"], rows, "fused_v", reuse)
        k = -lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
        # ember.kernels' Adam step with eps unscaled and no decay of the gradient: the
        # SparseAdam formula, decoupled weight decay (see the module docstring)
        _adam_kernel(w)([((w, g, m, v), (1.0 - lr * wd, 0.0, False, 1.0 - b1, b2, 1.0 - b2,
                                         eps, k))])
        state["momentum1"][rows] = m
        state["momentum2"][rows] = v
    else:
        if wd:
            g = g + dt.type(wd) * w
        if opt is EmbOptimType.SGD:
            u = xp.multiply(g, dt.type(lr), out=_tmp(g, reuse))
        elif opt is EmbOptimType.ADAGRAD:
            m = _take(state["momentum1"], rows, "fused_m", reuse)
            u = xp.multiply(g, g, out=_tmp(g, reuse))
            m += u
            state["momentum1"][rows] = m
            xp.sqrt(m, out=u)
            u += dt.type(eps)
            xp.divide(g, u, out=u)
            u *= dt.type(lr)
        else:  # rowwise adagrad: one accumulator per row
            M = state["momentum1"]
            m = M.take(rows)
            m += (xp.einsum("nd,nd->n", g, g) / g.shape[1]).astype(M.dtype, copy=False)
            M[rows] = m
            s = (lr / (xp.sqrt(m) + eps)).astype(dt, copy=False)
            u = xp.multiply(g, s[:, None], out=_tmp(g, reuse))
        w -= u
    W[rows] = w.astype(W.dtype) if low else w


def _tmp(like, reuse):
    if reuse:
        return buffer("fused_u", like.shape, like.dtype)
    return B.namespace(like).empty_like(like)


def _adam_kernel(a):
    from ember import kernels

    return kernels.get("adam_step", a)


def grad_rows(g):
    """``(rows, values)`` of a table gradient: a coalesced RowSparseGrad's, or the nonzero
    rows of a dense one."""
    if getattr(g, "is_sparse", False):
        c = g.coalesce()
        return c.indices, c.values
    a = g.array
    xp = B.namespace(a)
    rows = xp.flatnonzero((a != 0).any(axis=1))
    return rows, a.take(rows, axis=0)


class FusedOptimizer(Optimizer):
    """The fused optimizer's view for training loops and LR schedulers: one param group per
    table (``group["name"]`` is the table's name) holding its hyper-parameters. The update
    itself runs in backward; ``step()`` only evaluates the closure. The state lives in the
    module's buffers (see the module docstring)."""

    def __init__(self, tables, optimizer_type, hparams):
        hp = dict(hparams, optimizer=EmbOptimType(optimizer_type).value)
        groups = [dict(params=[w], name=name, **hp) for name, w in tables]
        super().__init__(groups, hp)

    @property
    def optimizer_type(self):
        return EmbOptimType(self.defaults["optimizer"])

    def step(self, closure=None):
        if closure is None:
            return None
        with ember.enable_grad():
            return closure()

    def __repr__(self):
        return (f"FusedOptimizer({self.optimizer_type.value}, tables="
                f"{[g['name'] for g in self.param_groups]}, lr="
                f"{[g['lr'] for g in self.param_groups]})")


def attach(tables, fused_params):
    """Make ``tables`` (``[(name, table module)]``) train with a fused optimizer: register
    the state buffers on each table's module and the update hook on its weight. Returns
    the ``FusedOptimizer``."""
    opt, hp = parse_fused_params(fused_params)
    fo = FusedOptimizer([(name, m.weight) for name, m in tables], opt, hp)
    for name, m in tables:
        w = m.weight
        num, dim = w.shape
        dev = w.device
        for sname, shape in state_shapes(opt, num, dim).items():
            m.register_buffer(sname, ember.zeros(shape, dtype=ember.float32, device=dev))
        m.register_buffer("step", ember.zeros((), dtype=ember.int64, device=dev))
        if dev.type != "meta":
            reset_state(opt, hp, {k: m._buffers[k].array
                                  for k in state_shapes(opt, num, dim)})
    _register_hooks(fo, tables)
    return fo


def rebind(fo, tables):
    """A ``FusedOptimizer`` like ``fo`` (same hyper-parameters per table, e.g. a scheduled
    lr) for ``tables`` whose state buffers already exist: a copied module's."""
    hp = {k: v for k, v in fo.defaults.items() if k != "optimizer"}
    new = FusedOptimizer([(name, m.weight) for name, m in tables], fo.optimizer_type, hp)
    for g_new, g_old in zip(new.param_groups, fo.param_groups):
        g_new.update({k: v for k, v in g_old.items() if k != "params"})
    _register_hooks(new, tables)
    return new


def _register_hooks(fo, tables):
    for i, (name, m) in enumerate(tables):
        m.weight.register_post_accumulate_grad_hook(_hook(fo, i, m, fo.optimizer_type))


def _hook(fo, index, table, opt):
    names = None

    def hook(p):
        nonlocal names
        g = p.grad
        p.grad = None
        if g is None:
            return
        rows, vals = grad_rows(g)
        step = table._buffers["step"]
        step.array[...] += 1
        if names is None:
            names = list(state_shapes(opt, *p.shape))
        state = {k: table._buffers[k].array for k in names}
        apply_update(opt, fo.param_groups[index], p.array, state, rows, vals,
                     int(step.array))
        p._bump()
    return hook


def reset(fo, tables):
    """Zero every table's optimizer state and step (after ``to_empty`` or re-init)."""
    for i, (name, m) in enumerate(tables):
        names = state_shapes(fo.optimizer_type, *m.weight.shape)
        reset_state(fo.optimizer_type, fo.param_groups[i], {k: m._buffers[k].array
                                                              for k in names})
        m._buffers["step"].array[...] = 0
