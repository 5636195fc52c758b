"""Affine normalisation: ``ObservationNorm`` (fixed ``loc``/``scale``, or measured by
``init_stats``), ``RewardScaling`` and ``VecNorm`` (running statistics with decay).

Formulas (torchrl's): ``ObservationNorm``/``RewardScaling`` give ``x * scale + loc``, or
``(x - loc) / scale`` with ``standard_normal=True``. ``VecNorm`` keeps decayed sums
``S = d*S + sum(x)``, ``Q = d*Q + sum(x**2)``, ``C = d*C + n`` over the batch of each call (stats
updated first), then returns ``(x - m) / max(s, eps)`` with ``m = S/C`` and
``s = sqrt(max(Q/C - m**2, eps))``.
"""
from __future__ import annotations

import multiprocessing

import numpy as np

import ember
from ember.rl.tensordict import TensorDict

from ..specs import Bounded, Unbounded
from ._base import Compose, Transform, as_np, reset_mask, to_tensor

__all__ = ["ObservationNorm", "RewardScaling", "VecNorm"]


def _float_dtype(arr):
    return arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float32)


def _affine_spec(spec, fn):
    if not isinstance(spec, Bounded):
        return Unbounded(spec.shape, _float_dtype(np.zeros(0, spec.dtype)), spec.device)
    lo, hi = fn(spec.low.astype(np.float64)), fn(spec.high.astype(np.float64))
    return Bounded(np.minimum(lo, hi), np.maximum(lo, hi), spec.shape,
                   _float_dtype(np.zeros(0, spec.dtype)), spec.device)


class _Affine(Transform):
    """``x * scale + loc`` (or ``(x - loc) / scale``) on numpy, keeping float dtypes."""

    def _affine(self, x, inverse=False):
        arr = as_np(x)
        loc = self.loc.numpy(force=True).astype(np.float64)
        scale = self.scale.numpy(force=True).astype(np.float64)
        forward_std = bool(self.standard_normal) != inverse
        out = (arr - loc) / scale if forward_std else arr * scale + loc
        return out.astype(_float_dtype(arr))

    def _apply_transform(self, value):
        return to_tensor(self._affine(value))

    def _inv_apply_transform(self, value):
        return to_tensor(self._affine(value, inverse=True))


