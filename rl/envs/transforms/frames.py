"""``CatFrames(N, dim)``: the last ``N`` observations concatenated along ``dim`` (frame stacking).

In an env, the stack travels with the data: a step takes the root's stack, drops its oldest
frame and appends the new one; a reset fills the stack with the reset frame (``padding="same"``)
or with ``padding_value`` and the reset frame last (``padding="constant"``), only where
``"_reset"`` is true. On stored trajectories (``forward``, time = the last batch dim) each step
gets the frames of its own episode (episodes split after ``("next", "done")``), padded the same
way (``done_key`` names the flag).
"""
from __future__ import annotations

import numpy as np

from ..specs import Bounded, Unbounded
from ._base import Transform, as_np, reset_mask, to_tensor

__all__ = ["CatFrames"]


class CatFrames(Transform):
    def __init__(self, N, dim, in_keys=None, out_keys=None, padding="same", padding_value=0,
                 done_key="done"):
        super().__init__(["pixels"] if in_keys is None else in_keys, out_keys)
        if int(N) < 1:
            raise ValueError(f"CatFrames: N must be >= 1, got {N}")
        if int(dim) >= 0:
            raise ValueError(f"CatFrames: dim must be negative (counted from the end, so batch "
                             f"dims do not matter), got {dim}")
        if padding not in ("same", "constant"):
            raise ValueError(f"CatFrames: padding must be 'same' or 'constant', got {padding!r}")
        self.N, self.dim = int(N), int(dim)
        self.padding, self.padding_value = padding, padding_value
        self.done_key = done_key

    # ---------------------------------------------------------------- specs
    def _spec(self, spec):
        shape = list(spec.shape)
        if len(shape) < -self.dim:
            raise ValueError(f"CatFrames: dim {self.dim} is out of range for spec shape {spec.shape}")
        shape[self.dim] *= self.N
        if isinstance(spec, Bounded):
            low, high = spec.low, spec.high
            if self.padding == "constant":
                low = np.minimum(low, self.padding_value)
                high = np.maximum(high, self.padding_value)
            return Bounded(np.concatenate([low] * self.N, self.dim),
                           np.concatenate([high] * self.N, self.dim), tuple(shape), spec.dtype,
                           spec.device)
        return Unbounded(tuple(shape), spec.dtype, spec.device)

    def transform_observation_spec(self, observation_spec):
        return self._map_spec(observation_spec, self._spec)

    # ---------------------------------------------------------------- env
    def _fresh(self, frame):
        if self.padding == "same":
            return np.concatenate([frame] * self.N, self.dim)
        pad = np.full_like(frame, self.padding_value)
        return np.concatenate([pad] * (self.N - 1) + [frame], self.dim)

    def _call(self, next_tensordict):
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        keys = tensordict_reset.keys(True, True)
        nb = len(tensordict_reset.batch_size)
        for ki, ko in zip(self.in_keys, self.out_keys):
            if ki not in keys:
                continue
            stack = self._fresh(as_np(tensordict_reset.get(ki)))
            if tensordict is not None and "_reset" in tensordict.keys() and \
                    ko in tensordict.keys(True, True):
                mask = reset_mask(tensordict, tensordict_reset.batch_size)[..., 0]
                mask = mask.reshape(mask.shape + (1,) * (stack.ndim - nb))
                stack = np.where(mask, stack, as_np(tensordict.get(ko)))
            tensordict_reset.set(ko, to_tensor(stack))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        keys = next_tensordict.keys(True, True)
        for ki, ko in zip(self.in_keys, self.out_keys):
            if ki not in keys:
                continue
            if ko not in tensordict.keys(True, True):
                raise KeyError(f"CatFrames: the root tensordict has no {ko!r}; reset the env "
                               "through the TransformedEnv first")
            new = as_np(next_tensordict.get(ki))
            prev = as_np(tensordict.get(ko))
            size = new.shape[self.dim]
            kept = np.take(prev, np.arange(size, prev.shape[self.dim]), axis=self.dim)
            next_tensordict.set(ko, to_tensor(np.concatenate([kept, new], self.dim)))
        return next_tensordict

    # ---------------------------------------------------------------- stored data
    def forward(self, tensordict):
        """Stack frames along the time dim (the last batch dim) of a stored trajectory."""
        nb = len(tensordict.batch_size)
        if nb == 0:
            raise ValueError("CatFrames.forward: the tensordict needs a time dim (its last batch dim)")
        T = tensordict.batch_size[-1]
        t = np.arange(T)
        start = np.zeros(tensordict.batch_size, np.int64)
        done_key = ("next",) + (self.done_key if isinstance(self.done_key, tuple) else (self.done_key,))
        if done_key in tensordict.keys(True, True):
            done = np.asarray(as_np(tensordict.get(done_key)), np.bool_)
            done = done.reshape(tuple(tensordict.batch_size) + (-1,)).any(-1)
            begins = np.zeros_like(done)
            begins[..., 1:] = done[..., :-1]
            start = np.maximum.accumulate(np.where(begins, t, 0), axis=-1)
        else:
            start = np.broadcast_to(start, tensordict.batch_size)
        keys = tensordict.keys(True, True)
        for ki, ko in zip(self.in_keys, self.out_keys):
            if ki not in keys:
                continue
            x = as_np(tensordict.get(ki))
            feat = x.ndim - nb
            frames = []
            for k in range(self.N):
                src = t - (self.N - 1 - k)
                idx = np.maximum(src, start)
                g = np.take_along_axis(x, idx.reshape(idx.shape + (1,) * feat), axis=nb - 1) \
                    if x.ndim > nb else np.take_along_axis(x, idx, axis=nb - 1)
                if self.padding == "constant":
                    before = (src < start).reshape(idx.shape + (1,) * feat)
                    g = np.where(before, np.asarray(self.padding_value, x.dtype), g)
                frames.append(g)
            tensordict.set(ko, to_tensor(np.concatenate(frames, self.dim)))
        return tensordict

    def __repr__(self):
        return f"CatFrames(N={self.N}, dim={self.dim}, keys={self.in_keys})"
