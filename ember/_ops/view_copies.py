"""torch's *_copy functions (expand_copy, view_copy, ...): the view op's result as a fresh
contiguous tensor without `_base`, its grad_fn named like torch's (the view's name + "_copy")."""
from .._tensor import Tensor
from ._registry import install, numpy_names, write_out
from .shape import Clone


def _contiguous_copy(view):
    c = Clone.apply(view, strides=None)
    if c._grad_fn is not None and view._grad_fn is not None:
        c._grad_fn._name = view._grad_fn.name() + "_copy"
    return c


@numpy_names
def _slice(input, dim=0, start=None, end=None, step=1):
    key = (slice(None),) * (dim % max(input.ndim, 1)) + (slice(start, end, step),)
    return input[key]


def _alias(input):
    return input[...]


def _copy_variant(name, view_fn):
    def fn(input, *args, out=None, **kwargs):
        r = view_fn(input, *args, **kwargs)
        if isinstance(r, Tensor):
            c = _contiguous_copy(r)
            return c if out is None else write_out(out, c, name)
        return tuple(_contiguous_copy(o) for o in r)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: a contiguous copy of the {name[:-5]} view."
    install(fn, name, method=False)


for _name, _view in {
    "alias_copy": _alias,
    "as_strided_copy": Tensor.as_strided,
    "diagonal_copy": Tensor.diagonal,
    "expand_copy": Tensor.expand,
    "permute_copy": Tensor.permute,
    "select_copy": Tensor.select,
    "slice_copy": _slice,
    "split_copy": Tensor.split,
    "split_with_sizes_copy": Tensor.split_with_sizes,
    "squeeze_copy": Tensor.squeeze,
    "t_copy": Tensor.t,
    "transpose_copy": Tensor.transpose,
    "unbind_copy": Tensor.unbind,
    "unfold_copy": Tensor.unfold,
    "unsqueeze_copy": Tensor.unsqueeze,
    "view_copy": Tensor.view,
}.items():
    _copy_variant(_name, _view)
