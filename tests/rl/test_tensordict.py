"""TensorDict: construction and checks, keys, get/set, indexing and index assignment,
stack/cat/unbind, batch reshapes, per-value ops, comparisons and the repr."""
import numpy as np
import pytest

import ember
from ember.rl import NonTensorData, NonTensorStack, TensorDict
from ember.rl.tensordict import cat, stack


def make(b=4):
    return TensorDict({
        "obs": ember.arange(b * 3, dtype=ember.float32).reshape(b, 3),
        "done": ember.zeros(b, 1, dtype=ember.bool),
        "next": {"reward": ember.arange(b, dtype=ember.float32).reshape(b, 1),
                 "deep": {"idx": ember.arange(b)}},
        "name": "cartpole",
    }, batch_size=[b])


def arr(t):
    return t.detach().numpy()


# ----------------------------------------------------------------------------- construction
def test_construction_converts_values():
    td = TensorDict({"a": np.ones((2, 3), np.float64), "b": [[1, 2], [3, 4]], "s": "x",
                     "n": None, "obj": {"k": ember.zeros(2)}}, batch_size=2)
    assert td["a"].dtype == ember.float64 and td["a"].shape == (2, 3)
    assert td["b"].tolist() == [[1, 2], [3, 4]]
    assert td["s"] == "x" and isinstance(td.get("s"), NonTensorData)
    assert td.get("s").batch_size == (2,) and td["n"] is None
    assert isinstance(td["obj"], TensorDict) and td["obj"].batch_size == (2,)
    kw = TensorDict(a=ember.ones(5), batch_size=[5])
    assert list(kw.keys()) == ["a"] and kw.batch_size == (5,)
    assert TensorDict().batch_size == () and len(TensorDict()) == 0
    copy = TensorDict(td)
    assert copy.batch_size == (2,) and copy["a"] is td["a"]


def test_from_dict_infers_the_common_leading_shape():
    td = TensorDict.from_dict({"a": ember.zeros(3, 4, 2), "b": {"c": ember.zeros(3, 4)}})
    assert td.batch_size == (3, 4) and td["b"].batch_size == (3, 4)


@pytest.mark.parametrize("how", ["init", "set", "nested", "setitem", "sub_td"])
def test_batch_mismatch_names_both_shapes(how):
    td = TensorDict({"a": ember.zeros(3, 2)}, batch_size=[3])
    bad = ember.zeros(4, 2)
    with pytest.raises(RuntimeError) as e:
        if how == "init":
            TensorDict({"x": bad}, batch_size=[3])
        elif how == "set":
            td.set("x", bad)
        elif how == "nested":
            td.set(("n", "x"), bad)
        elif how == "setitem":
            td["x"] = bad
        else:
            td["x"] = TensorDict({}, batch_size=[4])
    msg = str(e.value)
    assert "[3]" in msg and "[4" in msg and "'x'" in msg or "('n', 'x')" in msg


def test_batch_size_setter_checks_and_propagates():
    td = TensorDict({"a": ember.zeros(3, 2), "s": {"b": ember.zeros(3, 2)}}, batch_size=[3])
    td.batch_size = [3, 2]
    assert td.batch_size == (3, 2) and td["s"].batch_size == (3, 2)
    with pytest.raises(RuntimeError, match=r"\[3, 5\].*\[3, 2\]"):
        td.batch_size = [3, 5]
    td.batch_size = []
    assert td.batch_dims == 0 and td.ndim == 0 and td.shape == ()


def test_device_moves_values_and_to():
    td = TensorDict({"a": ember.zeros(2)}, batch_size=[2], device="cpu")
    assert td.device == ember.device("cpu")
    td["b"] = np.zeros(2)
    assert td["b"].device == ember.device("cpu")
    assert TensorDict({"a": ember.zeros(2)}, [2]).device is None
    moved = TensorDict({"a": ember.zeros(2)}, [2]).to("cpu")
    assert moved.device == ember.device("cpu")
    assert td.clear_device_().device is None


