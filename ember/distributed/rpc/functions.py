"""torch.distributed.rpc.functions: async_execution."""
import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark an RPC target that returns a Future: the callee answers once that Future completes (with its value),
    so its worker thread is free meanwhile. Put it under @staticmethod / @classmethod when used on methods."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._wrapped_async_rpc_function = fn
    return wrapper
