"""``TrainPipelineSparseDist``: training steps of a sharded model in which the next batch's
input distribution overlaps the current batch's forward and backward.

    pipeline = TrainPipelineSparseDist(model, optimizer, device=ember.device("cpu"))
    it = iter(dataloader)
    while True:
        try:
            out = pipeline.progress(it)   # one step; raises StopIteration at the end
        except StopIteration:
            break

``model(batch)`` must return ``(losses, output)`` (as torchrec's train modules do); the
step is ``optimizer.zero_grad()``, ``losses.sum().backward()``, ``optimizer.step()`` and
``progress`` returns ``output``. The results equal those plain steps exactly.

How it overlaps: with **non-blocking collectives started in program order on the main
thread**, not with a thread. MPI needs the collectives of one communicator started in the
same order on every rank; a thread starting the next batch's all_to_alls while the main
thread runs the sharded modules' own collectives would start them in a racy order. So one
step of ``progress`` is, on every rank:

    1. take batch i+1 from the iterator; start its lengths all_to_all (each sharded module)
    2. forward of batch i (its input distribution finished in the previous step)
    3. start batch i+1's values all_to_all (its lengths have arrived meanwhile)
    4. backward and optimizer step of batch i
    5. finish batch i+1's input distribution

MPI moves the next batch's messages whenever a rank is inside an MPI call of 2-4 (the
output all_to_alls, DDP's reductions, the waits); the ids' bucketization and the
messages' packing for batch i+1 run before batch i's forward.

Which KeyedJaggedTensor of a batch feeds which sharded module is learned on the first
batch: it runs unpipelined, each sharded module notes the object it was called with and
the pipeline finds it in the batch (an attribute, key or item path). A module whose input
is not found in the batch (the model builds it) simply runs its input distribution inside
its forward.
"""
from __future__ import annotations

import warnings

import ember

from .sharded_base import ShardedCollection


def _find(obj, target, depth=3):
    """A path (list of ("attr"|"item", key)) from ``obj`` to the object ``target``."""
    if obj is target:
        return []
    if depth == 0:
        return None
    if isinstance(obj, dict):
        items = [("item", k, v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        items = [("item", i, v) for i, v in enumerate(obj)]
    elif hasattr(obj, "__dict__") and not isinstance(obj, ember.Tensor):
        items = [("attr", k, v) for k, v in vars(obj).items()]
    else:
        return None
    for kind, k, v in items:
        p = _find(v, target, depth - 1)
        if p is not None:
            return [(kind, k)] + p
    return None


def _follow(obj, path):
    for kind, k in path:
        obj = getattr(obj, k) if kind == "attr" else obj[k]
    return obj


def _to_device(batch, device):
    if device is None:
        return batch
    if hasattr(batch, "to") and not isinstance(batch, type):
        return batch.to(device)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    return batch


class TrainPipelineSparseDist:
    """Pipelined training of a model holding sharded collections (usually a
    ``DistributedModelParallel``): see the module docstring. ``optimizer`` steps the dense
    parameters (the tables train in backward); ``device`` is where batches are moved
    (``batch.to(device)``; None leaves them). ``execute_all_batches`` is accepted for
    torchrec code (every batch is always trained on)."""

    def __init__(self, model, optimizer, device=None, execute_all_batches=True):
        self._model, self._optimizer, self._device = model, optimizer, device
        self._sharded = [m for m in model.modules() if isinstance(m, ShardedCollection)]
        self._paths = None          # per sharded module: its KJT's path in a batch
        self._cur = None            # (batch, [pending or None per module]) to train next
        self._seen = {}
        self._hooks = []
        self._done = False

    # -- the first batch: learn where each module's KJT sits in a batch -------------------
    def _record_inputs(self):
        def hook(mod, args):
            self._seen[id(mod)] = args[0] if args else None
        self._hooks = [m.register_forward_pre_hook(hook) for m in self._sharded]

    def _learn_paths(self, batch):
        for h in self._hooks:
            h.remove()
        self._hooks = []
        paths = []
        for m in self._sharded:
            seen = self._seen.get(id(m))
            p = None if seen is None else _find(batch, seen)
            if p is None:
                warnings.warn("TrainPipelineSparseDist: the input of a sharded collection is "
                              "not part of the batch; its input distribution is not "
                              "pipelined", stacklevel=3)
            paths.append(p)
        self._seen = {}
        self._paths = paths

    def _start(self, batch):
        """Start the input distribution of ``batch`` for every module with a known path."""
        pend = []
        for m, p in zip(self._sharded, self._paths):
            if p is None:
                pend.append(None)
                continue
            kjt = _follow(batch, p)
            pending = m.input_dist(kjt)
            m.prefetch(kjt, pending)
            pend.append(pending)
        return pend

    # -- one step --------------------------------------------------------------------------
    def progress(self, dataloader_iter):
        """Train on the next batch and return the model's output for it; StopIteration
        when the iterator (and the pipeline) is exhausted."""
        if self._cur is None:
            if self._done:
                raise StopIteration
            batch = _to_device(next(dataloader_iter), self._device)
            self._cur = (batch, None)
        batch, _ = self._cur
        nxt = self._next(dataloader_iter)
        pend = None
        if self._paths is not None and nxt is not None:
            pend = self._start(nxt)                                    # 1
        first = self._paths is None
        if first:
            self._record_inputs()
        training = self._model.training
        if training:
            self._optimizer.zero_grad()
        losses, output = self._model(batch)                            # 2
        if first:
            self._learn_paths(batch)
            if nxt is not None:
                pend = self._start(nxt)
        for p in pend or ():
            if p is not None:
                p.advance()                                            # 3
        if training:
            loss = losses if losses.ndim == 0 else losses.sum()
            loss.backward()                                            # 4
            self._optimizer.step()
        for p in pend or ():
            if p is not None:
                p.wait()                                               # 5
        self._cur = None if nxt is None else (nxt, pend)
        self._done = nxt is None
        return output

    def _next(self, it):
        try:
            return _to_device(next(it), self._device)
        except StopIteration:
            return None
