"""Compiled kernels (ember.kernels, numba) against torch and against numpy, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/kernels.py --threads 2
    python bench/kernels.py --compile      # first-call cost: empty cache vs warm, per kernel
    python bench/kernels.py --layers       # numba's threading layers vs ember's pool

Each figure times ember's compiled kernel (``ember`` column) against an anchor: torch, or
the numpy implementation ember has without the kernel (the kernel's reference, or ember's
current op). Ratios below 1: the kernel is faster. Shapes are those of issue 12: a 3x3
depthwise convolution on 8x144x56x56, layer norm on 4096x1536, GAE over T=2048 x 8 envs,
segment sums over jagged offsets, an Adam step over 10M parameters.
"""
from __future__ import annotations

import sys

RUN_SUITE = "--compile" not in sys.argv and "--layers" not in sys.argv  # those: subprocesses
if RUN_SUITE:
    from harness import Suite  # first: fixes the thread count before numpy is imported

    suite = Suite("kernels")


def _rng():
    import numpy as np

    return np.random.default_rng(0)


def _kernel(name, compiled=True):
    from ember import kernels

    k = kernels.lookup(name)
    if compiled and not kernels.available():
        raise SystemExit("bench/kernels.py: numba is not installed (pip install numba)")
    return k.cpu if compiled else k.reference


# ----------------------------------------------------------------------------- depthwise

DW = dict(N=8, C=144, H=56, W=56)


def _dw_data():
    import numpy as np

    rng = _rng()
    x = rng.standard_normal((DW["N"], DW["C"], DW["H"], DW["W"])).astype(np.float32)
    w = rng.standard_normal((DW["C"], 1, 3, 3)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    return x, w, g


def _torch_dw(x, w, g=None):
    import torch

    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    if g is None:
        def run():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, None, 1, 1, 1, DW["C"])
        return run
    txr, twr, tg = tx.clone().requires_grad_(), tw.clone().requires_grad_(), torch.from_numpy(g)

    def run_bwd():
        y = torch.nn.functional.conv2d(txr, twr, None, 1, 1, 1, DW["C"])
        torch.autograd.grad(y, (txr, twr), tg)
    return run_bwd


if RUN_SUITE:
    @suite.figure("depthwise 3x3 8x144x56^2 fwd: kernel", unit="ms")
    def dw_fwd():
        x, w, _ = _dw_data()
        k = _kernel("depthwise_conv2d")
        return (lambda: k(x, w, None, 1, 1, 1)), _torch_dw(x, w)

    @suite.figure("  same, ember conv2d numpy path", unit="ms")
    def dw_fwd_ember():
        import ember
        import ember.nn.functional as F

        x, w, _ = _dw_data()
        ex, ew = ember.from_numpy(x), ember.from_numpy(w)

        def run():
            with ember.no_grad():
                F.conv2d(ex, ew, None, 1, 1, 1, DW["C"])
        return run, _torch_dw(x, w)

    @suite.figure("  kernel vs ember conv2d numpy path", unit="ms", anchor="ember-numpy")
    def dw_fwd_vs_numpy():
        import ember
        import ember.nn.functional as F

        x, w, _ = _dw_data()
        k = _kernel("depthwise_conv2d")
        ex, ew = ember.from_numpy(x), ember.from_numpy(w)

        def run():
            with ember.no_grad():
                F.conv2d(ex, ew, None, 1, 1, 1, DW["C"])
        return (lambda: k(x, w, None, 1, 1, 1)), run

    @suite.figure("depthwise 3x3 fwd+bwd (x, w grads): kernels", unit="ms")
    def dw_fwd_bwd():
        x, w, g = _dw_data()
        f, bx, bw = (_kernel(n) for n in ("depthwise_conv2d", "depthwise_conv2d_backward_input",
                                          "depthwise_conv2d_backward_weight"))

        def run():
            f(x, w, None, 1, 1, 1)
            bx(g, w, x.shape, 1, 1, 1)
            bw(x, g, 3, 1, 1, 1)
        return run, _torch_dw(x, w, g)

    @suite.figure("  same, ember conv2d numpy path", unit="ms")
    def dw_fwd_bwd_ember():
        import ember
        import ember.nn.functional as F

        x, w, g = _dw_data()
        ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
        eg = ember.from_numpy(g)

        def run():
            y = F.conv2d(ex, ew, None, 1, 1, 1, DW["C"])
            ember.autograd.grad(y, (ex, ew), eg)
        return run, _torch_dw(x, w, g)


