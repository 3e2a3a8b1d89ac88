"""torch.autograd.graph.saved_tensors_hooks, save_on_cpu and disable_saved_tensors_hooks: what autograd saves for
backward passes through the innermost pair of hooks of the thread, pack_hook(tensor) when an op saves it and
unpack_hook(packed) each time the backward reads it (Note [Packed saved tensors])."""
import threading
import weakref

from . import graph

# Note [Packed saved tensors]: while a thread has hooks, every tensor an op saves (an input, the op's own output,
# an array the kernel keeps such as a mask) is given to pack_hook once the op has recorded its node (the output
# then has its grad_fn, as in torch), and the slot keeps only what pack_hook returned plus the metadata that puts
# the unpacked tensor back in the graph: the input's grad_fn and output number, or for a leaf its gradient
# accumulator. Unpacking calls unpack_hook, wants a Tensor of the saved shape (a TypeError or RuntimeError
# otherwise), casts it to the saved dtype and gives it that history. As in torch, a packed tensor is not
# version-checked, and a pack hook that modifies its input in place is an error. Where ember's ops save other
# values than torch's (an internal mask instead of the input, say), the hooks see those: their number per op can
# differ from torch's; the gradients do not. An in-place op whose formula needs self's old value packs a copy of
# it after packing self (the hook sees both; torch packs only its own clone). Sparse tensors stay unpacked.
active = 0  # saved_tensors_hooks contexts open in any thread: the ops' one check (a global read) when none is


class _State(threading.local):
    def __init__(self):
        self.hooks = []  # (pack_hook, unpack_hook), innermost last
        self.disabled = []  # disable_saved_tensors_hooks' messages, innermost last


_state = _State()

_INPLACE_IN_PACK = ("A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                    "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please "
                    "open an issue if you need to perform in-place operations on the input to a pack hook.")


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything when autograd saves a tensor, unpack_hook(that) -> Tensor
    when the backward needs it back; per thread, the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        global active
        if _state.disabled:
            raise RuntimeError(_state.disabled[-1])
        _state.hooks.append((self.pack_hook, self.unpack_hook))
        active += 1
        return self

    def __exit__(self, *exc):
        global active
        _state.hooks.pop()
        active -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept on the CPU and moved back to their device in backward. ember's tensors are CPU
    tensors, so packing keeps the tensor itself (torch's tensor.cpu() of a CPU tensor) and unpacking returns it;
    pin_memory=True packs a copy, as torch's pinned copy is one."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            return tensor.device, (tensor.clone() if pin_memory else tensor.cpu())

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager (and decorator): registering saved-tensor hooks inside raises RuntimeError(error_message),
    as does entering it while hooks are registered."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if _state.hooks:
            raise RuntimeError(self.error_message)
        _state.disabled.append(self.error_message)
        return self

    def __exit__(self, *exc):
        _state.disabled.pop()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapper


class _Packed:
    """What a packed slot keeps: the hook's result, the unpack hook, and how to rebuild the saved tensor."""
    __slots__ = ("value", "unpack_hook", "kind", "shape", "dtype", "grad_fn", "output_nr", "requires_grad", "acc",
                 "source")


def pack(node, outs):
    """Replace node's saved tensors by their packed forms under this thread's innermost hooks (none: no-op);
    outs are the node's output tensors (a saved output is handed to the hook as that tensor)."""
    hooks = _state.hooks
    if not hooks or not node._saved:
        return
    pack_hook, unpack_hook = hooks[-1]
    node._saved = tuple([_pack_one(s, pack_hook, unpack_hook, outs) for s in node._saved])


def _pack_one(s, pack_hook, unpack_hook, outs):
    kind = s.kind
    if kind == "input":
        t = s.obj
    elif kind == "output":
        t = outs[s.output_nr]
    elif kind == "const":
        t = graph._make_tensor(s.obj)
    else:
        return s
    if t.layout is not _strided():
        return s
    p = _Packed()
    p.kind = kind
    p.shape = t._data.shape
    p.dtype = t._dtype
    p.unpack_hook = unpack_hook
    p.output_nr = t._output_nr
    p.grad_fn = t._grad_fn if kind == "input" else None
    p.requires_grad = t._requires_grad
    p.acc = graph.grad_accumulator(t) if kind == "input" and t._requires_grad and t._grad_fn is None else None
    p.source = weakref.ref(t) if kind == "input" else None
    version = t._version_counter.value
    p.value = _without_hooks(pack_hook, t)
    if t._version_counter.value != version:
        raise RuntimeError(_INPLACE_IN_PACK)
    return graph.SavedTensor("packed", p, None, 0, s.output_nr)


def repack_input(s, snapshot):
    """A packed input whose tensor an in-place op is about to overwrite: the slot packed anew, from the snapshot
    of its old value (which carries the old history), under the hooks that packed it (the op's, still innermost)."""
    pack_hook = _state.hooks[-1][0] if _state.hooks else (lambda t: t)
    return _pack_one(graph.SavedTensor("input", snapshot, None, snapshot._version_counter.value), pack_hook,
                     s.obj.unpack_hook, ())


def unpack(s, node):
    """The saved tensor of a packed slot, from unpack_hook, with the history it was saved with."""
    p = s.obj
    t = _without_hooks(p.unpack_hook, p.value)
    if not isinstance(t, _tensor_class()):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(t).__name__}")
    arr = t._data
    if arr.shape != p.shape:
        raise RuntimeError(f"saved tensor unpack_hook returned a tensor of shape {list(arr.shape)} for a tensor "
                           f"saved with shape {list(p.shape)}")
    if t._dtype is not p.dtype:
        arr = t.to(p.dtype)._data
    out = graph._make_tensor(arr, p.dtype)
    if p.kind == "const":
        return out
    if p.kind == "output":
        out._requires_grad = True
        out._grad_fn = node
        out._output_nr = s.output_nr
        return out
    if p.requires_grad:
        out._requires_grad = True
        if p.grad_fn is not None:
            out._grad_fn = p.grad_fn
            out._output_nr = p.output_nr
        elif p.acc is not None:
            out._grad_acc = weakref.ref(p.acc)
    return out


def _without_hooks(hook, value):
    """hook(value) with this thread's hooks set aside: what a hook computes saves its tensors plainly (as in
    torch, a pack hook is not called for the tensors its own ops save)."""
    hooks = _state.hooks
    _state.hooks = []
    try:
        return hook(value)
    finally:
        _state.hooks = hooks


def _strided():
    from .._layout import strided
    return strided


def _tensor_class():
    from .._tensor import Tensor
    return Tensor
