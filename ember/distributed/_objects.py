"""Object collectives: any picklable object, pickled and sent through MPI as bytes.

Unpickling runs whatever the sender's pickle says, as in torch: only exchange objects with ranks you
trust. The weights_only safety of ember.load does not apply here.
"""
import pickle

import numpy as np

from . import _mpi
from ._check import agree
from ._mpi import mpi
from .distributed_c10d import group_root, resolve

_SIZES_TAG = 3  # send_object_list's two messages, on the group's private communicator
_DATA_TAG = 4


def _dumps(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _loads(arr):
    return pickle.loads(arr.tobytes())


def _wait(pg, request, what):
    _mpi.wait([request], pg.deadline(), what)


def _sizes(pg, payloads_size):
    """Every rank's payload size (bytes), allgathered."""
    mine = np.array([payloads_size], dtype=np.int64)
    sizes = np.empty(pg.size(), dtype=np.int64)
    _wait(pg, pg.comm.Iallgather([mine, mpi().INT64_T], [sizes, mpi().INT64_T]), "object sizes")
    return sizes


def _offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace object_list's items on every rank with src's (pickled on src, broadcast as bytes)."""
    pg = resolve(group, "broadcast_object_list")
    if pg is None:
        return
    root = group_root(pg, src, group_src)
    agree(pg, "broadcast_object_list", shape=(len(object_list),), root=root)
    MPI = mpi()
    is_root = pg.rank() == root
    payloads = [_dumps(o) for o in object_list] if is_root else []
    sizes = np.array([p.size for p in payloads] if is_root else [0] * len(object_list), dtype=np.int64)
    _wait(pg, pg.comm.Ibcast([sizes, MPI.INT64_T], root), "broadcast_object_list (sizes)")
    data = np.concatenate(payloads) if is_root and payloads else np.empty(int(sizes.sum()), dtype=np.uint8)
    _wait(pg, pg.comm.Ibcast([data, MPI.BYTE], root), "broadcast_object_list")
    if not is_root:
        for i, (start, n) in enumerate(zip(_offsets(sizes), sizes)):
            object_list[i] = _loads(data[start:start + n])


def all_gather_object(object_list, obj, group=None):
    """object_list[i] = rank i's obj."""
    pg = resolve(group, "all_gather_object")
    if pg is None:
        return
    error = None
    if len(object_list) != pg.size():
        error = RuntimeError(f"all_gather_object: object_list has {len(object_list)} items, expected the group "
                             f"size {pg.size()}")
    agree(pg, "all_gather_object", error=error)
    payload = _dumps(obj)
    sizes = _sizes(pg, payload.size)
    data = np.empty(int(sizes.sum()), dtype=np.uint8)
    request = pg.comm.Iallgatherv([payload, mpi().BYTE], [data, (sizes, _offsets(sizes)), mpi().BYTE])
    _wait(pg, request, "all_gather_object")
    for i, (start, n) in enumerate(zip(_offsets(sizes), sizes)):
        object_list[i] = _loads(data[start:start + n])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """On dst, object_gather_list[i] = rank i's obj."""
    pg = resolve(group, "gather_object")
    if pg is None:
        return
    root = group_root(pg, dst, group_dst)
    is_root = pg.rank() == root
    error = None
    if is_root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        error = ValueError(f"gather_object: object_gather_list must be a list of the group size {pg.size()} "
                           f"on the destination rank")
    agree(pg, "gather_object", root=root, error=error)
    payload = _dumps(obj)
    sizes = _sizes(pg, payload.size)
    if is_root:
        data = np.empty(int(sizes.sum()), dtype=np.uint8)
        recv = [data, (sizes, _offsets(sizes)), mpi().BYTE]
    else:
        recv = None
    _wait(pg, pg.comm.Igatherv([payload, mpi().BYTE], recv, root), "gather_object")
    if is_root:
        for i, (start, n) in enumerate(zip(_offsets(sizes), sizes)):
            object_gather_list[i] = _loads(data[start:start + n])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """scatter_object_output_list[0] = src's scatter_object_input_list[rank]."""
    pg = resolve(group, "scatter_object_list")
    if pg is None:
        return
    root = group_root(pg, src, group_src)
    is_root = pg.rank() == root
    error = None
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        error = ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    elif is_root and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        error = ValueError(f"scatter_object_list: scatter_object_input_list must hold {pg.size()} objects on "
                           f"the source rank")
    agree(pg, "scatter_object_list", root=root, error=error)
    MPI = mpi()
    payloads = [_dumps(o) for o in scatter_object_input_list] if is_root else []
    sizes = np.array([p.size for p in payloads] if is_root else [0] * pg.size(), dtype=np.int64)
    _wait(pg, pg.comm.Ibcast([sizes, MPI.INT64_T], root), "scatter_object_list (sizes)")
    mine = np.empty(int(sizes[pg.rank()]), dtype=np.uint8)
    send = [np.concatenate(payloads), (sizes, _offsets(sizes)), MPI.BYTE] if is_root else None
    _wait(pg, pg.comm.Iscatterv(send, [mine, MPI.BYTE], root), "scatter_object_list")
    scatter_object_output_list[0] = _loads(mine)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch=False):
    """Send picklable objects to dst (sizes, then bytes), who receives them with recv_object_list.

    They travel on the group's private communicator, so they never match a user's send/recv of tensors."""
    pg = resolve(group, "send_object_list")
    if pg is None:
        return
    peer = group_root(pg, dst, group_dst)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of the "
                         "current process.")
    payloads = [_dumps(o) for o in object_list]
    sizes = np.array([p.size for p in payloads], dtype=np.int64)
    data = np.concatenate(payloads) if payloads else np.empty(0, dtype=np.uint8)
    requests = [pg.ctrl.Isend([sizes, mpi().INT64_T], peer, _SIZES_TAG),
                pg.ctrl.Isend([data, mpi().BYTE], peer, _DATA_TAG)]
    _mpi.wait(requests, pg.deadline(), f"send_object_list to rank {pg.ranks[peer]}")


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch=False):
    """Fill object_list with the objects a send_object_list sent; returns the sender's global rank."""
    pg = resolve(group, "recv_object_list")
    if pg is None:
        return -1
    MPI = mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else group_root(pg, src, group_src)
    sizes = np.empty(len(object_list), dtype=np.int64)
    status = MPI.Status()
    _mpi.wait([pg.ctrl.Irecv([sizes, MPI.INT64_T], peer, _SIZES_TAG)], pg.deadline(), "recv_object_list", status)
    if status.Get_count(MPI.INT64_T) != len(object_list):
        raise RuntimeError(f"recv_object_list: rank {pg.ranks[status.Get_source()]} sent "
                           f"{status.Get_count(MPI.INT64_T)} objects into a list of {len(object_list)}")
    sender = status.Get_source()
    data = np.empty(int(sizes.sum()), dtype=np.uint8)
    _mpi.wait([pg.ctrl.Irecv([data, MPI.BYTE], sender, _DATA_TAG)], pg.deadline(), "recv_object_list")
    for i, (start, n) in enumerate(zip(_offsets(sizes), sizes)):
        object_list[i] = _loads(data[start:start + n])
    return pg.ranks[sender]
