"""ember.rl.envs specs: rand / zero / is_in / project / encode / expand / shape / dtype / device for
every leaf spec, and Composite over nested keys."""
import numpy as np
import pytest

import ember
from ember.rl import TensorDict
from ember.rl.envs import (Binary, Bounded, Categorical, Composite, MultiCategorical, OneHot,
                           Unbounded)


def a(t):
    return t.numpy(force=True)


def g(seed=0):
    return np.random.default_rng(seed)


def test_bounded_float():
    s = Bounded(-1.0, [1.0, 2.0, 3.0], dtype=np.float32)
    assert s.shape == (3,) and s.dtype == ember.float32 and s.device == ember.device("cpu")
    x = s.rand((5, 2), generator=g())
    assert x.shape == (5, 2, 3) and x.dtype == ember.float32 and s.is_in(x)
    assert (a(x) <= np.array([1, 2, 3])).all() and (a(x) >= -1).all() and a(x).std() > 0.1
    assert np.array_equal(a(s.rand(generator=g(3))), a(s.rand(generator=g(3))))
    assert not s.is_in(np.array([0, 2.5, 0], np.float32))          # 2.5 is above high[1] = 2
    assert not s.is_in(np.zeros(4, np.float32))                     # wrong shape
    assert not s.is_in(np.zeros(3, np.float64))                     # wrong dtype
    assert a(s.zero()).tolist() == [0, 0, 0] and s.zero((2,)).shape == (2, 3)
    p = s.project(np.array([5.0, -7.0, 0.5]))
    assert a(p).tolist() == [1.0, -1.0, 0.5] and p.dtype == ember.float32 and s.is_in(p)
    e = s.encode([0.1, 0.2, 0.3])
    assert e.dtype == ember.float32 and e.shape == (3,)
    with pytest.raises(ValueError):
        s.encode([1.0, 2.0])
    with pytest.raises(ValueError):
        Bounded(1.0, 0.0, shape=(2,))
    ex = s.expand(4)
    assert ex.shape == (4, 3) and ex.high.shape == (4, 3) and ex.is_in(ex.rand())


def test_bounded_integer_and_infinite():
    s = Bounded(0, 4, shape=(1000,), dtype=np.int64)
    x = a(s.rand(generator=g()))
    assert x.dtype == np.int64 and x.min() == 0 and x.max() == 4     # both ends reachable
    assert a(s.project(np.full(1000, 6.7))).max() == 4
    assert a(Bounded(0, 4, shape=(1,), dtype=np.int64).project([2.6])).tolist() == [3]
    big = np.finfo(np.float32).max
    half = Bounded([-np.inf, 0.0, -big], [np.inf, np.inf, big], dtype=np.float32)
    r = half.rand((200,), generator=g())
    assert np.isfinite(a(r)).all() and half.is_in(r) and (a(r)[:, 1] >= 0).all()


def test_unbounded():
    s = Unbounded((2, 2), dtype=np.float64)
    x = s.rand((3,), generator=g())
    assert x.shape == (3, 2, 2) and x.dtype == ember.float64 and s.is_in(x)
    assert not s.is_in(np.full((2, 2), np.nan)) and not s.is_in(np.zeros((2, 3)))
    assert a(s.zero()).sum() == 0
    assert s.project(np.ones((2, 2), np.float32)).dtype == ember.float64
    i = Unbounded((4,), dtype=np.int32)
    assert i.rand().dtype == ember.int32 and i.is_in(i.rand())
    assert a(i.project(np.array([1.6, 2, 3, 4]))).tolist() == [2, 2, 3, 4]
    assert s.expand(5, 1).shape == (5, 1, 2, 2)


def test_categorical():
    s = Categorical(3)
    assert s.shape == () and s.dtype == ember.int64
    x = s.rand((1000,), generator=g())
    assert x.shape == (1000,) and set(a(x).tolist()) == {0, 1, 2} and s.is_in(x)
    assert s.rand().shape == ()
    assert not s.is_in(np.int64(3)) and not s.is_in(np.int64(-1)) and s.is_in(np.int64(2))
    assert a(s.project(np.array([-4, 1, 9]))).tolist() == [0, 1, 2]
    assert s.encode(2).shape == () and a(s.encode(2)) == 2
    assert a(s.zero()) == 0
    b = Categorical(2, shape=(1,), dtype=np.bool_)
    assert b.rand().dtype == ember.bool and b.is_in(np.array([True]))
    assert s.expand(4).shape == (4,) and s.expand(4) != s and Categorical(3) == s


