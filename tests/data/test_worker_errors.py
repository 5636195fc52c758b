"""A DataLoader worker's exception, re-raised in the main process as PyTorch does: the worker's
traceback as real lines of the message, for every exception type (KeyError included)."""
import subprocess
import sys
import textwrap
import traceback

import pytest

from ember.data import DataLoader, errors
from ember.data.worker import exception_info

HEAD = ("Caught {name} in DataLoader worker process {wid}.\n"
        "Original Traceback (most recent call last):\n  File ")


def _info(exc, wid=0, where="batch 1 (dataset indices [2, 3])"):
    try:
        raise exc
    except Exception as e:
        e.add_note("ember.data: dataset[3] failed")
        return exception_info(e, wid, where)


class _TwoArgs(Exception):
    def __init__(self, a, b):   # cannot be built from one message
        super().__init__(a, b)


class _OwnStr(Exception):
    def __str__(self):          # would hide the worker's traceback
        return "always this"


@pytest.mark.parametrize("exc", [ValueError("bad sample 3"), KeyError("no sample 3"),
                                 OSError("disk gone"), IndexError("3")])
def test_rebuilt_exception_keeps_type_and_shows_the_traceback_line_by_line(exc):
    info = _info(exc, wid=1)
    err = errors.worker_exception(info)
    assert type(err) is type(exc)
    msg = str(err)
    assert msg.startswith(HEAD.format(name=type(exc).__name__, wid=1)), msg
    assert "\\n" not in msg and "\n    raise exc\n" in msg
    assert msg.endswith(f"ember.data: dataset[3] failed\nember.data: DataLoader worker 1 (pid "
                        f"{info['pid']}) was loading batch 1 (dataset indices [2, 3])")
    # what the interpreter prints for it: the same lines, not one quoted string
    printed = "".join(traceback.format_exception_only(err))
    assert printed.startswith(f"{type(exc).__name__}: Caught ")
    assert "\n  File " in printed and "'Caught" not in printed


@pytest.mark.parametrize("exc", [_TwoArgs(1, 2), _OwnStr("x")])
def test_types_that_cannot_carry_the_message_become_worker_error(exc):
    err = errors.worker_exception(_info(exc))
    assert type(err) is errors.WorkerError and isinstance(err, RuntimeError)
    assert str(err).startswith(HEAD.format(name=type(exc).__name__, wid=0))
    with pytest.raises(errors.WorkerError, match="Caught"):
        errors.raise_worker_error(_info(exc))


class _Fails:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"no sample {i}")
        if i == 3:
            raise ValueError(f"bad sample {i}")
        return i


@pytest.mark.multiprocess
def test_dataloader_reraises_as_torch_does():
    with pytest.raises(ValueError) as ei:
        list(DataLoader(_Fails(), batch_size=2, num_workers=1))
    msg = str(ei.value)
    assert msg.startswith(HEAD.format(name="ValueError", wid=0)), msg
    assert "test_worker_errors.py" in msg and "ValueError: bad sample 3\n" in msg
    assert "dataset[3] failed" in msg and "dataset indices [2, 3]" in msg


@pytest.mark.multiprocess
def test_uncaught_keyerror_prints_the_worker_traceback_line_by_line(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(textwrap.dedent("""
        from ember.data import DataLoader

        class DS:
            def __len__(self):
                return 4

            def __getitem__(self, i):
                if i == 2:
                    raise KeyError("no sample 2")
                return i

        if __name__ == "__main__":
            for _ in DataLoader(DS(), batch_size=2, num_workers=1):
                pass
    """))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 1
    err = p.stderr
    assert "KeyError: Caught KeyError in DataLoader worker process 0.\nOriginal Traceback " in err
    assert '\n    raise KeyError("no sample 2")\n' in err and "KeyError: 'no sample 2'\n" in err
    assert "\\n" not in err
