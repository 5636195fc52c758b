"""Collectives on ember Tensors (numpy buffers over MPI, cupy buffers over NCCL; arrays are
never pickled). Results are written in place, as in ``torch.distributed``; ``async_op=True``
returns a ``Work`` whose ``wait()`` completes the operation. ``src``/``dst`` are global ranks.

    # mpiexec -n 2 python -c "..."
    import ember, ember.distributed as dist
    dist.init_process_group("mpi")
    t = ember.tensor([1.0, 2.0]) * (dist.get_rank() + 1)
    dist.all_reduce(t)                      # both ranks: [3., 6.]
"""
from __future__ import annotations

import time

import numpy as np

from .. import _backend as B
from .._tensor import Tensor
from .group import STATE, group_or_world
from .reduce_op import ReduceOp, as_op


class Work:
    """A started collective: ``wait()`` blocks until it is done and its results are in place
    (raising ``RuntimeError`` after the process group's ``timeout``); ``is_completed()``
    polls."""

    def __init__(self, impl, reqs, finish=None, status=None):
        self._impl, self._reqs, self._finish, self._status = impl, reqs, finish, status
        self._done = False
        self.result_value = None

    def is_completed(self):
        if not self._done and self._impl.test(self._reqs):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        if self._done:
            return True
        timeout = STATE.timeout if timeout is None else timeout
        if timeout is None:
            self._impl.wait(self._reqs, self._status)
        else:
            end = time.monotonic() + timeout
            while not self._impl.test(self._reqs):
                if time.monotonic() > end:
                    raise RuntimeError(f"collective did not complete within {timeout} s "
                                       "(another rank may have died or diverged)")
                time.sleep(1e-4)
        self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            self.result_value = self._finish()

    def result(self):
        return self.result_value


def _run(g, reqs, finish, async_op, status=None):
    w = Work(g.impl, reqs, finish, status)
    if async_op:
        return w
    w.wait()
    return w.result_value


def _data(t, name, g):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be an ember Tensor, got {type(t).__name__}")
    g.impl.check(t.array, name)
    return t.array


def _reduce_dtype(impl, dtype):
    if impl.name == "mpi":
        from .mpi_backend import REDUCIBLE

        return dtype if dtype in REDUCIBLE else np.dtype(np.float32)
    from .nccl_backend import reducible

    return dtype if reducible(dtype) else np.dtype(np.float32)


def _work_buf(t, name, g, reduce_op=None):
    """A contiguous array to operate on for in-place ``t`` and a function writing it back."""
    a = _data(t, name, g)
    xp = B.namespace(a)
    dt = a.dtype
    if reduce_op is not None:
        if reduce_op is ReduceOp.AVG and dt.kind not in "fc" and dt.name != "bfloat16":
            raise ValueError(f"{name}: ReduceOp.AVG needs a floating tensor, got {dt}")
        dt = _reduce_dtype(g.impl, a.dtype)
    if dt == a.dtype and a.flags.c_contiguous:
        return a, lambda: t._bump()
    buf = xp.ascontiguousarray(a).astype(dt, copy=False)

    def back():
        a[...] = buf
        t._bump()
    return buf, back


