"""DistributedDataParallel benchmark: a ResNet-18 training step (11.2M parameters, 32x32
inputs, 10 classes) on 1 rank vs 2 ranks at a fixed per-rank batch, and how much of the
gradient all-reduce is hidden behind backward.

    env -u OPENBLAS_CORETYPE python bench/distributed.py [--batch 16] [--steps 5] \
        [--bucket-mb 25 5] [--json out.json]

The script launches itself through ``mpiexec`` (``ember.distributed.launch``) once per rank
count and bucket size; every rank runs single-threaded BLAS so 2 ranks use the 2 cores.
Per configuration rank 0 reports the median of ``--steps`` timed steps after one warm-up:
- ``step``: forward + backward (with DDP's bucketed all-reduce) + SGD step;
- ``bwd sync`` / ``bwd local``: backward with reduction vs the same backward in ``no_sync``;
- ``allreduce``: the bucketed all-reduce of all gradients alone (blocking, same buckets);
- ``wait``: the time backward's end spent waiting for reductions still in flight;
- ``overlap``: 1 - wait / allreduce, the share of the communication that ran while backward
  was still computing (1 = fully hidden, 0 = fully exposed). ``bwd sync - bwd local - wait``
  is DDP's own cost (copying gradients into buckets and back).
Throughput is samples/s over all ranks; efficiency = throughput(2) / (2 * throughput(1)).
Comparing 1 and 2 ranks on a 2-core machine measures the cost of DDP, not network scaling.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def worker(batch, steps, bucket_mb):
    import numpy as np

    import ember
    import ember.distributed as dist
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP
    from ember.vision.models import resnet18

    dist.init_process_group("mpi")
    rank, n = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    model = DDP(resnet18(num_classes=10), bucket_cap_mb=bucket_mb)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    rng = np.random.default_rng(rank)
    x = ember.tensor(rng.standard_normal((batch, 3, 32, 32)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, batch))

    def timed(fn):
        dist.barrier()
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    def step():
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    def bwd(sync):
        opt.zero_grad()
        if sync:
            loss = lossf(model(x), y)
        else:
            with model.no_sync():
                loss = lossf(model(x), y)
        dist.barrier()
        t = time.perf_counter()
        loss.backward()
        t = time.perf_counter() - t
        if sync:
            res["wait"].append(model.reducer.last_wait_s)
        return t

    flats = [ember.zeros(int(b.flat.size)) for b in model.reducer.buckets]

    def allreduce():
        for f in flats:
            dist.all_reduce(f)

    step()  # warm-up
    res = {"step": [], "bwd_sync": [], "bwd_local": [], "allreduce": [], "wait": []}
    for _ in range(steps):
        res["step"].append(timed(step))
        res["bwd_sync"].append(bwd(True))
        res["bwd_local"].append(bwd(False))
        res["allreduce"].append(timed(allreduce))
    med = {k: statistics.median(v) for k, v in res.items()}
    every = [None] * n
    dist.all_gather_object(every, med)
    if rank == 0:  # the slowest rank sets the pace
        out = {k: max(e[k] for e in every) for k in med}
        out.update(ranks=n, batch=batch, bucket_mb=bucket_mb,
                   buckets=len(model.reducer.buckets))
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16, help="per-rank batch")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--bucket-mb", type=float, nargs="+", default=[25.0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.batch, a.steps, a.bucket_mb[0])
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
    from ember.distributed import launch

    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for mb in a.bucket_mb:
        for n in a.ranks:
            r = launch(os.path.abspath(__file__), n, ["--worker", "--batch", a.batch, "--steps",
                                                     a.steps, "--bucket-mb", mb],
                       timeout=1800, env=env)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
            if r.returncode or not line:
                sys.exit(f"{n} ranks failed:\n{r.stdout}\n{r.stderr}")
            rows.append(json.loads(line[0][7:]))
    print(f"ResNet-18, 32x32 inputs, per-rank batch {a.batch}, median of {a.steps} steps")
    print(f"{'ranks':>5} {'bucket MB':>9} {'buckets':>7} {'step ms':>8} {'samples/s':>9} "
          f"{'bwd sync':>8} {'bwd local':>9} {'allreduce':>9} {'wait':>6} {'overlap':>7}")
    base = {}
    for r in rows:
        thr = r["ranks"] * r["batch"] / r["step"]
        if r["ranks"] == 1:
            base[r["bucket_mb"]] = thr
        ov = 1.0 - r["wait"] / r["allreduce"] if r["ranks"] > 1 and r["allreduce"] > 0 else 0.0
        r.update(throughput=thr, overlap=max(0.0, min(1.0, ov)))
        print(f"{r['ranks']:>5} {r['bucket_mb']:>9g} {r['buckets']:>7} {r['step'] * 1e3:>8.1f} "
              f"{thr:>9.1f} {r['bwd_sync'] * 1e3:>8.1f} {r['bwd_local'] * 1e3:>9.1f} "
              f"{r['allreduce'] * 1e3:>9.1f} {r['wait'] * 1e3:>6.1f} {r['overlap']:>7.0%}")
    for r in rows:
        if r["ranks"] > 1 and r["bucket_mb"] in base:
            eff = r["throughput"] / (r["ranks"] * base[r["bucket_mb"]])
            r["efficiency"] = eff
            print(f"scaling efficiency, {r['ranks']} ranks, bucket {r['bucket_mb']:g} MB: "
                  f"{eff:.0%}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
