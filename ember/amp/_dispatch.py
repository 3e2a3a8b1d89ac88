"""The autocast state and the wrapper that applies the policy (policy.py) to an op.

Note [Autocast dispatch]: an op named in the policy is installed wrapped (`wrap`): the
wrapper tests one thread-local flag and, with CPU autocast off, calls the op as it is. With
it on, the wrapper casts the op's floating-point tensor arguments (float64 excepted) to the
policy's dtype and runs the op with autocast off, as torch's Autocast kernels exclude their
own dispatch key: a listed op called inside another (linear inside multi-head attention)
is not cast again. out= calls are not cast (torch registers no autocast kernel for them).
Ops not named in the policy are not wrapped at all, so they pay nothing.
"""
import functools
import threading

from .. import _dtype as D
from .._tensor import Tensor
from .policy import FP32, LOWER, LOWER_RESULT, POLICY

# torch's per-device-type default autocast dtype (c10 DeviceType order does not matter here)
DEFAULT_DTYPES = {"cpu": D.bfloat16, "cuda": D.float16, "ipu": D.float16, "xpu": D.float16, "hip": D.float16,
                  "maia": D.bfloat16, "xla": D.bfloat16, "mps": D.float16, "hpu": D.bfloat16, "mtia": D.float16,
                  "privateuseone": D.float16}
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class _AutocastState(threading.local):
    """Autocast flags per thread, as torch's (a new thread starts with autocast off). `cpu` is
    the flag every wrapped op reads; other device types are only recorded (ember runs on cpu)."""

    def __init__(self):
        self.cpu = False
        self.enabled = {}        # device type (not cpu) -> flag
        self.dtypes = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}          # id(float32 leaf) -> (leaf, its cast): see cached_cast


state = _AutocastState()


def wrap(fn, name):
    """fn itself, or fn wrapped to apply its autocast policy (Note [Autocast dispatch])."""
    kind = POLICY.get(name)
    if kind is None:
        return fn

    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        if state.cpu:
            return _autocast_call(fn, kind, args, kwargs)
        return fn(*args, **kwargs)
    return autocast_op


def wrap_namespace(names, prefix=""):
    """Wrap the functions of a public namespace dict (torch.nn.functional, torch.linalg) in place."""
    for n, fn in list(names.items()):
        if callable(fn) and not isinstance(fn, type) and (prefix + n) in POLICY:
            names[n] = wrap(fn, prefix + n)


def _autocast_call(fn, kind, args, kwargs):
    if kwargs.get("out") is not None:
        return fn(*args, **kwargs)
    if type(kind) is not str:
        kind = kind(args, kwargs)
    if kind is None or kind is LOWER_RESULT:
        to = None
    elif kind is LOWER:
        to = state.dtypes["cpu"]
    elif kind is FP32:
        to = D.float32
    else:
        to = _widest(args, kwargs)
    if to is not None:
        args = tuple(_cast(a, to) for a in args)
        if kwargs:
            kwargs = {k: _cast(v, to) for k, v in kwargs.items()}
    state.cpu = False
    try:
        out = fn(*args, **kwargs)
    finally:
        state.cpu = True
    if kind is LOWER_RESULT:
        out = _cast(out, state.dtypes["cpu"])
    return out


def _eligible(t):
    return t._dtype.category == D.FLOAT and t._dtype is not D.float64


def _cast(v, to):
    """A floating tensor argument (or list of them) in dtype `to`; anything else unchanged."""
    if isinstance(v, Tensor):
        if v._dtype is to or not _eligible(v):
            return v
        return cached_cast(v, to)
    if type(v) in (list, tuple) and any(isinstance(x, Tensor) for x in v):
        return type(v)(_cast(x, to) for x in v)
    return v


def cached_cast(t, to):
    """t.to(to); within an autocast region the lower-precision copy of a float32 leaf that
    requires grad (a weight) is made once and reused, as torch's cast cache does."""
    if (to is state.dtypes["cpu"] and t._dtype is D.float32 and t._requires_grad and t._grad_fn is None
            and t._base is None and state.cache_enabled):
        hit = state.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        cast = t.to(to)
        state.cache[id(t)] = (t, cast)  # holding t keeps its id from being reused
        return cast
    return t.to(to)


def _widest(args, kwargs):
    """torch's promote policy: float32 if any eligible tensor is float32, else the autocast dtype
    (float64 tensors are left out of the choice and uncast)."""
    lower = state.dtypes["cpu"]
    current = lower
    for v in tuple(args) + tuple(kwargs.values()):
        items = v if type(v) in (list, tuple) else (v,)
        for t in items:
            if not isinstance(t, Tensor) or not _eligible(t):
                continue
            d = t._dtype
            if current is D.float32 or d is D.float32:
                current = D.float32
            elif not (current is lower and d is lower):
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current
