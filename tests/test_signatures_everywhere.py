"""Signatures everywhere (issue 19): beyond the op namespaces of test_signatures.py, every public
callable of every ember namespace that torch also has (nn.utils.*, optim, utils.data, distributions,
amp, func, distributed, ...), and every public method and constructor of ember's classes (Module.state_dict,
Optimizer.zero_grad, DataLoader, samplers, Generator ...) is compared with torch's at the same path:
names, order, kinds and defaults. torch's signature: inspect.signature for Python-level APIs (compared
parameter for parameter), the stubs of torch._C (`_C/__init__.pyi`, `_distributed_c10d.pyi`) for C-level
classes and functions, read by tests/torch_signatures.py."""
import collections
import importlib
import inspect
import pkgutil

import pytest
import torch

import ember
from tests.torch_signatures import UNKNOWN, P, _stub, differences, signatures

# test_op_signatures compares the functions of these namespaces (and Tensor's methods); here only their classes
_OP_NAMESPACES = {"torch", "torch.linalg", "torch.nn.functional", "torch.special", "torch.fft"}
_C_STUBS = ("__init__.pyi", "_distributed_c10d.pyi", "_autograd.pyi")

_JIT = "torch's constructor takes a C++ module; ember's traced and scripted modules wrap a Python nn.Module"

# torch path -> why ember's signature differs
DELIBERATE = {
    "torch.Generator.set_state": "torch's stub spells the positional-only parameter _new_state; both refuse "
                                 "it as a keyword (test_c_level_names)",
    "torch.finfo.__init__": "torch's stub says dtype=, its parser takes type= (as ember; test_c_level_names)",
    "torch.iinfo.__init__": "torch's stub says dtype=, its parser takes type= (as ember; test_c_level_names)",
    "torch.distributed.ProcessGroup.__init__": "ember's process groups wrap an MPI communicator; torch's "
                                               "constructor takes a c10d Store ember does not have",
    "torch.jit._script.RecursiveScriptModule.__init__": _JIT, "torch.jit._script.ScriptModule.__init__": _JIT,
    "torch.jit._trace.TracedModule.__init__": _JIT,
    "torch.jit._trace.trace": "_compilation_unit= (private) is a TorchScript CompilationUnit; ember's default is None",
    "torch.jit._trace.trace_module": "_compilation_unit= (private) is a TorchScript CompilationUnit; ember's "
                                     "default is None",
    "torch.profiler.profiler._KinetoProfile.export_chrome_trace": "use_python_export= picks torch's C++ or Python "
                                                                  "trace writer; ember has only its own",
    "torch.autograd.profiler.profile.export_chrome_trace": "use_python_export= picks torch's C++ or Python trace "
                                                           "writer, metadata= goes into its header; ember has "
                                                           "only its own writer",
    "torch.autograd.profiler_util.FunctionEvent.__init__": "built by ember's profiler only, from what it records "
                                                           "(no threads, devices, flows or kineto ids)",
    "torch.profiler.profiler.tensorboard_trace_handler": "use_python_export= picks torch's C++ or Python trace "
                                                         "writer; ember has only its own",
    "torch.multiprocessing.spawn.ProcessContext.__init__": "ember's workers report errors over pipes "
                                                           "(error_conns), torch's through files",
    "torch.multiprocessing.reductions.rebuild_tensor": "the unpickling hook of ember's shared-memory tensors "
                                                       "(a segment name and metadata, no storages)",
    "torch.utils.hooks.BackwardHook.setup_output_hook": "an internal of nn.Module's full backward hooks",
}


def _torch_sigs(tobj, tns, name, owner):
    """(torch's signatures, python_level) of `tobj` found at tns.name (owner: its class or None)."""
    try:
        sig = inspect.signature(tobj)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        if not (params and all(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params)):
            return [sig], True  # (a C-level slot says (self, /, *args, **kwargs): its stub says more)
    except (TypeError, ValueError):
        pass
    for stub in _C_STUBS:  # C-level: torch._C's stubs (Generator, is_anomaly_enabled, ProcessGroup ...)
        sigs = _stub(stub, owner.__name__).get(name) if owner is not None else _stub(stub).get(name)
        if sigs:
            return sigs, False
    return [], False


def _pybind_sigs(tobj):
    """The signatures a pybind11 function's docstring gives (its runtime argument names, which a generated stub
    may spell otherwise: FileStore's stub says (path, numWorkers), the constructor takes file_name=), or []."""
    sigs = []
    for line in (getattr(tobj, "__doc__", None) or "").splitlines():
        head = line.strip().split(". ", 1)[-1]
        if not head.startswith(tobj.__name__ + "(") or ") ->" not in head:
            continue
        inner, depth, params, part = head[len(tobj.__name__) + 1:head.rindex(") ->")], 0, [], ""
        for ch in inner + ",":
            depth += ch in "([{" and 1 or 0
            depth -= ch in ")]}" and 1 or 0
            if ch == "," and depth == 0:
                params.append(part.strip())
                part = ""
            else:
                part += ch
        built = []
        for text in filter(None, params):
            pname = text.split(":", 1)[0].split("=", 1)[0].strip()
            default = UNKNOWN if "=" in text else P.empty  # (its value is printed as a type's repr)
            kind = P.KEYWORD_ONLY if built and built[-1].kind == P.KEYWORD_ONLY else P.POSITIONAL_OR_KEYWORD
            if pname == "*":
                continue
            built.append(P(pname, kind, default=default))
        try:
            sigs.append(inspect.Signature(built))
        except ValueError:
            pass
    return sigs


