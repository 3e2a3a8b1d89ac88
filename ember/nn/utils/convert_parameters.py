"""parameters_to_vector / vector_to_parameters: flatten parameters into one vector and back."""
from ..._tensor import Tensor
from ..modules.module import _typename as typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's elements in order (differentiable)."""
    from ... import cat
    return cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec, parameters):
    """Set each parameter's data to the next slice of vec (the parameters then share vec's memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
