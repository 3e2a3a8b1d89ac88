"""DDP communication hooks (DistributedDataParallel.register_comm_hook): each gets a bucket of gradients (summed
over nothing yet, not divided) and returns a Future of the bucket's new contents, the average over the group."""
from ... import distributed_c10d as c10d

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group(process_group):
    return process_group if process_group is not None else c10d.group.WORLD


def _allreduce_fut(process_group, tensor):
    """tensor divided by the group's size, then all-reduced (SUM): a Future of it."""
    from ... import all_reduce
    group = _group(process_group)
    tensor.div_(group.size())
    return all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: the bucket's gradients averaged over the group (state is the group)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    from ... import all_reduce
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())
    fut = all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """The bucket averaged in float16 (half the bytes on the wire), written back in the gradients' dtype."""
    import ember
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """The bucket averaged in bfloat16, written back in the gradients' dtype."""
    import ember
    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        buffer = bucket.buffer()
        bucket.set_buffer(buffer.to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            buffer.copy_(fut.value())
            return buffer
        return fut.then(decompress)
    return wrapped


def fp16_compress_wrapper(hook):
    """hook run on the bucket cast to float16; its result cast back into the gradients' dtype."""
    import ember
    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook):
    """hook run on the bucket cast to bfloat16; its result cast back into the gradients' dtype."""
    import ember
    return _compress_wrapper(ember.bfloat16, hook)