class ObservationNorm(_Affine):
    """``ObservationNorm(loc, scale, in_keys=["observation"], standard_normal=False)``; without
    ``loc``/``scale``, ``init_stats(num_iter)`` measures them on random rollouts of the parent
    env (mean and unbiased std over ``reduce_dim``)."""

    def __init__(self, loc=None, scale=None, in_keys=None, out_keys=None, in_keys_inv=None,
                 out_keys_inv=None, standard_normal=False, eps=None):
        if in_keys is None:
            raise ValueError("ObservationNorm: pass in_keys (e.g. in_keys=['observation'])")
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        if (loc is None) != (scale is None):
            raise ValueError("ObservationNorm: give both loc and scale, or neither (then call "
                             "init_stats)")
        self.standard_normal = bool(standard_normal)
        if eps is None:                     # torchrl's default: the scale tensor's dtype eps
            floating = isinstance(scale, ember.Tensor) and np.dtype(scale.dtype).kind == "f"
            eps = float(np.finfo(np.dtype(scale.dtype)).eps) if floating else 1e-6
        self.eps = float(eps)
        if loc is None:
            self.register_buffer("loc", None)
            self.register_buffer("scale", None)
        else:
            self.register_buffer("loc", ember.tensor(np.asarray(as_np(loc), np.float32)))
            self.register_buffer("scale", ember.tensor(
                np.maximum(np.asarray(as_np(scale), np.float32), self.eps)))

    @property
    def initialized(self):
        return self.loc is not None

    def init_stats(self, num_iter, reduce_dim=0, cat_dim=None, key=None, keep_dims=None):
        """Set ``loc``/``scale`` from at least ``num_iter`` frames of random rollouts of the
        parent env, so that the transformed data has mean 0 and std 1 over ``reduce_dim``."""
        if cat_dim is None:
            if not isinstance(reduce_dim, int):
                raise ValueError("ObservationNorm.init_stats: give cat_dim when reduce_dim is a tuple")
            cat_dim = reduce_dim
        rdims = [reduce_dim] if isinstance(reduce_dim, int) else list(reduce_dim)
        if cat_dim not in rdims:
            raise ValueError(f"ObservationNorm.init_stats: cat_dim {cat_dim} must be in reduce_dim "
                             f"{reduce_dim}")
        if self.initialized:
            raise RuntimeError(f"ObservationNorm: loc/scale are already set ({self.loc}, {self.scale})")
        if len(self.in_keys) > 1 and key is None:
            raise RuntimeError("ObservationNorm.init_stats: several in_keys; say which with key=")
        key = self.in_keys[0] if key is None else key
        parent = self.parent
        if parent is None:
            raise RuntimeError("ObservationNorm.init_stats: the transform is not in a "
                               "TransformedEnv")
        frames, data = 0, []
        while frames < num_iter:
            ro = parent.rollout(max_steps=num_iter)
            frames += ro.numel()
            data.append(as_np(ro.get(key)).astype(np.float64))
        data = np.concatenate(data, cat_dim)
        rdims = sorted(d if d < 0 else d - data.ndim for d in rdims)
        keep = sorted(d if d < 0 else d - data.ndim for d in (keep_dims or ()))
        if not all(k in rdims for k in keep):
            raise ValueError("ObservationNorm.init_stats: keep_dims must be part of reduce_dim")
        loc = data.mean(tuple(rdims), keepdims=True)
        scale = data.std(tuple(rdims), ddof=1, keepdims=True)
        drop = tuple(d for d in rdims if d not in keep)
        loc, scale = loc.squeeze(drop), scale.squeeze(drop)
        if not self.standard_normal:
            scale = 1 / np.maximum(scale, self.eps)
            loc = -loc * scale
        if not (np.isfinite(loc).all() and np.isfinite(scale).all()):
            raise RuntimeError("ObservationNorm.init_stats: non-finite loc or scale")
        self.loc = ember.tensor(loc.astype(np.float32))
        self.scale = ember.tensor(np.maximum(scale, self.eps).astype(np.float32))
        if self.container is not None:
            self.container._refresh_specs()

    def _affine(self, x, inverse=False):
        if not self.initialized:
            raise RuntimeError("ObservationNorm: loc/scale are not set; pass them or call "
                               "init_stats()")
        return super()._affine(x, inverse)

    def transform_observation_spec(self, observation_spec):
        if not self.initialized:
            return observation_spec
        return self._map_spec(observation_spec, lambda s: _affine_spec(s, self._affine))

    def transform_action_spec(self, action_spec):
        if self.in_keys_inv == ["action"] and self.initialized:
            return _affine_spec(action_spec, self._affine)
        return action_spec

    def __repr__(self):
        if self.initialized and self.loc.numel() == 1 and self.scale.numel() == 1:
            return (f"ObservationNorm(loc={float(self.loc.item()):.4f}, "
                    f"scale={float(self.scale.item()):.4f}, keys={self.in_keys})")
        return f"ObservationNorm(keys={self.in_keys}, initialized={self.initialized})"


class RewardScaling(_Affine):
    """``reward * scale + loc`` (``(reward - loc) / scale`` with ``standard_normal``)."""

    def __init__(self, loc, scale, in_keys=None, out_keys=None, standard_normal=False):
        super().__init__(["reward"] if in_keys is None else in_keys, out_keys)
        self.standard_normal = bool(standard_normal)
        self.register_buffer("loc", ember.tensor(np.asarray(as_np(loc), np.float32)))
        self.register_buffer("scale", ember.tensor(np.maximum(np.asarray(as_np(scale), np.float32),
                                                              1e-6)))

    def transform_reward_spec(self, reward_spec):
        if "reward" in self.in_keys:
            return _affine_spec(reward_spec, self._affine)
        return reward_spec

    def __repr__(self):
        return (f"RewardScaling(loc={float(self.loc.item()):.4f}, "
                f"scale={float(self.scale.item()):.4f}, keys={self.in_keys})")


def _suffix(key, suffix):
    return key + suffix if isinstance(key, str) else key[:-1] + (key[-1] + suffix,)


