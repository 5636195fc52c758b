"""Collectives on contiguous numpy arrays over an MPI communicator (mpi4py, no pickling).

Every method starts a non-blocking MPI operation and returns its request(s); the caller
(``collectives.Work``) waits. Data-moving operations work on byte views, so any dtype
(float16, bfloat16, bool, ...) travels unchanged; reductions get arrays of a dtype MPI
reduces natively (``REDUCIBLE``), the caller upcasts the others.
"""
from __future__ import annotations

import numpy as np

from .reduce_op import ReduceOp

REDUCIBLE = frozenset(np.dtype(t) for t in (
    np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64))


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


class MPIBackend:
    """Wraps one ``mpi4py.MPI.Comm`` (``comm``); ``rank``/``size`` are within it."""

    name = "mpi"

    def __init__(self, comm):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.MAX: MPI.MAX,
                     ReduceOp.MIN: MPI.MIN, ReduceOp.PRODUCT: MPI.PROD}

    def check(self, a, name):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{name}: the mpi backend takes CPU (numpy) tensors, got an array of "
                            f"type {type(a).__name__}; use backend='nccl' for cuda tensors")

    # -- reductions (in place on ``buf``) -------------------------------------------------
    def allreduce(self, buf, op):
        return [self.comm.Iallreduce(self.MPI.IN_PLACE, buf, self._ops[op])]

    def reduce(self, buf, op, root):
        if self.rank == root:
            return [self.comm.Ireduce(self.MPI.IN_PLACE, buf, self._ops[op], root)]
        return [self.comm.Ireduce(buf, None, self._ops[op], root)]

    def reduce_scatter(self, send, recv, op):
        return [self.comm.Ireduce_scatter_block(send, recv, self._ops[op])]

    # -- data movement ---------------------------------------------------------------------
    def bcast(self, buf, root):
        return [self.comm.Ibcast(_bytes(buf), root)]

    def allgather(self, send, recv):
        return [self.comm.Iallgather(_bytes(send), _bytes(recv))]

    def gather(self, send, recv, root):
        return [self.comm.Igather(_bytes(send), _bytes(recv) if self.rank == root else None, root)]

    def scatter(self, send, recv, root):
        return [self.comm.Iscatter(_bytes(send) if self.rank == root else None, _bytes(recv), root)]

    def alltoallv(self, send, scounts, recv, rcounts):
        """``scounts``/``rcounts``: elements sent to / received from each rank, in order."""
        it = send.dtype.itemsize
        sc = [int(c) * it for c in scounts]
        rc = [int(c) * it for c in rcounts]
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]]).astype(np.int64).tolist()
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]]).astype(np.int64).tolist()
        return [self.comm.Ialltoallv([_bytes(send), sc, sd, self.MPI.BYTE],
                                     [_bytes(recv), rc, rd, self.MPI.BYTE])]

    def send(self, buf, peer, tag):
        return [self.comm.Isend(_bytes(buf), peer, tag)]

    def recv(self, buf, peer, tag):
        """Returns (requests, status); ``peer=None`` receives from any rank."""
        st = self.MPI.Status()
        src = self.MPI.ANY_SOURCE if peer is None else peer
        return [self.comm.Irecv(_bytes(buf), src, tag)], st

    def barrier(self):
        return [self.comm.Ibarrier()]

    # -- small Python objects (pickled; metadata only) -------------------------------------
    def bcast_object(self, obj, root):
        return self.comm.bcast(obj, root)

    def allgather_object(self, obj):
        return self.comm.allgather(obj)

    def wait(self, reqs, statuses=None):
        if statuses is not None and len(reqs) == 1:
            reqs[0].Wait(statuses)
        else:
            self.MPI.Request.Waitall(reqs)

    def test(self, reqs):
        return self.MPI.Request.Testall(reqs)

    def free(self):
        if self.comm != self.MPI.COMM_NULL and self.comm != self.MPI.COMM_WORLD:
            self.comm.Free()
