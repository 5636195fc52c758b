"""Replay-buffer checkpoints: dumps/loads without pickle, restored in a fresh process."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.rl import TensorDict
from ember.rl.data import (LazyMemmapStorage, LazyTensorStorage, ListStorage, RandomSampler,
                           ReplayBuffer, SamplerWithoutReplacement,
                           TensorDictPrioritizedReplayBuffer, TensorDictReplayBuffer)


def _data(n, start=0):
    ids = np.arange(start, start + n)
    return TensorDict({"obs": ember.tensor(np.stack([ids, ids * 2], 1).astype(np.float32)),
                       "next": {"done": ember.tensor((ids % 5 == 4)[:, None])},
                       "id": ember.tensor(ids)}, [n])


def _no_pickle_files(path):
    for root, _, files in os.walk(path):
        for f in files:
            assert f.endswith((".json", ".npy", ".memmap")), f
            if f.endswith(".npy"):
                np.load(os.path.join(root, f), allow_pickle=False)


@pytest.mark.multiprocess
def test_prioritized_buffer_round_trip_in_fresh_process(tmp_path):
    rb = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyMemmapStorage(
        16, scratch_dir=tmp_path / "scratch"), batch_size=5)
    rb.extend(_data(20))  # wraps around: cursor at 4
    rb.update_priority(ember.tensor([3, 7, 11]), ember.tensor([5.0, 0.5, 2.0]))
    ckpt = tmp_path / "ckpt"
    rb.dumps(ckpt)
    _no_pickle_files(ckpt)
    meta = json.loads((ckpt / "buffer_metadata.json").read_text())
    assert meta["sampler"] == "PrioritizedSampler" and meta["storage"] == "LazyMemmapStorage"
    ember.manual_seed(7)
    want = rb.sample()
    script = textwrap.dedent(f"""
        import json, numpy as np, ember
        from ember.rl.data import TensorDictPrioritizedReplayBuffer, LazyMemmapStorage
        rb = TensorDictPrioritizedReplayBuffer(alpha=0.1, beta=0.1, storage=LazyMemmapStorage(16),
                                               batch_size=1)
        rb.loads({str(ckpt)!r})
        ember.manual_seed(7)
        s = rb.sample()
        print(json.dumps({{"len": len(rb), "cursor": rb.writer._cursor, "bs": rb.batch_size,
                          "alpha": rb.sampler._alpha, "ids": s["id"].tolist(),
                          "w": s["_weight"].tolist(),
                          "leaves": rb.sampler._sum_tree.leaves().tolist(),
                          "maxp": rb.sampler._max_priority}}))
        rb.extend(rb[:3])  # writes go to the new scratch dir, not into the checkpoint
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["len"] == 16 and got["cursor"] == 4 and got["bs"] == 5 and got["alpha"] == 0.7
    assert got["ids"] == want["id"].tolist()
    assert np.allclose(got["w"], want["_weight"].numpy())
    assert np.allclose(got["leaves"], rb.sampler._sum_tree.leaves())
    assert got["maxp"] == 5.0
    # the checkpoint itself was not modified by the other process's writes
    assert TensorDict.load(ckpt / "storage" / "storage")["id"].tolist() == rb[:]["id"].tolist()


def test_without_replacement_state_survives(tmp_path):
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10),
                                sampler=SamplerWithoutReplacement(), batch_size=3)
    rb.extend(_data(10))
    ember.manual_seed(0)
    rb.sample()
    rb.dumps(tmp_path / "c")
    rest = [rb.sample()["id"].tolist() for _ in range(2)]
    rb2 = TensorDictReplayBuffer(storage=LazyTensorStorage(10),
                                 sampler=SamplerWithoutReplacement(), batch_size=3)
    rb2.loads(tmp_path / "c")
    assert [rb2.sample()["id"].tolist() for _ in range(2)] == rest


def test_dumps_overwrites_atomically_and_list_storage(tmp_path):
    rb = ReplayBuffer(storage=ListStorage(5), batch_size=2)
    for item in (ember.tensor([1.0, 2.0]), {"a": [1, 2]}, "text", _data(2)):
        rb.add(item)
    rb.dumps(tmp_path / "c")
    rb.add(3)
    rb.dumps(tmp_path / "c")  # a second checkpoint replaces the first
    assert sorted(os.listdir(tmp_path)) == ["c"]
    rb2 = ReplayBuffer(storage=ListStorage(5))
    rb2.loads(tmp_path / "c")
    assert len(rb2) == 5 and rb2.writer._cursor == 0
    items = rb2[:]
    assert items[0].tolist() == [1.0, 2.0] and items[1] == {"a": [1, 2]} and items[2] == "text"
    assert items[3]["id"].tolist() == [0, 1] and items[4] == 3
    rb.add(object())
    with pytest.raises(TypeError, match="cannot be saved without pickle"):
        rb.dumps(tmp_path / "d")
    assert not os.path.exists(tmp_path / "d")


def test_loads_errors(tmp_path):
    rb = ReplayBuffer(storage=LazyTensorStorage(4), sampler=RandomSampler())
    rb.extend(ember.zeros(2))
    rb.dumps(tmp_path / "c")
    with pytest.raises(TypeError, match="holds a RandomSampler sampler"):
        ReplayBuffer(storage=LazyTensorStorage(4), sampler=SamplerWithoutReplacement()).loads(
            tmp_path / "c")
    with pytest.raises(ValueError, match="max_size 4"):
        ReplayBuffer(storage=LazyTensorStorage(8)).loads(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="buffer_metadata.json"):
        ReplayBuffer(storage=LazyTensorStorage(4)).loads(tmp_path / "missing")
    back = ReplayBuffer(storage=LazyTensorStorage(4)).loads(tmp_path / "c")
    assert len(back) == 2 and back[:].shape == (2,)
