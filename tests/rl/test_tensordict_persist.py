"""TensorDict on disk: memmap_/load_memmap and save/load, read back in a new process;
nested and non-tensor data survive; nothing is pickled."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.rl import NonTensorData, TensorDict, stack


def sample():
    a = TensorDict({"task": "reach", "id": 7}, [])
    b = TensorDict({"task": "push", "id": 7}, [])
    tasks = stack([a, b]).expand(3, 2)
    return TensorDict({
        "obs": ember.arange(12, dtype=ember.float32).reshape(3, 4),
        "done": ember.tensor([True, False, True]),
        "count": ember.arange(3, dtype=ember.int64),
        "empty": ember.zeros(3, 0),
        "next": {"reward": ember.tensor([[1.5], [2.5], [-1.0]], dtype=ember.float64),
                 "info": {"cfg": NonTensorData({"lr": 0.1, "layers": (64, 64), "tags": ["a", "b"],
                                                "raw": b"\x00\x01", "inf": float("inf")})}},
        "name": "cartpole",
        "both": tasks,
    }, batch_size=[3])


CHECK = textwrap.dedent("""
    import sys, ember
    from ember.rl import TensorDict, NonTensorData, NonTensorStack
    how, path = sys.argv[1], sys.argv[2]
    td = TensorDict.load_memmap(path) if how == "memmap" else TensorDict.load(path)
    assert td.batch_size == (3,), td.batch_size
    assert td["obs"].dtype == ember.float32 and td["obs"].sum().item() == {obs_sum}
    assert td["done"].tolist() == [True, False, True]
    assert td["count"].dtype == ember.int64 and td["count"].tolist() == [0, 1, 2]
    assert td["empty"].shape == (3, 0)
    assert td["next", "reward"].dtype == ember.float64
    assert td["next", "reward"][:, 0].tolist() == [1.5, 2.5, -1.0]
    cfg = td["next", "info", "cfg"]
    assert cfg == {{"lr": 0.1, "layers": (64, 64), "tags": ["a", "b"], "raw": b"\\x00\\x01",
                   "inf": float("inf")}}, cfg
    assert isinstance(td.get("name"), NonTensorData) and td["name"] == "cartpole"
    assert td.get("name").batch_size == (3,)
    both = td["both"]
    assert both.batch_size == (3, 2) and both["id"].tolist() == [[7, 7]] * 3
    assert isinstance(both.get("task"), NonTensorStack)
    assert both["task"] == [["reach", "push"]] * 3
    if how == "memmap":
        td["obs"][0, 0] = 100.0        # writes through to the file
    print("ok")
""")


def run_check(how, path, obs_sum):
    code = CHECK.format(obs_sum=obs_sum)
    out = subprocess.run([sys.executable, "-c", code, how, str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.multiprocess
def test_memmap_round_trip_in_a_new_process(tmp_path):
    td = sample()
    path = tmp_path / "td"
    assert td.memmap_(path) is td
    obs = td["obs"].array
    assert isinstance(obs.base, np.memmap) and obs.base.filename.endswith("obs.memmap")
    td["obs"][1, 1] = 50.0   # the in-process memmap writes to the file
    run_check("memmap", path, 66.0 - 5.0 + 50.0)
    back = TensorDict.load_memmap(path)
    assert back["obs"][0, 0].item() == 100.0   # written by the child process
    assert isinstance(back["next", "reward"].array.base, np.memmap)
    assert back["both"].batch_size == (3, 2)


@pytest.mark.multiprocess
def test_save_and_load_in_a_new_process(tmp_path):
    td = sample()
    td.save(tmp_path / "saved")
    assert not isinstance(td["obs"].array.base, np.memmap)   # save leaves td as it is
    run_check("load", tmp_path / "saved", 66.0)
    back = TensorDict.load(tmp_path / "saved")
    assert back["obs"].array.base is None or not isinstance(back["obs"].array.base, np.memmap)
    back["obs"][0, 0] = -1.0
    assert TensorDict.load(tmp_path / "saved")["obs"][0, 0].item() == 0.0


def test_manifest_is_json_and_holds_no_pickle(tmp_path):
    sample().save(tmp_path / "td")
    meta = json.loads((tmp_path / "td" / "meta.json").read_text())
    assert meta["format"] == "ember.TensorDict" and meta["batch_size"] == [3]
    assert meta["fields"]["obs"] == {"kind": "tensor", "file": "obs.memmap",
                                     "dtype": "float32", "shape": [3, 4]}
    assert meta["fields"]["next"] == {"kind": "tensordict", "dir": "next"}
    assert meta["fields"]["name"]["data"] == "cartpole"
    files = sorted(os.listdir(tmp_path / "td"))
    assert "obs.memmap" in files and "next" in files
    assert os.path.getsize(tmp_path / "td" / "obs.memmap") == 3 * 4 * 4


def test_odd_keys_get_safe_file_names(tmp_path):
    td = TensorDict({"a/b": ember.ones(2), "..": ember.zeros(2), "meta.json": {"x": ember.ones(2)}},
                    [2])
    td.save(tmp_path / "td")
    back = TensorDict.load(tmp_path / "td")
    assert sorted(back.keys()) == ["..", "a/b", "meta.json"]
    assert back["a/b"].tolist() == [1.0, 1.0] and back["meta.json", "x"].shape == (2,)
    assert not (tmp_path / "a").exists()


def test_unsafe_manifest_paths_are_refused(tmp_path):
    TensorDict({"x": ember.ones(2)}, [2]).save(tmp_path / "td")
    meta_path = tmp_path / "td" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["fields"]["x"]["file"] = "../../etc/passwd"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="outside its folder"):
        TensorDict.load(tmp_path / "td")


def test_non_json_data_is_refused_not_pickled(tmp_path):
    td = TensorDict({"f": NonTensorData(object())}, [2])
    with pytest.raises(TypeError, match="without pickling"):
        td.save(tmp_path / "td")


def test_existsok_and_missing(tmp_path):
    td = TensorDict({"x": ember.ones(2)}, [2])
    td.save(tmp_path / "td")
    with pytest.raises(FileExistsError):
        td.save(tmp_path / "td", existsok=False)
    with pytest.raises(FileNotFoundError, match="no saved TensorDict"):
        TensorDict.load(tmp_path / "nothing")


def test_memmap_copy_and_rewrite_over_mapped_files(tmp_path):
    td = TensorDict({"x": ember.arange(4.0)}, [4])
    mm = td.memmap(tmp_path / "td")
    assert isinstance(mm["x"].array.base, np.memmap)
    assert not isinstance(td["x"].array.base, np.memmap)
    mm.memmap_(tmp_path / "td")   # rewriting the files it maps stays valid
    assert mm["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert TensorDict.load(tmp_path / "td")["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_load_puts_values_on_the_saved_device(tmp_path):
    td = TensorDict({"x": ember.ones(2), "s": {"y": ember.zeros(2)}}, [2], device="cpu")
    td.save(tmp_path / "td")
    back = TensorDict.load(tmp_path / "td")
    assert back.device == ember.device("cpu") and back["s"].device == ember.device("cpu")
    assert TensorDict.load(tmp_path / "td", device="cpu")["x"].device == ember.device("cpu")