# ----------------------------------------------------------------------------- keys
def test_keys_nested_and_leaves_only():
    td = make()
    assert list(td.keys()) == ["obs", "done", "next", "name"]
    assert list(td.keys(include_nested=True)) == [
        "obs", "done", ("next", "reward"), ("next", "deep", "idx"), ("next", "deep"), "next",
        "name"]
    assert list(td.keys(True, True)) == ["obs", "done", ("next", "reward"),
                                         ("next", "deep", "idx"), "name"]
    assert list(td.keys(False, True)) == ["obs", "done", "name"]
    assert len(td.keys(True, True)) == 5 and len(td.keys()) == 4
    assert ("next", "reward") in td.keys(True) and ("next", "reward") not in td.keys()
    assert "next" not in td.keys(True, True) and "next" in td.keys(True)
    keys = [k for k, _ in td.items(True, True)]
    assert keys == list(td.keys(True, True))
    assert [v.shape for v in td.values()][:2] == [(4, 3), (4, 1)]


def test_contains_len_iter_bool():
    td = make()
    assert "obs" in td and ("next", "deep", "idx") in td and ("next", "x") not in td
    assert ("obs", "x") not in td
    assert len(td) == 4 and td.numel() == 4
    rows = list(td)
    assert len(rows) == 4 and rows[2]["obs"].tolist() == [6.0, 7.0, 8.0]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(td)
    with pytest.raises(TypeError):
        iter(TensorDict({}, []))


# ----------------------------------------------------------------------------- get / set
def test_get_set_nested_and_defaults():
    td = make()
    assert td.get(("next", "reward")) is td["next", "reward"] is td["next"]["reward"]
    assert td.get("missing", None) is None and td.get(("next", "nope"), 7) == 7
    with pytest.raises(KeyError, match="missing"):
        td.get("missing")
    with pytest.raises(KeyError):
        td["missing"]
    td.set(("a", "b", "c"), ember.ones(4))
    assert isinstance(td["a", "b"], TensorDict) and td["a", "b"].batch_size == (4,)
    with pytest.raises(KeyError, match="not a TensorDict"):
        td.set(("obs", "x"), ember.ones(4))
    old = td["obs"]
    td.set("obs", ember.ones(4, 3), inplace=True)
    assert td["obs"] is old and old.sum().item() == 12
    td.set_("obs", ember.zeros(4, 3))
    assert old.sum().item() == 0
    del td["a", "b", "c"]
    assert ("a", "b", "c") not in td and ("a", "b") in td
    assert td.pop("name") == NonTensorData("cartpole", [4]) and "name" not in td
    assert td.pop("zz", None) is None
    td.rename_key_("obs", ("o", "x"))
    assert "obs" not in td and td["o", "x"].shape == (4, 3)


# ----------------------------------------------------------------------------- indexing
@pytest.mark.parametrize("index", [
    2, -1, slice(1, 3), (slice(None, None, 2),), Ellipsis, (Ellipsis, 1), [0, 2, 3],
    "tensor", "mask", (None, slice(0, 2)), "numpy"])
def test_index_matches_each_value(index):
    td = make(5)
    if index == "tensor":
        index = ember.tensor([4, 0, 0])
    elif index == "mask":
        index = ember.tensor([True, False, True, True, False])
    elif index == "numpy":
        index = np.array([1, 3])
    out = td[index]
    np_index = index.numpy() if isinstance(index, ember.Tensor) else index
    if isinstance(np_index, tuple) and np_index == (Ellipsis, 1):  # over batch dims only
        np_index = 1
    ref = np.arange(15, dtype=np.float32).reshape(5, 3)[np_index]
    assert out["obs"].tolist() == ref.tolist()
    assert out.batch_size == ref.shape[:-1]
    assert out["next", "deep", "idx"].shape == out.batch_size
    assert out["next"].batch_size == out.batch_size
    assert out["name"] == "cartpole" and out.get("name").batch_size == out.batch_size


def test_index_two_batch_dims_and_mask():
    td = TensorDict({"x": ember.arange(24.0).reshape(2, 3, 4),
                     "s": NonTensorData("k")}, batch_size=[2, 3])
    assert td.get("s").batch_size == (2, 3)
    assert td[..., 1]["x"].tolist() == [[4, 5, 6, 7], [16, 17, 18, 19]]
    assert td[:, 1:].batch_size == (2, 2)
    mask = ember.tensor([[True, False, True], [False, False, True]])
    sel = td[mask]
    assert sel.batch_size == (3,) and sel["x"][:, 0].tolist() == [0, 8, 20]
    assert sel.get("s").batch_size == (3,)
    with pytest.raises(IndexError, match="too many indices"):
        td[0, 0, 0]


