"""Faults: worker exceptions with their traceback, killed and hung workers, skipped bad samples,
fsspec memory:// and HTTP sources through worker processes."""
import io
import os
import signal
import tarfile
import time

import numpy as np
import pytest
from PIL import Image

from ember.data import DataLoader, FileLister, IterableWrapper as W, WorkerError


class _Fails:
    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"no sample {i}")
        return i


class _Custom(Exception):
    def __init__(self, a, b):  # cannot be rebuilt from one message string
        super().__init__(a, b)


def _custom_fail(x):
    if x == 5:
        raise _Custom(1, 2)
    return x


@pytest.mark.multiprocess
def test_worker_exception_reraised_with_traceback_and_index():
    dl = DataLoader(_Fails(), batch_size=4, num_workers=2)
    got = []
    with pytest.raises(KeyError) as ei:
        for b in dl:
            got.append(b.tolist())
    msg = str(ei.value)
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # everything before it, in order
    assert "DataLoader worker 1" in msg and "dataset indices [12, 13, 14, 15]" in msg
    assert "Original Traceback" in msg and "test_faults.py" in msg and "no sample 13" in msg
    assert "dataset[13] failed" in msg
    with pytest.raises(WorkerError, match="_Custom"):
        list(DataLoader(W(range(10)).sharding_filter().map(_custom_fail), batch_size=2, num_workers=2))
    # in-process: the exception itself, with a note naming the sample
    with pytest.raises(KeyError) as ei:
        list(DataLoader(_Fails(), batch_size=4))
    assert "dataset[13] failed" in "\n".join(ei.value.__notes__)


def _boom_in_pipe(x):
    if x == 9:
        raise ValueError("bad value 9")
    return x


@pytest.mark.multiprocess
def test_pipe_exception_names_sample_and_skip_counts():
    dp = W([f"file{i}.bin" for i in range(12)]).sharding_filter().map(lambda s: (s, _boom_in_pipe(int(s[4:-4]))))
    with pytest.raises(ValueError) as ei:
        list(DataLoader(dp, batch_size=3, num_workers=2))
    assert "'file9.bin'" in str(ei.value) and "bad value 9" in str(ei.value)
    dl = DataLoader(dp, batch_size=3, num_workers=2, on_error="skip")
    with pytest.warns(RuntimeWarning, match="skipped 1 bad sample"):
        got = [x for b in dl for x in b[1].tolist()]
    assert got == [i for i in range(12) if i != 9]
    assert dl.num_skipped == 1 and dl.skipped[0].key == "file9.bin"
    dl2 = DataLoader(_Fails(), batch_size=4, num_workers=2, on_error="skip")
    with pytest.warns(RuntimeWarning):
        assert sum(len(b) for b in dl2) == 19 and dl2.skipped[0].index == 13


class _Slow:
    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


@pytest.mark.multiprocess
def test_sigkilled_worker_is_an_error_not_a_hang():
    dl = DataLoader(_Slow(0.02), batch_size=2, num_workers=2, timeout=20)
    it = iter(dl)
    next(it)
    victim = dl._workers.procs[1]
    os.kill(victim.pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 .*killed by signal SIGKILL"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 5
    assert not any(p.is_alive() for p in [victim])


@pytest.mark.multiprocess
def test_hung_worker_times_out():
    dl = DataLoader(_Slow(30), batch_size=1, num_workers=1, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.5 s"):
        next(iter(dl))
    assert time.monotonic() - t0 < 5
    assert dl._workers is None  # shut down, not left running


def _bad_init(wid):
    raise OSError(f"init failed in {wid}")


@pytest.mark.multiprocess
def test_worker_init_failure():
    with pytest.raises(OSError, match="init failed"):
        list(DataLoader(list(range(4)), batch_size=2, num_workers=2, worker_init_fn=_bad_init))


def _jpeg(seed, size=(40, 30)):
    rng = np.random.default_rng(seed)
    arr = (rng.random((size[1], size[0], 3)) * 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _decode(item):
    path, stream = item
    with Image.open(io.BytesIO(stream.read())) as im:
        return np.asarray(im.convert("RGB").resize((16, 16)))


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.multiprocess
def test_memory_fs_archives_with_undecodable_image_and_corrupt_archive_skipped(memfs):
    good = [(f"img{i}.jpg", _jpeg(i)) for i in range(6)]
    bad_image = [("bad.jpg", b"\xff\xd8\xff\xe0 this is not a jpeg")]
    whole = _tar(good[:3] + bad_image)
    broken = _tar(good[3:])
    memfs.pipe({"/shards/a.tar.gz": whole, "/shards/b.tar.gz": broken[:len(broken) // 2],
                "/shards/c.tar.gz": _tar(good[3:])})
    dp = FileLister("memory:///shards", "*.tar.gz").sharding_filter().open_files("b") \
        .load_from_tar().map(_decode)
    with pytest.raises(Exception):
        list(DataLoader(dp, batch_size=2, num_workers=2))
    dl = DataLoader(dp, batch_size=2, num_workers=2, on_error="skip")
    with pytest.warns(RuntimeWarning, match="skipped 2 bad sample"):
        imgs = np.concatenate([b.numpy() for b in dl])
    assert imgs.shape[1:] == (16, 16, 3)
    where = sorted((s.pipe.split("(")[0], s.key.rsplit("/", 1)[-1]) for s in dl.skipped)
    assert where == [("Mapper", "bad.jpg"), ("TarArchiveLoader", "b.tar.gz")]
    # a.tar.gz: 3 good; b.tar.gz: whatever came before the break; c.tar.gz: 3 good
    assert 6 <= len(imgs) < 9


@pytest.mark.multiprocess
def test_http_source_through_workers(http_root):
    root, base = http_root
    for i in range(4):
        (root / f"part{i}.txt").write_text("".join(f"{i}-{k}\n" for k in range(5)))
    urls = [f"{base}/part{i}.txt" for i in range(4)]
    dp = W(urls).sharding_filter().read_from_http(timeout=10).readlines(return_path=False)
    lines = [x for b in DataLoader(dp, batch_size=3, num_workers=2) for x in b]
    assert sorted(lines) == sorted(f"{i}-{k}" for i in range(4) for k in range(5))


@pytest.mark.multiprocess
def test_ctrl_c_reaches_the_main_process_only():
    """SIGINT to the whole process group (a terminal's Ctrl-C): the main process gets its
    KeyboardInterrupt and decides; the workers ignore it and keep serving the epoch."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import os, signal, time
        from ember.data import DataLoader, IterableWrapper
        def slow(x):
            time.sleep(0.01)
            return x
        dl = DataLoader(IterableWrapper(range(64)).sharding_filter().map(slow), batch_size=4,
                        num_workers=2, timeout=20)
        it = iter(dl)
        got = [next(it)]
        try:
            os.killpg(os.getpgid(0), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            print("interrupted")
        got += list(it)
        print("batches", len(got), sorted(int(v) for b in got for v in b.numpy()) == list(range(64)))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       start_new_session=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "interrupted" in r.stdout and "batches 16 True" in r.stdout, r.stdout + r.stderr
