"""Value estimators as plain tensor functions, with torchrl's names, signatures and layout.

Every tensor is ``[*batch, T, *features]`` (time on ``time_dim``, -2 by default; usually
``[B, T, 1]``). ``done`` ends a trajectory at a step (terminated or truncated): nothing after it
flows back into the estimates before it. ``terminated`` (default: ``done``) says the episode
really ended there, so ``next_state_value`` is not bootstrapped from; a truncated step
(``done`` and not ``terminated``) bootstraps from its ``next_state_value``.

Each estimator comes twice: a readable loop over time (``generalized_advantage_estimate``,
``td1_return_estimate``, ``td_lambda_return_estimate``, ...) and a vectorised twin (``vec_*``)
that gives the same numbers (the tests hold them equal). The vectorised ones run the compiled
scan of ``ember.kernels`` when gamma and lambda are numbers (or one-element tensors that need
no gradient) and the values are float32/float64 CPU tensors, else a log2(T)-round scan in
ember ops. ``gamma``/``lmbda`` may also be tensors broadcastable to the data (per-step
discounts).

All of them are differentiable in the value (and reward) inputs, as torchrl's are; the
estimator modules of the later objectives call them under ``no_grad`` for targets.

    >>> import ember
    >>> from ember.rl.objectives.value.functional import vec_generalized_advantage_estimate
    >>> B, T = 2, 5
    >>> value, next_value = ember.zeros(B, T, 1), ember.zeros(B, T, 1)
    >>> reward = ember.ones(B, T, 1)
    >>> done = ember.zeros(B, T, 1, dtype=ember.bool)
    >>> adv, target = vec_generalized_advantage_estimate(0.5, 1.0, value, next_value, reward,
    ...                                                 done)
    >>> [round(x, 4) for x in adv[0, :, 0].tolist()]
    [1.9375, 1.875, 1.75, 1.5, 1.0]
"""
from __future__ import annotations

import functools
import warnings

import ember
from ember._tensor import Tensor
from ember.autograd.grad_mode import STATE

from ._scan import masked_scan, reverse_linear_scan

__all__ = [
    "generalized_advantage_estimate", "vec_generalized_advantage_estimate",
    "td0_advantage_estimate", "td0_return_estimate",
    "td1_return_estimate", "vec_td1_return_estimate",
    "td1_advantage_estimate", "vec_td1_advantage_estimate",
    "td_lambda_return_estimate", "vec_td_lambda_return_estimate",
    "td_lambda_advantage_estimate", "vec_td_lambda_advantage_estimate",
    "reward2go",
]


# ----------------------------------------------------------------------------- helpers
def _time_dim(fn):
    """Accept ``time_dim=``: the tensors are transposed so that time is dim -2, and the
    results back. A 1-D tensor with ``time_dim=-1`` gets a trailing feature dim of 1."""

    @functools.wraps(fn)
    def wrapper(*args, time_dim=-2, **kwargs):
        if time_dim == -2:
            return fn(*args, **kwargs)
        squeeze = []

        def move(x):
            if not isinstance(x, Tensor) or x.numel() <= 1:
                return x
            d = time_dim - x.ndim if time_dim >= 0 else time_dim
            if not -x.ndim <= d < 0:
                raise RuntimeError(f"{fn.__name__}: time_dim={time_dim} does not fit a "
                                   f"tensor of shape {list(x.shape)}")
            if x.ndim >= 2:
                return x.transpose(d, -2)
            squeeze.append(True)
            return x.unsqueeze(-1)

        args = [move(a) for a in args]
        kwargs = {k: move(v) for k, v in kwargs.items()}
        out = fn(*args, **kwargs)

        def back(o):
            if squeeze:
                return o.squeeze(-1)
            d = time_dim - o.ndim if time_dim >= 0 else time_dim
            return o.transpose(d, -2)

        return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)

    return wrapper


