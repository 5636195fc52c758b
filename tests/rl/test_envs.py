"""ember.rl.envs: GymEnv (spaces -> specs, check_env_specs, rollout shapes, seeding, step_mdp
carry-over) and SerialEnv (equal to separate envs stepped by hand; autoreset never mixes episodes)."""
import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import ember
from ember.rl import TensorDict
from ember.rl.envs import (Binary, Bounded, Categorical, Composite, EnvBase, GymEnv,
                           MultiCategorical, SerialEnv, Unbounded, check_env_specs, space_to_spec,
                           step_mdp)


def a(t):
    return t.numpy(force=True)


# ----------------------------------------------------------------------------- spaces -> specs
def test_space_to_spec():
    box = space_to_spec(spaces.Box(-1.0, 2.0, (3,), np.float32))
    assert isinstance(box, Bounded) and box.shape == (3,) and box.dtype == ember.float32
    assert (box.high == 2).all()
    assert isinstance(space_to_spec(spaces.Box(-np.inf, np.inf, (2,), np.float64)), Unbounded)
    d = space_to_spec(spaces.Discrete(5))
    assert isinstance(d, Categorical) and d.n == 5 and d.shape == ()
    md = space_to_spec(spaces.MultiDiscrete([3, 4]))
    assert isinstance(md, MultiCategorical) and md.nvec.tolist() == [3, 4]
    mb = space_to_spec(spaces.MultiBinary(6))
    assert isinstance(mb, Binary) and mb.shape == (6,)
    comp = space_to_spec(spaces.Dict({"pos": spaces.Box(0, 1, (2,)), "k": spaces.Discrete(3)}))
    assert isinstance(comp, Composite) and set(comp.keys()) == {"pos", "k"}
    with pytest.raises(TypeError):
        space_to_spec(spaces.Text(5))


class DictEnv(gymnasium.Env):
    """Dict observation, MultiDiscrete action, Discrete(start=1) counter; ends after 4 steps."""
    observation_space = spaces.Dict({"pos": spaces.Box(-10, 10, (2,), np.float32),
                                     "bits": spaces.MultiBinary(3), "count": spaces.Discrete(5)})
    action_space = spaces.MultiDiscrete([3, 3])

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.pos = 0, self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def _obs(self):
        return {"pos": self.pos.copy(), "bits": (self.pos > 0).astype(np.int8).tolist() + [1],
                "count": self.t}

    def step(self, action):
        assert self.action_space.contains(np.asarray(action))
        self.t += 1
        self.pos = self.pos + (np.asarray(action) - 1).astype(np.float32)
        return self._obs(), float(action.sum()), False, self.t >= 4, {}


def test_gym_env_from_instance_with_dict_spaces():
    env = GymEnv(DictEnv())
    assert set(env.observation_spec.keys()) == {"pos", "bits", "count"}
    assert check_env_specs(env, seed=0)
    ro = env.rollout(10)
    assert ro.batch_size == (4,) and a(ro["next", "truncated"])[:, 0].tolist() == [0, 0, 0, 1]
    assert a(ro["next", "count"]).tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(a(ro["next", "reward"])[:, 0], a(ro["action"]).sum(-1))


# ----------------------------------------------------------------------------- check_env_specs
@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1"])
def test_check_env_specs_gym(name):
    env = GymEnv(name)
    assert check_env_specs(env, seed=1)
    assert env.batch_size == () and env.reward_spec.shape == (1,)
    assert env.done_spec["done"].dtype == ember.bool


def test_check_env_specs_catches_a_wrong_spec():
    env = GymEnv("Pendulum-v1")
    env.observation_spec["observation"] = Bounded(-0.5, 0.5, shape=(3,))   # too narrow for theta dot
    with pytest.raises(AssertionError, match="observation"):
        for seed in range(5):
            check_env_specs(env, steps=20, seed=seed)
    env2 = GymEnv("CartPole-v1")
    env2.action_spec = Categorical(3)                  # action 2 is invalid for CartPole
    with pytest.raises(AssertionError, match="invalid"):     # gymnasium rejects the action
        for seed in range(5):
            check_env_specs(env2, steps=20, seed=seed)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_check_env_specs_gym_vector_env(mode):
    venv = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("Pendulum-v1")] * 2,
                                          autoreset_mode=gymnasium.vector.AutoresetMode(mode))
    env = GymEnv(venv)
    assert env.batch_size == (2,) and env.action_spec.shape == (2, 1)
    assert check_env_specs(env, steps=5, seed=0)
    cart = GymEnv("CartPole-v1", num_envs=3)
    assert cart.observation_spec["observation"].shape == (3, 4) and cart.action_spec.shape == (3,)
    assert check_env_specs(cart, steps=40, seed=0)


