"""rec benchmarks: an embedding-bag collection's training step against torch, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/rec.py --threads 2 [--filter adam]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/rec.py --memory

26 tables x 100k rows x 64 (float32), batch 2048, ~10 ids per bag (Poisson, at least 1),
one feature per table; a step is forward, ``sum()`` of the pooled outputs, backward and the
sparse optimizer update. ember: ``EmbeddingBagCollection`` with ``fused_params`` (the update
runs inside backward on the touched rows). torch: 26 ``nn.EmbeddingBag(mode="sum",
sparse=True)`` and the matching sparse optimizer's ``step()`` (``SparseAdam`` for "adam",
``Adagrad`` for "adagrad"), same weights and ids. Goal (issue 14): at most torch's time.
Before timing, one step of each is run and the tables compared. Two more figures: forward
and backward without an optimizer (ember's coalesced row-sparse gradient against torch's
sparse COO one) and the forward alone.

``--memory``: a 10M x 64 table (2.56 GB) trained with fused rowwise Adagrad: the peak memory
allocated during a step (tracemalloc, which sees numpy's allocations), against the table's
size. Goal: the whole job under 1.2x the table.
"""
from __future__ import annotations

import sys

from harness import Suite  # first: fixes the thread count before numpy is imported

suite = Suite("rec")

T, R, D, BATCH, POOL = 26, 100_000, 64, 2048, 10


def _data(seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.poisson(POOL, (T, BATCH)).clip(1, None)
    ids = [rng.integers(0, R, int(n.sum())) for n in lengths]
    w0 = [rng.uniform(-0.01, 0.01, (R, D)).astype(np.float32) for _ in range(T)]
    return lengths, ids, w0


def _ebc_setup(**ebc_kwargs):
    """(ebc, kjt, torch inputs [(ids, offsets)] per table, initial tables w0) of the figures:
    one EmbeddingBagCollection of T tables, one feature each, over ``_data()``."""
    import numpy as np
    import torch

    import ember
    from ember.rec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

    lengths, ids, w0 = _data()
    keys = [f"f{i}" for i in range(T)]
    ebc = EmbeddingBagCollection(
        [EmbeddingBagConfig(name=f"t{i}", num_embeddings=R, embedding_dim=D,
                            feature_names=[keys[i]]) for i in range(T)], **ebc_kwargs)
    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys, ember.from_numpy(np.concatenate(ids)), ember.from_numpy(lengths.reshape(-1)))
    t_in = [(torch.from_numpy(i), torch.from_numpy(np.concatenate([[0], np.cumsum(n)[:-1]])))
            for i, n in zip(ids, lengths)]
    return ebc, kjt, t_in, w0


def _pair(opt, torch_opt, lr=0.01):
    import numpy as np
    import torch

    ebc, kjt, t_in, w0 = _ebc_setup(fused_params={"optimizer": opt, "lr": lr, "eps": 1e-8})
    for i in range(T):
        ebc.embedding_bags[f"t{i}"].weight.array[...] = w0[i]
    bags = torch.nn.ModuleList([torch.nn.EmbeddingBag(R, D, mode="sum", sparse=True)
                                for _ in range(T)])
    with torch.no_grad():
        for i, b in enumerate(bags):
            b.weight.copy_(torch.from_numpy(w0[i]))
    topt = torch_opt(bags.parameters(), lr)

    def run_e():
        ebc(kjt).values().sum().backward()

    def run_t():
        topt.zero_grad()
        sum(b(i, o).sum() for b, (i, o) in zip(bags, t_in)).backward()
        topt.step()

    run_e()
    run_t()
    for i in (0, T - 1):
        a = ebc.embedding_bags[f"t{i}"].weight.detach().numpy()
        b = bags[i].weight.detach().numpy()
        err = float(np.abs(a - b).max())
        if err > 1e-5:
            raise AssertionError(f"table {i}: ember and torch differ after one step ({err:.2e})")
    return run_e, run_t


@suite.figure("EBC 26x100kx64 b2048 pf10: fused adam vs SparseAdam", unit="ms", goal=1.0,
              number=1)
def fused_adam():
    import torch

    return _pair("adam", lambda p, lr: torch.optim.SparseAdam(list(p), lr=lr, eps=1e-8))


@suite.figure("EBC 26x100kx64 b2048 pf10: fused adagrad vs Adagrad", unit="ms", goal=1.0,
              number=1)
def fused_adagrad():
    import warnings

    import torch

    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    return _pair("adagrad", lambda p, lr: torch.optim.Adagrad(list(p), lr=lr, eps=1e-8))


@suite.figure("EBC 26x100kx64 b2048 pf10: fwd+bwd, row-sparse grads", unit="ms", goal=1.0,
              number=1)