def _check(name, **tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise RuntimeError(f"{name}: every input must have one shape [*batch, T, *features], "
                           f"got " + ", ".join(f"{k}={list(s)}" for k, s in shapes.items()))
    shape = next(iter(shapes.values()))
    if len(shape) < 2:
        raise RuntimeError(f"{name}: inputs need a time dim and a feature dim "
                           f"([*batch, T, F]), got shape {list(shape)}")


def _bool(x):
    return x if x.dtype == ember.bool else x.bool()


def _not(x, dtype):
    """``1 - x`` as a ``dtype`` tensor, for a bool (or 0/1) tensor ``x``."""
    return ember.logical_not(_bool(x)).to(dtype)


def _scalar(x) -> bool:
    """A discount usable as one Python float (and needing no gradient)."""
    if not isinstance(x, Tensor):
        return True
    return x.numel() == 1 and not (x.requires_grad and STATE.enabled)


def _step_param(x, shape):
    """(value, time_sensitive): ``x`` as a number or a tensor broadcastable to ``shape``."""
    if isinstance(x, Tensor) and tuple(x.shape) == tuple(shape):
        return x, True
    if isinstance(x, Tensor) and x.numel() == 1 and not x.requires_grad:
        return float(x.item()), False
    return x, False


def _last_done(done):
    """``done`` with the last step set: the end of the batch ends every trajectory."""
    d = _bool(done)
    return ember.cat([d[..., :-1, :], ember.ones_like(d[..., -1:, :])], -2)


# ----------------------------------------------------------------------------- GAE
@_time_dim
def generalized_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward, done,
                                   terminated=None):
    """Generalized advantage estimate (Schulman et al. 2016), by a loop over time::

        delta_t = r_t + gamma * (1 - terminated_t) * V(s'_t) - V(s_t)
        A_t     = delta_t + gamma * lmbda * (1 - done_t) * A_{t+1}

    Returns ``(advantage, value_target = advantage + state_value)``.
    """
    terminated = done if terminated is None else terminated
    _check("generalized_advantage_estimate", state_value=state_value,
           next_state_value=next_state_value, reward=reward, done=done, terminated=terminated)
    dt = state_value.dtype
    delta = reward + gamma * _not(terminated, dt) * next_state_value - state_value
    discount = gamma * lmbda * _not(done, dt) * ember.ones_like(delta)
    steps = []
    running = None
    for t in reversed(range(delta.shape[-2])):
        running = delta[..., t, :] if running is None else \
            delta[..., t, :] + discount[..., t, :] * running
        steps.append(running)
    advantage = ember.stack(steps[::-1], -2) if steps else ember.zeros_like(delta)
    return advantage, advantage + state_value


@_time_dim
def vec_generalized_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward,
                                       done, terminated=None):
    """The vectorised twin of ``generalized_advantage_estimate`` (same arguments, same
    results)."""
    terminated = done if terminated is None else terminated
    _check("vec_generalized_advantage_estimate", state_value=state_value,
           next_state_value=next_state_value, reward=reward, done=done, terminated=terminated)
    dt = state_value.dtype
    delta = reward + gamma * _not(terminated, dt) * next_state_value - state_value
    if _scalar(gamma) and _scalar(lmbda):
        advantage = masked_scan(delta, done, float(gamma) * float(lmbda))
    else:
        advantage = reverse_linear_scan(delta, gamma * lmbda * _not(done, dt))
    return advantage, advantage + state_value


# ----------------------------------------------------------------------------- TD(0)
def td0_return_estimate(gamma, next_state_value, reward, terminated=None, *, done=None):
    """One-step return ``r_t + gamma * (1 - terminated_t) * V(s'_t)``. (``done=`` is the old
    name of ``terminated`` and warns.)"""
    if terminated is None:
        if done is None:
            raise TypeError("td0_return_estimate: pass terminated")
        warnings.warn("td0_return_estimate(done=...) is deprecated: pass terminated",
                      DeprecationWarning, stacklevel=2)
        terminated = done
    _check("td0_return_estimate", next_state_value=next_state_value, reward=reward,
           terminated=terminated)
    return reward + gamma * _not(terminated, next_state_value.dtype) * next_state_value


def td0_advantage_estimate(gamma, state_value, next_state_value, reward, done,
                           terminated=None):
    """One-step advantage ``td0_return_estimate(...) - V(s_t)``."""
    terminated = done if terminated is None else terminated
    return td0_return_estimate(gamma, next_state_value, reward, terminated) - state_value


