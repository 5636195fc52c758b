"""``python -m ember.distributed --nproc N script.py [args...]``: run a script on N local ranks
through mpiexec (see ``launch.py``); exits with the job's exit code."""
import argparse
import subprocess
import sys

from .launch import launch


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ember.distributed",
                                 description="run a script on N local ranks through mpiexec")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=None,
                    help="kill the whole job after this many seconds")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    try:
        r = launch(ns.script, ns.nproc, ns.args, timeout=ns.timeout, capture=False)
    except subprocess.TimeoutExpired:
        print(f"job killed after {ns.timeout} s", file=sys.stderr)
        return 124
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
