"""ForkingPickler reducers: tensors cross process boundaries by sharing their memory.

Putting a tensor on a multiprocessing Queue or Pipe (or passing it to a spawned Process) moves
its storage into shared memory in place, as torch does, and sends the segment's file descriptor
(see Note [Shared segments] in ember/_shared_memory.py); the receiver maps the same memory, so
in-place changes on either side are seen by both. As with torch, the sending process must still be
alive when the receiver unpickles (the descriptor is fetched from it). Tensor and nn.Parameter are
registered; other Tensor subclasses are pickled by value (a copy).
"""
from multiprocessing import reduction as _reduction

from .. import _dtype as D
from .. import _shared_memory as shm
from .._tensor import Tensor

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor"]


def check_serializable(t):
    if t._requires_grad and t._grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
                           "not support crossing process boundaries.  If you just want to transfer the data, call "
                           "detach() on the tensor before serializing (e.g., putting it on the queue).")


def tensor_args(t, handle):
    """The arguments of rebuild_tensor for tensor t whose memory lives in the segment of `handle`."""
    arr = t._data
    seg = shm.segment_of(arr)
    state = None  # as torch's reducer: a shared Tensor or Parameter arrives without its Python attributes
    return (type(t), handle, t._dtype.name, arr.shape, arr.strides, shm.offset_in(seg, arr), t._requires_grad, state)


def rebuild_tensor(cls, seg, dtype_name, shape, strides, offset, requires_grad, state):
    """A tensor of class cls viewing segment seg (byte strides, byte offset)."""
    dtype = D._BY_NAME[dtype_name]
    arr = shm.view_of(seg, dtype.np, shape, strides, offset)
    from ..nn.parameter import Parameter
    if issubclass(cls, Parameter):
        t = cls(Tensor._make(arr, dtype), requires_grad)
    elif cls is Tensor:
        t = Tensor._make(arr, dtype)
        t._requires_grad = requires_grad
    else:
        t = object.__new__(cls)
        Tensor._init_copy(t, arr, dtype, requires_grad)
    if state:
        t.__dict__.update(state)
    return t


class _FdHandle:
    """Pickles as a duplicate of a segment's descriptor; unpickles as the receiver's Segment."""
    __slots__ = ("fd", "nbytes")

    def __init__(self, seg):
        self.fd = seg.fd
        self.nbytes = seg.nbytes

    def __reduce__(self):
        return (_rebuild_segment, (_reduction.DupFd(self.fd), self.nbytes))


def _rebuild_segment(dupfd, nbytes):
    return shm.from_fd(dupfd.detach(), nbytes)


def reduce_tensor(tensor):
    t = tensor
    check_serializable(t)
    seg = shm.segment_of(t._data)
    if seg is None or seg.fd is None:
        # private memory, or a DataLoader batch whose descriptor was closed: move it to a new segment
        if seg is not None:
            t._data = shm.copy(t._data)
        else:
            shm.share_(t)
        seg = shm.segment_of(t._data)
    handle = seg.handle
    if handle is None:
        handle = seg.handle = _FdHandle(seg)  # one handle per segment: pickle's memo sends it once per message
    return (rebuild_tensor, tensor_args(t, handle))


def init_reductions():
    """Register the reducers with multiprocessing's ForkingPickler (used by its queues, pipes,
    pools and by spawn/forkserver process arguments)."""
    from ..nn.parameter import Parameter
    _reduction.ForkingPickler.register(Tensor, reduce_tensor)
    _reduction.ForkingPickler.register(Parameter, reduce_tensor)
