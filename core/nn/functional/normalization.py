"""Normalization: batch/instance/layer/group/RMS norms, local response norm, ``normalize``.

The four statistics norms share one fused op, ``_norm``: the input is viewed so that the
statistics run over ``axes`` and the affine parameters broadcast over it (batch norm: x as
(N, C, S), stats over (0, 2), weight (1, C, 1); layer norm: (M, K), stats over 1, weight
(1, K); group norm: (N, G, C/G, S), stats over (2, 3), weight (1, G, C/G, 1)). It records one
node whose backward works on raw arrays when no graph is being built (the hot path of every
training step) and is written with ember ops under ``create_graph`` (double backward).

Backward of y = xhat * w + b, xhat = (x - mean) * invstd, over the M elements of each
statistics group (gxh = g * w):

    dx = invstd * (gxh - mean(gxh) - xhat * mean(gxh * xhat))   (batch statistics)
    dx = invstd * gxh                                           (running statistics)
    dw = sum(g * xhat), db = sum(g)                             (over the broadcast dims)

RMS norm is the same with ``mean`` taken as 0 (no centring, no ``mean(gxh)`` term).
"""
from __future__ import annotations

import numbers

import numpy as np

from ... import _backend as B
from ..._parallel import PARALLEL_MIN, parallel_for
from ...autograd.grad_mode import STATE, no_grad
from ...autograd.graph import Node, new_node, record
from ...ops._util import wrap
from ... import kernels as _kernels

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm", "normalize"]


# =========================================================================== the fused op

def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _dot_per(a, b, axes):
    """sum(a * b) over ``axes`` (dims kept), without a full-size temporary on numpy."""
    if B.namespace(a) is np:
        letters = "abcdefghijklmnop"[:a.ndim]
        kept = "".join(c for i, c in enumerate(letters) if i not in axes)
        r = np.einsum(f"{letters},{letters}->{kept}", a, b)
        return r.reshape(tuple(1 if i in axes else s for i, s in enumerate(a.shape)))
    return (a * b).sum(axis=axes, keepdims=True)


def _raw_stats(d, axes, eps, center):
    """(mean or None, var, invstd, centred d) of array ``d`` over ``axes`` (dims kept)."""
    xp = B.namespace(d)
    m = max(_prod(d.shape[a] for a in axes), 1)
    if center:
        mean = d.mean(axis=axes, keepdims=True)
        xc = d - mean
    else:
        mean, xc = None, d
    var = _dot_per(xc, xc, axes)
    var /= m
    invstd = var + eps
    xp.sqrt(invstd, out=invstd)
    xp.reciprocal(invstd, out=invstd)
    return mean, var, invstd, xc


