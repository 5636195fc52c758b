"""Benchmark harness: time ember and its anchor in the same process, interleaved.

A benchmark script declares figures; each figure returns two callables (ember's and the
anchor's) doing the same work. The harness sets the thread count for every BLAS/OpenMP pool
*before* numpy or torch are imported, warms both up, then alternates timed rounds of ember and
the anchor (so drift of the machine's speed hits both alike) and reports the median time per
call, and the ratio ember/anchor (below 1 means ember is faster).

    # bench/mine.py
    from harness import Suite          # first import: it fixes the thread count
    suite = Suite("mine")

    @suite.figure("add, 4 elements", unit="us", goal=1.0)
    def add4():
        import ember, torch
        a, b = ember.ones(4), ember.ones(4)
        ta, tb = torch.ones(4), torch.ones(4)
        return (lambda: a + b), (lambda: ta + tb)

    if __name__ == "__main__":
        suite.main()

Run ``python bench/mine.py [--threads 2] [--rounds 7] [--filter add] [--json out.json]``.
A figure may also give ``flops`` (per call) to print GFLOP/s, and ``anchor="numpy"`` (or any
name) when the anchor is not torch.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


def _early_threads(argv):
    """The ``--threads`` value from argv, set into the thread-pool variables right away."""
    n = "2"
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            n = argv[i + 1]
        elif a.startswith("--threads="):
            n = a.split("=", 1)[1]
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = n
    return int(n)


THREADS = _early_threads(sys.argv)

import ember  # noqa: E402,F401 - before numpy, as a user's script would: it tunes OpenBLAS's idle wait


class Figure:
    def __init__(self, name, setup, unit, goal, flops, anchor, number, higher_is_better):
        self.name, self.setup, self.unit, self.goal = name, setup, unit, goal
        self.flops, self.anchor, self.number = flops, anchor, number
        self.higher_is_better = higher_is_better


_SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


def _calls_per_round(fn, target_s=0.05):
    """How many calls make a timed round of about ``target_s`` seconds."""
    t0 = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target_s / dt))


SETTLE_S = 0.3


def time_pair(f_ember, f_anchor, rounds=7, warmup=3, number=None, settle=SETTLE_S):
    """Median seconds per call of each, over ``rounds`` interleaved rounds.

    Before each timed block the harness sleeps ``settle`` seconds: numpy's OpenBLAS threads
    and torch's OpenMP threads busy-wait for a while after their last job, and on a 2-core
    machine the spinning pool of one library steals the cores of the other (measured here:
    torch's MLP step went from 1.8 to 4.5 ms when interleaved without the pause)."""
    for _ in range(warmup):
        f_ember()
        f_anchor()
    n_e = number or _calls_per_round(f_ember)
    n_a = number or _calls_per_round(f_anchor)
    te, ta = [], []
    for r in range(rounds):
        order = ((f_ember, n_e, te), (f_anchor, n_a, ta))
        for fn, n, acc in (order if r % 2 == 0 else order[::-1]):
            if settle:
                time.sleep(settle)
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            acc.append((time.perf_counter() - t0) / n)
    return statistics.median(te), statistics.median(ta)


class Suite:
    """A named set of figures with a command line (see the module docstring)."""

    def __init__(self, name):
        self.name = name
        self.figures = []

    def figure(self, name, *, unit="ms", goal=None, flops=None, anchor="torch", number=None,
               higher_is_better=False):
        """Register ``setup() -> (ember_fn, anchor_fn)``. ``goal``: the ratio ember/anchor to
        reach (at most, or at least with ``higher_is_better`` for throughput-style goals)."""
        def deco(setup):
            self.figures.append(Figure(name, setup, unit, goal, flops, anchor, number,
                                       higher_is_better))
            return setup
        return deco

    def run(self, rounds=7, only=None, out=sys.stdout):
        rows = []
        try:
            import torch

            torch.set_num_threads(THREADS)
            torch_version = torch.__version__
        except ImportError:
            torch_version = None
        import numpy as np

        header = (f"# {self.name}: {THREADS} thread(s), numpy {np.__version__}, torch "
                  f"{torch_version}, python {platform.python_version()}, {rounds} rounds, "
                  f"median per call; ratio = ember/anchor")
        print(header, file=out)
        print(f"{'figure':44s} {'ember':>12s} {'anchor':>18s} {'ratio':>7s} {'goal':>8s}",
              file=out)
        for fig in self.figures:
            if only and only.lower() not in fig.name.lower():
                continue
            f_e, f_a = fig.setup()
            te, ta = time_pair(f_e, f_a, rounds=rounds, number=fig.number)
            ratio = te / ta
            scale = _SCALE[fig.unit]
            row = {"figure": fig.name, "unit": fig.unit, "ember": te * scale,
                   "anchor": ta * scale, "anchor_name": fig.anchor, "ratio": ratio,
                   "goal": fig.goal}
            goal = ""
            if fig.goal is not None:
                if fig.higher_is_better:  # throughput: anchor_time / ember_time >= goal
                    row["throughput_ratio"] = ta / te
                    ok = ta / te >= fig.goal
                    goal = f">={fig.goal:.2f}" + (" ok" if ok else " no")
                else:
                    ok = ratio <= fig.goal
                    goal = f"<={fig.goal:.2f}" + (" ok" if ok else " no")
                row["met"] = ok
            extra = ""
            if fig.flops:
                row["ember_gflops"] = fig.flops / te / 1e9
                row["anchor_gflops"] = fig.flops / ta / 1e9
                extra = f"  ({row['ember_gflops']:.0f} vs {row['anchor_gflops']:.0f} GFLOP/s)"
            print(f"{fig.name:44s} {te * scale:9.3f} {fig.unit:2s} "
                  f"{ta * scale:9.3f} {fig.unit:2s} {fig.anchor[:5]:>5s} {ratio:7.2f} "
                  f"{goal:>8s}{extra}", file=out, flush=True)
            rows.append(row)
        return {"suite": self.name, "threads": THREADS, "numpy": np.__version__,
                "torch": torch_version, "rows": rows}

    def main(self, argv=None):
        ap = argparse.ArgumentParser(description=f"ember benchmarks: {self.name}")
        ap.add_argument("--threads", type=int, default=THREADS,
                        help="threads for every BLAS/OpenMP pool (default 2)")
        ap.add_argument("--rounds", type=int, default=7)
        ap.add_argument("--filter", default=None, help="run figures whose name contains this")
        ap.add_argument("--json", default=None, help="also write the results to this file")
        a = ap.parse_args(argv)
        result = self.run(rounds=a.rounds, only=a.filter)
        if a.json:
            tmp = a.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result, f, indent=1)
            os.replace(tmp, a.json)
        return result


def paired_inference(em, tm, shape, name="model", tol=1e-3):
    """``(ember_fn, torch_fn)`` running ``em``/``tm`` (same weights) in eval mode without
    autograd on one random input of ``shape``; checks once that their outputs agree."""
    import numpy as np
    import torch

    import ember

    em.eval()
    tm.eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)
    with ember.no_grad(), torch.no_grad():
        a, b = em(ex).numpy(), tm(tx).numpy()
    err = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))
    if err > tol:
        raise AssertionError(f"{name}: ember and torch outputs differ (max rel {err:.2e})")

    def run_e():
        with ember.no_grad():
            em(ex)

    def run_t():
        with torch.no_grad():
            tm(tx)
    return run_e, run_t