def test_check_env_specs_serial():
    env = SerialEnv(3, lambda: GymEnv("CartPole-v1"))
    assert env.batch_size == (3,) and env.observation_spec["observation"].shape == (3, 4)
    assert env.action_spec.shape == (3,) and env.done_spec["done"].shape == (3, 1)
    assert check_env_specs(env, steps=40, seed=0)


# ----------------------------------------------------------------------------- rollout, seeding
def test_rollout_shapes_and_carry_over():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    ro = env.rollout(500)                                # random actions end CartPole early
    T = ro.batch_size[0]
    assert 1 <= T < 500
    assert ro["observation"].shape == (T, 4) and ro["action"].shape == (T,)
    assert ro["next", "reward"].shape == (T, 1) and ro["next", "done"].shape == (T, 1)
    done = a(ro["next", "done"])[:, 0]
    assert done[-1] and not done[:-1].any()
    # step_mdp carry-over: each step starts where the previous one ended
    np.testing.assert_array_equal(a(ro["observation"])[1:], a(ro["next", "observation"])[:-1])
    ro2 = env.rollout(50, break_when_any_done=False)
    assert ro2.batch_size == (50,)
    pend = GymEnv("Pendulum-v1").rollout(7)
    assert pend.batch_size == (7,) and pend["action"].shape == (7, 1)


def test_step_mdp_and_step_api():
    env = GymEnv("CartPole-v1")
    env.set_seed(3)
    td = env.reset()
    assert set(td.keys()) == {"observation", "done", "terminated", "truncated"}
    assert not a(td["done"]).any()
    td.set("action", ember.tensor(np.int64(1)))
    out = env.step(td)
    assert out is td and set(td["next"].keys()) == {"observation", "reward", "done", "terminated",
                                                     "truncated"}
    nxt = step_mdp(td)
    assert "reward" not in nxt.keys() and "action" not in nxt.keys()
    assert nxt["observation"] is td["next", "observation"]
    assert "action" in step_mdp(td, exclude_action=False).keys()
    raw = gymnasium.make("CartPole-v1")
    o0, _ = raw.reset(seed=3)
    o1 = raw.step(1)[0]
    np.testing.assert_array_equal(a(td["observation"]), o0)
    np.testing.assert_array_equal(a(nxt["observation"]), o1)


def test_stepping_a_finished_env_raises():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    ro = env.rollout(500)
    td = step_mdp(ro[-1])
    td.set("action", ember.tensor(np.int64(0)))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(td)


def test_seeding_reproducible():
    def run(seed, name="Pendulum-v1"):
        env = GymEnv(name)
        env.set_seed(seed)
        return env.rollout(30, break_when_any_done=False)
    r1, r2, r3 = run(5), run(5), run(6)
    for k in [("observation",), ("action",), ("next", "reward")]:
        np.testing.assert_array_equal(a(r1[k]), a(r2[k]))
    assert not np.array_equal(a(r1["observation"]), a(r3["observation"]))
    assert not np.array_equal(a(r1["action"]), a(r3["action"]))
    c1, c2 = run(2, "CartPole-v1"), run(2, "CartPole-v1")
    np.testing.assert_array_equal(a(c1["next", "observation"]), a(c2["next", "observation"]))


def test_policy_is_used():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)

    def always_left(td):
        td.set("action", ember.tensor(np.int64(0)))
        return td
    ro = env.rollout(100, policy=always_left)
    assert (a(ro["action"]) == 0).all() and ro.batch_size[0] < 20   # pole falls quickly


# ----------------------------------------------------------------------------- SerialEnv
CART_X, CART_THETA = 2.4, 12 * 2 * np.pi / 360


def _by_hand(n, seed, actions):
    """Step n raw gymnasium CartPoles with the given actions ([n, T]); reset when done."""
    envs = [gymnasium.make("CartPole-v1") for _ in range(n)]
    roots, nexts, dones, resets = [], [], [], []
    obs = [e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]
    for t in range(actions.shape[1]):
        roots.append(np.stack(obs))
        nx, dn, rs = [], [], []
        for i, e in enumerate(envs):
            o, r, term, trunc, _ = e.step(int(actions[i, t]))
            nx.append(o)
            dn.append(term or trunc)
            obs[i] = e.reset()[0] if (term or trunc) else o
            rs.append(obs[i])
        nexts.append(np.stack(nx))
        dones.append(dn)
        resets.append(np.stack(rs))
    return (np.stack(roots, 1), np.stack(nexts, 1), np.array(dones).T, np.stack(resets, 1))


