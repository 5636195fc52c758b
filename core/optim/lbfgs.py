"""``LBFGS``: limited-memory BFGS (Nocedal, 1980) with an optional strong-Wolfe line search.

PyTorch's algorithm (after minFunc). All parameters form one flat vector ``x`` with flat
gradient ``g``; ``step(closure)`` runs up to ``max_iter`` iterations of::

    d = -H g          # two-loop recursion over the last ``history_size`` pairs (s, y),
                      # with H0 = H_diag = (y . s) / (y . y) of the newest pair
    t = lr            # min(1, 1 / |g|_1) * lr on the very first iteration
    x += t d          # or t from the strong-Wolfe line search (cubic interpolation)

and stops early on ``max |g| <= tolerance_grad``, ``max |t d| <= tolerance_change``, a loss
change below ``tolerance_change``, or ``max_eval`` closure calls. A pair (s, y) is kept only
when ``y . s > 1e-10``.

Rounding follows torch's CPU kernels, so float32 runs take torch's path rather than drift from
it: a value torch keeps as a 0-d tensor (``t`` after a line search, ``H_diag``, ``ro``, ``al``,
the dot products) is a numpy scalar of the parameters' dtype here, a Python number stays one,
and the updates ``x += t d`` and the two-loop ``q += a v`` round once per element (torch's
fused multiply-add; float32 goes through one reused float64 work vector). What remains are
torch's own 1-ulp quirks (its float32 ``sqrt`` is not correctly rounded; MKL's dot sums in
another order). The state dict stores the 0-d values as 0-d Tensors and the rest
(``n_iter``, ``func_evals``, ``prev_loss``, a plain ``t``) as Python numbers, in torch's layout
(all under the first parameter's index).

    >>> import ember
    >>> x = ember.tensor([3.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((x - 1.0) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure); [round(v, 4) for v in x.tolist()]
    [1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from .. import _backend as B
from .._tensor import Tensor
from ._util import check_lr, scalar
from .optimizer import Optimizer, _cast

__all__ = ["LBFGS"]

_LIST_KEYS = ("old_dirs", "old_stps", "ro", "al")


def _host(x):
    """A reduction's result as a numpy scalar of its dtype (what torch keeps as a 0-d tensor)."""
    if isinstance(x, np.generic):
        return x
    if isinstance(x, np.ndarray):
        return x[()]
    return x.get()[()]  # a 0-d cupy array


def _as(x, c):
    """The constant ``c`` rounded to ``x``'s dtype when ``x`` is a (torch 0-d tensor-like)
    numpy scalar: torch compares a float32 tensor with a Python float in float32."""
    return x.dtype.type(c) if isinstance(x, np.generic) else c


def _alpha(y, a):
    """The multiplier ``a`` as torch's CPU kernels use it for ``y``'s dtype: float32 for
    float32 and half types (their compute type), float64 for float64."""
    return float(np.float32(a)) if y.dtype.itemsize < 8 else float(a)


def _axpy(xp, y, x, a, wide):
    """``y += a * x`` in place with a single rounding per element, as torch's
    ``y.add_(x, alpha=a)`` (a fused multiply-add on CPU): for float32 and half types the
    product and sum run exactly in the float64 work vector ``wide``, then round once to
    ``y``'s dtype. float64 rounds twice (no wider type); it agrees with torch to ~1e-16."""
    xp.multiply(x, _alpha(y, a), out=wide, dtype=wide.dtype)
    if y.dtype.itemsize < 8:
        xp.add(y, wide, out=wide)
        xp.copyto(y, wide, casting="same_kind")
    else:
        y += wide


