"""RL benchmarks: TensorDict construction and batch gathers, and the vectorised value
estimators.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/rl.py --threads 2

* ``TensorDict({...10 keys...}, batch_size=[256])`` against the dict comprehension that
  copies the same dict (the floor for any checked container), and ``td[idx]`` (64 random rows
  of 256) against ``{k: v[idx] for k, v in d.items()}`` over the same ember tensors and over
  numpy arrays. With ``tensordict`` importable (not a dependency; ``pip install tensordict``
  beside torch), the same two operations against tensordict's own TensorDict. (Measured with
  tensordict 0.15.3 and torch 2.13: once tensordict is imported, every torch advanced index
  in the process took ~8 ms here, ``x[i]`` on a 256x84 tensor included, against 35 us before
  the import; its gather figure reflects that, not tensordict's own code.)
* GAE and TD(lambda) over T=2048 steps x 8 envs (``[8, 2048, 1]``, dones at 1%): ember's
  ``vec_*`` (the compiled scan) against a torch loop over time written the way torchrl's
  ``generalized_advantage_estimate`` is (goal: at most 0.1x its time), plus the numpy
  reference path of the scan for context.
"""
from __future__ import annotations

import importlib.util

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("rl")

N_KEYS, BATCH, GATHER = 10, 256, 64
ENVS, STEPS = 8, 2048


def _source():
    import numpy as np

    import ember

    rng = np.random.default_rng(0)
    shapes = [(4,), (1,), (), (84,), (3,), (1,), (), (16,), (2,), (8,)]
    arrays = {f"key{i}": rng.standard_normal((BATCH,) + shapes[i]).astype(np.float32)
              for i in range(N_KEYS)}
    tensors = {k: ember.from_numpy(a) for k, a in arrays.items()}
    idx = rng.integers(0, BATCH, GATHER)
    return arrays, tensors, idx


@suite.figure("TensorDict(10 keys, [256]) vs dict comprehension", unit="us", anchor="dict")
def construct():
    from ember.rl import TensorDict

    _, tensors, _ = _source()
    return (lambda: TensorDict(tensors, batch_size=[BATCH])), \
        (lambda: {k: v for k, v in tensors.items()})


@suite.figure("td[idx] 64 of 256 vs {k: v[idx]} of tensors", unit="us", anchor="dict")
def gather_vs_tensors():
    import numpy as np

    import ember
    from ember.rl import TensorDict

    _, tensors, idx = _source()
    td = TensorDict(tensors, batch_size=[BATCH])
    eidx = ember.from_numpy(idx)
    out = td[eidx]
    ref = {k: v[eidx] for k, v in tensors.items()}
    assert all(np.array_equal(out[k].numpy(), ref[k].numpy()) for k in ref)
    return (lambda: td[eidx]), (lambda: {k: v[eidx] for k, v in tensors.items()})


@suite.figure("td[idx] 64 of 256 vs {k: a[idx]} of arrays", unit="us", anchor="numpy")
def gather_vs_arrays():
    import ember
    from ember.rl import TensorDict

    arrays, tensors, idx = _source()
    td = TensorDict(tensors, batch_size=[BATCH])
    eidx = ember.from_numpy(idx)
    return (lambda: td[eidx]), (lambda: {k: a[idx] for k, a in arrays.items()})


if importlib.util.find_spec("tensordict") is not None:
    @suite.figure("TensorDict(10 keys, [256]) vs tensordict", unit="us", anchor="tensordict")
    def construct_vs_tensordict():
        import torch
        import tensordict

        from ember.rl import TensorDict

        arrays, tensors, _ = _source()
        ttensors = {k: torch.from_numpy(a) for k, a in arrays.items()}
        return (lambda: TensorDict(tensors, batch_size=[BATCH])), \
            (lambda: tensordict.TensorDict(ttensors, batch_size=[BATCH]))

    @suite.figure("td[idx] 64 of 256 vs tensordict", unit="us", anchor="tensordict")
    def gather_vs_tensordict():
        import torch
        import tensordict

        import ember
        from ember.rl import TensorDict

        arrays, tensors, idx = _source()
        td = TensorDict(tensors, batch_size=[BATCH])
        ttd = tensordict.TensorDict({k: torch.from_numpy(a) for k, a in arrays.items()},
                                    batch_size=[BATCH])
        eidx, tidx = ember.from_numpy(idx), torch.from_numpy(idx)
        return (lambda: td[eidx]), (lambda: ttd[tidx])


