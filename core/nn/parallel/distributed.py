"""``DistributedDataParallel``: data-parallel training over an ``ember.distributed`` group."""
from __future__ import annotations

import contextlib

from ...autograd.grad_mode import STATE as GRAD
from ..modules.module import Module
from .reducer import Reducer


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``loss.backward()`` leaves every rank with the gradients
    averaged over all ranks (each rank feeds its own share of the batch).

    At wrap time the ranks check that their parameters agree in names, shapes and dtypes (a
    clear error otherwise), then rank 0's parameters and buffers are broadcast. Gradients are
    all-reduced in buckets of ``bucket_cap_mb`` as soon as backward has produced a bucket
    (see ``reducer.py``), overlapping communication with the rest of backward.
    ``broadcast_buffers``: rank 0's buffers (e.g. BatchNorm statistics) are broadcast before
    every forward. ``find_unused_parameters``: allow parameters that do not reach the output
    (their gradient stays as it is when no rank used them). ``static_graph``: the graph is the
    same every iteration, so the per-forward graph walk runs once. ``gradient_as_bucket_view``:
    ``p.grad`` becomes a view of the bucket (saves a copy per step). ``no_sync()``: a context
    in which backward only accumulates locally (gradient accumulation); the next backward
    outside it reduces the accumulated sum. ``device_ids``/``output_device``/``dim`` are
    accepted for PyTorch compatibility (one device per process; inputs are not moved).

    Shapes: forward is ``module``'s forward, unchanged.

        # mpiexec -n 2 python train.py
        import ember, ember.distributed as dist
        from ember.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("mpi")
        model = DDP(ember.nn.Linear(4, 2))
        model(ember.randn(8, 4)).sum().backward()   # grads averaged over both ranks
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, gradient_as_bucket_view=False,
                 static_graph=False):
        super().__init__()
        import ember.distributed as dist
        from ...distributed.group import group_or_world

        if not isinstance(module, Module):
            raise TypeError(f"module must be an ember.nn.Module, got {type(module).__name__}")
        if bucket_cap_mb is None or bucket_cap_mb <= 0:
            raise ValueError(f"bucket_cap_mb must be > 0, got {bucket_cap_mb}")
        self.module = module
        self.process_group = group_or_world(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._check_same_parameters(dist, named)
        self._sync_state(dist, [p for _, p in module.named_parameters()])
        self._sync_state(dist, [b for _, b in module.named_buffers()])
        sparse_ids = {id(m.weight) for m in module.modules()
                      if getattr(m, "sparse", False) is True and hasattr(m, "weight")}
        self.reducer = Reducer(named, self.process_group, bucket_cap_mb, find_unused_parameters,
                               gradient_as_bucket_view, static_graph, sparse_ids)

    def _check_same_parameters(self, dist, named):
        g = self.process_group
        mine = [(n, tuple(p.shape), str(p.array.dtype)) for n, p in named]
        every = [None] * g.size
        dist.all_gather_object(every, mine, group=g)
        for r, theirs in enumerate(every):
            if theirs != mine:
                diff = next(((a, b) for a, b in zip(mine, theirs) if a != b),
                            (len(mine), len(theirs)))
                raise RuntimeError(
                    f"DistributedDataParallel: parameters differ between rank {g.ranks[g.rank]} "
                    f"and rank {g.ranks[r]}: {diff[0]} vs {diff[1]} (every rank must build the "
                    "same model)")

    def _sync_state(self, dist, tensors):
        g = self.process_group
        if g.size == 1:
            return
        src = g.ranks[0]
        for t in tensors:
            dist.broadcast(t, src=src, group=g)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate gradients locally."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *args, **kwargs):
        r = self.reducer
        r.check_finished()
        if self.broadcast_buffers and self.process_group.size > 1:
            bufs = [b for _, b in self.module.named_buffers()]
            if bufs:
                import ember.distributed as dist

                self._sync_state(dist, bufs)
        out = self.module(*args, **kwargs)
        if GRAD.enabled and self.require_backward_grad_sync:
            r.prepare(out)
        else:
            r.disarm()
        return out

    def train(self, mode=True):
        super().train(mode)
        return self