class NormBackward(Node):
    """Backward of ``_norm``: one node for input, weight and bias."""

    __slots__ = ("axes", "paxes", "mean", "invstd", "batch", "center", "eps", "fused", "view",
                 "wview", "bshape")

    def backward(self, g):
        x, w = self.unpack()
        view, wview = self.view, self.wview
        if STATE.enabled:
            gx, gw, gb = self._differentiable(g.reshape(view), x.reshape(view),
                                              None if w is None else w.reshape(wview))
            return (None if gx is None else gx.reshape(x.shape),
                    None if gw is None else gw.reshape(w.shape),
                    None if gb is None else gb.reshape(self.bshape))
        gx, gw, gb = self._raw(g.array.reshape(view), x.array.reshape(view),
                               None if w is None else w.array.reshape(wview))
        return (None if gx is None else wrap(gx.reshape(x.shape)),
                None if gw is None else wrap(gw.reshape(w.shape)),
                None if gb is None else wrap(gb.reshape(self.bshape)))

    def _raw(self, g, x, w):
        axes, paxes = self.axes, self.paxes
        mean, invstd = self.mean, self.invstd
        need_x, need_w, need_b = (e is not None for e in self.next)
        m = _prod(x.shape[a] for a in axes)
        gb = g.sum(axis=paxes, keepdims=True) if (need_b or (self.fused and need_x)) else None
        gw = None
        if self.fused:
            # stats and params share their dims (batch norm): everything per channel, and
            # xhat is never materialised: sum(g * xhat) = invstd * (sum(g * x) - mean * sum(g))
            if need_w or (need_x and self.batch):
                sgx = _dot_per(g, x, paxes)
                gw = invstd * (sgx - mean * gb) if self.center else invstd * sgx
            gx = None
            if need_x:
                k1 = invstd if w is None else invstd * w
                gx = g * k1
                if self.batch:
                    k2 = -k1 * invstd * gw / m
                    k3 = -k1 * gb / m - (mean * k2 if self.center else 0)
                    gx += x * k2
                    gx += k3
            return (gx, gw if need_w else None, gb if need_b else None)
        # in-place steps on two fresh buffers (xh, gx): every pass over a big array counts
        if not (need_w or (need_x and self.batch)):
            gx = (g * w) * invstd if w is not None else g * invstd
            return (gx if need_x else None, None, gb if need_b else None)
        xh = x - mean if self.center else x * 1
        xh *= invstd
        if need_w:
            gw = _dot_per(g, xh, paxes)
        gx = None
        if need_x:
            gx = g * w if w is not None else g * invstd
            if self.batch:
                c = _dot_per(gx, xh, axes)
                c /= m  # mean(gxh * xhat); with w None gx holds gxh * invstd here
                a = gx.mean(axis=axes, keepdims=True) if self.center else None
                if w is not None:
                    gx *= invstd
                    xh *= -(c * invstd)
                else:
                    xh *= -c
                gx += xh
                if a is not None:
                    gx -= a * invstd if w is not None else a
            elif w is not None:
                gx *= invstd
        return (gx, gw, gb if need_b else None)

    def _differentiable(self, g, x, w):
        """The same formulas in ember ops, so that the gradients have gradients."""
        axes, paxes = self.axes, self.paxes
        if self.batch:
            xc = x - x.mean(axes, keepdim=True) if self.center else x
            invstd = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        else:
            invstd = wrap(self.invstd)
            xc = x - wrap(self.mean) if self.center else x
        xhat = xc * invstd
        need_x, need_w, need_b = (e is not None for e in self.next)
        gx = gw = gb = None
        if need_x:
            gxh = g if w is None else g * w
            if self.batch:
                inner = gxh - xhat * (gxh * xhat).mean(axes, keepdim=True)
                if self.center:
                    inner = inner - gxh.mean(axes, keepdim=True)
                gx = inner * invstd
            else:
                gx = gxh * invstd
        if need_w:
            gw = (g * xhat).sum(paxes, keepdim=True)
        if need_b:
            gb = g.sum(paxes, keepdim=True)
        return (gx, gw, gb)


class _LayerNormKernelBackward(NormBackward):
    """``NormBackward`` whose raw path is the compiled row-wise kernel (one pass per row);
    double backward still goes through ``NormBackward``'s differentiable formula."""

    __slots__ = ()

    def _raw(self, g, x, w):
        need_x, need_w, need_b = (e is not None for e in self.next)
        gx, gw, gb = _kernels.lookup("layer_norm_backward").cpu(
            g, x, self.mean[:, 0], self.invstd[:, 0], None if w is None else w.reshape(-1),
            need_affine=need_w or need_b)
        return (gx if need_x else None, gw if need_w else None, gb if need_b else None)


def _layer_norm_kernel(x, view, weight, bias, wview, eps):
    """Layer norm over the last axis of a (rows, features) view by the compiled kernel."""
    d = x.array.reshape(view)
    out, mean, rstd = _kernels.lookup("layer_norm").cpu(
        d, None if weight is None else weight.array.reshape(-1),
        None if bias is None else bias.array.reshape(-1), eps)
    res = wrap(out.reshape(x.shape))
    mean, invstd = mean[:, None], rstd[:, None]
    if STATE.enabled and (x.requires_grad or (weight is not None and weight.requires_grad)
                          or (bias is not None and bias.requires_grad)):
        n = new_node(_LayerNormKernelBackward)
        n.axes, n.paxes, n.eps, n.view, n.wview = (1,), (0,), eps, view, wview
        n.bshape = None if bias is None else bias.shape
        n.mean, n.invstd, n.batch, n.center, n.fused = mean, invstd, True, True, False
        n.save(x, weight)
        record(n, res, x, weight, bias)
    return res, mean, None