def test_onehot():
    s = OneHot(4)
    assert s.shape == (4,) and s.dtype == ember.bool
    x = s.rand((50,), generator=g())
    assert x.shape == (50, 4) and (a(x).sum(-1) == 1).all() and s.is_in(x)
    assert not s.is_in(np.zeros(4, np.bool_)) and not s.is_in(np.ones(4, np.bool_))
    assert a(s.encode(2)).tolist() == [False, False, True, False]
    assert a(s.project(np.array([0.1, 0.7, 0.3, -1.0]))).tolist() == [False, True, False, False]
    assert not s.is_in(s.zero())                                      # zero is not one-hot
    assert a(s.to_categorical(s.encode(3))) == 3
    with pytest.raises(ValueError):
        s.encode(4)
    with pytest.raises(ValueError):
        OneHot(3, shape=(2, 4))
    assert s.expand(2).shape == (2, 4) and s.expand(2).is_in(s.expand(2).rand())


def test_multicategorical():
    s = MultiCategorical([2, 3, 5])
    assert s.shape == (3,) and s.dtype == ember.int64
    x = a(s.rand((2000,), generator=g()))
    assert x.shape == (2000, 3) and (x.max(0) == [1, 2, 4]).all() and (x.min(0) == 0).all()
    assert s.is_in(x) and not s.is_in(np.array([0, 3, 0])) and s.is_in(np.array([1, 2, 4]))
    assert a(s.project(np.array([9, -1, 3.4]))).tolist() == [1, 0, 3]
    assert a(s.zero()).tolist() == [0, 0, 0] and s.encode([1, 1, 1]).dtype == ember.int64
    ex = s.expand(4)
    assert ex.shape == (4, 3) and ex.is_in(ex.rand())


def test_binary():
    s = Binary(5)
    assert s.shape == (5,) and s.dtype == ember.int8
    x = s.rand((100,), generator=g())
    assert x.shape == (100, 5) and set(np.unique(a(x))) == {0, 1} and s.is_in(x)
    assert not s.is_in(np.array([0, 2, 0, 0, 0], np.int8))
    assert a(s.project(np.array([0.2, 0.9, -3, 4, 0.5]))).tolist() == [0, 1, 0, 1, 0]
    assert a(s.zero()).sum() == 0 and s.encode([1, 0, 1, 0, 1]).dtype == ember.int8
    assert s.expand(3).shape == (3, 5)


def test_composite():
    c = Composite({"obs": Bounded(-1, 1, shape=(2, 3)), "nested": {"idx": Categorical(4, shape=(2,))}},
                  shape=(2,))
    c["nested", "flag"] = Binary(shape=(2, 1))
    assert c.shape == (2,) and c.dtype is None
    assert set(c.keys(True, True)) == {"obs", ("nested", "idx"), ("nested", "flag")}
    assert isinstance(c["nested"], Composite) and c["nested", "idx"].n == 4
    r = c.rand((5,), generator=g())
    assert isinstance(r, TensorDict) and r.batch_size == (5, 2)
    assert r["obs"].shape == (5, 2, 3) and r["nested", "idx"].shape == (5, 2) and c.is_in(r)
    z = c.zero()
    assert z.batch_size == (2,) and a(z["obs"]).sum() == 0 and c.is_in(z)
    bad = z.clone()
    bad.set(("nested", "idx"), ember.tensor(np.array([4, 0])))
    assert not c.is_in(bad)
    assert not c.is_in(TensorDict({"obs": a(z["obs"])}, batch_size=[2]))     # missing key
    p = c.project(bad)
    assert a(p["nested", "idx"]).tolist() == [3, 0] and c.is_in(p)
    e = c.encode({"obs": np.zeros((2, 3)), "nested": {"idx": [1, 2], "flag": [[1], [0]]}})
    assert e["obs"].dtype == ember.float32 and c.is_in(e)
    with pytest.raises(ValueError):
        c["x"] = Unbounded((3,))                                  # shape must start with (2,)
    ex = c.expand(4)
    assert ex.shape == (4, 2) and ex["nested", "idx"].shape == (4, 2) and ex.is_in(ex.rand())
    assert c == c.clone() and c != ex and ("nested", "flag") in c and "missing" not in c


def test_device_is_carried():
    cpu = ember.device("cpu")
    for s in (Bounded(0, 1, shape=(2,), device="cpu"), Unbounded((2,), device=cpu),
              Categorical(3, device="cpu"), OneHot(3, device="cpu"), MultiCategorical([2, 2], device="cpu"),
              Binary(2, device="cpu")):
        assert s.device == cpu
        for t in (s.rand(), s.zero(), s.project(a(s.zero())), s.encode(a(s.zero()))):
            assert t.device == cpu
        assert s.expand(2).device == cpu
    c = Composite({"x": Unbounded((1,))}, device="cpu")
    assert c.device == cpu and c.rand()["x"].device == cpu
