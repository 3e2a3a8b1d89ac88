"""Keyword forms of real calls, checked on torch and ember (the class of `unexpected keyword
argument` failures).

The op table's lambdas call ops positionally. `record` runs a case on torch under a
TorchFunctionMode and keeps every public call it makes (function or method, arguments as
given). `keyword_forms` binds each call to torch's own signatures (torch_signatures.py)
and re-issues it with as many arguments as possible passed by torch's parameter names;
torch decides which forms are valid. `check_form` runs a valid form on ember and compares
with torch; `rejected_forms` are the calls torch refuses with TypeError (an unknown keyword,
a keyword-only argument passed positionally), which ember must refuse the same way.
"""
import inspect

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

import ember
from tests.ops.harness import build_inputs, compare
from tests.torch_signatures import locate, signatures

P = inspect.Parameter


class _Recorder(TorchFunctionMode):
    """Keeps the public calls made directly by the code under the mode (nested calls run
    with the mode off, so they are not seen)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        loc = locate(func)
        snapshot = None if loc is None else (loc, _freeze(args), _freeze(kwargs))
        out = func(*args, **kwargs)
        if snapshot is not None:
            self.calls.append(snapshot)
        return out


def _freeze(v):
    """A detached copy of a call's arguments (later in-place ops must not change them)."""
    if isinstance(v, torch.Tensor):
        return _Frozen(v)
    if isinstance(v, tuple) and type(v) is not tuple and not isinstance(v, torch.Size):
        return tuple(_freeze(x) for x in v)
    if type(v) in (tuple, list):
        return type(v)(_freeze(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze(x) for k, x in v.items()}
    return v


class _Frozen:
    """A tensor argument as values + dtype + requires_grad, rebuilt fresh for every run."""

    def __init__(self, t):
        self.dtype = t.dtype
        self.requires_grad = t.requires_grad
        t = t.detach()
        self.values = (t.float() if t.dtype == torch.bfloat16 else t.resolve_conj().resolve_neg()).numpy().copy()
        self.strides = t.stride() if t.layout == torch.strided else None


def record(case, dtype):
    """The public torch calls a table case makes, with frozen arguments ([] when it raises)."""
    tt, _, _ = build_inputs(case, dtype)
    rec = _Recorder()
    try:
        with rec:
            case.fn(torch, *tt)
    except Exception:
        return []
    return rec.calls


# ---- calls built from torch's signatures, for APIs the op table does not call ---------------

def _tensor(shape=(3, 3), dtype=torch.float64, values=None):
    rng = np.random.default_rng(len(shape))
    v = rng.uniform(0.5, 2.0, shape) if values is None else np.asarray(values)
    return _Frozen(torch.from_numpy(v).to(dtype))


# values tried for a required parameter, by torch's name for it (first that torch accepts wins)
_VALUES = {
    "dim": (1, (0, 1)), "dim0": (0,), "dim1": (1,), "dims": ((0, 1), 0), "keepdim": (True,),
    "size": ((3, 3),), "shape": ((3, 3),), "sizes": ((3, 3),), "stride": ((3, 1),), "k": (1,), "n": (2,),
    "p": (2,), "value": (1.5,), "exponent": (2.0,), "alpha": (1.0,), "min": (0.8,), "max": (1.2,),
    "index": (_tensor((3, 3), torch.int64, [[0, 1, 2], [2, 1, 0], [1, 1, 1]]), _tensor((2,), torch.int64, [0, 2])),
    "indices": (_tensor((2,), torch.int64, [0, 2]),), "source": (_tensor(),), "src": (_tensor(),),
    "mask": (_tensor((3, 3), torch.bool, np.eye(3, dtype=bool)),), "repeats": (2,), "chunks": (3,),
    "sections": (3,), "split_size": (1,), "start": (0,), "end": (3,), "length": (2,), "steps": (4,),
    "fill_value": (2.0,), "q": (0.5,), "bins": (4,), "offset": (0,), "diagonal": (0,), "decimals": (1,),
}
_TENSOR_NAMES = ("input", "self", "other", "tensor", "tensor1", "tensor2", "mat1", "mat2", "mat", "vec", "vec1",
                 "vec2", "batch1", "batch2", "weight", "end", "target", "x1", "x2", "A", "B", "b", "input2",
                 "condition", "elements", "test_elements", "sorted_sequence", "boundaries")


def synthesized_calls(loc):
    """Positional calls of loc built from torch's signatures with simple arguments (a 3x3 float64
    tensor for tensor parameters, _VALUES for the rest), kept where torch accepts them."""
    calls = []
    for sig in signatures(*loc):
        params = [p for p in sig.parameters.values() if p.default is P.empty and p.kind != P.VAR_KEYWORD]
        if loc[0] == "Tensor":
            params = params[1:]
        if any(p.kind == P.KEYWORD_ONLY for p in params):
            continue
        choices = []
        for p in params:
            if p.kind == P.VAR_POSITIONAL:
                choices.append([(3, 3)] if p.name in ("size", "shape", "sizes") else [(1, 0)] if "dim" in p.name
                               else [None])
            elif p.name in _VALUES:
                choices.append(list(_VALUES[p.name]) + ([_tensor()] if p.name in _TENSOR_NAMES else []))
            elif p.name in _TENSOR_NAMES:
                choices.append([_tensor()])
            else:
                choices.append(None)
        if None in choices or any(c == [None] for c in choices):
            continue
        for combo in _combos(choices):
            args = []
            for p, v in zip(params, combo):
                args.extend(v if p.kind == P.VAR_POSITIONAL else (v,))
            if loc[0] == "Tensor":
                args.insert(0, _tensor())
            call = (tuple(args), {})
            if run(loc, torch, *call)[0] == "ok":
                calls.append(call)
                break
    return calls


OP_NAMESPACES = ("torch", "Tensor", "torch.linalg", "torch.nn.functional", "torch.special", "torch.fft")


def public_ops():
    """(namespace, name) of every public ember function and Tensor method that torch also has."""
    for ns in OP_NAMESPACES:
        emod = ember.Tensor if ns == "Tensor" else ember
        tmod = torch.Tensor if ns == "Tensor" else _torch_module(ns)
        for part in ns.split(".")[1:]:
            emod = getattr(emod, part, None)
        if emod is None:
            continue
        for name in sorted(dir(emod)):
            if not name.startswith("_") and hasattr(tmod, name) and callable(getattr(emod, name)) and \
                    not isinstance(getattr(emod, name), type):
                yield ns, name


def _combos(choices, limit=8):
    out = [[]]
    for c in choices:
        out = [o + [v] for o in out for v in c][:limit]
    return out


# ---- arguments on either library ----------------------------------------------------------

def thaw(v, lib, grad=True):
    """A frozen argument as a fresh value of lib (torch or ember); grad=False drops requires_grad."""
    if isinstance(v, _Frozen):
        if lib is torch:
            t = torch.from_numpy(v.values.copy()).to(v.dtype)
        else:
            t = ember.from_numpy(v.values.copy()).to(getattr(ember, str(v.dtype).replace("torch.", "")))
        return t.requires_grad_(True) if v.requires_grad and grad else t
    if type(v) in (tuple, list):
        return type(v)(thaw(x, lib, grad) for x in v)
    if isinstance(v, torch.Size):
        return v if lib is torch else ember.Size(v)
    if isinstance(v, dict):
        return {k: thaw(x, lib, grad) for k, x in v.items()}
    if lib is ember:
        if isinstance(v, torch.dtype):
            return getattr(ember, str(v).replace("torch.", ""))
        if isinstance(v, torch.device):
            return ember.device(str(v))
        if isinstance(v, (torch.memory_format, torch.layout)):
            return getattr(ember, str(v).replace("torch.", ""))
        if isinstance(v, torch.Generator):
            raise _Unsupported("generator")
    return v


class _Unsupported(Exception):
    pass


def target(loc, lib, args):
    """The callable for loc on lib; for methods, bound to the thawed first argument."""
    ns, name = loc
    if ns == "Tensor":
        return getattr(args[0], name), args[1:]
    mod = lib
    for part in ns.split(".")[1:]:
        mod = getattr(mod, part)
    return getattr(mod, name), args


def run(loc, lib, args, kwargs, grad=True):
    """Call loc on lib with fresh arguments: ('ok', result), ('raise', exception) or ('missing', _)."""
    try:
        a = thaw(args, lib, grad)
        k = thaw(kwargs, lib, grad)
        fn, a = target(loc, lib, a)
    except (_Unsupported, AttributeError) as e:
        return "missing", e
    try:
        return "ok", fn(*a, **k)
    except Exception as e:  # noqa: BLE001  (the exception is the result compared)
        return "raise", e


# ---- keyword forms from torch's signatures --------------------------------------------------

# torch's parser also takes x=/a=/x1= for input= and x2= for other=; ember does not (a wrapper on every
# elementwise op for spellings third-party code does not use): a deliberate difference, not generated here.
_NUMPY_SPELLINGS = {"dim": "axis", "keepdim": "keepdims"}


def keyword_forms(loc, args, kwargs):
    """(args, kwargs) forms of a call with arguments moved to torch's keyword names, one per
    torch signature that binds the call and gives a different spelling than the call itself.
    For C-level functions also the NumPy spellings torch's argument parser takes (axis=, keepdims=)."""
    forms = []
    for sig in signatures(*loc):
        for form in _bind_forms(sig, args, kwargs, loc[0] == "Tensor"):
            if form not in forms and form != (tuple(args), dict(kwargs)):
                forms.append(form)
    if is_c_level(loc):
        for a, kw in list(forms):
            if any(k in kw for k in _NUMPY_SPELLINGS):
                numpy_kw = {_NUMPY_SPELLINGS.get(k, k): v for k, v in kw.items()}
                if (a, numpy_kw) not in forms:
                    forms.append((a, numpy_kw))
    return forms


def is_c_level(loc):
    """Is torch's callable for loc parsed by its C++ argument parser (not a Python function)?"""
    ns, name = loc
    obj = getattr(torch.Tensor if ns == "Tensor" else _torch_module(ns), name, None)
    return obj is not None and not inspect.isfunction(obj)


def _torch_module(ns):
    mod = torch
    for part in ns.split(".")[1:]:
        mod = getattr(mod, part)
    return mod


def _bind_forms(sig, args, kwargs, method):
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return []
    params = sig.parameters
    names = list(bound.arguments)
    var = [n for n in names if params[n].kind == P.VAR_POSITIONAL]
    pos, kw = [], {}
    for i, n in enumerate(names):
        p = params[n]
        v = bound.arguments[n]
        if method and i == 0:
            pos.append(v)
        elif p.kind == P.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind == P.VAR_KEYWORD:
            kw.update(v)
        elif var and names.index(var[0]) > i:
            pos.append(v)  # before *varargs: must stay positional
        else:
            kw[n] = v
    forms = [(tuple(pos), kw)]
    if var and bound.arguments[var[0]]:
        # `*size` given as varargs: torch's parser also takes the same name as one keyword (size=(2, 3))
        packed = dict(kw)
        packed[var[0]] = tuple(bound.arguments[var[0]])
        head = tuple(pos[:len(pos) - len(bound.arguments[var[0]])])
        forms.append((head, packed))
    return forms


def rejected_forms(loc, args, kwargs):
    """Calls torch must refuse with TypeError: an unknown keyword; keyword-only arguments passed
    positionally."""
    out = [(tuple(args), dict(kwargs, not_a_torch_keyword=1))]
    for sig in signatures(*loc):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            continue
        params = sig.parameters
        if any(params[n].kind == P.VAR_POSITIONAL for n in bound.arguments):
            continue
        kwonly = [n for n in bound.arguments if params[n].kind == P.KEYWORD_ONLY]
        if not kwonly:
            continue
        pos = [v for n, v in bound.arguments.items() if params[n].kind == P.POSITIONAL_OR_KEYWORD]
        rest = {n: v for n, v in bound.arguments.items() if params[n].kind == P.VAR_KEYWORD}
        form = (tuple(pos) + tuple(bound.arguments[n] for n in kwonly), rest)
        if form not in out:
            out.append(form)
    return out


class _Shapes:
    """compare()'s options for torch against ember: types, shapes, dtypes, requires_grad (values are
    compared ember against ember, see check_form)."""
    check_values = False
    atol = rtol = grad_atol = grad_rtol = None


def same(a, b):
    """Do two ember results hold the same values (NaN equal to NaN)?"""
    if isinstance(a, ember.Tensor):
        if not isinstance(b, ember.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        x, y = a.detach().numpy(), b.detach().numpy()
        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(same(p, q) for p, q in zip(a, b))
    return type(a) is type(b) and (a == b or a != a)


def check_form(case, loc, call, form):
    """None when ember agrees with torch on a keyword form torch accepts (or when torch refuses it:
    not a valid form), else a one-line description of the disagreement. The form's result is
    compared with torch's (types, shapes, dtypes) and, value for value, with ember's own result of
    the call as the table wrote it (same seed): a keyword bound to the wrong parameter shows."""
    args, kwargs = form
    t_status, t_val = run(loc, torch, args, kwargs)
    if t_status != "ok":
        return None
    if run(loc, ember, *call)[0] != "ok":
        return None  # ember refuses the call as written too: not a keyword question (the op table's)
    ember.manual_seed(0)
    e_status, e_val = run(loc, ember, args, kwargs)
    if e_status == "missing":
        return None  # ember lacks the op (the surface tests track those)
    if e_status == "raise":
        return f"{spell(loc, args, kwargs)}: torch accepts, ember raises {type(e_val).__name__}: {e_val}"
    try:
        compare(t_val, e_val, _Shapes())
    except AssertionError as e:
        return f"{spell(loc, args, kwargs)}: results differ from torch's: {' '.join(str(e).split())[:200]}"
    if _layout(run(loc, torch, *call)[1]) != _layout(t_val):
        return None  # the keywords chose another overload (new(size=[1, 2]) is not new([1, 2]))
    ember.manual_seed(0)
    p_status, p_val = run(loc, ember, *call)
    if p_status == "ok" and case.check_values and not same(p_val, e_val) and _deterministic(loc, call):
        return f"{spell(loc, args, kwargs)}: values differ from ember's positional call {spell(loc, *call)}"
    return None


def check_rejected(loc, args, kwargs):
    """None when ember refuses a call torch refuses with TypeError (or torch accepts it and ember
    too), else a description."""
    # without requires_grad: ember checks in-place-on-leaf before its arguments, torch after (issue 18)
    t_status, t_val = run(loc, torch, args, kwargs, grad=False)
    if t_status == "ok" or not isinstance(t_val, TypeError):
        return None
    e_status, e_val = run(loc, ember, args, kwargs, grad=False)
    if e_status == "missing":
        return None
    if e_status == "raise" and isinstance(e_val, TypeError):
        return None
    got = "returns a value" if e_status == "ok" else f"raises {type(e_val).__name__}: {e_val}"
    return f"{spell(loc, args, kwargs)}: torch raises TypeError, ember {got}"


def _layout(v):
    """Types, shapes and dtypes of a torch result, nested."""
    if isinstance(v, torch.Tensor):
        return (tuple(v.shape), v.dtype)
    if isinstance(v, (tuple, list)):
        return tuple(_layout(x) for x in v)
    return type(v)


def _deterministic(loc, call):
    """Does the call give the same values twice (not so for empty(), whose values are whatever memory held)?"""
    ember.manual_seed(0)
    first = run(loc, ember, *call)[1]
    ember.manual_seed(0)
    return same(first, run(loc, ember, *call)[1])


def spell(loc, args, kwargs):
    def short(v):
        if isinstance(v, _Frozen):
            return f"T{list(v.values.shape)}"
        if type(v) in (tuple, list):
            inner = ", ".join(short(x) for x in v)
            return f"({inner})" if type(v) is tuple else f"[{inner}]"
        return repr(v)
    parts = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    ns, name = loc
    if ns == "Tensor":
        return f"{short(args[0]) if args else '?'}.{name}({', '.join(parts[1:])})"
    return f"{ns}.{name}({', '.join(parts)})"


