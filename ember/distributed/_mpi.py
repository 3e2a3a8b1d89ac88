"""The seam to the transport: MPI (mpi4py, imported lazily) or, for processes no MPI launcher started,
ember's TCP transport, which speaks the same subset of mpi4py's API (Note [TCP transport] in _tcp.py);
ember dtype -> datatype and ReduceOp -> reduction op tables, message buffers made from tensors, and the
deadline-bounded wait every collective ends in.

Note [Buffers to MPI]: a contiguous tensor's ndarray is handed to MPI as it is (buffer protocol, no
copy); a strided one is copied into a contiguous array and copied back when the operation completes.
float16 and bfloat16 have no MPI datatype: they travel as raw 16-bit words (uint16 views, no copy)
wherever nothing is computed on them, and are reduced in float32 (one widening copy each way, one
rounding at the end) rather than through a Python-level user-defined MPI.Op, which would run the
reduction in the interpreter on every hop.
"""
import os
import time

import numpy as np

from .. import _dtype as D

EXTRA_HINT = "ember.distributed needs MPI: pip install 'ember[distributed]' (installs mpi4py and mpich)"

_MPI = None


def mpi():
    """The transport: the TCP one while a TCP group exists (use()), else mpi4py's MPI module, imported (and MPI
    initialized) on first use; a clear error naming the extra."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(f"{EXTRA_HINT} ({e})") from e
        _MPI = MPI
    return _MPI


def use(transport):
    """Make mpi() return `transport` (the _tcp module), or go back to MPI with None."""
    global _MPI
    _MPI = transport
    _DATATYPES.clear()
    _OPS.clear()


def on_tcp():
    """Whether the groups of this process run on the TCP transport."""
    return _MPI is not None and _MPI.__name__.endswith("._tcp")


# ---- datatypes -------------------------------------------------------------------------------------
_HALF = (D.float16, D.bfloat16)


_DATATYPES = {}


def datatype(dtype):
    """The MPI datatype of an ember dtype's elements (16-bit floats as raw uint16 words)."""
    if not _DATATYPES:
        MPI = mpi()
        _DATATYPES.update({D.bool: MPI.C_BOOL, D.uint8: MPI.UINT8_T, D.int8: MPI.INT8_T, D.int16: MPI.INT16_T,
                           D.int32: MPI.INT32_T, D.int64: MPI.INT64_T, D.float16: MPI.UINT16_T,
                           D.bfloat16: MPI.UINT16_T, D.float32: MPI.FLOAT, D.float64: MPI.DOUBLE,
                           D.complex64: MPI.C_FLOAT_COMPLEX, D.complex128: MPI.C_DOUBLE_COMPLEX})
    return _DATATYPES[dtype]


def flat(arr, dtype):
    """A C-contiguous array of an ember dtype as a 1-d message buffer MPI can read (a view, never a copy)."""
    arr = arr.reshape(-1)
    if dtype in _HALF:
        return arr.view(np.uint16)  # ml_dtypes' bfloat16 does not export a buffer format MPI accepts
    return arr


class Buffer:
    """A tensor as an MPI message: `msg` goes to mpi4py; finish() writes results back into the tensor.

    reduce=True gives 16-bit floats a float32 working copy (Note [Buffers to MPI]); write=False marks a
    buffer MPI only reads (a send), so nothing is copied back."""
    __slots__ = ("tensor", "work", "msg", "copied", "write")

    def __init__(self, tensor, reduce=False, write=True):
        arr = tensor._data
        self.tensor = tensor
        self.write = write
        widen = reduce and tensor._dtype in _HALF
        if widen:
            self.work = arr.astype(np.float32).reshape(-1)
            self.msg = [self.work, mpi().FLOAT]
            self.copied = True
            return
        self.copied = not arr.flags.c_contiguous
        self.work = np.ascontiguousarray(arr) if self.copied else arr
        self.msg = [flat(self.work, tensor._dtype), datatype(tensor._dtype)]

    def finish(self):
        """Copy a working copy back into the tensor (strided or widened) and bump its version."""
        if not self.write:
            return
        t = self.tensor
        if self.copied:
            t._data[...] = self.work.reshape(t._data.shape)
        t._version_counter.value += 1


def empty_like_flat(dtype, numel):
    """A fresh contiguous 1-d array for `numel` elements of an ember dtype and its MPI message."""
    arr = np.empty(numel, dtype=dtype.np)
    return arr, [flat(arr, dtype), datatype(dtype)]


# ---- reduction ops ---------------------------------------------------------------------------------
_OPS = {}


def reduce_op(op, dtype, opname):
    """The MPI.Op for a ReduceOp on a dtype (AVG reduces with SUM), raising torch's errors for bad pairs."""
    name = op.name
    if dtype.is_complex and name not in ("SUM", "AVG"):
        raise ValueError(f"{opname} does not support {op} on complex tensors")
    if name in ("BAND", "BOR", "BXOR") and (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"Cannot use ReduceOp.{name} with non-integral dtype")
    if name == "AVG" and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_torch_name(dtype)}")
    if name == "PREMUL_SUM":
        raise ValueError("ReduceOp.PREMUL_SUM is NCCL-only in torch and not supported by ember.distributed")
    if not _OPS:
        MPI = mpi()
        _OPS["number"] = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
                          "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}
        # MPI reduces C_BOOL only with logical ops; torch's bool SUM/MAX is "any", PRODUCT/MIN "all"
        _OPS["bool"] = {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND,
                        "BAND": MPI.LAND, "BXOR": MPI.LXOR}
    return _OPS["bool" if dtype is D.bool else "number"][name]


def _torch_name(dtype):
    return {D.uint8: "Byte", D.int8: "Char", D.int16: "Short", D.int32: "Int", D.int64: "Long",
            D.bool: "Bool"}.get(dtype, dtype.name)


# ---- waiting -----------------------------------------------------------------------------------------
_SPINS = 20           # busy tests first: a fast collective returns without giving up the core
_YIELDING = 5e-3      # then tests between sleep(0)s (a yield) for this long: short waits stay short
_MAX_NAP = 1e-3       # then sleeps growing to this: long waits leave the cores to the other ranks


def wait(requests, deadline, what, status=None):
    """Drive MPI requests to completion, raising DistBackendError once `deadline` (monotonic) passes.

    Polling a non-blocking request instead of a blocking MPI call is what lets a collective give up
    after the process group's timeout when a peer hangs (a peer that dies is caught by mpiexec). The TCP
    transport's requests are waited on without polling (their progress runs on its own threads)."""
    MPI = mpi()
    if on_tcp():
        if not MPI.wait_all(requests, deadline, status):
            _timed_out(what)
        return
    test = MPI.Request.Testall
    if status is not None:  # one receive whose source and size the caller wants to read
        def test(reqs):
            return reqs[0].Test(status)
    for _ in range(_SPINS):
        if test(requests):
            return
    start = time.monotonic()
    nap = 0.0
    while not test(requests):
        now = time.monotonic()
        if now > deadline:
            _timed_out(what)
        if now - start > _YIELDING:
            nap = min(max(nap * 2, 5e-5), _MAX_NAP)
        time.sleep(nap)


def _timed_out(what):
    from .distributed_c10d import DistBackendError
    raise DistBackendError(f"[rank{_world_rank()}] {what} timed out: the other ranks did not take part "
                           f"within the process group's timeout")


def _world_rank():
    return mpi().COMM_WORLD.Get_rank() if _MPI is not None else int(os.environ.get("RANK", 0))