# ----------------------------------------------------------------------------- TD(1)
@_time_dim
def td1_return_estimate(gamma, next_state_value, reward, done, terminated=None,
                        rolling_gamma=None):
    """Monte-Carlo return bootstrapped at the end of the batch and at truncations, by a loop::

        G_t = r_t + gamma_t * (1 - terminated_t) * (V(s'_t) if done_t else G_{t+1})
        G_{T-1} bootstraps from V(s'_{T-1}).

    ``rolling_gamma`` (with a gamma tensor of the data's shape): ``True`` (default) uses
    each step's own gamma; ``False`` discounts the whole future of step ``t`` by
    ``gamma_t``. (torchrl's loop does not bootstrap at the end of the batch in the
    ``rolling_gamma=False`` case; its vectorised version and this one do.)
    """
    terminated = done if terminated is None else terminated
    _check("td1_return_estimate", next_state_value=next_state_value, reward=reward,
           done=done, terminated=terminated)
    dt = next_state_value.dtype
    shape = reward.shape
    gamma, per_step = _step_param(gamma, shape)
    if rolling_gamma is False and not per_step:
        raise RuntimeError("td1_return_estimate: rolling_gamma=False needs a gamma tensor "
                           "with one value per step")
    not_term = _not(terminated, dt)
    trunc = (_bool(done) & ember.logical_not(_bool(terminated))).to(dt)
    T = shape[-2]

    def run(first, gamma_of):
        g = next_state_value[..., -1, :]
        out = []
        for i in reversed(range(first, T)):
            bootstrap = trunc[..., i, :] * next_state_value[..., i, :] + \
                (1 - trunc[..., i, :]) * g
            g = reward[..., i, :] + gamma_of(i) * not_term[..., i, :] * bootstrap
            out.append(g)
        return out

    if rolling_gamma is False:
        return ember.stack([run(k, lambda i, k=k: gamma[..., k, :])[-1] for k in range(T)],
                           -2)
    g_at = (lambda i: gamma[..., i, :]) if per_step else (lambda i: gamma)
    steps = run(0, g_at)
    return ember.stack(steps[::-1], -2) if steps else ember.zeros_like(reward)


@_time_dim
def vec_td1_return_estimate(gamma, next_state_value, reward, done, terminated=None,
                            rolling_gamma=None):
    """The vectorised twin of ``td1_return_estimate``: TD(lambda) with lambda = 1, where a
    terminated step also ends the bootstrapped sum."""
    terminated = done if terminated is None else terminated
    _check("vec_td1_return_estimate", next_state_value=next_state_value, reward=reward,
           done=done, terminated=terminated)
    ends = _bool(done) | _bool(terminated)
    return vec_td_lambda_return_estimate(gamma, 1.0, next_state_value, reward, ends,
                                         terminated, rolling_gamma)


@_time_dim
def td1_advantage_estimate(gamma, state_value, next_state_value, reward, done,
                           terminated=None, rolling_gamma=None):
    """``td1_return_estimate(...) - state_value``."""
    return td1_return_estimate(gamma, next_state_value, reward, done, terminated,
                               rolling_gamma) - state_value


@_time_dim
def vec_td1_advantage_estimate(gamma, state_value, next_state_value, reward, done,
                               terminated=None, rolling_gamma=None):
    """``vec_td1_return_estimate(...) - state_value``."""
    return vec_td1_return_estimate(gamma, next_state_value, reward, done, terminated,
                                   rolling_gamma) - state_value


# ----------------------------------------------------------------------------- TD(lambda)
@_time_dim
def td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done, terminated=None,
                              rolling_gamma=None):
    """TD(lambda) return by a loop over time (``V'_t = (1 - terminated_t) V(s'_t)``)::

        G_t = r_t + gamma_t * ((1 - lmbda_t) * V'_t + lmbda_t * (V'_t if done_t else G_{t+1}))
        G_{T-1} bootstraps from V'_{T-1}.

    ``rolling_gamma=False`` (with per-step gamma or lambda tensors) uses the step's gamma
    and lambda for its whole future.
    """
    terminated = done if terminated is None else terminated
    _check("td_lambda_return_estimate", next_state_value=next_state_value, reward=reward,
           done=done, terminated=terminated)
    dt = next_state_value.dtype
    shape = reward.shape
    nv = next_state_value * _not(terminated, dt)
    gamma, g_step = _step_param(gamma, shape)
    lmbda, l_step = _step_param(lmbda, shape)
    if rolling_gamma is False and not (g_step or l_step):
        raise RuntimeError("td_lambda_return_estimate: rolling_gamma=False needs gamma or "
                           "lmbda tensors with one value per step")
    ends = _bool(done).to(dt)
    T = shape[-2]

    def at(x, per_step, i):
        return x[..., i, :] if per_step else x

    def run(first, k=None):
        g = nv[..., -1, :]
        for i in reversed(range(first, T)):
            gm = at(gamma, g_step, i if k is None else k)
            lm = at(lmbda, l_step, i if k is None else k)
            d = ends[..., i, :]
            g = g * (1 - d) + nv[..., i, :] * d
            g = reward[..., i, :] + gm * ((1 - lm) * nv[..., i, :] + lm * g)
            yield g

    if rolling_gamma is False:
        return ember.stack([list(run(k, k))[-1] for k in range(T)], -2)
    steps = list(run(0))
    return ember.stack(steps[::-1], -2) if steps else ember.zeros_like(reward)


