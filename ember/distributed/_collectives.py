"""Tensor collectives on MPI's non-blocking calls, in place as torch's: all_reduce, broadcast, reduce,
all_gather(_into_tensor), gather, scatter, reduce_scatter(_tensor), all_to_all(_single).

Each one checks its own arguments, agrees with the other ranks (Note [Collective agreement]), starts
one non-blocking MPI call on the tensors' buffers (Note [Buffers to MPI]) and returns a Work for
async_op=True or waits for it. The list forms (all_gather, gather, scatter, reduce_scatter, all_to_all)
pack or unpack through one contiguous array, a copy; the *_tensor and *_single forms copy nothing.
"""
import numpy as np

from .._tensor import Tensor
from . import _mpi
from ._check import agree
from ._mpi import Buffer, empty_like_flat, mpi
from .distributed_c10d import ReduceOp, as_red_op, group_root, resolve, run


def check_tensor(t, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")


def check_tensor_list(ts, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(ts)} instead.")


def _match_list(opname, ts, like, size, what):
    """A list argument must hold `size` tensors of `like`'s shape and dtype (torch's RuntimeError)."""
    if len(ts) != size:
        raise RuntimeError(f"{opname}: invalid {what} list (expected length {size}, got {len(ts)})")
    for i, t in enumerate(ts):
        if t._dtype is not like._dtype:
            raise RuntimeError(f"{opname}: invalid tensor type at index {i} (expected {like._dtype}, got {t._dtype})")
        if t.shape != like.shape:
            raise RuntimeError(f"{opname}: invalid tensor size at index {i} (expected {tuple(like.shape)}, "
                               f"got {tuple(t.shape)})")


def _match(opname, out, inp, factor, out_name, in_name):
    """out must hold factor * inp's elements, of the same dtype (the *_tensor forms)."""
    if out._dtype is not inp._dtype:
        raise RuntimeError(f"{opname}: {out_name} dtype {out._dtype} does not match {in_name} dtype {inp._dtype}")
    if out.numel() * factor[0] != inp.numel() * factor[1]:
        raise RuntimeError(f"{opname}: {out_name} of shape {tuple(out.shape)} must hold {factor[1]}x the elements "
                           f"of {in_name} of shape {tuple(inp.shape)} divided by {factor[0]}")


def _attempt(check, *args):
    """Run an argument check, returning its exception instead of raising it (agree() raises it on every rank)."""
    try:
        check(*args)
    except (RuntimeError, ValueError) as e:
        return e
    return None


def _reduction(op, dtype, opname):
    """(error, MPI op, RedOpType) for a reduce op on a dtype: the error raised after agreement."""
    red = as_red_op(op)
    try:
        return None, _mpi.reduce_op(red, dtype, opname), red
    except (RuntimeError, ValueError) as e:
        return e, None, red


def _packed(tensors, reduce=False):
    """The tensors' elements in one contiguous 1-d array and its MPI message (the list forms' copy)."""
    arrays = [t._data.reshape(-1) for t in tensors]
    if reduce and tensors[0]._dtype in _mpi._HALF:
        flat = np.concatenate(arrays).astype(np.float32)
        return flat, [flat, mpi().FLOAT]
    flat = np.concatenate(arrays) if arrays else np.empty(0, dtype=tensors[0]._dtype.np)
    return flat, [_mpi.flat(flat, tensors[0]._dtype), _mpi.datatype(tensors[0]._dtype)]


def _unpack(flat, tensors):
    """Copy consecutive slices of a 1-d array into tensors (bumping their versions)."""
    start = 0
    for t in tensors:
        n = t.numel()
        t._data[...] = flat[start:start + n].reshape(t._data.shape)
        t._version_counter.value += 1
        start += n


def _finish(buffers, average=None):
    """Write working copies back; AVG divides the summed working buffer by the group size first."""
    def done():
        if average is not None:
            work = buffers[0].work
            if work.dtype.kind in "fc":
                work /= average
        for b in buffers:
            b.finish()
    return done


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    check_tensor(tensor)
    pg = resolve(group, "all_reduce")
    if pg is None:
        return None
    error, mpi_op, red = _reduction(op, tensor._dtype, "all_reduce")
    agree(pg, "all_reduce", tensor._dtype, tensor.shape, redop=red, error=error)
    buf = Buffer(tensor, reduce=True)
    request = pg.comm.Iallreduce(mpi().IN_PLACE, buf.msg, mpi_op)
    average = pg.size() if red == ReduceOp.AVG else None
    return run(pg, [request], "all_reduce", _finish([buf], average), async_op, [tensor], keep=(buf,))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    check_tensor(tensor)
    pg = resolve(group, "broadcast")
    if pg is None:
        return None
    root = group_root(pg, src, group_src)
    agree(pg, "broadcast", tensor._dtype, tensor.shape, root=root)
    buf = Buffer(tensor, write=pg.rank() != root)
    request = pg.comm.Ibcast(buf.msg, root)
    return run(pg, [request], "broadcast", buf.finish, async_op, [tensor], keep=(buf,))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    check_tensor(tensor)
    pg = resolve(group, "reduce")
    if pg is None:
        return None
    root = group_root(pg, dst, group_dst)
    error, mpi_op, red = _reduction(op, tensor._dtype, "reduce")
    agree(pg, "reduce", tensor._dtype, tensor.shape, root=root, redop=red, error=error)
    is_root = pg.rank() == root
    buf = Buffer(tensor, reduce=True, write=is_root)
    if is_root:
        request = pg.comm.Ireduce(mpi().IN_PLACE, buf.msg, mpi_op, root)
    else:
        request = pg.comm.Ireduce(buf.msg, None, mpi_op, root)
    average = pg.size() if red == ReduceOp.AVG and is_root else None
    return run(pg, [request], "reduce", _finish([buf], average), async_op, [tensor], keep=(buf,))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor)
    pg = resolve(group, "all_gather")
    if pg is None:
        return None
    error = _attempt(_match_list, "all_gather", tensor_list, tensor, pg.size(), "output tensor")
    agree(pg, "all_gather", tensor._dtype, tensor.shape, error=error)
    send = Buffer(tensor, write=False)
    flat, recv = empty_like_flat(tensor._dtype, tensor.numel() * pg.size())
    request = pg.comm.Iallgather(send.msg, recv)
    return run(pg, [request], "all_gather", lambda: _unpack(flat, tensor_list), async_op, tensor_list,
               keep=(send, recv))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = resolve(group, "all_gather_into_tensor")
    if pg is None:
        return None
    error = _attempt(_match, "all_gather_into_tensor", output_tensor, input_tensor, (1, pg.size()),
                     "output_tensor", "input_tensor")
    agree(pg, "all_gather_into_tensor", input_tensor._dtype, input_tensor.shape, error=error)
    send = Buffer(input_tensor, write=False)
    recv = Buffer(output_tensor)
    request = pg.comm.Iallgather(send.msg, recv.msg)
    return run(pg, [request], "all_gather_into_tensor", recv.finish, async_op, [output_tensor], keep=(send, recv))


