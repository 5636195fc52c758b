"""Collectives on contiguous cupy arrays through NCCL (``cupy.cuda.nccl``).

Operations are enqueued on cupy's current stream and return a recorded CUDA event; waiting
synchronizes it. Point-to-point patterns (gather, scatter, all-to-all) are grouped NCCL
send/recv calls. Small-object collectives and the bootstrap (sharing the NCCL unique id) use
the MPI communicator of the same ranks when there is one (world size 1 needs none).
"""
from __future__ import annotations

from .reduce_op import ReduceOp


def _nccl():
    from cupy.cuda import nccl

    return nccl


def reducible(dtype):
    return dtype.name in ("float16", "float32", "float64", "int8", "uint8", "int32", "uint32",
                          "int64", "uint64")


class NCCLBackend:
    """One NCCL communicator over ``size`` ranks; ``mpi`` (an MPIBackend or None) carries
    Python objects and the bootstrap."""

    name = "nccl"

    def __init__(self, rank, size, mpi=None):
        import cupy

        nccl = _nccl()
        self.cupy = cupy
        self.nccl = nccl
        self.mpi = mpi
        self.rank, self.size = rank, size
        uid = nccl.get_unique_id() if rank == 0 else None
        if size > 1:
            if mpi is None:
                raise RuntimeError("nccl with world size > 1 needs MPI to share its unique id "
                                   "(launch with mpiexec)")
            uid = mpi.bcast_object(uid, 0)
        self.comm = nccl.NcclCommunicator(size, uid, rank)
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.AVG: nccl.NCCL_SUM,
                     ReduceOp.MAX: nccl.NCCL_MAX, ReduceOp.MIN: nccl.NCCL_MIN,
                     ReduceOp.PRODUCT: nccl.NCCL_PROD}
        self._types = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                       "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8,
                       "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
                       "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64,
                       "uint64": nccl.NCCL_UINT64}

    def check(self, a, name):
        if not isinstance(a, self.cupy.ndarray):
            raise TypeError(f"{name}: the nccl backend takes cuda (cupy) tensors, got "
                            f"{type(a).__name__}; use backend='mpi' for CPU tensors")

    def _stream(self):
        return self.cupy.cuda.get_current_stream()

    def _done(self):
        ev = self.cupy.cuda.Event(block=False, disable_timing=True)
        ev.record(self._stream())
        return [ev]

    def _bytes(self, a):
        return a.reshape(-1).view(self.cupy.uint8)

    # -- reductions --------------------------------------------------------------------------
    def allreduce(self, buf, op):
        self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._types[buf.dtype.name],
                            self._ops[op], self._stream().ptr)
        return self._done()

    def reduce(self, buf, op, root):
        self.comm.reduce(buf.data.ptr, buf.data.ptr, buf.size, self._types[buf.dtype.name],
                         self._ops[op], root, self._stream().ptr)
        return self._done()

    def reduce_scatter(self, send, recv, op):
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size,
                                self._types[recv.dtype.name], self._ops[op], self._stream().ptr)
        return self._done()

    # -- data movement ------------------------------------------------------------------------
    def bcast(self, buf, root):
        b = self._bytes(buf)
        self.comm.bcast(b.data.ptr, b.size, self.nccl.NCCL_UINT8, root, self._stream().ptr)
        return self._done()

    def allgather(self, send, recv):
        s, r = self._bytes(send), self._bytes(recv)
        self.comm.allGather(s.data.ptr, r.data.ptr, s.size, self.nccl.NCCL_UINT8,
                            self._stream().ptr)
        return self._done()

    def _p2p(self, sends, recvs):
        """Grouped point-to-point: ``sends``/``recvs`` are lists of (byte array, peer).

        Each call runs on its own stream (after the work already queued on the current one),
        so an ``isend`` followed by an ``irecv`` cannot serialize the send before the recv
        (which would deadlock a ring: every rank's send waiting for a recv queued behind it).
        """
        cur = self._stream()
        side = self.cupy.cuda.Stream(non_blocking=True)
        side.wait_event(cur.record())
        u8 = self.nccl.NCCL_UINT8
        self.nccl.groupStart()
        try:
            for b, peer in sends:
                if b.size:
                    self.comm.send(b.data.ptr, b.size, u8, peer, side.ptr)
            for b, peer in recvs:
                if b.size:
                    self.comm.recv(b.data.ptr, b.size, u8, peer, side.ptr)
        finally:
            self.nccl.groupEnd()
        ev = self.cupy.cuda.Event(block=False, disable_timing=True)
        ev.record(side)
        cur.wait_event(ev)  # later work on the current stream sees the received data
        return [ev, side]

    def gather(self, send, recv, root):
        s = self._bytes(send)
        if self.rank != root:
            return self._p2p([(s, root)], [])
        r = self._bytes(recv).reshape(self.size, -1)
        r[root] = s
        return self._p2p([], [(r[i], i) for i in range(self.size) if i != root])

    def scatter(self, send, recv, root):
        r = self._bytes(recv)
        if self.rank != root:
            return self._p2p([], [(r, root)])
        s = self._bytes(send).reshape(self.size, -1)
        r[...] = s[root]
        return self._p2p([(s[i], i) for i in range(self.size) if i != root], [])

    def alltoallv(self, send, scounts, recv, rcounts):
        it = send.dtype.itemsize
        s, r = self._bytes(send), self._bytes(recv)
        sends, recvs, so, ro = [], [], 0, 0
        for peer in range(self.size):
            sn, rn = int(scounts[peer]) * it, int(rcounts[peer]) * it
            if peer == self.rank:
                r[ro:ro + rn] = s[so:so + sn]
            else:
                sends.append((s[so:so + sn], peer))
                recvs.append((r[ro:ro + rn], peer))
            so += sn
            ro += rn
        return self._p2p(sends, recvs)

    def send(self, buf, peer, tag):
        return self._p2p([(self._bytes(buf), peer)], [])

    def recv(self, buf, peer, tag):
        if peer is None:
            raise ValueError("recv: the nccl backend needs an explicit src rank")
        return self._p2p([], [(self._bytes(buf), peer)]), None

    def barrier(self):
        if self.mpi is not None:
            return self.mpi.barrier()
        one = self.cupy.ones(1, self.cupy.float32)
        return self.allreduce(one, ReduceOp.SUM)

    # -- small Python objects ------------------------------------------------------------------
    def bcast_object(self, obj, root):
        return obj if self.mpi is None else self.mpi.bcast_object(obj, root)

    def allgather_object(self, obj):
        return [obj] if self.mpi is None else self.mpi.allgather_object(obj)

    def wait(self, reqs, statuses=None):
        for r in reqs:
            if isinstance(r, self.cupy.cuda.Event):
                r.synchronize()
            elif not isinstance(r, self.cupy.cuda.Stream):  # an MPI request (barrier)
                r.Wait()

    def test(self, reqs):
        ok = True
        for r in reqs:
            if isinstance(r, self.cupy.cuda.Event):
                ok = ok and r.done
            elif not isinstance(r, self.cupy.cuda.Stream):
                ok = ok and r.Test()
        return ok

    def abort(self):
        try:
            self.comm.abort()
        except Exception:
            pass

    def free(self):
        self.comm.destroy()
        if self.mpi is not None:
            self.mpi.free()
