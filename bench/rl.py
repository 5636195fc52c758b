"""RL benchmarks: TensorDict construction and batch gathers, the vectorised value
estimators, environment stepping and collection.

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
* ``ParallelEnv(8)`` of CartPole-v1 against ``gymnasium.vector.AsyncVectorEnv(8)``, frames/s
  with random actions (goal: at least 0.8x gymnasium's).
* ``SyncDataCollector`` with a small MLP policy on CartPole-v1 against a plain loop stepping
  gymnasium with the same policy, frames/s (goal: at least 0.5x the loop's).
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


COLLECT_FRAMES = 500


@suite.figure(f"collector, MLP policy, CartPole, {COLLECT_FRAMES} frames vs raw gymnasium",
              unit="ms", anchor="gymnasium", goal=0.5, higher_is_better=True)
def collector():
    """``SyncDataCollector(GymEnv("CartPole-v1"), policy).rollout()`` of 500 frames against a
    plain ``gymnasium`` loop stepping the same env with the same ember MLP (4-64-64-2, tanh,
    greedy action, under ``no_grad``); ratio = frames/s of the collector / frames/s of the loop
    (goal: at least 0.5)."""
    import gymnasium
    import numpy as np

    import ember
    from ember import nn
    from ember.rl.collectors import SyncDataCollector
    from ember.rl.envs import GymEnv
    from ember.rl.tensordict.nn import TensorDictModule

    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                        nn.Linear(64, 2))
    policy = TensorDictModule(lambda obs: mlp(obs).argmax(-1), in_keys=["observation"],
                              out_keys=["action"])
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    coll = SyncDataCollector(env, policy, frames_per_batch=COLLECT_FRAMES)
    genv = gymnasium.make("CartPole-v1")
    state = {"obs": genv.reset(seed=0)[0]}

    def run_gym():
        obs = state["obs"]
        with ember.no_grad():
            for _ in range(COLLECT_FRAMES):
                a = int(mlp(ember.from_numpy(obs)).argmax(-1).item())
                obs, _r, term, trunc, _info = genv.step(a)
                if term or trunc:
                    obs, _info = genv.reset()
        state["obs"] = obs

    batch = coll.rollout()
    assert batch.batch_size == (COLLECT_FRAMES,)
    # the same policy: the collector's actions are the MLP's greedy actions
    with ember.no_grad():
        assert np.array_equal(batch["action"].numpy(),
                              mlp(batch["observation"]).argmax(-1).numpy())
    return coll.rollout, run_gym


PAR_WORKERS, PAR_STEPS = 8, 100


@suite.figure(f"ParallelEnv({PAR_WORKERS}) vs AsyncVectorEnv({PAR_WORKERS}), CartPole, "
              f"{PAR_STEPS} steps", unit="ms", anchor="gymnasium", goal=0.8, higher_is_better=True)
def parallel_env():
    """``ParallelEnv(8, lambda: GymEnv("CartPole-v1"))`` stepped with random actions through
    ``step_and_maybe_reset`` (the collectors' loop: done workers reset in the same round trip)
    against ``gymnasium.vector.AsyncVectorEnv`` of 8 CartPoles (shared memory, NextStep autoreset)
    stepped with random actions; ratio = frames/s of ParallelEnv / frames/s of AsyncVectorEnv
    (goal: at least 0.8). Both keep their 8 worker processes for the rest of the run (idle)."""
    import gymnasium
    import numpy as np

    from ember.rl.envs import GymEnv, ParallelEnv

    penv = ParallelEnv(PAR_WORKERS, lambda: GymEnv("CartPole-v1"))
    penv.set_seed(0)
    venv = gymnasium.vector.AsyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * PAR_WORKERS)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    state = {"td": penv.reset()}

    def run_ember():
        td = state["td"]
        for _ in range(PAR_STEPS):
            td = penv.rand_action(td)
            _, td = penv.step_and_maybe_reset(td)
        state["td"] = td

    def run_gym():
        for _ in range(PAR_STEPS):
            venv.step(rng.integers(0, 2, PAR_WORKERS))

    run_ember()
    assert state["td"]["observation"].shape == (PAR_WORKERS, 4)
    return run_ember, run_gym


if __name__ == "__main__":
    suite.main()
