"""convolution benchmarks: ResNet-50's layer shapes (and ResNeXt/RegNet grouped shapes), one
layer at a time, forward and forward + backward, against torch.nn.functional.conv2d.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv.py --threads 2 [--filter 1x1]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv.py --threads 2 --memory
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv.py --threads 2 --profile train

Every figure is batch 8, float32. "fwd+bwd" is the forward, then the backward of a fixed
upstream gradient into the input and the weight. The whole-model figures (ResNet-50
inference and training step) are in bench/vision.py.

``--profile train|eval`` prints the time of a ResNet-50 step spent in each convolution
product (forward, grad input, grad weight) by kernel class, and the rest. ``--memory`` measures the ResNet-50 training step (batch 8, 224^2, SGD momentum) in two fresh
processes, one per library: the peak resident set (``ru_maxrss``) after the model, input
and one warm-up step, its growth over three more steps, and for ember also
``tracemalloc``'s peak over one step (numpy reports its array allocations to tracemalloc)
and the minor page faults per step.
"""
from __future__ import annotations

import sys

from harness import THREADS, Suite  # first: fixes the thread count

suite = Suite("conv")

# name, (C_in, C_out, H, k, stride, groups); batch 8
LAYERS = [
    ("stem 7x7/2 3->64 @224", (3, 64, 224, 7, 2, 1)),
    ("1x1 64->256 @56", (64, 256, 56, 1, 1, 1)),
    ("1x1 256->64 @56", (256, 64, 56, 1, 1, 1)),
    ("1x1/2 256->512 @56 (downsample)", (256, 512, 56, 1, 2, 1)),
    ("1x1 512->128 @28", (512, 128, 28, 1, 1, 1)),
    ("1x1 1024->256 @14", (1024, 256, 14, 1, 1, 1)),
    ("1x1 512->2048 @7", (512, 2048, 7, 1, 1, 1)),
    ("3x3 64 @56", (64, 64, 56, 3, 1, 1)),
    ("3x3/2 128 @56->28", (128, 128, 56, 3, 2, 1)),
    ("3x3 128 @28", (128, 128, 28, 3, 1, 1)),
    ("3x3 256 @14 (Winograd)", (256, 256, 14, 3, 1, 1)),
    ("3x3 512 @7", (512, 512, 7, 3, 1, 1)),
    ("3x3 g32 128 @56 (ResNeXt)", (128, 128, 56, 3, 1, 32)),
    ("3x3 g32 512 @14 (ResNeXt)", (512, 512, 14, 3, 1, 32)),
    ("3x3 g14 336 @14 (RegNetY)", (336, 336, 14, 3, 1, 14)),
]