def test_index_keeps_gradients():
    w = ember.randn(4, 2, requires_grad=True)
    td = TensorDict({"w": w}, [4])
    td[ember.tensor([0, 0, 3])]["w"].sum().backward()
    assert w.grad[:, 0].tolist() == [2.0, 0.0, 0.0, 1.0]


def test_empty_tensordict_index_batch_size():
    td = TensorDict({"s": "x"}, [6])
    assert td[1:4].batch_size == (3,) and td[ember.tensor([True] * 6)].batch_size == (6,)


def test_setitem_index_with_tensordict_dict_and_tensor():
    td = make(4)
    td[1] = td[0]
    assert td["obs"][1].tolist() == [0, 1, 2]
    idx = ember.tensor([0, 2])
    td[idx] = TensorDict({"obs": ember.full((2, 3), 9.0), "next": {"reward": ember.ones(2, 1)},
                          "new": ember.ones(2, 5)}, [2])
    assert td["obs"][:, 0].tolist() == [9, 0, 9, 9]
    assert td["next", "reward"][:, 0].tolist() == [1, 0, 1, 3]
    assert td["new"].shape == (4, 5) and td["new"][:, 0].tolist() == [1, 0, 1, 0]
    td[ember.tensor([False, True, False, False])] = {"obs": ember.full((1, 3), -1.0)}
    assert td["obs"][1].tolist() == [-1, -1, -1]
    td[2:] = 0
    assert td["obs"][2:].sum().item() == 0 and td["next", "reward"][:, 0].tolist() == [1, 0, 0, 0]
    td[0] = {"name": "other"}
    assert isinstance(td.get("name"), NonTensorStack)
    assert td["name"] == ["other", "cartpole", "cartpole", "cartpole"]


# ----------------------------------------------------------------------------- stack / cat
def test_stack_and_cat():
    a, b = make(3), make(3)
    b["obs"] += 100
    s = stack([a, b], 0)
    assert s.batch_size == (2, 3) and s["obs"][1, 0, 0].item() == 100
    assert s["next", "deep", "idx"].shape == (2, 3) and s["name"] == "cartpole"
    s1 = stack([a, b], -1)
    assert s1.batch_size == (3, 2) and s1["obs"].shape == (3, 2, 3)
    assert s1["obs"][:, 1, 0].tolist() == [100, 103, 106]
    c = cat([a, b], 0)
    assert c.batch_size == (6,) and c["obs"][3:, 0].tolist() == [100, 103, 106]
    assert c.get("name").batch_size == (6,)
    b["name"] = "pendulum"
    mixed = stack([a, b])
    assert isinstance(mixed.get("name"), NonTensorStack)
    assert mixed["name"] == [["cartpole"] * 3, ["pendulum"] * 3]
    assert mixed[1, 0]["name"] == "pendulum"
    assert cat([a, b]).get("name").tolist() == ["cartpole"] * 3 + ["pendulum"] * 3


def test_stack_cat_errors_name_shapes_and_keys():
    a = TensorDict({"x": ember.zeros(3)}, [3])
    with pytest.raises(RuntimeError, match=r"\[3\].*\[4\]"):
        stack([a, TensorDict({"x": ember.zeros(4)}, [4])])
    with pytest.raises(KeyError, match="'y'"):
        stack([a, TensorDict({"x": ember.zeros(3), "y": ember.zeros(3)}, [3])])
    b = TensorDict({"x": ember.zeros(2, 5)}, [2, 5])
    with pytest.raises(RuntimeError, match=r"\[3\].*\[2, 5\]"):
        cat([a, b])
    with pytest.raises(RuntimeError, match="non-empty"):
        stack([])


def test_ember_function_dispatch():
    a = make(3)
    s = TensorDict.__ember_function__(ember.stack, (TensorDict,), ([a, a],), {"dim": 1})
    assert s.batch_size == (3, 2)
    c = TensorDict.__ember_function__(ember.cat, (TensorDict,), ([a, a],), {})
    assert c.batch_size == (6,)
    u = TensorDict.__ember_function__(ember.unbind, (TensorDict,), (a, 0), {})
    assert len(u) == 3 and u[1]["obs"].tolist() == [3, 4, 5]


