"""torch.fx.passes.shape_prop: run a GraphModule on example inputs and record each node's tensor metadata."""
from typing import NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result):
    import ember
    memory_format = None
    for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format, False, {})


class ShapeProp(Interpreter):
    """Interpreter that stores, for every node it runs, node.meta['tensor_meta'] (a TensorMetadata, or a
    structure of them for a tuple/list result) and node.meta['type']. fake_mode= (torch's FakeTensor mode) must
    be None: ember runs the module on real tensors."""

    def __init__(self, gm, fake_mode=None):
        if fake_mode is not None:
            raise NotImplementedError("ember has no FakeTensor mode: ShapeProp runs on real example inputs")
        super().__init__(gm)
        self.fake_mode = None

    def run_node(self, n):
        import ember
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, ember.Tensor):
                found.append(True)
                return _extract_tensor_metadata(x)
            return x
        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on args (example inputs), filling in each node's metadata; returns the output."""
        return super().run(*args)
