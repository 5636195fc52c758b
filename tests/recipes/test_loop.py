"""The shared loop runtime (``ember.recipes._loop``) on its own: a loop without epochs (as
the RL recipes run) stops on Ctrl-C with a checkpoint, and the resumed run ends where an
uninterrupted one does, with the same metrics rows and the same weights."""
import os

import numpy as np
import pytest
from recipe_helpers import StopAfter

import ember
from ember.recipes import _loop as L


def _train(out, monkeypatch=None, stop_after=None, resume=False, iters=7):
    cfg = {"output_dir": str(out), "seed": 3, "quiet": True, "resume": resume,
           "checkpoint": {"every_n_steps": 2, "keep_last": 1}}
    if stop_after is not None:
        monkeypatch.setattr(L, "Interrupt", StopAfter(stop_after))
    run = L.TrainingRun(cfg, "loop_test", distributed=False)
    model = ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    run.counters = {"loss": 0.0}
    run.track(model=model, optimizer=opt)
    run.restore()
    with run:
        for _ in run.batches(range(iters - run.step), iters):
            x = ember.randn(8, 3)        # drawn from ember's generator: restored on resume
            loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.counters["loss"] += float(loss.item())
            run.log_row({"loss": float(loss.item())})
    if run.interrupted:
        return L.EXIT_INTERRUPTED, None
    run.finish("done")
    return 0, model.weight.detach().numpy().copy()


def _rows(path):
    with open(path) as f:
        return f.read().splitlines()


def test_a_loop_without_epochs_interrupts_and_resumes_to_the_same_end(tmp_path, monkeypatch):
    rc, ref_w = _train(tmp_path / "ref")
    assert rc == 0
    with monkeypatch.context() as m:
        rc, _ = _train(tmp_path / "run", m, stop_after=4)
    assert rc == L.EXIT_INTERRUPTED
    assert os.listdir(tmp_path / "run" / "checkpoints") == ["step-00000005.ember"]
    rc, w = _train(tmp_path / "run", resume=True)
    assert rc == 0
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)
    assert _rows(tmp_path / "run" / "metrics.csv") == _rows(tmp_path / "ref" / "metrics.csv")


def test_restore_names_a_state_the_checkpoint_lacks(tmp_path):
    cfg = {"output_dir": str(tmp_path), "quiet": True, "checkpoint": {"every_n_steps": 1}}
    run = L.TrainingRun(cfg, "loop_test", distributed=False)
    run.track(model=ember.nn.Linear(2, 2))
    run.restore()
    run.save_checkpoint()
    run2 = L.TrainingRun({**cfg, "resume": True}, "loop_test", distributed=False)
    run2.track(model=ember.nn.Linear(2, 2), optimizer=ember.optim.SGD([ember.zeros(1)], lr=1))
    with pytest.raises(KeyError, match="holds no 'optimizer' state"):
        run2.restore()