def test_ember_stack_and_cat_accept_tensordicts():
    a = make(3)
    try:
        s = ember.stack([a, a], 0)
    except (AttributeError, TypeError) as e:  # the core dispatch hook is not wired yet
        pytest.skip(f"ember.stack does not dispatch to TensorDict.__ember_function__: {e}")
    assert isinstance(s, TensorDict) and s.batch_size == (2, 3)
    c = ember.cat([a, a], 0)
    assert isinstance(c, TensorDict) and c.batch_size == (6,)


def test_unbind_and_split():
    td = TensorDict({"x": ember.arange(6.0).reshape(2, 3)}, [2, 3])
    cols = td.unbind(1)
    assert len(cols) == 3 and cols[2].batch_size == (2,) and cols[2]["x"].tolist() == [2, 5]
    parts = td.split([1, 2], dim=1)
    assert [p.batch_size for p in parts] == [(2, 1), (2, 2)]
    assert [p.batch_size for p in make(5).split(2)] == [(2,), (2,), (1,)]


# ----------------------------------------------------------------------------- batch reshapes
def test_reshape_view_permute_and_friends():
    td = TensorDict({"x": ember.arange(24.0).reshape(6, 4), "sub": {"y": ember.zeros(6, 2, 7)},
                     "s": "tag"}, [6])
    td["sub"].batch_size = [6, 2]
    r = td.reshape(2, 3)
    assert r.batch_size == (2, 3) and r["x"].shape == (2, 3, 4)
    assert r["sub"].batch_size == (2, 3, 2) and r["sub", "y"].shape == (2, 3, 2, 7)
    assert r.get("s").batch_size == (2, 3)
    assert td.reshape(-1, 2).batch_size == (3, 2)
    assert td.view(3, 2)["x"].shape == (3, 2, 4)
    p = r.permute(1, 0)
    assert p.batch_size == (3, 2) and p["x"][2, 1].tolist() == r["x"][1, 2].tolist()
    assert p["sub"].batch_size == (3, 2, 2) and p.get("s").batch_size == (3, 2)
    assert r.transpose(0, 1)["x"].tolist() == p["x"].tolist()
    u = td.unsqueeze(0)
    assert u.batch_size == (1, 6) and u["x"].shape == (1, 6, 4) and u.squeeze().batch_size == (6,)
    e = u.expand(5, 6)
    assert e.batch_size == (5, 6) and e["x"].shape == (5, 6, 4) and e["sub", "y"].shape == (
        5, 6, 2, 7)
    assert r.flatten(0, 1).batch_size == (6,)
    with pytest.raises(RuntimeError, match="cannot be reshaped"):
        td.reshape(4, 2)
    with pytest.raises(RuntimeError, match="permutation"):
        r.permute(0, 0)


# ----------------------------------------------------------------------------- per-value ops
def test_apply_and_named_apply():
    td = make(2)
    out = td.apply(lambda x: x * 2 if x.dtype == ember.float32 else None)
    assert list(out.keys(True, True)) == ["obs", ("next", "reward"), "name"]
    assert out["obs"][1].tolist() == [6, 8, 10]
    summed = td.apply(lambda x, y: x + y, td)
    assert summed["next", "deep", "idx"].tolist() == [0, 2]
    seen = []
    td.named_apply(lambda k, v: seen.append(k), nested_keys=True)
    assert seen == ["obs", "done", ("next", "reward"), ("next", "deep", "idx")]
    local = []
    td.named_apply(lambda k, v: local.append(k))
    assert local == ["obs", "done", "reward", "idx"]
    first = td.apply(lambda x: x[0], batch_size=[])
    assert first.batch_size == () and first["next"].batch_size == ()
    whole = td.apply(lambda sub: sub.get("reward", None) if isinstance(sub, TensorDict)
                     else sub, call_on_nested=True)
    assert whole["next"].shape == (2, 1)
    td.apply_(lambda x: x + 1 if x.dtype == ember.float32 else x)
    assert td["obs"][0, 0].item() == 1