def _root_list(opname, ts, name, is_root, like, size):
    """gather_list / scatter_list: required (size tensors like `like`) on the root, absent elsewhere."""
    if is_root:
        if not ts:
            raise ValueError(f"Argument ``{name}`` must be specified on destination rank.")
        _match_list(opname, ts, like, size, name)
    elif ts:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-destination ranks.")


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    check_tensor(tensor)
    if gather_list is not None:
        check_tensor_list(gather_list, "gather_list")
    pg = resolve(group, "gather")
    if pg is None:
        return None
    root = group_root(pg, dst, group_dst)
    is_root = pg.rank() == root
    error = _attempt(_root_list, "gather", gather_list, "gather_list", is_root, tensor, pg.size())
    agree(pg, "gather", tensor._dtype, tensor.shape, root=root, error=error)
    send = Buffer(tensor, write=False)
    if is_root:
        flat, recv = empty_like_flat(tensor._dtype, tensor.numel() * pg.size())
        request = pg.comm.Igather(send.msg, recv, root)
        return run(pg, [request], "gather", lambda: _unpack(flat, gather_list), async_op, gather_list,
                   keep=(send, recv))
    request = pg.comm.Igather(send.msg, None, root)
    return run(pg, [request], "gather", None, async_op, keep=(send,))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    check_tensor(tensor)
    if scatter_list is not None:
        check_tensor_list(scatter_list, "scatter_list")
    pg = resolve(group, "scatter")
    if pg is None:
        return None
    root = group_root(pg, src, group_src)
    is_root = pg.rank() == root
    error = _attempt(_root_list, "scatter", scatter_list, "scatter_list", is_root, tensor, pg.size())
    agree(pg, "scatter", tensor._dtype, tensor.shape, root=root, error=error)
    recv = Buffer(tensor)
    send = _packed(scatter_list)[1] if is_root else None
    request = pg.comm.Iscatter(send, recv.msg, root)
    return run(pg, [request], "scatter", recv.finish, async_op, [tensor], keep=(send, recv))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    check_tensor(output, "output")
    check_tensor_list(input_list, "input_list")
    pg = resolve(group, "reduce_scatter")
    if pg is None:
        return None
    error, mpi_op, red = _reduction(op, output._dtype, "reduce_scatter")
    error = error or _attempt(_match_list, "reduce_scatter", input_list, output, pg.size(), "input tensor")
    agree(pg, "reduce_scatter", output._dtype, output.shape, redop=red, error=error)
    send = _packed(input_list, reduce=True)[1]
    recv = Buffer(output, reduce=True)
    request = pg.comm.Ireduce_scatter_block(send, recv.msg, mpi_op)
    average = pg.size() if red == ReduceOp.AVG else None
    return run(pg, [request], "reduce_scatter", _finish([recv], average), async_op, [output], keep=(send, recv))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = resolve(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    error, mpi_op, red = _reduction(op, output._dtype, "reduce_scatter_tensor")
    error = error or _attempt(_match, "reduce_scatter_tensor", input, output, (1, pg.size()), "input", "output")
    agree(pg, "reduce_scatter_tensor", output._dtype, output.shape, redop=red, error=error)
    send = Buffer(input, reduce=True, write=False)
    recv = Buffer(output, reduce=True)
    request = pg.comm.Ireduce_scatter_block(send.msg, recv.msg, mpi_op)
    average = pg.size() if red == ReduceOp.AVG else None
    return run(pg, [request], "reduce_scatter_tensor", _finish([recv], average), async_op, [output],
               keep=(send, recv))


def _same_dtype(opname, tensors, dtype):
    for i, t in enumerate(tensors):
        if t._dtype is not dtype:
            raise RuntimeError(f"{opname}: invalid tensor type at index {i} (expected {dtype}, got {t._dtype})")


def _displacements(counts):
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    check_tensor_list(output_tensor_list, "output_tensor_list")
    check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = resolve(group, "all_to_all")
    if pg is None:
        return None
    size = pg.size()
    dtype = input_tensor_list[0]._dtype if input_tensor_list else None
    error = None
    if len(output_tensor_list) != size or len(input_tensor_list) != size:
        error = RuntimeError(f"all_to_all: expected {size} input and {size} output tensors, got "
                             f"{len(input_tensor_list)} and {len(output_tensor_list)}")
    else:
        error = _attempt(_same_dtype, "all_to_all", input_tensor_list + output_tensor_list, dtype)
    send_counts = [t.numel() for t in input_tensor_list] if error is None else [0] * size
    recv_counts = [t.numel() for t in output_tensor_list] if error is None else [0] * size
    agree(pg, "all_to_all", dtype, (), counts=(send_counts, recv_counts), error=error)
    send_flat, send = _packed(input_tensor_list)
    recv_flat, recv = empty_like_flat(dtype, sum(recv_counts))
    request = pg.comm.Ialltoallv([send[0], (send_counts, _displacements(send_counts)), send[1]],
                                 [recv[0], (recv_counts, _displacements(recv_counts)), recv[1]])
    return run(pg, [request], "all_to_all", lambda: _unpack(recv_flat, output_tensor_list), async_op,
               output_tensor_list, keep=(send_flat, recv_flat))


def _split_counts(opname, t, splits, size, name):
    """Elements per peer for all_to_all_single: dim-0 splits (even when None) times the row size."""
    rows = t.shape[0] if t.dim() > 0 else 1
    row = t.numel() // rows if rows else 0
    if splits is None or len(splits) == 0:
        if rows % size:
            raise RuntimeError(f"{opname}: {name} of shape {tuple(t.shape)} cannot be split evenly over {size} ranks")
        return [rows // size * row] * size
    splits = [int(s) for s in splits]
    if len(splits) != size or sum(splits) != rows:
        raise RuntimeError(f"{opname}: {name}_split_sizes {splits} must have {size} entries summing to "
                           f"dim 0 of shape {tuple(t.shape)}")
    return [s * row for s in splits]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = resolve(group, "all_to_all_single")
    if pg is None:
        return None
    size = pg.size()
    send_counts = recv_counts = [0] * size
    error = None
    try:
        if output._dtype is not input._dtype:
            raise RuntimeError(f"all_to_all_single: output dtype {output._dtype} does not match input dtype "
                               f"{input._dtype}")
        send_counts = _split_counts("all_to_all_single", input, input_split_sizes, size, "input")
        recv_counts = _split_counts("all_to_all_single", output, output_split_sizes, size, "output")
    except RuntimeError as e:
        error = e
    agree(pg, "all_to_all_single", input._dtype, (), counts=(send_counts, recv_counts), error=error)
    send = Buffer(input, write=False)
    recv = Buffer(output)
    request = pg.comm.Ialltoallv([send.msg[0], (send_counts, _displacements(send_counts)), send.msg[1]],
                                 [recv.msg[0], (recv_counts, _displacements(recv_counts)), recv.msg[1]])
    return run(pg, [request], "all_to_all_single", recv.finish, async_op, [output], keep=(send, recv))
