"""Reverse-time scans of reinforcement learning: GAE and TD(lambda) returns.

Arrays are time-major, ``(T, *B)`` (time on axis 0, any batch dims after, e.g. envs);
``done`` ends a trajectory at step t (terminated or truncated), ``terminated`` says that
it ended in a terminal state (no bootstrap from ``next_value``); both bool, and
``terminated`` defaults to ``done``. As in torchrl's ``generalized_advantage_estimate`` and
``td_lambda_return_estimate``::

    delta_t = r_t + gamma * (1 - term_t) * V'_t - V_t
    A_t     = delta_t + gamma * lmbda * (1 - done_t) * A_{t+1}                 (A_T = 0)
    G_t     = r_t + gamma * (1 - term_t) * ((1 - lmbda) * V'_t + lmbda * (done_t ? V'_t : G_{t+1}))
                                                                          (G_T = V'_{T-1})

The numpy reference loops over time with vectorised steps over the batch (a dozen ufunc
calls per step: ~1 us each, the loop is call-bound); the compiled scan is one loop, with
the batch split over threads when large.

    >>> import numpy as np
    >>> r = np.ones((3, 1), np.float32); v = np.zeros((3, 1), np.float32)
    >>> d = np.zeros((3, 1), bool)
    >>> gae(r, v, v, d, None, 0.5, 1.0)[0][:, 0].tolist()
    [1.75, 1.5, 1.0]
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from ._registry import register
from ._util import compiled_dtype, contiguous, split

__all__ = ["gae", "td_lambda_return"]


def _prepare(reward, value, next_value, done, terminated):
    if terminated is None:
        terminated = done
    shapes = {a.shape for a in (reward, next_value, done, terminated)
              + (() if value is None else (value,))}
    if len(shapes) != 1 or reward.ndim < 1:
        raise ValueError(f"scan kernels: every input must have one (T, *B) shape, got "
                         f"{sorted(shapes)}")
    return terminated


# ----------------------------------------------------------------------------- reference

def gae_reference(reward, value, next_value, done, terminated=None, gamma=0.99, lmbda=0.95):
    """``(advantage, value_target)`` by a loop over time, vectorised over the batch."""
    terminated = _prepare(reward, value, next_value, done, terminated)
    dt = reward.dtype
    g, gl = dt.type(gamma), dt.type(gamma * lmbda)
    nterm = ~terminated.astype(bool)
    ndone = ~done.astype(bool)
    adv = np.empty_like(reward)
    last = np.zeros(reward.shape[1:], dt)
    for t in range(reward.shape[0] - 1, -1, -1):
        delta = reward[t] + g * next_value[t] * nterm[t] - value[t]
        last = delta + gl * ndone[t] * last
        adv[t] = last
    return adv, adv + value


def td_lambda_return_reference(reward, next_value, done, terminated=None, gamma=0.99,
                               lmbda=0.95):
    """TD(lambda) returns by a loop over time, vectorised over the batch."""
    terminated = _prepare(reward, None, next_value, done, terminated)
    dt = reward.dtype
    g, lm, one_m = dt.type(gamma), dt.type(lmbda), dt.type(1 - lmbda)
    nterm = ~terminated.astype(bool)
    d = done.astype(bool)
    ret = np.empty_like(reward)
    if reward.shape[0] == 0:
        return ret
    acc = next_value[-1].copy()
    for t in range(reward.shape[0] - 1, -1, -1):
        nv = next_value[t]
        acc = np.where(d[t], nv, acc)
        acc = reward[t] + g * nterm[t] * (one_m * nv + lm * acc)
        ret[t] = acc
    return ret


# ----------------------------------------------------------------------------- compiled

@jit
def _gae(reward, value, next_value, done, term, gamma, gl, adv, last, lo, hi):
    """Columns ``lo..hi`` of (T, B) arrays; ``last`` a (B,) scratch row."""
    T = reward.shape[0]
    zero = reward.dtype.type(0)
    for b in range(lo, hi):
        last[b] = zero
    for t in range(T - 1, -1, -1):
        r, v, nv = reward[t], value[t], next_value[t]
        dn, tm, a = done[t], term[t], adv[t]
        for b in range(lo, hi):
            boot = zero if tm[b] else gamma * nv[b]
            carry = zero if dn[b] else gl * last[b]
            x = r[b] + boot - v[b] + carry
            last[b] = x
            a[b] = x


@jit
def _td_lambda(reward, next_value, done, term, gamma, lmbda, one_m, ret, acc, lo, hi):
    T = reward.shape[0]
    zero = reward.dtype.type(0)
    last_nv = next_value[T - 1]
    for b in range(lo, hi):
        acc[b] = last_nv[b]
    for t in range(T - 1, -1, -1):
        r, nv, dn, tm, out = reward[t], next_value[t], done[t], term[t], ret[t]
        for b in range(lo, hi):
            g = nv[b] if dn[b] else acc[b]
            x = r[b] + (zero if tm[b] else gamma * (one_m * nv[b] + lmbda * g))
            acc[b] = x
            out[b] = x


def _flat(a, T):
    return contiguous(a).reshape(T, -1)


def _bools(a, T):
    a = _flat(a, T)
    return a if a.dtype == np.bool_ else a.astype(bool)


def gae(reward, value, next_value, done, terminated=None, gamma=0.99, lmbda=0.95):
    """``(advantage, value_target)``, compiled (see the module doc)."""
    if not compiled_dtype(reward, value, next_value):
        return gae_reference(reward, value, next_value, done, terminated, gamma, lmbda)
    terminated = _prepare(reward, value, next_value, done, terminated)
    T = reward.shape[0]
    dt = reward.dtype
    r, v, nv = _flat(reward, T), _flat(value, T), _flat(next_value, T)
    d, tm = _bools(done, T), _bools(terminated, T)
    B = r.shape[1]
    adv = np.empty((T, B), dt)
    last = np.empty(B, dt)
    g, gl = dt.type(gamma), dt.type(gamma * lmbda)
    split(lambda lo, hi: _gae(r, v, nv, d, tm, g, gl, adv, last, lo, hi), B, 4 * T * B)
    adv = adv.reshape(reward.shape)
    return adv, adv + value


def td_lambda_return(reward, next_value, done, terminated=None, gamma=0.99, lmbda=0.95):
    """TD(lambda) returns, compiled (see the module doc)."""
    if not compiled_dtype(reward, next_value):
        return td_lambda_return_reference(reward, next_value, done, terminated, gamma, lmbda)
    terminated = _prepare(reward, None, next_value, done, terminated)
    T = reward.shape[0]
    dt = reward.dtype
    ret = np.empty(reward.shape, dt)
    if T == 0:
        return ret
    r, nv = _flat(reward, T), _flat(next_value, T)
    d, tm = _bools(done, T), _bools(terminated, T)
    B = r.shape[1]
    out = ret.reshape(T, B)
    acc = np.empty(B, dt)
    g, lm, one_m = dt.type(gamma), dt.type(lmbda), dt.type(1 - lmbda)
    split(lambda lo, hi: _td_lambda(r, nv, d, tm, g, lm, one_m, out, acc, lo, hi), B,
          3 * T * B)
    return ret


register("gae", reference=gae_reference, cpu=gae)
register("td_lambda_return", reference=td_lambda_return_reference, cpu=td_lambda_return)