def test_serial_env_equals_separate_envs_and_autoreset():
    n, T, seed = 3, 120, 11
    env = SerialEnv(n, lambda: GymEnv("CartPole-v1"))
    env.set_seed(seed)
    ro = env.rollout(T, break_when_any_done=False)
    assert ro.batch_size == (n, T) and ro["observation"].shape == (n, T, 4)
    root, nxt, done = a(ro["observation"]), a(ro["next", "observation"]), a(ro["next", "done"])[..., 0]
    h_root, h_next, h_done, h_after = _by_hand(n, seed, a(ro["action"]))
    np.testing.assert_array_equal(root, h_root)
    np.testing.assert_array_equal(nxt, h_next)
    np.testing.assert_array_equal(done, h_done)
    assert done.sum() >= 3                                     # episodes did end and get reset
    # autoreset: no transition mixes two episodes
    for i in range(n):
        for t in range(T):
            if done[i, t]:
                x, th = nxt[i, t, 0], nxt[i, t, 2]
                trunc = a(ro["next", "truncated"])[i, t, 0]
                # the terminal observation is the one that broke the pole's limits...
                assert trunc or abs(x) > CART_X or abs(th) > CART_THETA
                if t + 1 < T:
                    # ...and the following step starts from the reset observation
                    np.testing.assert_array_equal(root[i, t + 1], h_after[i, t])
                    assert np.abs(root[i, t + 1]).max() <= 0.05
                    assert not np.array_equal(root[i, t + 1], nxt[i, t])
                    assert not a(ro["done"])[i, t + 1, 0]
            elif t + 1 < T:
                np.testing.assert_array_equal(root[i, t + 1], nxt[i, t])


def test_serial_env_partial_reset_and_guard():
    env = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    env.set_seed(0)
    td = env.reset()
    first = a(td["observation"]).copy()
    td.set("action", ember.tensor(np.array([0, 1])))
    td = step_mdp(env.step(td))
    moved = a(td["observation"]).copy()
    again = env.reset(TensorDict({"_reset": np.array([[True], [False]])}, batch_size=[2]))
    assert not np.array_equal(a(again["observation"])[0], moved[0])   # sub-env 0 reset
    np.testing.assert_array_equal(a(again["observation"])[1], moved[1])  # sub-env 1 untouched
    assert not np.array_equal(first[0], a(again["observation"])[0])   # its RNG moved on
    # drive sub-env 0 to a done, then stepping it without reset raises
    td = again
    for _ in range(200):
        td.set("action", ember.tensor(np.array([0, 0])))
        td = env.step(td)
        if a(td["next", "done"]).any():
            break
        td = step_mdp(td)
    td = step_mdp(td)
    td.set("action", ember.tensor(np.array([0, 0])))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(td)


def test_serial_rollout_break_when_any_done():
    env = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    env.set_seed(4)
    ro = env.rollout(500)
    T = ro.batch_size[1]
    d = a(ro["next", "done"])[..., 0]
    assert d[:, -1].any() and not d[:, :-1].any() and T < 500


def test_envbase_subclass_minimal():
    class Counter(EnvBase):
        def __init__(self):
            super().__init__()
            self.observation_spec = Composite({"observation": Bounded(0, 3, shape=(1,), dtype=np.int64)})
            self.action_spec = Categorical(2)

        def _set_seed(self, seed):
            pass

        def _reset(self, td=None):
            self.c = 0
            return TensorDict({"observation": np.array([0])}, batch_size=[])

        def _step(self, td):
            self.c += 1
            d = np.array([self.c >= 3])
            return TensorDict({"observation": np.array([self.c]), "reward": np.ones(1, np.float32),
                               "done": d, "terminated": d, "truncated": np.array([False])}, [])
    env = Counter()
    assert check_env_specs(env, steps=5, seed=0)
    ro = env.rollout(10)
    assert a(ro["next", "observation"])[:, 0].tolist() == [1, 2, 3]
    ro = env.rollout(7, break_when_any_done=False)
    assert a(ro["observation"])[:, 0].tolist() == [0, 1, 2, 0, 1, 2, 0]
