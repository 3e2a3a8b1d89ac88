"""Point-to-point messages: send/recv/isend/irecv and batch_isend_irecv on MPI_Isend/MPI_Irecv.

A receive into a tensor with more elements than were sent raises (MPI reports the count); with fewer
MPI raises a truncation error. The dtype is not checked across the pair: the bytes are taken as sent.
"""
from ._collectives import check_tensor
from ._mpi import Buffer, mpi
from .distributed_c10d import Work, get_rank, group_root, resolve


def _peer(pg, global_rank, group_rank, sending):
    if global_rank is None and group_rank is None:
        if sending:
            raise ValueError("Must specify global_rank or group_rank")
        return mpi().ANY_SOURCE
    peer = group_root(pg, global_rank, group_rank)
    if peer == pg.rank():
        role = "destination" if sending else "source"
        raise ValueError(f"Invalid {role} rank: {role} rank should not be the same as the rank of the current process.")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    check_tensor(tensor)
    pg = resolve(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, True)
    buf = Buffer(tensor, write=False)
    request = pg.comm.Isend(buf.msg, peer, tag)
    return Work(pg, [request], f"send to rank {pg.ranks[peer]}", keep=(buf,))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    check_tensor(tensor)
    pg = resolve(group, "irecv")
    if pg is None:
        return None
    peer = _peer(pg, src, group_src, False)
    buf = Buffer(tensor)
    status = mpi().Status()
    request = pg.comm.Irecv(buf.msg, peer, tag)

    def finish():
        got = status.Get_count(buf.msg[1])
        if got != tensor.numel():
            raise RuntimeError(f"recv: rank {pg.ranks[status.Get_source()]} sent {got} elements but the receiving "
                               f"tensor of shape {tuple(tensor.shape)} holds {tensor.numel()}")
        buf.finish()
    source = "any rank" if peer == mpi().ANY_SOURCE else f"rank {pg.ranks[peer]}"
    return Work(pg, [request], f"recv from {source}", finish, [tensor], status, keep=(buf,))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into tensor; returns the sender's global rank (-1 when not in the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


class P2POp:
    """torch.distributed.P2POp: one isend or irecv for batch_isend_irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        check_tensor(tensor)
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every isend/irecv of the list; returns their Works (MPI matches them in any order)."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    get_rank()  # raises torch's error when no default group exists
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]

