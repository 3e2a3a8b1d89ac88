"""torch.distributed.nn.functional: collectives that autograd differentiates.

Each returns new tensors (the inputs are not written) and its backward is the adjoint collective:
broadcast <-> reduce to the source (the source gets the sum of every rank's gradient, the others zero),
gather <-> scatter, all_gather <-> reduce-scatter of the gradients (an all_to_all and a sum), all_to_all
<-> all_to_all, all_reduce <-> all_reduce with the forward's op (as torch 2.13). Ranks are global ranks, as
in ember.distributed. torch deprecates five of them (FutureWarning naming torch's replacement), so does ember."""
import warnings

from ... import distributed as dist
from ...autograd.function import Function

__all__ = ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "gather", "reduce",
           "reduce_scatter", "scatter"]


_SUM = dist.ReduceOp.SUM


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone()
        dist.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = _Reduce.apply(ctx.src, _SUM, ctx.group, grad)
        if dist.get_rank() != ctx.src:
            g = g.zero_()
        return None, None, g


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        dist.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        from ... import zeros_like
        ctx.dst, ctx.group = dst, group
        parts = [zeros_like(tensor) for _ in range(dist.get_world_size(group))]
        dist.gather(tensor.contiguous(), parts if dist.get_rank() == dst else None, dst, group=group)
        return tuple(parts)

    @staticmethod
    def backward(ctx, *grads):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grads)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        from ... import empty_like
        ctx.src, ctx.group = src, group
        out = empty_like(tensors[dist.get_rank(group)])
        dist.scatter(out, [t.contiguous() for t in tensors] if dist.get_rank() == src else None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        from ... import empty_like
        ctx.group = group
        parts = [empty_like(tensor) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, tensor.contiguous(), group=group)
        return tuple(parts)

    @staticmethod
    def backward(ctx, *grads):
        from ... import empty_like, stack
        received = _AllToAll.apply(ctx.group, [empty_like(g) for g in grads], *grads)
        return None, stack(received).sum(0)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        out = output.new_empty(output.shape)
        dist.reduce_scatter(out, [t.contiguous() for t in inputs], op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None) + _AllGather.apply(ctx.group, grad)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, outputs, *inputs):
        ctx.group = group
        ctx.shapes = [t.shape for t in inputs]
        outs = [t.new_empty(t.shape) for t in outputs]
        dist.all_to_all(outs, [t.contiguous() for t in inputs], group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        from ... import empty
        back = [empty(shape, dtype=grads[0].dtype) for shape in ctx.shapes]
        return (None, None) + _AllToAll.apply(ctx.group, back, *grads)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_shape = input.shape
        ctx.splits = (input_split_sizes, output_split_sizes)  # swapped for the way back
        out = output.new_empty(output.shape)
        dist.all_to_all_single(out, input.contiguous(), output_split_sizes, input_split_sizes, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ... import empty
        back = empty(ctx.input_shape, dtype=grad.dtype)
        g = _AllToAllSingle.apply(ctx.group, back, ctx.splits[0], ctx.splits[1], grad.contiguous())
        return None, None, None, None, g


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group, ctx.op = group, op
        out = tensor.clone()
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


def _deprecated(name, suggestion):
    warnings.warn(f"torch.distributed.nn.functional.{name} is deprecated, use "
                  f"torch.distributed._functional_collectives.{suggestion} instead.", FutureWarning, stacklevel=3)


def broadcast(tensor, src, group=None):
    """`src`'s tensor on every rank (a new tensor); its gradient sums at src."""
    _deprecated("broadcast", "broadcast")
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=None):
    """Every rank's tensor, in rank order, on dst (zeros elsewhere): a tuple."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=None):
    """This rank's entry of src's list."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=_SUM, group=None):
    """The reduction (op, default sum) of every rank's tensor, on dst."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=_SUM, group=None):
    """This rank's share of the reduction of every rank's input_list (output gives its shape)."""
    _deprecated("reduce_scatter", "reduce_scatter_single")
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=None):
    """Every rank's tensor, in rank order, on every rank: a tuple."""
    _deprecated("all_gather", "all_gather_single")
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """input_tensor_list[j] goes to rank j; a tuple shaped like output_tensor_list."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None):
    """all_to_all on one tensor split along dim 0 (equal splits unless sizes are given); shaped like output."""
    _deprecated("all_to_all_single", "all_to_all_single")
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=_SUM, group=None):
    """The reduction (op, default sum) of every rank's tensor, on every rank; the gradient is all-reduced with op."""
    _deprecated("all_reduce", "all_reduce")
    return _AllReduce.apply(op, group, tensor)