class VecNorm(Transform):
    """Normalises ``in_keys`` (default ``["observation", "reward"]``) with running, decayed
    statistics updated by every step and reset (only the entries that were reset). ``freeze()``
    stops the updates; ``to_observation_norm()`` gives a fixed copy. ``shared_td``: a TensorDict
    of ``{key}_sum``, ``{key}_ssq``, ``{key}_count`` tensors in shared memory, updated in place
    (under ``lock``) so several processes share the statistics."""

    def __init__(self, in_keys=None, out_keys=None, shared_td=None, lock=None, decay=0.9999,
                 eps=1e-4, shapes=None):
        super().__init__(["observation", "reward"] if in_keys is None else in_keys, out_keys)
        if shared_td is not None:
            for k in self.in_keys:
                for sfx in ("_sum", "_ssq", "_count"):
                    if _suffix(k, sfx) not in shared_td.keys(True, True):
                        raise KeyError(f"VecNorm: shared_td has no {_suffix(k, sfx)!r}")
            if lock is None:
                lock = multiprocessing.Lock()
        if shapes is not None and len(shapes) != len(self.in_keys):
            raise ValueError(f"VecNorm: {len(shapes)} shapes for {len(self.in_keys)} in_keys")
        self._td = shared_td
        self.lock = lock
        self.decay, self.eps = float(decay), float(eps)
        self.shapes = shapes
        self.frozen = False

    def freeze(self):
        self.frozen = True
        return self

    def unfreeze(self):
        self.frozen = False
        return self

    def _stats(self, key, value, lead):
        if self._td is None:
            self._td = TensorDict({}, batch_size=[])
        if _suffix(key, "_sum") not in self._td.keys(True, True):
            shape = tuple(self.shapes[self.in_keys.index(key)]) if self.shapes is not None \
                else value.shape[lead:]
            for sfx in ("_sum", "_ssq"):
                self._td.set(_suffix(key, sfx), ember.zeros(*shape, dtype=ember.float64))
            self._td.set(_suffix(key, "_count"), ember.zeros(1, dtype=ember.float64))
        return [self._td.get(_suffix(key, s)).numpy() for s in ("_sum", "_ssq", "_count")]

    def _normalize(self, td, update_rows=None):
        lead = len(td.batch_size)
        keys = td.keys(True, True)
        if self.lock is not None:
            self.lock.acquire()
        try:
            for ki, ko in zip(self.in_keys, self.out_keys):
                if ki not in keys:
                    continue
                x = as_np(td.get(ki))
                s, q, c = self._stats(ki, x, lead)
                if not self.frozen:
                    upd = x.astype(np.float64)
                    if update_rows is not None:
                        upd = upd[update_rows]
                    nd = upd.ndim - s.ndim
                    n = int(np.prod(upd.shape[:nd])) if nd else 1
                    s *= self.decay
                    s += upd.sum(tuple(range(nd)))
                    q *= self.decay
                    q += (upd ** 2).sum(tuple(range(nd)))
                    c *= self.decay
                    c += n
                mean, std = self._mean_std(s, q, c)
                td.set(ko, to_tensor(((x - mean) / std).astype(_float_dtype(x))))
        finally:
            if self.lock is not None:
                self.lock.release()
        return td

    def _mean_std(self, s, q, c):
        cnt = np.maximum(c, 1e-12)
        mean = s / cnt
        std = np.sqrt(np.maximum(q / cnt - mean ** 2, self.eps))
        return mean, np.maximum(std, self.eps)

    def _call(self, next_tensordict):
        return self._normalize(next_tensordict)

    def _reset(self, tensordict, tensordict_reset):
        rows = None
        if tensordict is not None and "_reset" in tensordict.keys() and tensordict_reset.batch_size:
            rows = reset_mask(tensordict, tensordict_reset.batch_size)[..., 0]
        return self._normalize(tensordict_reset, rows)

    def _loc_scale(self, key):
        s, q, c = (self._td.get(_suffix(key, x)).numpy() for x in ("_sum", "_ssq", "_count"))
        return self._mean_std(s, q, c)

    @property
    def loc(self):
        if self._td is None:
            return None
        return {k: ember.tensor(self._loc_scale(k)[0].astype(np.float32)) for k in self.in_keys
                if _suffix(k, "_sum") in self._td.keys(True, True)}

    @property
    def scale(self):
        if self._td is None:
            return None
        return {k: ember.tensor(self._loc_scale(k)[1].astype(np.float32)) for k in self.in_keys
                if _suffix(k, "_sum") in self._td.keys(True, True)}

    def to_observation_norm(self):
        """A fixed ``ObservationNorm`` (a ``Compose`` of them for several keys) with the current
        statistics."""
        if self._td is None:
            raise RuntimeError("VecNorm.to_observation_norm: no data has been seen yet")
        loc, scale = self.loc, self.scale
        out = [ObservationNorm(loc[k], scale[k], in_keys=[k], out_keys=[ko], standard_normal=True,
                               eps=self.eps) for k, ko in zip(self.in_keys, self.out_keys) if k in loc]
        return out[0] if len(out) == 1 else Compose(*out)

    def transform_observation_spec(self, observation_spec):
        return self._map_spec(observation_spec, lambda s: Unbounded(
            s.shape, _float_dtype(np.zeros(0, s.dtype)), s.device))

    def transform_reward_spec(self, reward_spec):
        if "reward" in self.in_keys:
            return Unbounded(reward_spec.shape, reward_spec.dtype, reward_spec.device)
        return reward_spec

    def __repr__(self):
        return f"VecNorm(decay={self.decay}, eps={self.eps}, keys={self.in_keys})"
