"""Activations (relu ... softmin, gelu, glu, prelu, rrelu) and distances (cosine_similarity,
pairwise_distance, cdist, pdist), with PyTorch's signatures, defaults and subgradients.

Elementwise activations run as ONE autograd node each: the forward computes ``y`` and, only
when a graph is recorded, the derivative ``dy/dx`` as an array; backward is then a single
product ``g * dy/dx``. Under ``create_graph`` the node rewrites the gradient with ember ops
(``diff(x, g)``), so double backward works. Piecewise-linear ones (hardtanh, relu6,
leaky_relu, threshold, hard/softshrink, hardsigmoid, rrelu) keep only a mask or slope array.
relu, sigmoid and tanh are the core ops (``ember.relu`` ...), reused as they are.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x = ember.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    >>> F.gelu(x).sum().backward()
    >>> [round(v, 4) for v in x.grad.tolist()]
    [-0.0833, 0.5, 1.0852]
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _backend as B
from ... import dtypes as D
from ...autograd.grad_mode import STATE
from ...autograd.graph import Node, new_node, record
from ... import kernels as _kernels
from ...ops import _special
from ...ops._util import to_tensor, wrap
from ...ops.elementwise import apply_inplace
from ...ops.index import where
from ...ops.reduce import SoftmaxBackward as _SoftmaxBackward
from ...ops.reduce import log_softmax as _log_softmax, norm as _norm, softmax as _softmax
from ...autograd.graph import saved_output as _saved_output

__all__ = [
    "threshold", "threshold_", "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu",
    "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "hardswish",
    "hardsigmoid", "hardtanh", "hardtanh_", "sigmoid", "tanh", "softplus", "softsign",
    "logsigmoid", "glu", "softmax", "log_softmax", "softmin", "gumbel_softmax", "prelu", "rrelu",
    "rrelu_", "tanhshrink", "softshrink", "hardshrink", "cosine_similarity",
    "pairwise_distance", "cdist", "pdist",
]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# ------------------------------------------------------------------------------ the one node

class ActivationBackward(Node):
    """``g * d`` with ``d = dy/dx`` kept from the forward. ``diff(x, g)`` (ember ops) is the
    same gradient written differentiably, used when a graph is built (``create_graph``);
    ``diff`` None means ``d`` does not depend on ``x`` (piecewise linear): ``g * d`` is then
    differentiable as it stands."""

    __slots__ = ("d", "diff", "op")

    def name(self):
        return self.op

    def backward(self, g):
        saved = self.unpack()  # version check of x (and the error after the graph was freed)
        if not STATE.enabled:
            return (wrap(_times(g.array, self.d)),)
        if self.diff is None:
            return (g * wrap(self.d),)
        return (self.diff(saved[0], g),)

    def release(self):
        Node.release(self)
        self.d = None


def _times(gd, d):
    r = gd * d
    return r if r.dtype == gd.dtype else r.astype(gd.dtype)


def _float_data(input, name):
    if not isinstance(input, _Tensor()):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    d = input.array
    if not D.is_floating(d.dtype):
        raise TypeError(f"{name}: expected a floating point tensor, got {D.name(d.dtype)}")
    return d


def _Tensor():
    from ..._tensor import Tensor

    return Tensor


def _kernel_ok(d):
    return type(d) is np.ndarray and d.dtype in _KERNEL_DTYPES and _kernels.available()


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _activation(input, name, fwd, diff=None, floats_only=True, chunked=False, kernel=None):
    """Run ``fwd(xp, x, need_grad) -> (y, dy)`` on ``input``'s array and record one node.
    float16/bfloat16 compute in float32 and are cast back. ``chunked``: on numpy, run a
    many-pass ``fwd`` over cache-sized pieces (about 2x faster for gelu/silu/mish/elu).
    ``kernel``: the ``ember.kernels`` "activation" kind computing the same ``(y, dy)`` in
    one pass, used for float32/float64 numpy arrays."""
    if floats_only:
        d = _float_data(input, name)
    else:
        d = input.array
        if d.dtype.kind == "b":
            raise TypeError(f"{name}: bool tensors are not supported")
    dt = d.dtype
    low = dt.kind == "f" and dt.itemsize < 4 or dt == D.bfloat16
    if low:
        d = d.astype(np.float32)
    need = STATE.enabled and input.requires_grad
    xp = B.namespace(d)
    if kernel is not None and _kernel_ok(d):
        y, dy = _kernels.lookup("activation").cpu(d, kernel, need)
    elif chunked and xp is np and d.size >= 2 * _CHUNK:
        y, dy = _chunked(fwd, d, need)
    else:
        y, dy = fwd(xp, d, need)
    if y.dtype != dt:
        y = y.astype(dt)
    out = wrap(y)
    if need:
        n = new_node(ActivationBackward)
        if dy.dtype.kind == "f" and dy.dtype != dt:
            dy = dy.astype(dt)
        n.d, n.diff, n.op = dy, diff, name.capitalize() + "Backward"
        if diff is None:
            n.saved = ()
        else:
            n.save(input)
        record(n, out, input)
    return out


_CHUNK = 1 << 15


def _chunked(fwd, d, need):
    flat = d.reshape(-1)
    n = flat.shape[0]
    y = dy = None
    for i in range(0, n, _CHUNK):
        a, b = fwd(np, flat[i:i + _CHUNK], need)
        if y is None:
            y = np.empty(n, a.dtype)
            dy = np.empty(n, b.dtype) if need else None
        y[i:i + _CHUNK] = a
        if need:
            dy[i:i + _CHUNK] = b
    return y.reshape(d.shape), (dy.reshape(d.shape) if need else None)


def _inplace(input, fn, *args):
    """``fn(input, *args)`` written into ``input`` (autograd history moved onto it). With
    nothing to record, a compiled kernel rewrites the array in place in one pass."""
    kind = _INPLACE_KERNELS.get(fn)
    if kind is not None and not (STATE.enabled and input.requires_grad):
        d = input.array
        if _kernel_ok(d) and d.flags.c_contiguous and d.flags.writeable:
            _kernels.lookup("activation").cpu(d, kind, False, out=d)
            input._bump()
            return input
    return apply_inplace(input, fn, *args)


def _f(dt):
    """A scalar constant in the array's dtype (no float64 promotion of float32 math)."""
    return np.dtype(dt).type