def _rdiv(a, b):
    """``a / b`` as torch computes a Python number over a 0-d tensor: ``b.reciprocal() * a``
    (two roundings); an ordinary division otherwise."""
    if isinstance(b, np.generic) and not isinstance(a, np.generic):
        return np.reciprocal(b) * a
    return a / b


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
    ``bounds`` (default: the interval between x1 and x2); its midpoint when the cubic has no
    real minimiser."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - _rdiv(3 * (f1 - f2), x1 - x2)
    d2_square = d1 * d1 - g1 * g2  # not d1 ** 2: numpy's float32 scalar power can be 1 ulp off
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(xp, obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search along ``d`` from step ``t`` for a point meeting the strong Wolfe
    conditions (sufficient decrease ``c1``, curvature ``c2``): bracketing, then zoom by
    cubic interpolation. Returns ``(loss, flat_grad, t, evaluations)``."""
    d_norm = _host(xp.abs(d).max())
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = _host(xp.dot(g_new, d))

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    # bracketing phase: grow t until an interval holds a point meeting the conditions
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = _host(xp.dot(g_new, d))
        ls_iter += 1

    if ls_iter >= max_ls:  # budget spent: the best of the start and the last trial
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom phase: shrink the bracket until a point meets the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # keep away from the bracket's ends: a trial there makes little progress
        hi_b, lo_b = max(bracket), min(bracket)
        eps = 0.1 * (hi_b - lo_b)
        if min(hi_b - t, t - lo_b) < eps:
            if insuf_progress or t >= hi_b or t <= lo_b:
                t = hi_b - eps if abs(t - hi_b) < abs(t - lo_b) else lo_b + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = _host(xp.dot(g_new, d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS. ``lr=1, max_iter=20, max_eval=max_iter * 5 // 4, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None`` (or ``"strong_wolfe"``).

    One parameter group only; ``step(closure)`` needs a closure that clears the gradients,
    computes the loss, calls ``backward()`` and returns the loss (it is called several times
    per step). Complex parameters are optimised as pairs of reals. Memory: about
    ``2 * history_size + 3`` flat copies of the parameters plus one float64 work vector.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        check_lr(lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError("LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if not (isinstance(history_size, int) and history_size >= 1):
            raise ValueError(f"Invalid history_size value: {history_size} (expected an int "
                             ">= 1)")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._wide_buf = None

    @property
    def _params(self):
        return self.param_groups[0]["params"]

    def __setstate__(self, state):
        super().__setstate__(state)
        self._wide_buf = None

    def add_param_group(self, param_group):
        if getattr(self, "param_groups", None):
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # -- the flat view of all parameters ------------------------------------------------------
    @staticmethod
    def _real(a):
        """``a`` itself, or a complex array as reals with a trailing axis of 2 (in place)."""
        if a.dtype.kind != "c":
            return a
        if not a.flags.c_contiguous:
            raise RuntimeError("LBFGS: a complex parameter must be C-contiguous")
        return a.reshape(-1).view(a.real.dtype).reshape(a.shape + (2,))

    def _xp(self):
        return B.namespace(self._params[0].array)

    def _gather_flat_grad(self):
        xp = self._xp()
        views = []
        for p in self._params:
            g = p.grad
            a = p.array
            if g is None:
                v = xp.zeros(a.size * (2 if a.dtype.kind == "c" else 1), a.real.dtype)
            else:
                v = (g.to_dense() if g.is_sparse else g).array.reshape(-1)
                if v.dtype.kind == "c":
                    v = xp.stack((v.real, v.imag), -1).reshape(-1)
            views.append(v)
        return xp.concatenate(views)

    def _wide(self, d):
        """The reused float64 work vector, one element per entry of the flat vector ``d``."""
        xp = self._xp()
        buf = self._wide_buf
        if buf is None or buf.shape != d.shape or B.namespace(buf) is not xp:
            buf = self._wide_buf = xp.empty(d.shape, np.float64)
        return buf

    def _add_grad(self, t, d):
        """``x += t * d`` over the parameters, rounded once per element (see ``_axpy``)."""
        xp = self._xp()
        sizes = [p.array.size * (2 if p.array.dtype.kind == "c" else 1) for p in self._params]
        if sum(sizes) != d.size:
            raise RuntimeError(f"LBFGS: the parameters hold {sum(sizes)} elements but the "
                               f"search direction has {d.size}; were parameters resized "
                               "during optimisation?")
        buf = self._wide(d)
        xp.multiply(d, _alpha(d, t), out=buf, dtype=buf.dtype)
        off = 0
        for p in self._params:
            a = self._real(p.array)
            n = a.size
            seg = buf[off:off + n].reshape(a.shape)
            if a.dtype.itemsize < 8:
                xp.add(a, seg, out=seg)
                xp.copyto(a, seg, casting="same_kind")
            else:
                a += seg
            off += n
            p._bump()

    def _set_param(self, arrays):
        xp = self._xp()
        for p, a in zip(self._params, arrays):
            xp.copyto(p.array, a)
            p._bump()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(self._closure(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # -- state conversions: Tensors in the state dict, arrays and scalars while stepping ------
    @staticmethod
    def _unwrap(v):
        if isinstance(v, Tensor):
            return _host(v.array) if v.array.ndim == 0 else v.array
        return v

    def _wrap(self, v, old=None):
        if isinstance(old, Tensor) and v is old.array:
            return old
        if isinstance(v, np.generic):
            return Tensor._make(self._xp().asarray(np.array(v)))
        if v is not None and not isinstance(v, (int, float)):
            return Tensor._make(v)
        return v

    def _wrap_list(self, values, old):
        if values is None:
            return None
        by_id = {id(o.array): o for o in (old or ()) if isinstance(o, Tensor)}
        return [by_id[id(v)] if id(v) in by_id else self._wrap(v) for v in values]

    def _fix_loaded_state(self):
        super()._fix_loaded_state()
        p0 = self._params[0]
        st = self.state.get(p0)
        if st:
            for key in _LIST_KEYS:
                if isinstance(st.get(key), (list, tuple)):
                    st[key] = [_cast(p0, v) for v in st[key]]
        self._wide_buf = None

    # -- the step ----------------------------------------------------------------------------
    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first
        ``closure()`` call (before any update)."""
        if not callable(closure):
            raise TypeError("LBFGS.step() needs a closure: a function that clears the "
                            "gradients, computes the loss, calls backward() and returns the "
                            f"loss; got {type(closure).__name__}")
        group = self.param_groups[0]
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        with np.errstate(all="ignore"):  # torch's inf/nan arithmetic does not warn either
            return self._step(closure, group)

    def _step(self, closure, group):
        xp = self._xp()
        lr = scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        gmax = _host(xp.abs(flat_grad).max())
        if gmax <= _as(gmax, tolerance_grad):
            return orig_loss

        un = self._unwrap
        d, t = un(state.get("d")), un(state.get("t"))
        old_dirs = [un(v) for v in state["old_dirs"]] if "old_dirs" in state else None
        old_stps = [un(v) for v in state["old_stps"]] if "old_stps" in state else None
        ro = [un(v) for v in state["ro"]] if "ro" in state else None
        al = [un(v) for v in state["al"]] if "al" in state else None
        H_diag = un(state.get("H_diag"))
        prev_flat_grad = un(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the search direction
            if state["n_iter"] == 1:
                d = xp.negative(flat_grad)
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _host(xp.dot(y, s))
                if ys > _as(ys, 1e-10):  # keep only pairs with positive curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _host(xp.dot(y, y))
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = None  # torch creates it here: keep its place in the dict
                    al = [None] * history_size
                wide = self._wide(flat_grad)
                # two-loop recursion: q = -g through the history, then r = H_diag * q back
                q = xp.negative(flat_grad)
                for i in range(num_old - 1, -1, -1):
                    al[i] = _host(xp.dot(old_stps[i], q)) * ro[i]
                    _axpy(xp, q, old_dirs[i], -al[i], wide)
                xp.multiply(q, H_diag, out=q)
                d = r = q
                for i in range(num_old):
                    be_i = _host(xp.dot(old_dirs[i], r)) * ro[i]
                    _axpy(xp, r, old_stps[i], al[i] - be_i, wide)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                xp.copyto(prev_flat_grad, flat_grad)
            prev_loss = loss

            # the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / _host(xp.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = _host(xp.dot(flat_grad, d))  # directional derivative
            if gtd > _as(gtd, -tolerance_change):
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [p.array.copy() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    xp, obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                gmax = _host(xp.abs(flat_grad).max())
                opt_cond = gmax <= _as(gmax, tolerance_grad)
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate, except after the last iteration
                    loss = float(self._closure(closure))
                    flat_grad = self._gather_flat_grad()
                    gmax = _host(xp.abs(flat_grad).max())
                    opt_cond = gmax <= _as(gmax, tolerance_grad)
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # stopping conditions
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            dmax = _host(xp.abs(d * t).max())
            if dmax <= _as(dmax, tolerance_change):
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        if al is not None:
            state["al"] = [self._wrap(v) for v in al]
        state["d"] = self._wrap(d, state.get("d"))
        state["t"] = self._wrap(t)
        state["old_dirs"] = self._wrap_list(old_dirs, state.get("old_dirs"))
        state["old_stps"] = self._wrap_list(old_stps, state.get("old_stps"))
        state["ro"] = [self._wrap(v) for v in ro] if ro is not None else None
        state["H_diag"] = self._wrap(H_diag)
        state["prev_flat_grad"] = self._wrap(prev_flat_grad, state.get("prev_flat_grad"))
        state["prev_loss"] = prev_loss
        return orig_loss