def _trajectories():
    import numpy as np

    rng = np.random.default_rng(1)
    shape = (ENVS, STEPS, 1)
    v, nv, r = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    done = rng.random(shape) < 0.01
    return v, nv, r, done


def _torch_gae(gamma, lmbda, value, next_value, reward, done):
    """A loop over time, as torchrl's ``generalized_advantage_estimate`` runs."""
    import torch

    not_done = (~done).to(value.dtype)
    delta = reward + gamma * not_done * next_value - value
    discount = gamma * lmbda * not_done
    adv = torch.empty_like(delta)
    prev = 0
    for t in reversed(range(delta.shape[-2])):
        prev = adv[..., t, :] = delta[..., t, :] + discount[..., t, :] * prev
    return adv, adv + value


def _torch_td_lambda(gamma, lmbda, next_value, reward, done):
    import torch

    nv = next_value * (~done).to(next_value.dtype)
    ret = torch.empty_like(nv)
    g = nv[..., -1, :]
    d = done.to(nv.dtype)
    for t in reversed(range(nv.shape[-2])):
        g = g * (1 - d[..., t, :]) + nv[..., t, :] * d[..., t, :]
        g = ret[..., t, :] = reward[..., t, :] + gamma * ((1 - lmbda) * nv[..., t, :] + lmbda * g)
    return ret


def _gae_pair(mode):
    import numpy as np
    import torch

    import ember
    from ember import kernels
    from ember.rl.objectives.value.functional import vec_generalized_advantage_estimate

    v, nv, r, done = _trajectories()
    ev, env_, er, ed = (ember.from_numpy(x) for x in (v, nv, r, done))
    tv, tnv, tr, tdn = (torch.from_numpy(x) for x in (v, nv, r, done))

    def run_e():
        old = kernels.set_mode(mode)
        try:
            return vec_generalized_advantage_estimate(0.99, 0.95, ev, env_, er, ed)
        finally:
            kernels.set_mode(old)

    def run_t():
        return _torch_gae(0.99, 0.95, tv, tnv, tr, tdn)

    a, b = run_e()[0].numpy(), run_t()[0].numpy()
    assert np.allclose(a, b, rtol=1e-4, atol=1e-4), float(np.abs(a - b).max())
    return run_e, run_t


@suite.figure("vec GAE, T=2048 x 8 envs vs torch loop", unit="ms", goal=0.1)
def gae():
    return _gae_pair("auto")


@suite.figure("  same, numpy reference path (context)", unit="ms")
def gae_reference():
    return _gae_pair("numpy")


@suite.figure("vec TD(lambda), T=2048 x 8 envs vs torch loop", unit="ms", goal=0.1)
def td_lambda():
    import numpy as np
    import torch

    import ember
    from ember.rl.objectives.value.functional import vec_td_lambda_return_estimate

    _, nv, r, done = _trajectories()
    env_, er, ed = (ember.from_numpy(x) for x in (nv, r, done))
    tnv, tr, tdn = (torch.from_numpy(x) for x in (nv, r, done))

    def run_e():
        return vec_td_lambda_return_estimate(0.99, 0.95, env_, er, ed)

    def run_t():
        return _torch_td_lambda(0.99, 0.95, tnv, tr, tdn)

    assert np.allclose(run_e().numpy(), run_t().numpy(), rtol=1e-4, atol=1e-4)
    return run_e, run_t


if __name__ == "__main__":
    suite.main()