def _key(tobj, tns, name):
    """The torch path a difference is filed under: where torch defines the function, else where it was found."""
    if inspect.isfunction(tobj) and "<" not in tobj.__qualname__:  # where torch defines it
        return f"{tobj.__module__}.{tobj.__qualname__}"
        return f"{mod}.{qual}"
    return f"{tns}.{name}"


def _compare(eobj, tobj, tns, name, owner, method, seen, found, counts):
    marker = (id(getattr(eobj, "__func__", eobj)), id(tobj), method)
    if marker in seen:
        return
    seen.add(marker)
    try:
        esig = inspect.signature(eobj)
    except (TypeError, ValueError):
        counts["no ember signature"] += 1
        return
    tsigs, python_level = _torch_sigs(tobj, tns, name, owner)
    if not tsigs:
        counts["no torch signature"] += 1
        return
    counts["compared"] += 1
    d = differences(esig, tsigs, method)
    if d and not python_level:
        runtime = _pybind_sigs(tobj)
        if runtime and not differences(esig, runtime, method):
            d = []  # the stub's names differ from the ones the C function takes: ember follows the function
    if python_level:  # one signature: the same parameters, in the same order, of the same kinds
        skip = 1 if method else 0
        tp = [(p.name, p.kind) for p in list(tsigs[0].parameters.values())[skip:]]
        ep = [(p.name, p.kind) for p in list(esig.parameters.values())[skip:]]
        if tp != ep:
            d.append(f"parameters ({', '.join(f'{n}:{k.name}' for n, k in ep)}) vs torch's "
                     f"({', '.join(f'{n}:{k.name}' for n, k in tp)})")
    if d:
        found[_key(tobj, tns, name)] = d


def _walk_class(ecls, tcls, tns, seen, found, counts):
    owner = tcls
    if any("__init__" in c.__dict__ for c in ecls.__mro__[:-1]):
        _compare(ecls.__init__, tcls.__init__, f"{tns}.{tcls.__name__}", "__init__", owner, True,
                 seen, found, counts)
    for n in dir(ecls):
        if (n.startswith("_") and n != "__call__") or not hasattr(tcls, n):
            continue
        raw = inspect.getattr_static(ecls, n)
        if isinstance(raw, (staticmethod, classmethod)):
            method = False
        elif inspect.isfunction(raw):
            method = True
        else:
            continue  # properties, attributes
        _compare(getattr(ecls, n), getattr(tcls, n), f"{tns}.{tcls.__name__}", n, owner, method,
                 seen, found, counts)


def _walk(emod, tmod, tns, seen, found, counts, depth=0):
    for n in sorted(dir(emod)):
        if n.startswith("_"):
            continue
        e, t = getattr(emod, n, None), getattr(tmod, n, None)
        if e is None or t is None:
            continue
        if inspect.ismodule(e):
            if e.__name__.startswith("ember.") and inspect.ismodule(t) and depth < 4:
                _walk(e, t, f"{tns}.{n}", seen, found, counts, depth + 1)
        elif isinstance(e, type):
            # (Tensor's methods are test_op_signatures')
            if e.__module__.startswith("ember") and isinstance(t, type) and not issubclass(t, torch.Tensor):
                _walk_class(e, t, tns, seen, found, counts)
        elif callable(e) and tns not in _OP_NAMESPACES:
            _compare(e, t, tns, n, None, False, seen, found, counts)


def walk():
    """Compare every pair; (counts, {torch path: differences})."""
    for m in pkgutil.walk_packages(ember.__path__, "ember."):  # every public module, whatever ran before
        if not any(part.startswith("_") for part in m.name.split(".")[1:]):
            importlib.import_module(m.name)
            try:  # and torch's of the same path (a submodule torch does not import by itself)
                importlib.import_module("torch" + m.name[len("ember"):])
            except Exception:  # noqa: BLE001 -- torch has no such module, or it needs what is not here
                pass
    counts, found = collections.Counter(), {}
    _walk(ember, torch, "torch", set(), found, counts)
    return counts, found


def test_every_public_signature():
    """Every public ember class, constructor, method and non-op function against torch's."""
    counts, found = walk()
    assert counts["compared"] >= 1200, f"only {counts['compared']} signatures compared ({dict(counts)})"
    unexpected = {k: v for k, v in found.items() if k not in DELIBERATE}
    assert not unexpected, "\n".join(f"{k}: {'; '.join(v)}" for k, v in sorted(unexpected.items()))
    stale = [k for k in DELIBERATE if k not in found]
    assert not stale, f"DELIBERATE entries that now agree with torch: {stale}"


def test_c_level_names():
    """The DELIBERATE stub spellings: what torch's parser takes, ember takes; what it refuses, ember refuses."""
    for lib in (torch, ember):
        assert lib.finfo(type=lib.float32).eps == torch.finfo(torch.float32).eps
        assert lib.iinfo(type=lib.int16).max == 2 ** 15 - 1
        g = lib.Generator()
        g.set_state(g.get_state())
        with pytest.raises(TypeError):
            g.set_state(new_state=g.get_state())
        with pytest.raises(TypeError):
            lib.finfo(dtype=lib.float32)
