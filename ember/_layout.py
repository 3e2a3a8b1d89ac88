"""torch.layout and torch.memory_format: named singletons (torch.strided, torch.sparse_coo,
torch.contiguous_format, torch.channels_last ...). Ops compare them by identity or by
str(); they pickle by name, as torch's do."""

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged",
           "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]


class layout:
    """torch.layout: how a tensor's elements are stored (ember has strided and sparse_coo)."""
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
# other sparse layouts exist as names (torch code compares against them); ember stores none of them
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")

contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