def test_to_clone_detach_zero():
    td = make(2)
    d = td.to(ember.float64)
    assert d["obs"].dtype == ember.float64 and d["next", "deep", "idx"].dtype == ember.float64
    c = td.clone()
    c["obs"].zero_()
    assert td["obs"].sum().item() == 15 and c["obs"].sum().item() == 0
    shallow = td.clone(recurse=False)
    assert shallow["obs"] is td["obs"] and shallow["next"] is not td["next"]
    w = ember.ones(2, requires_grad=True)
    g = TensorDict({"w": w * 2}, [2])
    det = g.detach()
    assert not det["w"].requires_grad and g["w"].requires_grad
    td.zero_()
    assert td["obs"].sum().item() == 0 and td["next", "reward"].sum().item() == 0
    assert td["name"] == "cartpole"


def test_update_select_exclude():
    td = make(2)
    td.update({"next": {"extra": ember.ones(2)}, "obs": ember.zeros(2, 3)})
    assert ("next", "reward") in td and ("next", "extra") in td
    assert td["obs"].sum().item() == 0
    td.update({"a": ember.ones(2), "b": ember.ones(2)}, keys_to_update=["a"])
    assert "a" in td and "b" not in td
    src = TensorDict({"obs": ember.full((2, 3), 5.0)}, [2])
    keep = td["obs"]
    td.update(src, inplace=True)
    assert td["obs"] is keep and keep[0, 0].item() == 5
    sel = td.select("obs", ("next", "deep", "idx"))
    assert list(sel.keys(True, True)) == ["obs", ("next", "deep", "idx")]
    with pytest.raises(KeyError):
        td.select("nope")
    assert list(td.select("nope", "obs", strict=False).keys()) == ["obs"]
    ex = td.exclude(("next", "reward"), "name")
    assert ("next", "reward") not in ex and "name" not in ex and ("next", "reward") in td
    td.exclude("obs", inplace=True)
    assert "obs" not in td


def test_flatten_and_unflatten_keys():
    td = make(2)
    flat = td.flatten_keys()
    assert list(flat.keys()) == ["obs", "done", "next.reward", "next.deep.idx", "name"]
    assert flat["next.deep.idx"] is td["next", "deep", "idx"]
    back = flat.unflatten_keys()
    assert list(back.keys(True, True)) == list(td.keys(True, True))
    assert list(td.flatten_keys("/").keys())[2] == "next/reward"


def test_eq_all_any():
    td = make(3)
    eq = td == td.clone()
    assert isinstance(eq, TensorDict) and eq["obs"].dtype == ember.bool
    assert eq.all() and not (td != td).any()
    other = td.clone()
    other["next", "reward"][1] = -5
    res = td == other
    assert res["next", "reward"][:, 0].tolist() == [True, False, True] and not res.all()
    assert res.any() and (td == 0)["obs"][0].tolist() == [True, False, False]
    per_row = res.all(0)
    assert per_row.batch_size == () and per_row["obs"].shape == (3,)
    other["name"] = "x"
    assert not (td == other)["name"].any()
    assert make(2).any() and not TensorDict({"z": ember.zeros(2)}, [2]).any()


def test_repr_is_compact():
    td = TensorDict({"a": ember.zeros(3, 4), "b": {"c": ember.ones(3, dtype=ember.int64)}},
                    batch_size=[3], device="cpu")
    assert repr(td) == "TensorDict(batch_size=[3], device=cpu, fields={a: f32[4], b: {c: i64[]}})"
    long = make(2)
    assert repr(long) == (
        "TensorDict(batch_size=[2], fields={\n    obs: f32[3],\n    done: bool[1],\n"
        "    next: {reward: f32[1], deep: {idx: i64[]}},\n    name: str})")
    sub = TensorDict({"s": TensorDict({"x": ember.zeros(2, 5)}, [2, 5])}, [2])
    assert repr(sub) == "TensorDict(batch_size=[2], fields={s: {batch_size=[2,5], x: f32[]}})"


def test_pickle_and_deepcopy():
    import copy
    import pickle

    td = make(2)
    back = pickle.loads(pickle.dumps(td))
    assert list(back.keys(True, True)) == list(td.keys(True, True))
    assert back["next", "reward"].tolist() == td["next", "reward"].tolist()
    assert back["name"] == "cartpole" and back.batch_size == (2,)
    deep = copy.deepcopy(td)
    deep["obs"].zero_()
    assert td["obs"].sum().item() == 15