class _BatchNormKernelBackward(NormBackward):
    """``NormBackward`` whose raw path is the compiled per-channel kernel (the sums and
    ``gx`` in two passes over a channel in cache); double backward still goes through
    ``NormBackward``'s differentiable formula."""

    __slots__ = ()

    def _raw(self, g, x, w):
        need_x, need_w, need_b = (e is not None for e in self.next)
        gx, gw, gb = _kernels.lookup("batch_norm_backward").cpu(
            g, x, self.mean.reshape(-1), self.invstd.reshape(-1),
            None if w is None else w.reshape(-1), self.batch, need_x, need_w or need_b)
        return (gx, gw if need_w else None, gb if need_b else None)


def _bn_kernel_ok(x, weight, bias):
    d = x.array
    return (type(d) is np.ndarray and d.dtype in (np.float32, np.float64)
            and all(t is None or t.array.dtype == d.dtype for t in (weight, bias))
            and _kernels.available())


def _batch_norm_kernel(x, view, weight, bias, wview, eps, stats=None, act="none"):
    """Batch norm of x seen as (N, C, L) by the compiled kernels: the statistics (unless
    ``stats`` gives running ones) and one pass for ``act(x * scale + shift)``. ``act``
    other than "none" only when no gradient is recorded. Returns ``_norm``'s triple."""
    d = x.array.reshape(view)
    dt = d.dtype
    C = view[1]
    var = None
    if stats is None:
        mean, var = _kernels.lookup("batch_norm_stats").cpu(d)
        invstd = var + dt.type(eps)
        np.sqrt(invstd, out=invstd)
        np.reciprocal(invstd, out=invstd)
    else:
        mean, invstd = (a.reshape(C) for a in stats)
    scale = invstd if weight is None else invstd * weight.array.reshape(C)
    shift = -mean * scale
    if bias is not None:
        shift += bias.array.reshape(C)
    out = _kernels.lookup("batch_norm_apply").cpu(d, scale, shift, act)
    res = wrap(out.reshape(x.shape))
    mean, invstd = mean.reshape(wview), invstd.reshape(wview)
    if STATE.enabled and (x.requires_grad or (weight is not None and weight.requires_grad)
                          or (bias is not None and bias.requires_grad)):
        if act != "none":
            raise RuntimeError("_batch_norm_kernel: a fused activation records no gradient")
        n = new_node(_BatchNormKernelBackward)
        n.axes = n.paxes = (0, 2)
        n.eps, n.view, n.wview = eps, view, wview
        n.bshape = None if bias is None else bias.shape
        n.mean, n.invstd = mean, invstd
        n.batch, n.center, n.fused = stats is None, True, True
        n.save(x, weight)
        record(n, res, x, weight, bias)
    return res, (mean if stats is None else None), (None if var is None else
                                                      var.reshape(wview))