def forward_backward():
    import torch

    ebc, kjt, t_in, _ = _ebc_setup()
    bags = torch.nn.ModuleList([torch.nn.EmbeddingBag(R, D, mode="sum", sparse=True)
                                for _ in range(T)])

    def run_e():
        ebc.zero_grad()
        ebc(kjt).values().sum().backward()

    def run_t():
        bags.zero_grad()
        sum(b(i, o).sum() for b, (i, o) in zip(bags, t_in)).backward()
    return run_e, run_t


@suite.figure("EBC 26x100kx64 b2048 pf10: fwd only (no grad)", unit="ms", goal=1.0)
def forward_only():
    import torch

    import ember

    ebc, kjt, t_in, _ = _ebc_setup()
    bags = [torch.nn.EmbeddingBag(R, D, mode="sum") for _ in range(T)]

    def run_e():
        with ember.no_grad():
            return ebc(kjt).values()

    def run_t():
        with torch.no_grad():
            return torch.cat([b(i, o) for b, (i, o) in zip(bags, t_in)], 1)
    return run_e, run_t


def _torch_dlrm(torch, model, bottom, top):
    """A torch.nn twin of ember's ``DLRM`` (sum-pooled sparse tables, ReLU MLPs, the dot
    interaction, a linear logit), holding ``model``'s weights."""
    nn = torch.nn

    def mlp(sizes, last_relu=True):
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if last_relu or i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    class TDLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bags = nn.ModuleList([nn.EmbeddingBag(R, D, mode="sum", sparse=True)
                                       for _ in range(T)])
            self.bottom = mlp([13, *bottom])
            self.top = mlp([D + (T + 1) * T // 2, *top], last_relu=False)
            r, c = torch.triu_indices(T + 1, T + 1, 1)
            self.r, self.c = r, c

        def forward(self, dense, t_in):
            x = self.bottom(dense)
            ly = torch.stack([b(i, o) for b, (i, o) in zip(self.bags, t_in)], 1)
            z = torch.cat([x.unsqueeze(1), ly], 1)
            zz = torch.bmm(z, z.transpose(1, 2))[:, self.r, self.c]
            return self.top(torch.cat([x, zz], 1))

    twin = TDLRM()
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for i, b in enumerate(twin.bags):
            b.weight.copy_(torch.from_numpy(
                sd[f"sparse_arch.embedding_bag_collection.embedding_bags.t{i}.weight"]))
        lin = [m for m in twin.bottom if isinstance(m, nn.Linear)]
        for j, m in enumerate(lin):
            m.weight.copy_(torch.from_numpy(sd[f"dense_arch.model._mlp.{j}._linear.weight"]))
            m.bias.copy_(torch.from_numpy(sd[f"dense_arch.model._mlp.{j}._linear.bias"]))
        lin = [m for m in twin.top if isinstance(m, nn.Linear)]
        for j, m in enumerate(lin[:-1]):
            m.weight.copy_(torch.from_numpy(sd[f"over_arch.model.0._mlp.{j}._linear.weight"]))
            m.bias.copy_(torch.from_numpy(sd[f"over_arch.model.0._mlp.{j}._linear.bias"]))
        lin[-1].weight.copy_(torch.from_numpy(sd["over_arch.model.1.weight"]))
        lin[-1].bias.copy_(torch.from_numpy(sd["over_arch.model.1.bias"]))
    return twin


@suite.figure("DLRM step b2048 (26x100kx64 pf10, 13-512-256-64 / 415-512-256-1): adam",
              unit="ms", goal=1.3, number=1)
def dlrm_step():
    """One DLRM training step (forward, BCE-with-logits loss, backward, both optimizers):
    ember's ``DLRM`` with fused-adam tables and ``optim.Adam`` on the MLPs, against a
    torch.nn twin with ``EmbeddingBag(sparse=True)`` + ``SparseAdam`` and ``Adam``; the
    same weights and batch. One step of each is compared (loss, a table) before timing."""
    import torch

    return _dlrm_pair("adam", lambda p: torch.optim.SparseAdam(p, lr=1e-3, eps=1e-8))


@suite.figure("DLRM step b2048 (26x100kx64 pf10, 13-512-256-64 / 415-512-256-1): sgd tables",
              unit="ms", goal=1.3, number=1)
def dlrm_step_sgd():
    """As ``dlrm_step`` with plain SGD on the tables (fused sgd against torch's SGD on the
    sparse gradients): torch's SparseAdam is slow, so this one shows the rest of the step."""
    import torch

    return _dlrm_pair("sgd", lambda p: torch.optim.SGD(p, lr=1e-3))


def _dlrm_pair(fused_opt, torch_sparse_opt):
    import numpy as np
    import torch

    import ember
    from ember.rec.models import DLRM

    bottom, top = [512, 256, D], [512, 256, 1]
    ebc, kjt, t_in, w0 = _ebc_setup(
        fused_params={"optimizer": fused_opt, "lr": 1e-3, "eps": 1e-8})
    for i in range(T):
        ebc.embedding_bags[f"t{i}"].weight.array[...] = w0[i]
    model = DLRM(ebc, 13, bottom, top)
    twin = _torch_dlrm(torch, model, bottom, top)
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((BATCH, 13)).astype(np.float32)
    labels = rng.integers(0, 2, BATCH).astype(np.float32)
    e_dense, e_labels = ember.from_numpy(dense), ember.from_numpy(labels)
    dense_params = [p for n, p in model.named_parameters() if "embedding_bags" not in n]
    e_opt = ember.optim.Adam(dense_params, lr=1e-3)
    e_loss = ember.nn.BCEWithLogitsLoss()
    t_dense, t_labels = torch.from_numpy(dense), torch.from_numpy(labels)
    t_opt = torch.optim.Adam([p for n, p in twin.named_parameters() if "bags" not in n], lr=1e-3)
    t_sparse = torch_sparse_opt(list(twin.bags.parameters()))
    t_loss = torch.nn.BCEWithLogitsLoss()
    out = {}

    def run_e():
        e_opt.zero_grad()
        loss = e_loss(model(e_dense, kjt).squeeze(-1), e_labels)
        loss.backward()
        e_opt.step()
        out["e"] = loss

    def run_t():
        t_opt.zero_grad()
        t_sparse.zero_grad()
        loss = t_loss(twin(t_dense, t_in).squeeze(-1), t_labels)
        loss.backward()
        t_opt.step()
        t_sparse.step()
        out["t"] = loss

    run_e()
    run_t()
    le, lt = float(out["e"].item()), float(out["t"].item())
    a = ebc.embedding_bags["t0"].weight.detach().numpy()
    b = twin.bags[0].weight.detach().numpy()
    # Adam's first step moves a row by about lr (1e-3) whatever the gradient's size, so a
    # gradient near zero that differs in its last bits moves by a visibly different amount
    if abs(le - lt) > 1e-4 * max(1.0, abs(lt)) or float(np.abs(a - b).max()) > 1e-4:
        raise AssertionError(f"DLRM step: ember and torch differ (loss {le} vs {lt}, table "
                             f"{float(np.abs(a - b).max()):.2e})")
    return run_e, run_t


def memory_check(rows=10_000_000, dim=64, batch=2048, pool=POOL):
    """Peak allocation of a fused training step on a ``rows`` x ``dim`` table."""
    import time
    import tracemalloc

    import numpy as np

    import ember
    from ember.rec import EmbeddingBagConfig, FusedEmbeddingBagCollection, KeyedJaggedTensor

    rng = np.random.default_rng(0)
    lengths = rng.poisson(pool, batch).clip(1, None)
    kjt = KeyedJaggedTensor.from_lengths_sync(
        ["f"], ember.from_numpy(rng.integers(0, rows, int(lengths.sum()))),
        ember.from_numpy(lengths))
    table = rows * dim * 4
    tracemalloc.start()
    t0 = time.perf_counter()
    ebc = FusedEmbeddingBagCollection(
        [EmbeddingBagConfig(name="big", num_embeddings=rows, embedding_dim=dim,
                            feature_names=["f"])], {"optimizer": "rowwise_adagrad", "lr": 0.01})
    built, build_peak = tracemalloc.get_traced_memory()
    t1 = time.perf_counter()
    tracemalloc.reset_peak()
    steps = []
    for _ in range(3):
        s = time.perf_counter()
        ebc(kjt).values().sum().backward()
        steps.append(time.perf_counter() - s)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"# rec memory: {rows:,} x {dim} float32 table = {table / 2**30:.2f} GiB, batch "
          f"{batch}, ~{pool} ids per bag, fused rowwise_adagrad")
    print(f"after build (table + {rows * 4 / 2**20:.0f} MiB row-wise state): "
          f"{built / 2**30:.3f} GiB = {built / table:.3f}x the table; peak while building "
          f"(init drawn in blocks) {build_peak / table:.3f}x; built in {t1 - t0:.1f} s")
    print(f"peak during 3 training steps: {peak / 2**30:.3f} GiB = {peak / table:.3f}x the "
          f"table (extra over the built module: {(peak - built) / 2**20:.1f} MiB); "
          f"step {np.median(steps) * 1e3:.1f} ms; goal <= 1.2x: "
          f"{'ok' if max(peak, build_peak) <= 1.2 * table else 'no'}")


if __name__ == "__main__":
    if "--memory" in sys.argv:
        sys.argv.remove("--memory")
        memory_check()
    else:
        suite.main()
