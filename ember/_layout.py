"""torch.layout and torch.memory_format: named singletons (torch.strided, torch.sparse_coo,
torch.contiguous_format, torch.channels_last ...). Ops compare them by identity or by
str(); they pickle by name, as torch's do."""

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged",
           "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]


class layout:
    """torch.layout: how a tensor's elements are stored (ember has strided, sparse_coo and sparse_csr)."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name


class memory_format:
    """torch.memory_format: the stride order asked of a new tensor."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
# the other sparse layouts exist as names (torch code compares against them); ember stores none of them
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")

contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


_FORMAT_RANK = {"channels_last": 4, "channels_last_3d": 5}


def format_strides(shape, fmt):
    """Element strides a dense tensor of `shape` gets in memory format fmt: channels last
    (N, C, *spatial) puts C innermost; contiguous_format is row-major; None/preserve -> None."""
    name = "preserve_format" if fmt is None else str(fmt).replace("torch.", "")
    if name == "preserve_format":
        return None
    if name == "contiguous_format":
        order = list(range(len(shape)))
    elif name in _FORMAT_RANK:
        rank = _FORMAT_RANK[name]
        if len(shape) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {name} format")
        order = [0] + list(range(2, rank)) + [1]
    else:
        raise TypeError(f"memory_format must be a torch.memory_format, not {type(fmt).__name__}")
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)