@_time_dim
def vec_td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done,
                                  terminated=None, rolling_gamma=None):
    """The vectorised twin of ``td_lambda_return_estimate``: the linear recurrence
    ``G_t = a_t + c_t G_{t+1}`` with ``d_t = done_t`` (and the last step) and::

        a_t = r_t + gamma_t V'_t ((1 - lmbda_t) + lmbda_t d_t),   c_t = gamma_t lmbda_t (1 - d_t)

    run as one scan. ``rolling_gamma=False`` runs one scan per start step (T x the work).
    """
    terminated = done if terminated is None else terminated
    _check("vec_td_lambda_return_estimate", next_state_value=next_state_value,
           reward=reward, done=done, terminated=terminated)
    dt = next_state_value.dtype
    shape = reward.shape
    nv = next_state_value * _not(terminated, dt)
    last = _last_done(done)
    d = last.to(dt)
    if _scalar(gamma) and _scalar(lmbda):
        if rolling_gamma is False:
            raise RuntimeError("vec_td_lambda_return_estimate: rolling_gamma=False needs "
                               "gamma or lmbda tensors with one value per step")
        g, lm = float(gamma), float(lmbda)
        a = reward + g * nv * ((1 - lm) + lm * d)
        return masked_scan(a, last, g * lm)
    if rolling_gamma is False:
        gamma, g_step = _step_param(gamma, shape)
        lmbda, l_step = _step_param(lmbda, shape)
        if not (g_step or l_step):
            raise RuntimeError("vec_td_lambda_return_estimate: rolling_gamma=False needs "
                               "gamma or lmbda tensors with one value per step")
        # row k of a new leading dim uses the gamma/lambda of step k at every step
        gamma = gamma.movedim(-2, 0).unsqueeze(-2) if g_step else gamma
        lmbda = lmbda.movedim(-2, 0).unsqueeze(-2) if l_step else lmbda
        a = reward + gamma * nv * ((1 - lmbda) + lmbda * d)
        rows = reverse_linear_scan(a, gamma * lmbda * (1 - d))   # [T_k, *batch, T, F]
        diag = ember.diagonal(rows.movedim(0, -1), 0, -3, -1)     # [*batch, F, T]
        return diag.transpose(-1, -2)
    a = reward + gamma * nv * ((1 - lmbda) + lmbda * d)
    return reverse_linear_scan(a, gamma * lmbda * (1 - d))


@_time_dim
def td_lambda_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward, done,
                                 terminated=None, rolling_gamma=None):
    """``td_lambda_return_estimate(...) - state_value``."""
    return td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done, terminated,
                                     rolling_gamma) - state_value


@_time_dim
def vec_td_lambda_advantage_estimate(gamma, lmbda, state_value, next_state_value, reward,
                                     done, terminated=None, rolling_gamma=None):
    """``vec_td_lambda_return_estimate(...) - state_value``."""
    return vec_td_lambda_return_estimate(gamma, lmbda, next_state_value, reward, done,
                                         terminated, rolling_gamma) - state_value


# ----------------------------------------------------------------------------- reward-to-go
@_time_dim
def reward2go(reward, done, gamma):
    """Discounted sum of the rewards to come within each trajectory:
    ``R_t = r_t + gamma * (1 - done_t) * R_{t+1}`` (the batch's end ends every trajectory)."""
    _check("reward2go", reward=reward, done=done)
    if _scalar(gamma):
        return masked_scan(reward, done, float(gamma))
    return reverse_linear_scan(reward, gamma * _not(done, reward.dtype))