# ----------------------------------------------------------------------------- layer norm

LN = (4096, 1536)


def _ln_data():
    import numpy as np

    rng = _rng()
    x = rng.standard_normal(LN).astype(np.float32)
    w, b = (rng.standard_normal(LN[1]).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(LN).astype(np.float32)
    return x, w, b, g


def _torch_ln(x, w, b, g=None):
    import torch

    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    if g is None:
        def run():
            with torch.no_grad():
                torch.nn.functional.layer_norm(tx, (LN[1],), tw, tb)
        return run
    txr, twr, tbr = (t.clone().requires_grad_() for t in (tx, tw, tb))
    tg = torch.from_numpy(g)

    def run_bwd():
        y = torch.nn.functional.layer_norm(txr, (LN[1],), twr, tbr)
        torch.autograd.grad(y, (txr, twr, tbr), tg)
    return run_bwd


if RUN_SUITE:
    @suite.figure("layer norm 4096x1536 fwd: kernel", unit="ms")
    def ln_fwd():
        x, w, b, _ = _ln_data()
        k = _kernel("layer_norm")
        return (lambda: k(x, w, b, 1e-5)), _torch_ln(x, w, b)

    @suite.figure("  same, numpy reference", unit="ms")
    def ln_fwd_np():
        x, w, b, _ = _ln_data()
        k = _kernel("layer_norm", compiled=False)
        return (lambda: k(x, w, b, 1e-5)), _torch_ln(x, w, b)

    @suite.figure("  same, ember F.layer_norm (numpy path)", unit="ms")
    def ln_fwd_ember():
        import ember
        import ember.nn.functional as F

        x, w, b, _ = _ln_data()
        ex, ew, eb = (ember.from_numpy(a) for a in (x, w, b))

        def run():
            with ember.no_grad():
                F.layer_norm(ex, (LN[1],), ew, eb)
        return run, _torch_ln(x, w, b)

    @suite.figure("layer norm 4096x1536 fwd+bwd: kernels", unit="ms")
    def ln_fwd_bwd():
        x, w, b, g = _ln_data()
        f, bk = _kernel("layer_norm"), _kernel("layer_norm_backward")

        def run():
            _, mean, rstd = f(x, w, b, 1e-5)
            bk(g, x, mean, rstd, w)
        return run, _torch_ln(x, w, b, g)

    @suite.figure("  same, ember F.layer_norm (numpy path)", unit="ms")
    def ln_fwd_bwd_ember():
        import ember
        import ember.nn.functional as F

        x, w, b, g = _ln_data()
        ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
        eg = ember.from_numpy(g)

        def run():
            y = F.layer_norm(ex, (LN[1],), ew, eb)
            ember.autograd.grad(y, (ex, ew, eb), eg)
        return run, _torch_ln(x, w, b, g)


# ----------------------------------------------------------------------------- GAE

GAE = (2048, 8)


def _gae_data():
    import numpy as np

    rng = _rng()
    r, v, nv = (rng.standard_normal(GAE).astype(np.float32) for _ in range(3))
    done = rng.random(GAE) < 0.01
    return r, v, nv, done


if RUN_SUITE:
    @suite.figure("GAE T=2048 x 8 envs: kernel", unit="us", anchor="numpy")
    def gae_np():
        """Anchor: the reference, a loop over time vectorised over the envs."""
        r, v, nv, done = _gae_data()
        k, ref = _kernel("gae"), _kernel("gae", compiled=False)
        return (lambda: k(r, v, nv, done, None, 0.99, 0.95)), (
            lambda: ref(r, v, nv, done, None, 0.99, 0.95))

    @suite.figure("  same, vs a torch loop over time", unit="us")
    def gae_torch():
        import torch

        r, v, nv, done = _gae_data()
        k = _kernel("gae")
        tr, tv, tnv = (torch.from_numpy(a) for a in (r, v, nv))
        tnd = 1 - torch.from_numpy(done).float()

        def run_t():
            adv = torch.empty_like(tr)
            last = torch.zeros(GAE[1])
            for t in range(GAE[0] - 1, -1, -1):
                delta = tr[t] + 0.99 * tnv[t] * tnd[t] - tv[t]
                last = delta + 0.99 * 0.95 * tnd[t] * last
                adv[t] = last
            return adv, adv + tv
        return (lambda: k(r, v, nv, done, None, 0.99, 0.95)), run_t


# ----------------------------------------------------------------------------- segments

def _seg_data(n_seg, mean_len, d):
    import numpy as np

    rng = _rng()
    lens = rng.integers(0, 2 * mean_len + 1, n_seg)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    shape = (int(off[-1]),) + ((d,) if d else ())
    return rng.standard_normal(shape).astype(np.float32), off


def _reduceat(v, off):
    """The anchor: np.add.reduceat as it must be called (empty segments fixed up)."""
    import numpy as np

    starts = off[:-1]
    out = np.add.reduceat(v, np.minimum(starts, len(v) - 1), axis=0)
    out[off[1:] == starts] = 0
    return out


if RUN_SUITE:
    @suite.figure("segment sum 2048 bags x ~20 x 64: kernel", unit="us", anchor="reduceat")
    def seg_2d():
        v, off = _seg_data(2048, 20, 64)
        k = _kernel("segment_sum")
        return (lambda: k(v, off)), (lambda: _reduceat(v, off))

    @suite.figure("segment sum 100k segs x ~10 (1-D): kernel", unit="us", anchor="reduceat")
    def seg_1d():
        v, off = _seg_data(100_000, 10, 0)
        k = _kernel("segment_sum")
        return (lambda: k(v, off)), (lambda: _reduceat(v, off))

    @suite.figure("segment max 2048 bags x ~20 x 64 (+argmax)", unit="us", anchor="reduceat")
    def seg_max():
        import numpy as np

        v, off = _seg_data(2048, 20, 64)
        k = _kernel("segment_max")

        def anchor():  # values only: numpy has no argmax per segment
            starts = off[:-1]
            return np.maximum.reduceat(v, np.minimum(starts, len(v) - 1), axis=0)
        return (lambda: k(v, off)), anchor


# ----------------------------------------------------------------------------- Adam

def _adam_params():
    import numpy as np

    rng = _rng()
    return ([rng.standard_normal(1_000_000).astype(np.float32) for _ in range(10)],
            [rng.standard_normal(1_000_000).astype(np.float32) * 1e-2 for _ in range(10)])


def _torch_adam():
    import torch

    ps, gs = _adam_params()
    tp = [torch.tensor(p, requires_grad=True) for p in ps]
    for t, g in zip(tp, gs):
        t.grad = torch.from_numpy(g)
    return torch.optim.Adam(tp, lr=1e-3).step


if RUN_SUITE:
    @suite.figure("Adam step 10 x 1M float32: kernel", unit="ms", number=3)
    def adam_kernel():
        import numpy as np

        ps, gs = _adam_params()
        ms = [np.zeros_like(p) for p in ps]
        vs = [np.zeros_like(p) for p in ps]
        k = _kernel("adam_step")
        hyper = (1.0, 0.0, False, 0.1, 0.999, 0.001, 1e-8 * 0.999 ** 0.5, -1e-3)
        jobs = [((p, g, m, v), hyper) for p, g, m, v in zip(ps, gs, ms, vs)]
        return (lambda: k(jobs)), _torch_adam()

    @suite.figure("  same, ember.optim.Adam (numpy path)", unit="ms", number=3)
    def adam_ember():
        import ember
        import ember.optim

        ps, gs = _adam_params()
        pe = [ember.tensor(p, requires_grad=True) for p in ps]
        for e, g in zip(pe, gs):
            e.grad = ember.from_numpy(g)
        return ember.optim.Adam(pe, lr=1e-3).step, _torch_adam()


# ----------------------------------------------------------------------------- first-call cost

_CALLS = {  # kernel -> code calling it once on small float32 inputs
    "depthwise_conv2d": "k(np.ones((1, 2, 6, 6), f), np.ones((2, 1, 3, 3), f), None, 1, 1, 1)",
    "depthwise_conv2d_backward_input":
        "k(np.ones((1, 2, 6, 6), f), np.ones((2, 1, 3, 3), f), (1, 2, 6, 6), 1, 1, 1)",
    "depthwise_conv2d_backward_weight":
        "k(np.ones((1, 2, 6, 6), f), np.ones((1, 2, 6, 6), f), 3, 1, 1, 1)",
    "layer_norm": "k(np.ones((4, 8), f), np.ones(8, f), np.ones(8, f), 1e-5)",
    "layer_norm_backward":
        "k(np.ones((4, 8), f), np.ones((4, 8), f), np.ones(4, f), np.ones(4, f), np.ones(8, f))",
    "gae": "k(np.ones((5, 2), f), np.ones((5, 2), f), np.ones((5, 2), f), np.zeros((5, 2), bool))",
    "td_lambda_return": "k(np.ones((5, 2), f), np.ones((5, 2), f), np.zeros((5, 2), bool))",
    "segment_sum": "k(np.ones((6, 3), f), np.array([0, 2, 6]))",
    "segment_mean": "k(np.ones((6, 3), f), np.array([0, 2, 6]))",
    "segment_max": "k(np.ones((6, 3), f), np.array([0, 2, 6]))",
    "adam_step": "k([((np.ones(9, f), np.ones(9, f), np.zeros(9, f), np.zeros(9, f)),"
                 " (1.0, 0.0, False, 0.1, 0.999, 0.001, 1e-8, -1e-3))])",
}

_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import ember
from ember import kernels
t_import = time.perf_counter() - t0
f = np.float32
out = {"import_s": t_import, "numba_imported_by_import": "numba" in sys.modules}
t = time.perf_counter()
kernels._jit.numba()  # what the first kernel call does first: import numba
out["numba_s"] = time.perf_counter() - t
for name in sys.argv[1:]:
    k = kernels.lookup(name).cpu
    t = time.perf_counter()
    exec(CALLS[name])
    out[name] = time.perf_counter() - t
out["total_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def compile_costs():
    """Per kernel, and for all of them in one process: a fresh interpreter with an empty
    ``EMBER_HOME`` (cold: numba compiles and writes the cache), then again (warm: loads)."""
    import json
    import os
    import subprocess
    import tempfile

    probe = "CALLS = " + repr(_CALLS) + "\n" + _PROBE

    def run(home, names):
        env = dict(os.environ, EMBER_HOME=home)
        env.pop("EMBER_KERNELS", None)
        p = subprocess.run([sys.executable, "-c", probe, *names], env=env, text=True,
                           capture_output=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])

    print(f"{'first call of (after numba is imported)':42s} {'cold s':>8s} {'warm s':>8s}")
    numba_s = []
    for name in _CALLS:
        with tempfile.TemporaryDirectory() as home:
            cold, warm = run(home, [name]), run(home, [name])
        numba_s += [cold["numba_s"], warm["numba_s"]]
        print(f"{name:42s} {cold[name]:8.2f} {warm[name]:8.3f}")
    print(f"{'import numba (once per process)':42s} {min(numba_s):8.2f} (min of the runs)")
    with tempfile.TemporaryDirectory() as home:
        cold, warm = run(home, list(_CALLS)), run(home, list(_CALLS))
    print(f"{'all kernels, one process (import + calls)':42s} {cold['total_s']:8.2f} "
          f"{warm['total_s']:8.2f}")
    print(f"{'  of which import ember':42s} {cold['import_s']:8.2f} {warm['import_s']:8.2f}"
          f"   (numba imported by `import ember`: {cold['numba_imported_by_import']})")
    print(f"{'  of which import numba':42s} {cold['numba_s']:8.2f} {warm['numba_s']:8.2f}")


# ----------------------------------------------------------------------------- threading layers

_LAYER_PROBE = r"""
import os, sys, time, statistics, threading, json
layer = sys.argv[1]
if layer != "ember-pool":
    os.environ["NUMBA_THREADING_LAYER"] = layer
import ember
from ember._parallel import parallel_for
import numpy as np, numba
f32 = np.float32
B = 65536

@numba.njit(parallel=True, fastmath=True)
def tiny(a):
    for i in numba.prange(a.shape[0]):
        a[i] += f32(1)

@numba.njit(fastmath=True, error_model="numpy", inline="always")
def adam_block(p, g, m, v, b1, b2, eps, k):
    for i in range(p.shape[0]):
        mi = m[i] * b1 + (f32(1) - b1) * g[i]
        vi = v[i] * b2 + (f32(1) - b2) * g[i] * g[i]
        m[i] = mi; v[i] = vi
        p[i] += k * mi / (np.sqrt(vi) + eps)

@numba.njit(parallel=True, fastmath=True, error_model="numpy")
def adam_par(p, g, m, v, b1, b2, eps, k):
    nb = (p.shape[0] + B - 1) // B
    for bi in numba.prange(nb):
        lo, hi = bi * B, min(p.shape[0], (bi + 1) * B)
        adam_block(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], b1, b2, eps, k)

@numba.njit(nogil=True, fastmath=True, error_model="numpy")
def adam_ser(p, g, m, v, b1, b2, eps, k, lo, hi):
    adam_block(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], b1, b2, eps, k)

hy = (f32(.9), f32(.999), f32(1e-8), f32(-1e-3))
if layer == "ember-pool":
    def adam(p, g, m, v):
        n = p.shape[0]
        parallel_for(lambda lo, hi: adam_ser(p, g, m, v, *hy, lo * B, min(n, hi * B)),
                     -(-n // B), work=n)
    one = np.zeros(4, f32)
    launch = lambda: adam_ser(one, one, one, one, *hy, 0, 4)
else:
    def adam(p, g, m, v):
        adam_par(p, g, m, v, *hy)
    one = np.zeros(4, f32)
    launch = lambda: tiny(one)

def med(fn, n, r=7):
    ts = []
    for _ in range(r):
        time.sleep(0.2)
        t = time.perf_counter()
        for _ in range(n):
            fn()
        ts.append((time.perf_counter() - t) / n)
    return statistics.median(ts)

N = 10_000_000
p, g, m, v = (np.random.rand(N).astype(f32) for _ in range(4))
launch(); adam(p, g, m, v)
A = np.random.rand(512, 512).astype(f32)
S = 400_000
small = lambda: adam(p[:S], g[:S], m[:S], v[:S])
res = {"layer": numba.threading_layer() if layer != "ember-pool" else layer,
       "launch_us": med(launch, 2000) * 1e6, "adam10M_ms": med(lambda: adam(p, g, m, v), 5) * 1e3,
       "gemm_ms": med(lambda: A @ A, 50) * 1e3, "adam400k_ms": med(small, 50) * 1e3,
       "mix_ms": med(lambda: (small(), A @ A), 50) * 1e3}
errs = []
def worker():
    try:
        for _ in range(100):
            small()
    except BaseException as e:
        errs.append(repr(e))
print(json.dumps(res), flush=True)
pid = os.fork()
if pid == 0:
    small(); os._exit(0)
res["fork_ok"] = os.waitpid(pid, 0)[1] == 0
print(json.dumps(res), flush=True)
th = [threading.Thread(target=worker) for _ in range(2)]
[t.start() for t in th]; [t.join() for t in th]
res["threads_ok"] = not errs
print(json.dumps(res), flush=True)
"""


def threading_layers(rounds=3):
    """numba's parallel=True layers (workqueue, omp, tbb where it loads) against serial
    nogil kernels on ember's pool: launch cost, an Adam pass, a GEMM after a kernel, calls
    from two Python threads at once, and a kernel in a forked child. Each layer runs in its
    own process, ``rounds`` times round-robin (the machine drifts); medians are printed."""
    import json
    import os
    import statistics
    import subprocess

    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = "2"
    layers = ("ember-pool", "workqueue", "omp", "tbb")
    runs = {layer: [] for layer in layers}
    notes = {}
    for _ in range(rounds):
        for layer in layers:
            if layer in notes:
                continue
            p = subprocess.run([sys.executable, "-c", _LAYER_PROBE, layer], env=env, text=True,
                               capture_output=True)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                notes[layer] = (p.stderr.strip().splitlines() or ["?"])[-1]
            elif json.loads(lines[-1])["layer"] != layer:
                notes[layer] = f"numba chose {json.loads(lines[-1])['layer']}"
            else:
                runs[layer].append(json.loads(lines[-1]))
    print(f"{'layer':12s} {'launch us':>9s} {'Adam 10M':>9s} {'GEMM512':>8s} {'Adam400k':>9s} "
          f"{'both':>7s} {'2 threads':>9s} {'fork':>6s}   (ms unless noted; medians)")
    for layer in layers:
        rs = runs[layer]
        if not rs:
            print(f"{layer:12s} not available: {notes.get(layer)}")
            continue
        med = {k: statistics.median(r[k] for r in rs) for k in
               ("launch_us", "adam10M_ms", "gemm_ms", "adam400k_ms", "mix_ms")}
        r = rs[-1]
        thr = {True: "ok", False: "error"}.get(r.get("threads_ok"), "ABORTS")
        fork = {True: "ok", False: "dies"}.get(r.get("fork_ok"), "ABORTS")
        print(f"{layer:12s} {med['launch_us']:9.1f} {med['adam10M_ms']:9.2f} "
              f"{med['gemm_ms']:8.3f} {med['adam400k_ms']:9.3f} {med['mix_ms']:7.3f} "
              f"{thr:>9s} {fork:>6s}")


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_costs()
    elif "--layers" in sys.argv:
        threading_layers()
    else:
        suite.main()
