"""Flatten and Unflatten. See https://pytorch.org/docs/stable/generated/torch.nn.Flatten.html"""
from ._options import OptionsModule

__all__ = ["Flatten", "Unflatten"]


def _check_sizes(sizes):
    """Unflatten's unflattened_size must be a tuple or list of ints; torch's TypeErrors otherwise."""
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(sizes).__name__}")
    for position, size in enumerate(sizes):
        if not isinstance(size, int):
            raise TypeError("unflattened_size must be tuple of ints, "
                            f"but found element of type {type(size).__name__} at pos {position}")


class Flatten(OptionsModule):
    """Flattens dims start_dim..end_dim into one (by default all but the batch dim)."""
    __constants__ = ["start_dim", "end_dim"]
    _shown = ("start_dim", "end_dim")

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)


class Unflatten(OptionsModule):
    """Expands dim `dim` into the shape `unflattened_size`."""
    __constants__ = ["dim", "unflattened_size"]
    _shown = ("dim", "unflattened_size")

    def __init__(self, dim, unflattened_size):
        super().__init__()
        _check_sizes(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)
