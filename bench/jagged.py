"""Jagged benchmarks: segment_sum over 1M packed rows in 10k sequences x 64 features.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/jagged.py --threads 2

Anchors, each timed interleaved with ember in one run: ``torch.segment_reduce`` (torch's
own segment op), an ``index_add_`` twin (the usual torch idiom: scatter rows by segment id),
and the padded alternative (the batch padded to its longest sequence, then ``sum(1)``).
Lengths are uniform in [1, 199] (mean 100, 1M rows in all). Goal: ember at most torch's
time against each anchor.
"""
from __future__ import annotations

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("jagged")

S, F = 10_000, 64


def _data(seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 200, S)
    lengths[-1] += 1_000_000 - lengths.sum()  # exactly 1M rows
    lengths[-1] = max(lengths[-1], 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = rng.standard_normal((int(offsets[-1]), F)).astype(np.float32)
    return values, lengths, offsets


def _ember(values, lengths, grad=False):
    import ember

    v = ember.tensor(values, requires_grad=grad)
    return ember.jagged.JaggedTensor(v, lengths=lengths)


def _check(out_e, out_t):
    import numpy as np

    a, b = out_e.numpy(), out_t.detach().numpy()
    err = float(np.abs(a - b).max() / np.abs(b).max())
    if err > 1e-4:
        raise AssertionError(f"ember and torch segment sums differ (max rel {err:.2e})")


@suite.figure("segment_sum 1M x 64 / 10k segs vs segment_reduce", unit="ms", goal=1.0)
def vs_segment_reduce():
    import torch

    values, lengths, offsets = _data()
    jt = _ember(values, lengths)
    tv, toff = torch.from_numpy(values), torch.from_numpy(offsets)
    run_t = lambda: torch.segment_reduce(tv, "sum", offsets=toff, axis=0)  # noqa: E731
    _check(jt.sum(), run_t())
    return jt.sum, run_t


@suite.figure("segment_sum 1M x 64 / 10k segs vs index_add_", unit="ms", goal=1.0)
def vs_index_add():
    import numpy as np
    import torch

    values, lengths, offsets = _data()
    jt = _ember(values, lengths)
    tv = torch.from_numpy(values)
    seg = torch.from_numpy(np.repeat(np.arange(S), lengths))

    def run_t():
        return torch.zeros(S, F).index_add_(0, seg, tv)
    _check(jt.sum(), run_t())
    return jt.sum, run_t


@suite.figure("segment_sum 1M x 64 / 10k segs vs padded sum", unit="ms", goal=1.0)
def vs_padded():
    import torch

    values, lengths, offsets = _data()
    jt = _ember(values, lengths)
    tp = torch.from_numpy(jt.to_padded().numpy())  # (10k, 199, 64): 2x the packed bytes
    run_t = lambda: tp.sum(1)  # noqa: E731
    _check(jt.sum(), run_t())
    return jt.sum, run_t


@suite.figure("  same, numpy reference path (context)", unit="ms")
def reference_path():
    import torch

    from ember import kernels

    values, lengths, offsets = _data()
    jt = _ember(values, lengths)
    tv, toff = torch.from_numpy(values), torch.from_numpy(offsets)

    def run_e():
        old = kernels.set_mode("numpy")
        try:
            return jt.sum()
        finally:
            kernels.set_mode(old)
    return run_e, lambda: torch.segment_reduce(tv, "sum", offsets=toff, axis=0)


@suite.figure("segment_sum fwd+bwd vs segment_reduce", unit="ms", goal=1.0)
def fwd_bwd():
    import numpy as np
    import torch

    import ember

    values, lengths, offsets = _data()
    jt = _ember(values, lengths, grad=True)
    g = np.random.default_rng(1).standard_normal((S, F)).astype(np.float32)
    eg, tg = ember.from_numpy(g), torch.from_numpy(g)
    tv = torch.tensor(values, requires_grad=True)
    toff = torch.from_numpy(offsets)

    def run_e():
        jt.sum().backward(eg)
        jt.values().grad = None

    def run_t():
        torch.segment_reduce(tv, "sum", offsets=toff, axis=0).backward(tg)
        tv.grad = None
    return run_e, run_t


@suite.figure("segment_max 1M x 64 / 10k segs vs segment_reduce", unit="ms", goal=1.0)
def max_vs_segment_reduce():
    import torch

    values, lengths, offsets = _data()
    jt = _ember(values, lengths)
    tv, toff = torch.from_numpy(values), torch.from_numpy(offsets)
    return jt.max, lambda: torch.segment_reduce(tv, "max", offsets=toff, axis=0)


if __name__ == "__main__":
    suite.main()
