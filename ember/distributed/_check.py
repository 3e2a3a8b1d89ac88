"""Note [Collective agreement]: before its data moves, every collective allgathers a small int64 header
from each rank (which op, dtype, shape, root, reduce op, an argument-error flag and, for all_to_all, the
element counts to and from every peer) and compares them, so a mismatch raises on every rank instead of
hanging or reading garbage, and a rank whose own arguments were wrong raises its error while the others
raise one naming it. It costs one small MPI_Iallgather per collective (measured in the tests' report).
barrier is that exchange alone: an allgather completes only once every rank has joined it.
"""
import numpy as np

from .. import _dtype as D
from . import _mpi

OPS = ("barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
       "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "broadcast_object_list",
       "all_gather_object", "gather_object", "scatter_object_list")
_DTYPES = D.ALL
_MAX_DIMS = 8
_FIXED = 6 + _MAX_DIMS  # error, op, dtype, root, reduce op, ndim, dims


_DTYPE_CODE = {d: i for i, d in enumerate(_DTYPES)}
_OP_CODE = {op: i for i, op in enumerate(OPS)}


def _header(pg, op, dtype, shape, root, redop, counts, error):
    shape = tuple(shape)
    ndim = len(shape)
    if ndim >= _MAX_DIMS:  # fold the trailing dims into one so the header keeps its length
        shape = shape[:_MAX_DIMS - 1] + (int(np.prod(shape[_MAX_DIMS - 1:], dtype=np.int64)),)
    fields = [0 if error is None else 1, _OP_CODE[op], -1 if dtype is None else _DTYPE_CODE[dtype], root, redop,
              ndim, *shape]
    fields += [-1] * (_FIXED - len(fields))
    if counts is None:
        fields += [-1] * (2 * pg.size())
    else:
        fields += list(counts[0]) + list(counts[1])
    return np.array(fields, dtype=np.int64)


def agree(pg, op, dtype=None, shape=(), root=-1, redop=-1, counts=None, error=None):
    """Exchange headers; raise (on every rank) if a rank's arguments failed or the ranks disagree.

    counts=(send, recv): element counts to and from each group rank, checked pairwise."""
    request, compare = start(pg, op, dtype, shape, root, redop, counts, error)
    _mpi.wait([request], pg.deadline(), f"{op} (argument check)")
    compare()


def start(pg, op, dtype=None, shape=(), root=-1, redop=-1, counts=None, error=None):
    """agree() in two halves: the started MPI_Iallgather, and the comparison to run once it completes."""
    MPI = _mpi.mpi()
    mine = _header(pg, op, dtype, shape, root, redop, counts, error)
    table = np.empty((pg.size(), mine.size), dtype=np.int64)
    request = pg.comm.Iallgather([mine, MPI.INT64_T], [table, MPI.INT64_T])
    return request, lambda: _compare(pg, op, mine, table, counts, error)


def _compare(pg, op, mine, table, counts, error):
    if error is not None:
        raise error
    if (table[:, :_FIXED] == mine[:_FIXED]).all() and counts is None:
        return  # the common case, in one comparison
    failed = [pg.ranks[r] for r in np.flatnonzero(table[:, 0])]
    if failed:
        raise RuntimeError(f"{op}: rank(s) {failed} raised on their arguments, so no rank ran it")
    if (table[:, 1] != table[0, 1]).any():
        calls = ", ".join(f"rank {pg.ranks[r]} called {OPS[table[r, 1]]}" for r in range(pg.size()))
        raise RuntimeError(f"ranks called different collectives at the same point: {calls}")
    if (table[:, 2:_FIXED] != table[0, 2:_FIXED]).any():
        what = "; ".join(f"rank {pg.ranks[r]}: {_describe(table[r])}" for r in range(pg.size()))
        raise RuntimeError(f"{op}: the ranks' arguments do not match ({what})")
    if counts is not None:
        size = pg.size()
        send = table[:, _FIXED:_FIXED + size]
        recv = table[:, _FIXED + size:]
        if (send != recv.T).any():
            raise RuntimeError(f"{op}: the elements each rank sends do not match what its peers expect to "
                               f"receive (row i: elements rank i sends to each rank: {send.tolist()}; "
                               f"expected by the receivers: {recv.T.tolist()})")


def _describe(h):
    from .distributed_c10d import RedOpType
    parts = []
    if h[2] >= 0:
        parts.append(str(_DTYPES[h[2]]))
    ndim = int(h[5])
    if ndim > 0 or h[2] >= 0:
        dims = [int(d) for d in h[6:6 + min(ndim, _MAX_DIMS)]]
        parts.append(f"shape {dims}" + (" (trailing dims folded)" if ndim > _MAX_DIMS else ""))
    if h[3] >= 0:
        parts.append(f"root {int(h[3])}")
    if h[4] >= 0:
        parts.append(f"op {RedOpType(int(h[4])).name}")
    return " ".join(parts)
