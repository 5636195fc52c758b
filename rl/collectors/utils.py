"""``split_trajectories``: a collector batch cut into one row per trajectory, right-padded with
zeros, with a boolean mask of the real steps (as torchrl's ``split_trajectories``).

The trajectories are taken in the batch's flattened order (env-major, then time): every run of
equal ``("collector", "traj_ids")`` values is one trajectory (without traj ids, a run ends after
each ``("next", "done")``). The result has batch size ``[num_trajectories, longest]`` and the mask
under ``(prefix, "mask")`` (default ``("collector", "mask")``).

    >>> import ember
    >>> from ember.rl import TensorDict
    >>> ids = ember.tensor([0, 0, 0, 1, 1])
    >>> td = TensorDict({"obs": ember.arange(5.), "collector": {"traj_ids": ids}}, batch_size=[5])
    >>> out = split_trajectories(td)
    >>> out.batch_size, out["obs"].tolist()
    ((2, 3), [[0.0, 1.0, 2.0], [3.0, 4.0, 0.0]])
    >>> out["collector", "mask"].tolist()
    [[True, True, True], [True, True, False]]
"""
from __future__ import annotations

import numpy as np

import ember
from ember._tensor import Tensor
from ember.rl.tensordict import TensorDict
from ember.rl.tensordict._nontensor import NonTensorData, NonTensorStack

__all__ = ["split_trajectories"]


def _run_ids(td, traj_key, done_key):
    ids = td.get(traj_key, None)
    if ids is not None:
        flat = np.asarray(ids.numpy(force=True)).reshape(-1)
        return np.concatenate([[True], flat[1:] != flat[:-1]]) if flat.size else flat.astype(bool)
    done = td.get(done_key, None)
    if done is None:
        raise KeyError(f"split_trajectories: the TensorDict has neither {traj_key!r} nor "
                       f"{done_key!r}; one of them is needed to find the trajectories")
    d = np.asarray(done.numpy(force=True)).reshape(td.batch_size + (-1,)).any(-1)
    # a trajectory also ends at the last step of every env row
    if d.ndim > 1:
        d = d.copy()
        d[..., -1] = True
    d = d.reshape(-1)
    return np.concatenate([[True], d[:-1]]) if d.size else d


def split_trajectories(rollout_tensordict, *, prefix=None, trajectory_key=None, done_key=None,
                       as_nested=False):
    """``rollout_tensordict`` (batch ``[T]`` or ``[envs, T]``) as ``[num_trajs, max_len]``,
    zero-padded, with the mask of real steps at ``(prefix, "mask")``."""
    if as_nested:
        raise ValueError("split_trajectories: as_nested=True needs nested tensors, which ember "
                         "does not have; use the padded form (as_nested=False)")
    td = rollout_tensordict
    if not isinstance(td, TensorDict):
        raise TypeError(f"split_trajectories: expected a TensorDict, got {type(td).__name__}")
    if td.batch_dims == 0:
        raise ValueError("split_trajectories: the TensorDict needs at least one batch dim (time)")
    prefix = "collector" if prefix is None else prefix
    traj_key = trajectory_key if trajectory_key is not None else (prefix, "traj_ids")
    done_key = done_key if done_key is not None else ("next", "done")
    starts = _run_ids(td, traj_key, done_key)
    flat = td.reshape(-1)
    n = flat.batch_size[0]
    run = np.cumsum(starts) - 1  # trajectory number of every flat step
    num = int(run[-1]) + 1 if n else 0
    first = np.flatnonzero(starts)
    pos = np.arange(n) - first[run]  # position inside its trajectory
    lengths = np.bincount(run, minlength=num)
    longest = int(lengths.max()) if num else 0
    bs = (num, longest)

    def place(v):
        if isinstance(v, Tensor):
            a = v.numpy(force=True)
            out = np.zeros(bs + a.shape[1:], a.dtype)
            out[run, pos] = a
            return ember.tensor(out, device=v.device) if v.device.type != "cpu" else \
                Tensor._make(out)
        if isinstance(v, TensorDict):
            return TensorDict._new({k: place(x) for k, x in v._tensordict.items()}, bs
                                   + v.batch_size[1:], v.device)
        if isinstance(v, (NonTensorData, NonTensorStack)):
            objs = np.asarray(v._as_objects()).reshape(n, *v.batch_size[1:])
            out = np.empty(bs + objs.shape[1:], object)
            out[run, pos] = objs
            return NonTensorStack(out, v.device)
        raise TypeError(f"split_trajectories: cannot pad a {type(v).__name__}")

    out = TensorDict._new({k: place(v) for k, v in flat._tensordict.items()}, bs, td.device)
    mask = np.zeros(bs, np.bool_)
    mask[run, pos] = True
    out.set((prefix, "mask") if isinstance(prefix, str) else tuple(prefix) + ("mask",),
            Tensor._make(mask))
    return out