# ------------------------------------------------------------------------------ relu family

def relu(input, inplace=False):
    """max(x, 0); gradient 0 at 0 (as PyTorch)."""
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def _hardtanh(input, min_val, max_val, name="hardtanh"):
    def fwd(xp, x, need):
        y = xp.clip(x, min_val, max_val)
        if y.dtype != x.dtype:
            y = y.astype(x.dtype)
        # PyTorch: no gradient at the limits themselves
        return y, ((x > min_val) & (x < max_val)) if need else None
    return _activation(input, name, fwd, floats_only=False)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val); gradient 1 strictly inside the limits, 0 elsewhere."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        if not (STATE.enabled and input.requires_grad):  # nothing to record: clip in place
            return input.clamp_(min_val, max_val)
        return _inplace(input, _hardtanh, min_val, max_val)
    return _hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6) (hardtanh(x, 0, 6): gradient 0 at 0 and at 6)."""
    if inplace:
        if not (STATE.enabled and input.requires_grad):
            return input.clamp_(0.0, 6.0)
        return _inplace(input, _hardtanh, 0.0, 6.0, "relu6")
    return _hardtanh(input, 0.0, 6.0, "relu6")


def _leaky(input, slope):
    def fwd(xp, x, need):
        f = _f(x.dtype)
        y = xp.minimum(x, 0)
        y *= f(slope)
        y += xp.maximum(x, 0)               # max(x, 0) + slope * min(x, 0)
        if not need:
            return y, None
        d = (x > 0).astype(x.dtype)
        d *= f(1 - slope)
        d += f(slope)
        return y, d
    return _activation(input, "leaky_relu", fwd)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, else negative_slope * x (the slope is the gradient at 0)."""
    return _inplace(input, _leaky, negative_slope) if inplace else _leaky(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def _threshold(input, threshold, value):
    def fwd(xp, x, need):
        keep = x > threshold
        y = xp.where(keep, x, xp.asarray(value, dtype=x.dtype))
        return y, (keep if need else None)
    return _activation(input, "threshold", fwd, floats_only=False)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    if inplace:
        return _inplace(input, _threshold, threshold, value)
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _inplace(input, _threshold, threshold, value)


def _rrelu_train(input, lower, upper):
    from ...random import _gen

    def fwd(xp, x, need):
        u = _gen(None, input.device).random(x.shape, dtype=x.dtype)
        u *= _f(x.dtype)(upper - lower)
        u += _f(x.dtype)(lower)
        neg = x <= 0
        u -= 1
        u *= neg
        u += 1                              # the drawn slope where x <= 0, else 1
        return x * u, u
    return _activation(input, "rrelu", fwd)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each x <= 0 is scaled by a slope drawn uniformly
    from [lower, upper] (ember's RNG); otherwise leaky_relu with slope (lower + upper) / 2."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    if inplace:
        return _inplace(input, _rrelu_train, lower, upper)
    return _rrelu_train(input, lower, upper)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


# ------------------------------------------------------------------------------ elu family

def _elu(input, alpha, scale, input_scale, name):
    def fwd(xp, x, need):
        f = _f(x.dtype)
        em1 = xp.minimum(x, 0)
        if input_scale != 1:
            em1 *= f(input_scale)
        xp.expm1(em1, out=em1)              # exp(min(x, 0) * input_scale) - 1
        y = xp.maximum(x, 0)
        if scale != 1:
            y *= f(scale)
        y += em1 * f(alpha * scale)
        if not need:
            return y, None
        pos = x > 0
        em1 += 1
        em1 *= f(alpha * scale * input_scale)
        em1 *= ~pos
        em1 += pos * f(scale) if scale != 1 else pos
        return y, em1

    def diff(x, g):
        neg = (x * input_scale).exp() * (alpha * scale * input_scale)
        return g * where(wrap(x.array > 0), scale, neg)
    return _activation(input, name, fwd, diff, chunked=True)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, else alpha * (exp(x) - 1)."""
    if inplace:
        return _inplace(input, _elu, alpha, 1.0, 1.0, "elu")
    return _elu(input, alpha, 1.0, 1.0, "elu")


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    if inplace:
        return _inplace(input, _elu, _SELU_ALPHA, _SELU_SCALE, 1.0, "selu")
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, "selu")


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    if inplace:
        return _inplace(input, _elu, alpha, 1.0, 1.0 / alpha, "celu")
    return _elu(input, alpha, 1.0, 1.0 / alpha, "celu")


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


# ------------------------------------------------------------------------------ smooth gates

def _normal_cdf(xp, x):
    """``(Phi(x), exp(-x^2 / 2))`` for the standard normal CDF Phi.

    float32 on numpy: Abramowitz-Stegun 7.1.26 for erfc(|x|/sqrt(2)) = P(t) exp(-x^2/2),
    t = 1 / (1 + p |x| / sqrt 2), with P re-expanded in v = 1 - t so that float32 rounding
    stays small near 0 (|error of Phi| < 2e-7, about half the work of ``ember.erf``'s
    two-branch form). float64 and cupy go through ``ember.erf`` (series and continued
    fraction, or cupy's kernel)."""
    f = _f(x.dtype)
    if xp is not np or x.dtype != np.float32:
        e = xp.exp(x * x * f(-0.5))
        return (_special.erf(x * f(_SQRT1_2)) + 1) * f(0.5), e
    z = xp.abs(x)
    z *= f(_SQRT1_2 * 0.3275911)            # p |x| / sqrt 2
    v = z / (z + 1)                         # 1 - t
    c = _PHI_C
    p = v * c[5]
    for k in (4, 3, 2, 1):
        p += c[k]
        p *= v
    p += c[0]                               # P(t) = sum_k c_k v^k
    e = x * x
    e *= f(-0.5)
    xp.exp(e, out=e)                        # exp(-x^2/2)
    p *= e
    p *= f(-0.5)
    p += f(0.5)                             # 1/2 - Phi(-|x|), Phi(-|x|) = erfc(|x|/sqrt 2)/2
    xp.copysign(p, x, out=p)
    p += f(0.5)                             # Phi(x) = 1/2 + sign(x) (1/2 - Phi(-|x|))
    return p, e


def _phi_coeffs():
    """A-S 7.1.26's polynomial sum_k a_k t^k rewritten as sum_j c_j v^j with v = 1 - t."""
    a = [0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429]
    b = [sum(a[k] * math.comb(k, j) for k in range(j, 6)) for j in range(6)]  # around t=1
    return [np.float32((-1) ** j * b[j]) for j in range(6)]


_PHI_C = _phi_coeffs()


def _gelu_tanh_parts(xp, x):
    f = _f(x.dtype)
    k = f(math.sqrt(2.0 / math.pi))
    x2 = x * x
    inner = x2 * f(0.044715)
    inner += 1
    inner *= x
    inner *= k
    t = xp.tanh(inner)
    return t, x2, k


def gelu(input, approximate="none"):
    """x * Phi(x) (Phi: the standard normal CDF); ``approximate="tanh"`` uses
    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    if approximate == "none":
        return _activation(input, "gelu", _gelu_fwd, _gelu_diff, chunked=True, kernel="gelu")
    if approximate == "tanh":
        return _activation(input, "gelu", _gelu_tanh_fwd, _gelu_tanh_diff, chunked=True,
                           kernel="gelu_tanh")
    raise RuntimeError("approximate argument must be either none or tanh.")


def _gelu_fwd(xp, x, need):
    cdf, e = _normal_cdf(xp, x)
    y = x * cdf
    if not need:
        return y, None
    e *= x
    e *= _f(x.dtype)(_INV_SQRT_2PI)
    e += cdf                                # Phi(x) + x * pdf(x)
    return y, e


def _gelu_diff(x, g):
    cdf = ((x * _SQRT1_2).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


def _gelu_tanh_fwd(xp, x, need):
    f = _f(x.dtype)
    t, x2, k = _gelu_tanh_parts(xp, x)
    half = (t + 1) * f(0.5)
    y = x * half
    if not need:
        return y, None
    # d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2)
    x2 *= f(3 * 0.044715)
    x2 += 1
    x2 *= k
    x2 *= x
    x2 *= (1 - t * t) * f(0.5)
    x2 += half
    return y, x2


def _gelu_tanh_diff(x, g):
    k = math.sqrt(2.0 / math.pi)
    t = ((x + x * x * x * 0.044715) * k).tanh()
    return g * ((t + 1) * 0.5 + x * (1 - t * t) * (x * x * (3 * 0.044715 * k) + k) * 0.5)


def _sigmoid_arr(xp, x):
    """1 / (1 + exp(-x)): exp overflows to inf for x < -88 and gives exactly 0 there."""
    with np.errstate(over="ignore"):
        e = xp.exp(-x)
    e += 1
    return xp.reciprocal(e, out=e)


def _silu(input):
    def fwd(xp, x, need):
        s = _sigmoid_arr(xp, x)
        y = x * s
        if not need:
            return y, None
        d = 1 - s
        d *= x
        d += 1
        d *= s                              # s * (1 + x * (1 - s))
        return y, d

    def diff(x, g):
        s = x.sigmoid()
        return g * (s * (x * (1 - s) + 1))
    return _activation(input, "silu", fwd, diff, chunked=True, kernel="silu")


def silu(input, inplace=False):
    """x * sigmoid(x) (swish)."""
    return _inplace(input, _silu) if inplace else _silu(input)


def _softplus_arr(xp, z):
    """log(1 + exp(z)) without overflow."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _mish(input):
    def fwd(xp, x, need):
        # tanh(log(1 + e)) = n / (n + 2), n = e (e + 2), e = exp(x); x > 20 gives 1 anyway
        e = xp.exp(xp.minimum(x, 20))
        n = e + 2
        n *= e
        t = n + 2
        xp.divide(n, t, out=t)
        y = x * t
        if not need:
            return y, None
        s = e + 1
        xp.divide(e, s, out=s)              # sigmoid(x)
        d = t * t
        xp.subtract(1, d, out=d)
        d *= x
        d *= s
        d += t
        return y, d

    def diff(x, g):
        t = (x.clamp(min=0) + (-x.abs()).exp().log1p()).tanh()
        return g * (t + x * (1 - t * t) * x.sigmoid())
    return _activation(input, "mish", fwd, diff, chunked=True)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _inplace(input, _mish) if inplace else _mish(input)


def _hardswish(input):
    def fwd(xp, x, need):
        f = _f(x.dtype)
        y = x * xp.clip(x + f(3), 0, 6) * f(1 / 6)
        if not need:
            return y, None
        # PyTorch: 0 for x <= -3, 1 for x >= 3, x/3 + 1/2 in between
        d = x * f(1 / 3)
        d += f(0.5)
        d *= (x > -3) & (x < 3)
        d += x >= 3
        return y, d

    def diff(x, g):
        mid = wrap((x.array > -3) & (x.array < 3))
        return g * where(mid, x * (1 / 3) + 0.5, wrap(x.array >= 3)._cast(x.dtype))
    return _activation(input, "hardswish", fwd, diff, kernel="hardswish")


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return _inplace(input, _hardswish) if inplace else _hardswish(input)


def _hardsigmoid(input):
    def fwd(xp, x, need):
        f = _f(x.dtype)
        y = xp.clip(x + f(3), 0, 6) * f(1 / 6)
        if not need:
            return y, None
        return y, ((x > -3) & (x < 3)) * f(1 / 6)
    return _activation(input, "hardsigmoid", fwd, kernel="hardsigmoid")


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3)."""
    return _inplace(input, _hardsigmoid) if inplace else _hardsigmoid(input)


_INPLACE_KERNELS = {_silu: "silu", _hardswish: "hardswish", _hardsigmoid: "hardsigmoid"}


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    def fwd(xp, x, need):
        f = _f(x.dtype)
        z = x * f(beta) if beta != 1 else x
        lin = z > threshold
        y = _softplus_arr(xp, z)
        if beta != 1:
            y *= f(1 / beta)
        anylin = bool(lin.any())
        if anylin:
            y[lin] = x[lin]
        if not need:
            return y, None
        d = _sigmoid_arr(xp, z)
        if anylin:
            d[lin] = 1
        return y, d

    def diff(x, g):
        return g * where(wrap((x.array * beta) > threshold), 1.0, (x * beta).sigmoid())
    return _activation(input, "softplus", fwd, diff, chunked=True)


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow."""
    def fwd(xp, x, need):
        y = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
        return y, (_sigmoid_arr(xp, -x) if need else None)

    def diff(x, g):
        return g * (-x).sigmoid()
    return _activation(input, "logsigmoid", fwd, diff, chunked=True)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    """x - lambd for x > lambd, x + lambd for x < -lambd, else 0."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to "
                           f"be {lambd}.")

    def fwd(xp, x, need):
        y = x - xp.clip(x, -lambd, lambd)
        return y, (((x > lambd) | (x < -lambd)) if need else None)
    return _activation(input, "softshrink", fwd)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    def fwd(xp, x, need):
        out = (x > lambd) | (x < -lambd)
        return x * out, (out if need else None)
    return _activation(input, "hardshrink", fwd)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    from ...ops._util import norm_dim

    d = norm_dim(dim, input.dim())
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def prelu(input, weight):
    """max(0, x) + weight * min(0, x); ``weight`` has 1 element or one per channel
    (``input.size(1)``, or 1 for inputs of fewer than two dims)."""
    nw = weight.numel()
    ch = input.shape[1] if input.dim() >= 2 else 1
    if nw != 1 and nw != ch:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {nw} and channel size = {ch}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: weight must be a scalar or a 1-D tensor, got "
                           f"{weight.dim()} dims")
    w = weight.reshape(()) if nw == 1 else weight.reshape((nw,) + (1,) * (input.dim() - 2))
    return where(wrap(input.array > 0), input, input * w)


# ------------------------------------------------------------------------------ softmax family

def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


class _SoftmaxKernelBackward(_SoftmaxBackward):
    """``SoftmaxBackward`` over the last dim whose raw path (no graph being built) is the
    compiled row-wise kernel; under ``create_graph`` it is ``SoftmaxBackward``'s, so double
    backward keeps working."""

    __slots__ = ()

    def backward(self, g):
        if STATE.enabled:
            return _SoftmaxBackward.backward(self, g)
        (y,) = self.unpack()
        yd, gd = y.array, g.array
        K = yd.shape[-1]
        gx = _kernels.lookup("softmax_backward").cpu(
            gd.reshape(-1, K) if gd.shape == yd.shape else
            np.broadcast_to(gd, yd.shape).reshape(-1, K), yd.reshape(-1, K), self.log)
        return (wrap(gx.reshape(yd.shape)),)


_SoftmaxKernelBackward.__name__ = "SoftmaxBackward"  # grad_fn.name(): the op's, as before


def _softmax_kernel_ok(d, dim):
    """The compiled row-wise kernel takes float32/float64 C-contiguous numpy arrays,
    softmax over the last dim (others: the numpy path)."""
    if not (type(d) is np.ndarray and d.ndim >= 1 and d.size and d.dtype in _KERNEL_DTYPES
            and d.flags.c_contiguous):
        return False
    try:
        dim = int(dim)
    except TypeError:
        return False
    return (dim == -1 or dim == d.ndim - 1) and _kernels.available()


def _softmax_fn(input, dim, dtype, log):
    if dtype is not None:
        input = input._cast(D.to_dtype(dtype))
    d = input.array
    if not _softmax_kernel_ok(d, dim):
        return (_log_softmax if log else _softmax)(input, dim, None)
    K = d.shape[-1]
    y = _kernels.lookup("softmax").cpu(d.reshape(-1, K), log).reshape(d.shape)
    out = wrap(y)
    if STATE.enabled and input.requires_grad:
        n = new_node(_SoftmaxKernelBackward)
        n.dims, n.log = (d.ndim - 1,), log
        n.saved = (_saved_output(out),)
        record(n, out, input)
    return out


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (``dtype``: cast the input first). ``dim=None``
    applies PyTorch's legacy choice (0 for 0-, 1- and 3-D inputs, else 1) with a warning.
    Over the last dim of a float32/float64 contiguous CPU array: the compiled row kernel."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax_fn(input, dim, dtype, False)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along ``dim``, computed stably (the compiled row kernel as softmax)."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _softmax_fn(input, dim, dtype, True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _softmax(-input, dim, dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution (ember's RNG); ``hard=True`` returns
    one-hot samples with the soft sample's gradient (straight-through)."""
    from ...random import _gen

    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    d = _float_data(logits, "gumbel_softmax")
    xp = B.namespace(d)
    u = _gen(None, logits.device).random(d.shape, dtype=np.float64 if d.dtype == np.float64
                                          else np.float32)
    gumbels = wrap((-xp.log(-xp.log1p(-u))).astype(d.dtype, copy=False))  # -log(Exp(1))
    y = _softmax((logits + gumbels) / tau, dim, None)
    if not hard:
        return y
    from ...ops._util import norm_dim

    ax = norm_dim(dim, d.ndim)
    idx = xp.argmax(y.array, axis=ax, keepdims=True)
    pos = xp.arange(d.shape[ax]).reshape((-1,) + (1,) * (d.ndim - ax - 1))
    onehot = (pos == idx).astype(d.dtype)
    return wrap(onehot) - y.detach() + y


# ------------------------------------------------------------------------------ distances

def _as_float(t):
    return t if D.is_floating(t.dtype) else t._cast(D.get_default_dtype())


def _clamp_value(t, eps):
    """``t`` with values below ``eps`` raised to ``eps`` but the gradient of ``t`` passed
    through unchanged (PyTorch clamps the norms in place under no_grad)."""
    xp = B.namespace(t.array)
    return t + wrap(xp.maximum(t.array, t.array.dtype.type(eps)) - t.array)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim`` (inputs
    broadcast). Each input is divided by its norm first, as PyTorch does."""
    x1, x2 = _as_float(x1), _as_float(x2)
    from ...ops.shape import broadcast_tensors

    if x1.shape != x2.shape:
        x1, x2 = broadcast_tensors(x1, x2)
    n1 = _clamp_value(_norm(x1, 2, dim, keepdim=True), eps)
    n2 = _clamp_value(_norm(x2, 2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (inputs broadcast)."""
    nd = max(x1.dim(), x2.dim())
    return _norm(x1 - x2 + eps, p, nd - 1, keepdim)


class CdistBackward(Node):
    """Euclidean cdist through the GEMM expansion. Gradient (0 where a distance is 0):
    ``r = g / d``; ``dx1 = x1 * r.sum(-1) - r @ x2``; ``dx2 = x2 * r.sum(-2) - r^T @ x1``."""

    __slots__ = ()

    def backward(self, g):
        x1, x2, res = self.unpack()
        if not STATE.enabled:
            xp = B.namespace(res.array)
            zero = res.array == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                r = g.array / res.array
            r[zero] = 0
            a, b = x1.array, x2.array
            g1 = a * r.sum(-1)[..., None] - r @ b if self.next[0] is not None else None
            g2 = b * r.sum(-2)[..., None] - xp.swapaxes(r, -1, -2) @ a \
                if self.next[1] is not None else None
            return (None if g1 is None else wrap(g1), None if g2 is None else wrap(g2))
        zero = wrap(res.array == 0)
        r = (g / res.masked_fill(zero, 1.0)).masked_fill(zero, 0.0)
        g1 = x1 * r.sum(-1, keepdim=True) - r.matmul(x2) if self.next[0] is not None else None
        g2 = x2 * r.sum(-2).unsqueeze(-1) - r.mT.matmul(x1) if self.next[1] is not None \
            else None
        return g1, g2


def _euclid_mm(x1, x2):
    from ...autograd.graph import saved_output

    a, b = x1.array, x2.array
    xp = B.namespace(a)
    r = a @ xp.swapaxes(b, -1, -2)
    r *= -2
    r += (a * a).sum(-1)[..., :, None]
    r += (b * b).sum(-1)[..., None, :]
    xp.maximum(r, 0, out=r)
    xp.sqrt(r, out=r)
    out = wrap(r)
    if STATE.enabled and (x1.requires_grad or x2.requires_grad):
        n = new_node(CdistBackward)
        n.save(x1, x2)
        n.saved = n.saved + (saved_output(out),)
        record(n, out, x1, x2)
    return out


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M):
    (..., P, R), batch dims broadcast. p=2 goes through the GEMM expansion
    ||a||^2 - 2 a.b + ||b||^2 (clamped at 0) when ``compute_mode`` says so (the default does
    for P > 25 or R > 25); other p (and the exact p=2 path) broadcast the differences.

    >>> cdist(ember.zeros(2, 3), ember.ones(4, 3)).shape
    (2, 4)
    """
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if not D.is_floating(x1.dtype) or not D.is_floating(x2.dtype):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{D.name(x1.dtype)}, X2 got: {D.name(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
             "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    from ...ops.shape import broadcast_shapes, expand

    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    if x1.shape[:-2] != batch:
        x1 = expand(x1, batch + x1.shape[-2:])
    if x2.shape[:-2] != batch:
        x2 = expand(x2, batch + x2.shape[-2:])
    P, R = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == modes[1] or (
        compute_mode == modes[0] and (P > 25 or R > 25)))
    if use_mm:
        return _euclid_mm(x1, x2)
    if P == 0 or R == 0 or x1.shape[-1] == 0:
        from ...factories import zeros

        return zeros(batch + (P, R), dtype=x1.dtype, device=x1.device)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)          # (..., P, R, M)
    return _norm(diff, p, -1)


def pdist(input, p=2):
    """p-norm distances between all pairs of rows i < j of ``input`` (N, M), in the
    row-major order of the upper triangle: shape (N * (N - 1) / 2,)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    xp = B.namespace(input.array)
    i, j = to_tensor(xp.asarray(i)), to_tensor(xp.asarray(j))
    diff = input.index_select(0, i) - input.index_select(0, j)
    return _norm(diff, p, 1)