def _setup(spec, backward):
    import numpy as np
    import torch

    import ember
    import ember.nn.functional as F

    C, Co, H, k, s, G = spec
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, C, H, H)).astype(np.float32)
    w = (rng.standard_normal((Co, C // G, k, k)) * 0.05).astype(np.float32)
    kw = dict(stride=s, padding=k // 2, groups=G)
    out_shape = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
    g = rng.standard_normal(tuple(out_shape)).astype(np.float32)
    if not backward:
        ex, ew, tx, tw = (ember.from_numpy(x), ember.from_numpy(w), torch.from_numpy(x),
                          torch.from_numpy(w))

        def run_e():
            with ember.no_grad():
                F.conv2d(ex, ew, **kw)

        def run_t():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, **kw)
        return run_e, run_t
    ex = ember.from_numpy(x).requires_grad_()
    ew = ember.from_numpy(w).requires_grad_()
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(w).requires_grad_()
    eg, tg = ember.from_numpy(g), torch.from_numpy(g)

    def run_e():
        ex.grad = ew.grad = None
        F.conv2d(ex, ew, **kw).backward(eg)

    def run_t():
        tx.grad = tw.grad = None
        torch.nn.functional.conv2d(tx, tw, **kw).backward(tg)
    return run_e, run_t


def _flops(spec, backward):
    C, Co, H, k, s, G = spec
    O = (H + 2 * (k // 2) - k) // s + 1
    f = 2 * 8 * Co * (C // G) * k * k * O * O
    return 3 * f if backward else f


for _name, _spec in LAYERS:
    for _bwd in (False, True):
        suite.figure(f"{_name} {'fwd+bwd' if _bwd else 'fwd'}", unit="ms",
                     flops=_flops(_spec, _bwd))(
            lambda spec=_spec, bwd=_bwd: _setup(spec, bwd))


# ------------------------------------------------------- the alternatives the choices beat
# "ember" is the path conv2d takes, the anchor the alternative it was measured against.

def _split_vs_threaded(C, Co, H):
    """1x1 conv, batch 8: images split over ember's threads with single-threaded GEMMs (what
    conv2d does) against one stacked matmul with OpenBLAS threading each GEMM (before)."""
    import numpy as np

    import ember
    import ember.nn.functional as F

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, C, H, H)).astype(np.float32)
    w = (rng.standard_normal((Co, C, 1, 1)) * 0.05).astype(np.float32)
    ex, ew, xv, w2 = ember.from_numpy(x), ember.from_numpy(w), x.reshape(8, 1, C, H * H), \
        w.reshape(1, Co, C)

    def run_e():
        with ember.no_grad():
            F.conv2d(ex, ew)
    return run_e, lambda: np.matmul(w2, xv)


def _stacked_vs_loop(C, G, H):
    """The GEMMs of a grouped 3x3 conv on one image, single-threaded (as inside the image
    split): numpy's stacked matmul over the groups (what conv2d does) against a Python loop
    of per-group 2-D GEMMs."""
    import numpy as np

    from ember import _blas

    Cg, L = C // G, H * H
    rng = np.random.default_rng(0)
    w = rng.standard_normal((G, Cg, Cg * 9)).astype(np.float32)
    cols = rng.standard_normal((G, Cg * 9, L)).astype(np.float32)
    out = np.empty((G, Cg, L), np.float32)

    def stacked():
        with _blas.single_threaded():
            np.matmul(w, cols, out=out)

    def loop():
        with _blas.single_threaded():
            for g in range(G):
                np.matmul(w[g], cols[g], out=out[g])
    return stacked, loop


for _C, _Co, _H in ((512, 128, 28), (256, 64, 56), (1024, 256, 14)):
    suite.figure(f"1x1 {_C}->{_Co} @{_H}: split vs OpenBLAS-threaded", unit="ms",
                 anchor="threaded")(lambda C=_C, Co=_Co, H=_H: _split_vs_threaded(C, Co, H))
for _C, _G, _H in ((128, 32, 56), (512, 32, 14), (336, 14, 14)):
    suite.figure(f"3x3 g{_G} {_C} @{_H} GEMMs: stacked vs loop", unit="ms",
                 anchor="loop")(lambda C=_C, G=_G, H=_H: _stacked_vs_loop(C, G, H))


# ------------------------------------------------------------------------------- memory

_MEM_CHILD = r"""
import os, resource, sys, time, tracemalloc
os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "{threads}"
sys.path.insert(0, {bench!r})
import ember, numpy as np
import vision as V
lib = {lib!r}
x = np.random.default_rng(0).standard_normal((8, 3, 224, 224)).astype(np.float32)
y = np.random.default_rng(1).integers(0, 1000, 8)
if lib == "ember":
    ember.set_num_threads({threads})
    from ember.vision import models
    m = models.get_model("resnet50")
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    opt = ember.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    def step():
        opt.zero_grad()
        ember.nn.functional.cross_entropy(m(ex), ey).backward()
        opt.step()
else:
    import torch
    torch.set_num_threads({threads})
    m = V.torch_resnet50()
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(tx), ty).backward()
        opt.step()
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
step()
r0 = rss()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t0 = time.perf_counter()
for _ in range(3):
    step()
dt = (time.perf_counter() - t0) / 3
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 3
line = f"{{lib:6s}} maxrss after warm-up {{r0:7.0f}} MB, after 3 steps {{rss():7.0f}} MB, " \
       f"{{faults:9.0f}} minor faults/step, {{dt * 1e3:6.0f}} ms/step"
if lib == "ember":
    tracemalloc.start()
    step()
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    line += f", tracemalloc peak over a step {{peak / 2**20:6.0f}} MB"
print(line, flush=True)
"""


def memory():
    """Peak memory of the ResNet-50 training step, ember and torch, each in a fresh process."""
    import os
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    print(f"# ResNet-50 training step, batch 8, 224^2, SGD momentum, {THREADS} thread(s); "
          f"load {os.getloadavg()[0]:.1f}")
    for lib in ("ember", "torch"):
        code = _MEM_CHILD.format(threads=THREADS, bench=here, lib=lib)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=1800)
        if r.returncode:
            raise RuntimeError(f"memory run of {lib} failed:\n{r.stderr[-3000:]}")
        print(r.stdout.strip(), flush=True)


# ------------------------------------------------------------------------------ profile

def profile(mode, steps=3):
    """Where a ResNet-50 step (batch 8, 224^2; ``mode`` "train" or "eval") spends its time:
    wall time inside each convolution product (forward, grad input, grad weight) by kernel
    size and stride, and the rest (norms, activations, pooling, optimizer, autograd)."""
    import collections
    import os
    import time

    import numpy as np

    import ember
    from ember.nn.functional import conv as cv
    from ember.vision import models

    ember.set_num_threads(THREADS)
    acc, depth = collections.defaultdict(float), [0]
    names = {"_conv_arr": "forward", "_conv_t_arr": "grad input", "_conv_w_arr": "grad weight"}

    def timed(name, fn):
        def f(*a):
            if depth[0]:  # a product computed through another (stride-1 grad input)
                return fn(*a)
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*a)
            finally:
                depth[0] -= 1
                k = a[2] if name == "_conv_w_arr" else a[1].shape[2:]
                s, G = a[3][1][0], a[3][3]
                cls = "x".join(map(str, k)) + (f"/{s}" if s > 1 else "") + (
                    " grouped" if G > 1 else "")
                acc[(names[name], cls)] += time.perf_counter() - t0
        return f
    for n in names:
        setattr(cv, n, timed(n, getattr(cv, n)))
    m = models.get_model("resnet50")
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((8, 3, 224, 224))
                         .astype(np.float32))
    y = ember.from_numpy(np.random.default_rng(1).integers(0, 1000, 8))
    opt = ember.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    if mode != "train":
        m.eval()

    def step():
        if mode == "train":
            opt.zero_grad()
            ember.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        else:
            with ember.no_grad():
                m(x)
    step()
    step()
    acc.clear()
    total = 0.0
    for _ in range(steps):
        time.sleep(0.3)
        t0 = time.perf_counter()
        step()
        total += time.perf_counter() - t0
    conv = sum(acc.values())
    print(f"# ResNet-50 {mode} step, batch 8, {THREADS} thread(s), load "
          f"{os.getloadavg()[0]:.1f}: {total / steps * 1e3:.0f} ms, convolutions "
          f"{conv / steps * 1e3:.0f} ms ({conv / total:.0%}), rest "
          f"{(total - conv) / steps * 1e3:.0f} ms")
    for (what, cls), v in sorted(acc.items(), key=lambda kv: -kv[1]):
        print(f"  {what:12s} {cls:12s} {v / steps * 1e3:8.1f} ms {v / total:6.1%}")


if __name__ == "__main__":
    if "--memory" in sys.argv:
        memory()
    elif "--profile" in sys.argv:
        profile(sys.argv[sys.argv.index("--profile") + 1])
    else:
        suite.main()