def _norm(x, view, axes, paxes, weight, bias, wview, eps, stats=None, center=True):
    """``(x - mean) * invstd * weight + bias`` with statistics over ``axes`` of ``x`` seen
    with shape ``view``; one autograd node, no reshape nodes around it.

    ``weight``/``bias`` are None or tensors seen with shape ``wview`` (broadcasting against
    ``view``, size 1 exactly along ``paxes``). ``stats`` is None (use the batch's statistics)
    or a ``(mean, invstd)`` pair of arrays broadcastable to ``view`` (running statistics).
    Returns ``(out, mean, var)``: ``out`` shaped as ``x``; the batch's mean and biased
    variance as raw arrays with ``axes`` kept (None with ``stats``).
    """
    if (len(view) == 2 and axes == (1,) and paxes == (0,) and center and stats is None
            and type(x.array) is np.ndarray and x.array.dtype in (np.float32, np.float64)
            and _kernels.available()):
        return _layer_norm_kernel(x, view, weight, bias, wview, eps)
    d = x.array.reshape(view)
    fused = axes == paxes
    w = None if weight is None else weight.array.reshape(wview)
    var = None
    if stats is None:
        mean, var, invstd, xc = _raw_stats(d, axes, eps, center)
    else:
        mean, invstd = stats
        xc = None
    if fused and w is not None:  # per-channel scale: one pass over x
        scale, w = invstd * w, None
    else:
        scale = invstd
    add_bias = bias is not None
    if fused and xc is None and center and w is None:
        # running statistics, per channel: x * scale + (bias - mean * scale), two passes
        shift = -mean * scale
        if add_bias:
            shift = shift + bias.array.reshape(wview)
            add_bias = False
        out = _scale_shift(d, scale, shift)
    elif xc is None or xc is d:
        out = d * scale if mean is None or xc is d else (d - mean) * scale
    else:
        out = xc
        out *= scale
    if w is not None:
        out *= w
    if add_bias:
        out += bias.array.reshape(wview)
    res = wrap(out.reshape(x.shape))
    if STATE.enabled and (x.requires_grad or (weight is not None and weight.requires_grad)
                          or (bias is not None and bias.requires_grad)):
        n = new_node(NormBackward)
        n.axes, n.paxes, n.eps = axes, paxes, eps
        n.view, n.wview = view, wview
        n.bshape = None if bias is None else bias.shape
        n.mean, n.invstd = (mean if mean is not None else 0), invstd
        n.batch, n.center, n.fused = stats is None, center, fused
        n.save(x, weight)
        record(n, res, x, weight, bias)
    return res, mean, var


# =========================================================================== helpers

_ROW_BLOCK = 65536  # elements per in-cache block of the per-channel affine