def _avg(buf, op, n):
    if op is ReduceOp.AVG:
        buf /= n


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the group with ``op``; every rank gets the result in place."""
    g, op = group_or_world(group), as_op(op)
    buf, back = _work_buf(tensor, "all_reduce: tensor", g, op)
    reqs = g.impl.allreduce(buf, op)

    def finish():
        _avg(buf, op, g.size)
        back()
    return _run(g, reqs, finish, async_op)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the group into rank ``dst``'s tensor (others are unchanged)."""
    g, op = group_or_world(group), as_op(op)
    root = g.group_rank(dst, "dst")
    buf, back = _work_buf(tensor, "reduce: tensor", g, op)
    reqs = g.impl.reduce(buf, op, root)

    def finish():
        if g.rank == root:
            _avg(buf, op, g.size)
            back()
    return _run(g, reqs, finish, async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``."""
    g = group_or_world(group)
    buf, back = _work_buf(tensor, "broadcast: tensor", g)
    return _run(g, g.impl.bcast(buf, g.group_rank(src, "src")), back, async_op)


def _same(t, ref, name):
    if tuple(t.shape) != tuple(ref.shape) or t.array.dtype != ref.array.dtype:
        raise ValueError(f"{name}: expected shape {list(ref.shape)} and dtype {ref.array.dtype}, "
                         f"got shape {list(t.shape)} and dtype {t.array.dtype}")


def _check_list(lst, n, ref, name):
    if lst is None or len(lst) != n:
        raise ValueError(f"{name} must be a list of {n} tensors (the group size), got "
                         f"{None if lst is None else len(lst)}")
    for i, t in enumerate(lst):
        _same(t, ref, f"{name}[{i}]")


def _into_list(lst, stacked):
    for i, t in enumerate(lst):
        t.array[...] = stacked[i]
        t._bump()


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[i]`` <- rank i's ``tensor`` (all shapes equal)."""
    g = group_or_world(group)
    a = _data(tensor, "all_gather: tensor", g)
    _check_list(tensor_list, g.size, tensor, "all_gather: tensor_list")
    xp = B.namespace(a)
    send = xp.ascontiguousarray(a)
    recv = xp.empty((g.size,) + a.shape, a.dtype)
    return _run(g, g.impl.allgather(send, recv), lambda: _into_list(tensor_list, recv), async_op)


def _flat_out(out, n, inp, name):
    if out.numel() != n * inp.numel() or out.array.dtype != inp.array.dtype:
        raise ValueError(f"{name}: expected {n} x {inp.numel()} elements of {inp.array.dtype}, "
                         f"got {out.numel()} of {out.array.dtype}")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's ``input_tensor`` (in rank order) into ``output_tensor``, of
    shape ``(world*n, ...)`` or ``(world, n, ...)``."""
    g = group_or_world(group)
    a = _data(input_tensor, "all_gather_into_tensor: input_tensor", g)
    _data(output_tensor, "all_gather_into_tensor: output_tensor", g)
    _flat_out(output_tensor, g.size, input_tensor, "all_gather_into_tensor: output_tensor")
    buf, back = _work_buf(output_tensor, "all_gather_into_tensor: output_tensor", g)
    send = B.namespace(a).ascontiguousarray(a)
    return _run(g, g.impl.allgather(send, buf.reshape((g.size,) + a.shape)), back, async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list`` (ignored elsewhere)."""
    g = group_or_world(group)
    root = g.group_rank(dst, "dst")
    a = _data(tensor, "gather: tensor", g)
    xp = B.namespace(a)
    recv = None
    if g.rank == root:
        _check_list(gather_list, g.size, tensor, "gather: gather_list")
        recv = xp.empty((g.size,) + a.shape, a.dtype)
    reqs = g.impl.gather(xp.ascontiguousarray(a), recv, root)
    return _run(g, reqs, (lambda: _into_list(gather_list, recv)) if recv is not None else None,
                async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """``tensor`` <- ``scatter_list[rank]`` of rank ``src``."""
    g = group_or_world(group)
    root = g.group_rank(src, "src")
    buf, back = _work_buf(tensor, "scatter: tensor", g)
    send = None
    if g.rank == root:
        _check_list(scatter_list, g.size, tensor, "scatter: scatter_list")
        send = B.namespace(buf).stack([t.array for t in scatter_list])
    return _run(g, g.impl.scatter(send, buf, root), back, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` <- the reduction over ranks of their ``input_list[rank]``."""
    g, op = group_or_world(group), as_op(op)
    _check_list(input_list, g.size, output, "reduce_scatter: input_list")
    buf, back = _work_buf(output, "reduce_scatter: output", g, op)
    send = B.namespace(buf).stack([t.array for t in input_list]).astype(buf.dtype, copy=False)
    reqs = g.impl.reduce_scatter(send, buf, op)

    def finish():
        _avg(buf, op, g.size)
        back()
    return _run(g, reqs, finish, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``input`` holds ``world`` equal chunks (first dim); ``output`` <- the reduction of
    chunk ``rank`` over ranks."""
    g, op = group_or_world(group), as_op(op)
    a = _data(input, "reduce_scatter_tensor: input", g)
    _flat_out(input, g.size, output, "reduce_scatter_tensor: input")
    buf, back = _work_buf(output, "reduce_scatter_tensor: output", g, op)
    send = B.namespace(a).ascontiguousarray(a).astype(buf.dtype, copy=False)
    reqs = g.impl.reduce_scatter(send.reshape((g.size,) + buf.shape), buf, op)

    def finish():
        _avg(buf, op, g.size)
        back()
    return _run(g, reqs, finish, async_op)


def _splits(sizes, total, n, name):
    if sizes is None:
        if total % n:
            raise ValueError(f"{name}: first dim {total} is not divisible by the group size {n}; "
                             "pass split sizes")
        return [total // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != total or min(sizes) < 0:
        raise ValueError(f"{name}: expected {n} non-negative sizes summing to {total}, got {sizes}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Rank r sends rows ``input[off_j : off_j + input_split_sizes[j]]`` (first dim) to rank j
    and receives rank j's block into ``output`` at its ``output_split_sizes[j]`` rows.
    Splits default to equal blocks. Shapes: (sum(in_splits), *rest) -> (sum(out_splits), *rest).
    """
    g = group_or_world(group)
    a = _data(input, "all_to_all_single: input", g)
    o = _data(output, "all_to_all_single: output", g)
    if a.shape[1:] != o.shape[1:] or a.dtype != o.dtype:
        raise ValueError(f"all_to_all_single: output shape {list(o.shape)} / dtype {o.dtype} do "
                         f"not match input rows {list(a.shape[1:])} / {a.dtype}")
    n = g.size
    row = int(np.prod(a.shape[1:], dtype=np.int64)) if a.ndim > 1 else 1
    si = _splits(input_split_sizes, a.shape[0] if a.ndim else 1, n, "input_split_sizes")
    so = _splits(output_split_sizes, o.shape[0] if o.ndim else 1, n, "output_split_sizes")
    buf, back = _work_buf(output, "all_to_all_single: output", g)
    send = B.namespace(a).ascontiguousarray(a)
    reqs = g.impl.alltoallv(send, [s * row for s in si], buf, [s * row for s in so])
    return _run(g, reqs, back, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """``output_tensor_list[j]`` <- rank j's ``input_tensor_list[rank]`` (shapes may differ per
    pair, dtypes must agree)."""
    g = group_or_world(group)
    n = g.size
    for nm, lst in (("output_tensor_list", output_tensor_list),
                    ("input_tensor_list", input_tensor_list)):
        if len(lst) != n:
            raise ValueError(f"all_to_all: {nm} must hold {n} tensors, got {len(lst)}")
        for t in lst:
            _data(t, f"all_to_all: {nm}", g)
    dt = input_tensor_list[0].array.dtype
    if any(t.array.dtype != dt for t in list(input_tensor_list) + list(output_tensor_list)):
        raise ValueError("all_to_all: all tensors must share one dtype")
    xp = B.namespace(input_tensor_list[0].array)
    send = xp.concatenate([t.array.reshape(-1) for t in input_tensor_list])
    rc = [t.numel() for t in output_tensor_list]
    recv = xp.empty(sum(rc), dt)
    reqs = g.impl.alltoallv(send, [t.numel() for t in input_tensor_list], recv, rc)

    def finish():
        off = 0
        for t, c in zip(output_tensor_list, rc):
            t.array[...] = recv[off:off + c].reshape(t.array.shape)
            t._bump()
            off += c
    return _run(g, reqs, finish, async_op)


def isend(tensor, dst, group=None, tag=0):
    """Start sending ``tensor`` to global rank ``dst``; returns a Work."""
    g = group_or_world(group)
    a = _data(tensor, "isend: tensor", g)
    send = B.namespace(a).ascontiguousarray(a)
    return Work(g.impl, g.impl.send(send, g.group_rank(dst, "dst"), tag))


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into ``tensor`` from global rank ``src`` (None: any rank, mpi only);
    the Work's ``result()`` is the sender's global rank after ``wait()``."""
    g = group_or_world(group)
    buf, back = _work_buf(tensor, "irecv: tensor", g)
    peer = None if src is None else g.group_rank(src, "src")
    reqs, status = g.impl.recv(buf, peer, tag)

    def finish():
        back()
        return g.ranks[status.Get_source()] if status is not None else src
    return Work(g.impl, reqs, finish, status)


def send(tensor, dst, group=None, tag=0):
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0):
    """Receive into ``tensor``; returns the sender's global rank."""
    w = irecv(tensor, src, group, tag)
    w.wait()
    return w.result()


def barrier(group=None, async_op=False):
    """Block until every rank of the group has reached the barrier."""
    g = group_or_world(group)
    return _run(g, g.impl.barrier(), None, async_op)


def broadcast_object_list(object_list, src=0, group=None):
    """Replace ``object_list``'s items by rank ``src``'s (pickled: small metadata only)."""
    g = group_or_world(group)
    got = g.impl.bcast_object(list(object_list), g.group_rank(src, "src"))
    if len(got) != len(object_list):
        raise ValueError(f"broadcast_object_list: src sent {len(got)} objects, this rank's list "
                         f"holds {len(object_list)}")
    object_list[:] = got


def all_gather_object(object_list, obj, group=None):
    """``object_list[i]`` <- rank i's ``obj`` (pickled: small metadata only)."""
    g = group_or_world(group)
    if len(object_list) != g.size:
        raise ValueError(f"all_gather_object: object_list must have {g.size} entries, "
                         f"got {len(object_list)}")
    object_list[:] = g.impl.allgather_object(obj)
