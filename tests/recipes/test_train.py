"""classify's training behaviour: resume equality, Ctrl-C, and the main job's config."""
import csv
import os
import signal
import time

import pytest

from recipe_helpers import SHORT, ember_proc


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# long enough (64 steps) that a SIGINT lands mid-run; a checkpoint every 2 steps
RESUME = ["quiet=true", "epochs=2", "batch_size=32", "train_data.limit=1024",
          "test_data.limit=100", "model.width=8", "model.hidden=32", "train_data.shift=1",
          "model.dropout=0.1", "checkpoint.every_n_steps=2", "checkpoint.keep_last=2"]


def test_sigint_saves_checkpoint_exits_130_and_resume_matches_uninterrupted(workdir, cli):
    # reference: the same config without interruption (in-process)
    rc, _, err = cli("run", "classify", *RESUME, "output_dir=ref")
    assert rc == 0, err
    ref = _rows(workdir / "ref" / "metrics.csv")
    assert len(ref) == 2
    # interrupted run: SIGINT once the first checkpoint exists (the handler is installed)
    ckdir = workdir / "run" / "checkpoints"
    p = ember_proc(["run", "classify", *RESUME, "output_dir=run"], workdir)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None and \
            not (ckdir.exists() and any(f.endswith(".ember") for f in os.listdir(ckdir))):
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "interrupted at step" in out and "resume=true" in out
    cks = sorted(os.listdir(ckdir))
    assert 1 <= len(cks) <= 2   # keep_last=2
    step = int(out.split("interrupted at step ")[1].split(":")[0])
    assert cks[-1] == f"step-{step:08d}.ember"
    assert step < 64
    # resume to the end: exactly the metrics of the uninterrupted run
    p = ember_proc(["run", "classify", *RESUME, "output_dir=run", "resume=true"], workdir)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert f"resumed from {ckdir / cks[-1]}" in out
    assert _rows(workdir / "run" / "metrics.csv") == ref


def test_resume_in_process_from_epoch_checkpoint(workdir, cli):
    rc, _, err = cli("run", "classify", *SHORT, "output_dir=a")
    assert rc == 0, err
    ref = _rows(workdir / "a" / "metrics.csv")
    # the finished run left its last epoch's checkpoint: resuming it trains nothing more
    rc, out, err = cli("run", "classify", *SHORT, "output_dir=a", "resume=true")
    assert rc == 0, err
    assert "resumed from" in out and _rows(workdir / "a" / "metrics.csv") == ref
    # resume=true without a checkpoint starts from scratch with a notice
    rc, out, err = cli("run", "classify", *SHORT, "output_dir=b", "resume=true")
    assert rc == 0 and "no checkpoint" in out
    assert _rows(workdir / "b" / "metrics.csv") == ref   # same seed, same numbers


def test_main_job_config_one_epoch(workdir, cli):
    """The default config (the main job) for one epoch: well above chance (10%)."""
    rc, out, err = cli("run", "classify", "epochs=1", "quiet=true")
    assert rc == 0, err
    rows = _rows(workdir / "outputs" / "classify" / "metrics.csv")
    assert len(rows) == 1 and int(rows[0]["step"]) == 63
    assert float(rows[0]["test_acc"]) > 0.85
    assert "test accuracy" in out


def _have_mpi():
    try:
        import mpi4py  # noqa: F401

        from ember.distributed.launch import find_mpiexec
        find_mpiexec()
        return True
    except (ImportError, RuntimeError):
        return False


@pytest.mark.multiprocess
@pytest.mark.skipif(not _have_mpi(), reason="needs mpi4py and mpiexec")
def test_run_nproc_2_shards_the_data(workdir):
    short = ["quiet=true", "epochs=1", "batch_size=32", "train_data.limit=256",
             "test_data.limit=100", "model.width=4", "model.hidden=16"]
    p = ember_proc(["run", "--nproc", "2", "classify", *short, "output_dir=ddp"], workdir)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, (out, err)
    assert "mpiexec" in out and "-n 2" in out
    rows = _rows(workdir / "ddp" / "metrics.csv")
    assert [r["step"] for r in rows] == ["4"]      # 256 images / 2 ranks / 32 per batch
    assert out.count("test accuracy") == 1          # only rank 0 reports and saves