def _scale_shift(d, scale, shift):
    """``d * scale + shift`` for ``d`` (N, C, L) and per-channel (1, C, 1) ``scale``/``shift``:
    on numpy, in cache-sized blocks of (image, channel) rows spread over threads."""
    xp = B.namespace(d)
    if (xp is not np or d.ndim != 3 or not d.flags.c_contiguous or d.size < PARALLEL_MIN
            or d.shape[2] > _ROW_BLOCK or np.size(scale) != d.shape[1]
            or np.size(shift) != d.shape[1]):
        out = d * scale
        out += shift
        return out
    N, C, L = d.shape
    dt = np.result_type(d, scale, shift)
    out = np.empty(d.shape, dt)
    rows, o2 = d.reshape(N * C, L), out.reshape(N * C, L)
    sc = np.broadcast_to(scale.reshape(1, C), (N, C)).reshape(N * C, 1)
    sh = np.broadcast_to(shift.reshape(1, C), (N, C)).reshape(N * C, 1)
    per = max(1, _ROW_BLOCK // L)

    def part(lo, hi):
        for r in range(lo * per, min(hi * per, N * C), per):
            e = min(r + per, N * C)
            np.multiply(rows[r:e], sc[r:e], out=o2[r:e])
            o2[r:e] += sh[r:e]

    parallel_for(part, -(-N * C // per), work=d.size)
    return out


def _shape_list(t):
    return list(t.shape)


def _check_vec(name, t, n):
    if t is not None and t.numel() != n:
        raise RuntimeError(f"{name} should contain {n} elements not {t.numel()}")


def _float_input(name, x):
    if not x.is_floating_point():
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")


def _update_running(running, batch_value, momentum):
    """running = (1 - momentum) * running + momentum * batch_value, in place (no autograd)."""
    if running is None:
        return
    r = running.array
    v = batch_value.astype(r.dtype, copy=False).reshape(r.shape)
    r *= 1 - momentum
    r += momentum * v
    running._bump()


def _stat_arrays(running_mean, running_var, eps, shape, dtype):
    """(mean, invstd) arrays of running statistics, reshaped to broadcast as ``shape``."""
    xp = B.namespace(running_mean.array)
    mean = running_mean.array.astype(dtype, copy=False).reshape(shape)
    invstd = 1 / xp.sqrt(running_var.array.astype(dtype, copy=False).reshape(shape) + eps)
    return mean, invstd.astype(dtype, copy=False)


def _verify_more_than_one(size, what):
    raise ValueError(f"Expected more than 1 {what} when training, got input size {size}")


# =========================================================================== batch norm

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization over (N, C, *): statistics per channel C over N and the rest.

    ``training=True`` normalises with the batch's mean and (biased) variance and, when given,
    updates ``running_mean``/``running_var`` in place (``running = (1 - momentum) * running
    + momentum * batch``, the unbiased variance for ``running_var``). ``training=False``
    normalises with the running statistics. ``weight``/``bias``: (C,) or None.

    >>> x = ember.randn(8, 3, 4, 4)
    >>> rm, rv = ember.zeros(3), ember.ones(3)
    >>> F.batch_norm(x, rm, rv, training=True).shape
    (8, 3, 4, 4)
    """
    shape = tuple(input.shape)
    if training:
        if _prod(shape[:1] + shape[2:]) == 1 and len(shape) >= 2:
            _verify_more_than_one(list(shape), "value per channel")
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, numbers.Real):
        raise TypeError(f"batch_norm(): argument 'momentum' must be float, not "
                        f"{type(momentum).__name__}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    c = shape[1] if len(shape) > 1 else 0
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_vec(name, t, c)
    if len(shape) < 2:
        raise RuntimeError(f"batch_norm: expected input with at least 2 dims (N, C, *), got "
                           f"input of size {list(shape)}")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    _float_input("batch_norm", input)
    s = _prod(shape[2:])
    view, wview = (shape[0], c, s), (1, c, 1)
    axes = (0, 2)
    norm = _batch_norm_kernel if _bn_kernel_ok(input, weight, bias) else _norm
    if training:
        out, mean, var = norm(input, view, axes, axes, weight, bias, wview, eps) \
            if norm is _norm else norm(input, view, weight, bias, wview, eps)
        if running_mean is not None:
            m = shape[0] * s
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, var * (m / max(m - 1, 1)), momentum)
    else:
        stats = _stat_arrays(running_mean, running_var, eps, wview, input.dtype)
        out, _, _ = norm(input, view, axes, axes, weight, bias, wview, eps, stats=stats) \
            if norm is _norm else norm(input, view, weight, bias, wview, eps, stats)
    return out


_FUSED_ACTS = ("relu", "relu6", "hardswish", "hardsigmoid", "silu")


def _batch_norm_act(input, running_mean, running_var, weight, bias, eps, act):
    """``act(batch_norm(input))`` with the running statistics in one pass of the compiled
    ``batch_norm_apply`` kernel (its fused activation), or None when that does not apply:
    the kernels off, not a float32/float64 numpy input, no running statistics, or a
    gradient to record (the fused kernel keeps nothing for a backward). The eval-mode
    Conv-BN-act blocks of ``nn.Sequential`` call it (see ``Sequential.forward``)."""
    if act not in _FUSED_ACTS or running_mean is None or running_var is None:
        return None
    shape = tuple(input.shape)
    if len(shape) < 2 or not _bn_kernel_ok(input, weight, bias):
        return None
    if STATE.enabled and (input.requires_grad or any(
            t is not None and t.requires_grad for t in (weight, bias))):
        return None
    c = shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_vec(name, t, c)
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    view, wview = (shape[0], c, _prod(shape[2:])), (1, c, 1)
    stats = _stat_arrays(running_mean, running_var, eps, wview, input.dtype)
    return _batch_norm_kernel(input, view, weight, bias, wview, eps, stats, act=act)[0]


# =========================================================================== instance norm

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization over (N, C, *): statistics per sample and channel over the
    spatial dims. With ``use_input_stats=False`` the running statistics (C,) are used
    instead; otherwise, when given, they are updated in place with the per-sample
    statistics averaged over the batch.

    >>> F.instance_norm(ember.randn(2, 3, 8, 8)).shape
    (2, 3, 8, 8)
    """
    shape = tuple(input.shape)
    if use_input_stats and _prod(shape[2:]) == 1:
        _verify_more_than_one(list(shape), "spatial element")
    if len(shape) < 2:
        raise RuntimeError(f"instance_norm: expected input with at least 2 dims (N, C, *), got "
                           f"input of size {list(shape)}")
    _float_input("instance_norm", input)
    n, c = shape[:2]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_vec(name, t, c)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    s = _prod(shape[2:])
    view, wview = (n, c, s), (1, c, 1)
    if use_input_stats:
        out, mean, var = _norm(input, view, (2,), (0, 2), weight, bias, wview, eps)
        if running_mean is not None:
            var = var * (s / max(s - 1, 1))
            _update_running(running_mean, mean.mean(axis=0), momentum)
            _update_running(running_var, var.mean(axis=0), momentum)
    else:
        stats = _stat_arrays(running_mean, running_var, eps, wview, input.dtype)
        out, _, _ = _norm(input, view, (2,), (0, 2), weight, bias, wview, eps, stats=stats)
    return out


# =========================================================================== layer / rms norm

def _normalized(input, normalized_shape, weight, bias, what):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    ns = tuple(int(v) for v in normalized_shape)
    if not ns:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {_shape_list(t)} and normalized_shape = {list(ns)}")
    shape = tuple(input.shape)
    if len(shape) < len(ns) or shape[len(shape) - len(ns):] != ns:
        star = "*" if what == "rms_norm" else "*, "
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape "
            f"[{star}{', '.join(map(str, ns))}], but got input of size{list(shape)}")
    _float_input(what, input)
    k = _prod(ns)
    m = _prod(shape) // k if k else _prod(shape[:len(shape) - len(ns)])
    return shape, m, k


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalization over the last ``len(normalized_shape)`` dims of ``input``;
    ``weight``/``bias`` have shape ``normalized_shape`` (elementwise affine).

    >>> F.layer_norm(ember.randn(2, 5, 16), (16,)).shape
    (2, 5, 16)
    """
    shape, m, k = _normalized(input, normalized_shape, weight, bias, "layer_norm")
    return _norm(input, (m, k), (1,), (0,), weight, bias, (1, k), eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalization over the last ``len(normalized_shape)`` dims:
    ``x / sqrt(mean(x ** 2) + eps) * weight``; ``eps=None`` means
    ``finfo(input.dtype).eps``, as in PyTorch.

    >>> F.rms_norm(ember.randn(2, 5, 16), (16,)).shape
    (2, 5, 16)
    """
    shape, m, k = _normalized(input, normalized_shape, weight, None, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    return _norm(input, (m, k), (1,), (0,), weight, None, (1, k), eps, center=False)[0]


# =========================================================================== group norm

def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization of (N, C, *): the C channels are split into ``num_groups`` groups
    and each (sample, group) is normalised over its channels and spatial dims; ``weight``/
    ``bias`` are per channel (C,).

    >>> F.group_norm(ember.randn(2, 6, 4, 4), 3).shape
    (2, 6, 4, 4)
    """
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {len(shape)}")
    n, c = shape[:2]
    if not isinstance(num_groups, numbers.Integral) or num_groups <= 0:
        raise ValueError(f"num_groups must be a positive integer, got {num_groups}")
    size = [n * c // num_groups, num_groups] + list(shape[2:])
    if _prod(size[:1] + size[2:]) == 1:
        _verify_more_than_one(size, "value per channel")
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {_shape_list(t)} and input of shape "
                f"{list(shape)}")
    _float_input("group_norm", input)
    g = num_groups
    s = _prod(shape[2:])
    return _norm(input, (n, g, c // g, s), (2, 3), (0, 3), weight, bias, (1, g, c // g, 1),
                 eps)[0]


# =========================================================================== lrn, normalize

def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels (dim 1) of (N, C, *):
    ``x / (k + alpha * mean(x ** 2 over a window of `size` channels)) ** beta``, the window
    zero-padded at the ends (``size // 2`` before, ``(size - 1) // 2`` after).

    >>> F.local_response_norm(ember.randn(2, 8, 5, 5), size=3).shape
    (2, 8, 5, 5)
    """
    from ...ops.shape import pad

    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    shape = tuple(input.shape)
    sq = (input * input).reshape(shape[0], shape[1], -1)
    sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
    win = sq.unfold(1, size, 1).sum(-1)  # (N, C, S): sums of `size` neighbouring channels
    div = (win.reshape(shape) * (alpha / size) + k) ** beta
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p along dim, eps)``.

    >>> F.normalize(ember.tensor([[3.0, 4.0]]), dim=1)
    tensor([[0.6000, 0.8000]])
    """
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    res = input / denom
    if out is not None:
        with no_grad():
            out.copy_(res)
        return out
    return res
