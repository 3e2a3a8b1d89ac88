"""torch's Python-level signatures, read from torch itself: the oracle for keyword names.

C-level functions and Tensor methods have no inspect.signature; their Python-level
signatures (overloads included) come from torch's generated stubs (_VariableFunctions.pyi,
__init__.pyi's TensorBase, _nn.pyi), the first line of their docstrings, and the ATen
schemas (self -> input for functions, dropped for methods). Python-level APIs use
inspect.signature. Every source only proposes names: the keyword tests let real torch
decide which spelling it accepts.
"""
import ast
import functools
import inspect
import os
import re
import sys

import torch

P = inspect.Parameter
_NO_DEFAULT = P.empty
UNKNOWN = object()  # a default the stub does not spell as a literal
_STUBS = os.path.join(os.path.dirname(torch.__file__), "_C")


def _signature(args):
    """inspect.Signature from an ast.arguments node (defaults kept where they are literals)."""
    params = []
    pos = args.posonlyargs + args.args
    defaults = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(pos, defaults):
        params.append(P(a.arg, P.POSITIONAL_OR_KEYWORD, default=_literal(d)))
    if args.vararg is not None:
        params.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append(P(a.arg, P.KEYWORD_ONLY, default=_literal(d)))
    if args.kwarg is not None:
        params.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def _literal(node):
    if node is None:
        return _NO_DEFAULT
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return UNKNOWN
    return UNKNOWN if value is Ellipsis else value  # a stub's `= ...`


def _defs(body):
    out = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(_signature(node.args))
    return out


@functools.lru_cache(None)
def _tree(filename):
    """A stub file parsed once: {None: its module-level defs, class name: that class's defs}."""
    tree = ast.parse(open(os.path.join(_STUBS, filename)).read())
    out = {None: _defs(tree.body)}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.setdefault(node.name, _defs(node.body))
    return out


def _stub(filename, cls=None):
    return _tree(filename).get(cls, {})


def _from_docstring(doc, name):
    """The `name(a, b=1, *, out=None) -> Tensor` line that opens most of torch's C-level docstrings."""
    if not doc:
        return []
    m = re.search(r"(?:^|\s|\.)" + re.escape(name) + r"\((.*?)\)\s*->", doc)
    if m is None:
        return []
    text = m.group(1).replace("\\", "")
    try:
        tree = ast.parse(f"def f({text}): pass")
    except SyntaxError:
        return []
    return [_signature(tree.body[0].args)]


def _from_schemas(aten_name, method):
    """Signatures from the ATen schemas of `aten::aten_name` (every overload, out= variants too)."""
    sigs = []
    for s in torch._C._jit_get_schemas_for_operator("aten::" + aten_name):
        if not any("Tensor" in str(r.type) for r in s.returns):
            continue  # TorchScript's scalar overloads (acos.int(int a)): not Python-level
        params = []
        seen_kw = False
        has_out = False
        for a in s.arguments:
            name = a.name
            if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write:
                if not has_out:  # an out= variant's outputs: Python takes them as one out=
                    params.append(("out", P.KEYWORD_ONLY, None))
                    has_out = True
                continue
            if name == "self":
                if method:
                    params.append(("self", P.POSITIONAL_OR_KEYWORD, _NO_DEFAULT))
                    continue
                name = "input"
            kind = P.KEYWORD_ONLY if a.kwarg_only else P.POSITIONAL_OR_KEYWORD
            seen_kw = seen_kw or a.kwarg_only
            default = _NO_DEFAULT
            if a.has_default_value():
                default = a.default_value
                if not isinstance(default, (int, float, bool, str, type(None))):
                    default = UNKNOWN
            params.append((name, kind, default))
        if method and (not params or params[0][0] != "self"):
            continue
        try:
            sigs.append(inspect.Signature([P(n, k, default=d) for n, k, d in params]))
        except ValueError:  # a name Python cannot spell (`from`), defaults out of order
            continue
    return sigs


_ATEN_PREFIX = {"torch": "", "torch.linalg": "linalg_", "torch.special": "special_", "torch.fft": "fft_",
                "torch.nn.functional": ""}


@functools.lru_cache(None)
def signatures(namespace, name, proposals=True):
    """torch's Python-level signatures for `namespace.name` (namespace "Tensor" for methods, whose
    signatures start with self); empty when torch exposes none. A Python-level API has its
    inspect.signature. A C-level one has its generated stub's overloads; with proposals=True also
    its ATen schemas' spellings (candidates the behavioural tests let torch accept or refuse), with
    proposals=False those only where no stub exists (the authoritative names, for static checks)."""
    if namespace == "Tensor":
        obj = torch.Tensor.__dict__.get(name)
        if inspect.isfunction(obj):  # a Python-level method of torch.Tensor
            return _python_level(obj)
        obj = getattr(torch.Tensor, name, None)
        sigs = list(_stub("__init__.pyi", "TensorBase").get(name, []))
        if not sigs and obj is not None:
            sigs = _from_docstring(getattr(obj, "__doc__", None), name)
            sigs = [inspect.Signature([P("self", P.POSITIONAL_OR_KEYWORD)] + list(s.parameters.values()))
                    for s in sigs]
        return sigs + _from_schemas(name, True) if proposals or not sigs else sigs
    module = _module(namespace)
    obj = getattr(module, name, None)
    if obj is None:
        return []
    try:
        inspect.signature(obj)
        return _python_level(obj)
    except (TypeError, ValueError):
        pass
    sigs = []
    if namespace == "torch":
        sigs += _stub("_VariableFunctions.pyi").get(name, [])
    if namespace == "torch.nn.functional":
        sigs += _stub("_nn.pyi").get(name, []) + _stub("_VariableFunctions.pyi").get(name, [])
    if namespace in _ATEN_PREFIX:
        schemas = _from_schemas(_ATEN_PREFIX[namespace] + name, False)
        sigs = [_fill_defaults(s, schemas) for s in sigs] + (schemas if proposals or not sigs else [])
    # the parser's names are the schema's; a docstring (linalg's `A`) only where no schema says
    return sigs or _from_docstring(obj.__doc__, name)


_ENUM_DEFAULTS = ("reduction", "dtype", "layout", "memory_format")  # ints in a schema, not in Python


def _fill_defaults(sig, schemas):
    """A stub's `= ...` defaults (_nn.pyi writes gelu(approximate: str = ...)) read from the schema."""
    known = {}
    for s in schemas:
        for p in s.parameters.values():
            if p.default is not P.empty and p.default is not UNKNOWN and p.name not in _ENUM_DEFAULTS:
                known.setdefault(p.name, p.default)
    params = [p.replace(default=known[p.name]) if p.default is UNKNOWN and p.name in known else p
              for p in sig.parameters.values()]
    return sig.replace(parameters=params)


def _python_level(obj):
    """[inspect.signature(obj)], or [] for a dispatcher that only says (*args, **kwargs)."""
    sig = inspect.signature(obj)
    params = sig.parameters.values()
    if params and all(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params):
        target = _dispatch_target(obj)
        return [] if target is None else _python_level(target)
    return [sig]  # (no parameters at all is a signature: is_available())


def _dispatch_target(obj):
    """The function a boolean_dispatch (F.max_pool2d, torch.unique, torch.lu) calls by default; its
    signature is the one torch documents (the dispatch only picks the return_indices=True twin)."""
    names = getattr(getattr(obj, "__code__", None), "co_freevars", ())
    if "if_false" not in names or "if_true" not in names:
        return None
    return obj.__closure__[names.index("if_false")].cell_contents
    return [sig]


def _module(namespace):
    mod = torch
    for part in namespace.split(".")[1:]:
        mod = getattr(mod, part)
    return mod


PUBLIC_NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")


@functools.lru_cache(None)
def public_names():
    """id(callable) -> (namespace, name) for torch's public functions (first namespace wins)."""
    out = {}
    for ns in PUBLIC_NAMESPACES:
        mod = _module(ns)
        for n in dir(mod):
            if n.startswith("_"):
                continue
            obj = getattr(mod, n, None)
            if callable(obj) and not isinstance(obj, type):
                out.setdefault(id(obj), (ns, n))
    return out


def locate(func):
    """(namespace, name) of a callable seen by a TorchFunctionMode, or None when it is not public."""
    hit = public_names().get(id(func))
    if hit is not None:
        return hit
    qual = getattr(func, "__qualname__", "") or ""
    name = getattr(func, "__name__", None)
    if qual.startswith(("TensorBase.", "Tensor.")) and name and not name.startswith("__"):
        return ("Tensor", name)
    if qual.startswith("_VariableFunctionsClass.") and name and not name.startswith("_"):
        return ("torch", name)
    return None


# ---- static comparison of an ember signature with torch's -----------------------------------

def _params(sig, method):
    ps = list(sig.parameters.values())
    return ps[1:] if method and ps else ps


def differences(esig, tsigs, method):
    """How ember's signature departs from torch's overloads: a list of short strings (empty when it
    agrees). Checked: every keyword torch takes is a keyword of ember's; ember's positional parameters
    agree in order with one of torch's overloads; what torch makes keyword-only ember does not take
    positionally; shared defaults are equal (where torch's stub spells them as literals)."""
    eps = _params(esig, method)
    e_names = {p.name: p for p in eps if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    e_var_kw = any(p.kind == P.VAR_KEYWORD for p in eps)
    e_pos = [p.name for p in eps if p.kind in (P.POSITIONAL_OR_KEYWORD, P.POSITIONAL_ONLY)]
    e_varargs = any(p.kind == P.VAR_POSITIONAL for p in eps)
    out = []
    t_pos_lists = []
    for ts in tsigs:
        tps = _params(ts, method)
        t_pos = [p.name for p in tps if p.kind in (P.POSITIONAL_OR_KEYWORD, P.POSITIONAL_ONLY)]
        t_pos_lists.append((t_pos, any(p.kind == P.VAR_POSITIONAL for p in tps)))
        for p in tps:
            if p.kind not in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY) or p.name == "self":
                continue
            if p.name not in e_names and not e_var_kw:
                out.append(f"no keyword {p.name}=")
            elif p.name in e_names:
                e = e_names[p.name]
                positional_somewhere = any(q.name == p.name and q.kind == P.POSITIONAL_OR_KEYWORD
                                           for t in tsigs for q in _params(t, method))
                if p.kind == P.KEYWORD_ONLY and e.kind == P.POSITIONAL_OR_KEYWORD and not positional_somewhere:
                    out.append(f"{p.name} is keyword-only in torch, positional in ember")
                defaults = [q.default for t in tsigs for q in _params(t, method) if q.name == p.name]
                if (p.default is not P.empty and p.default is not UNKNOWN and e.default is not P.empty
                        and not any(_same_default(d, e.default) for d in defaults)):
                    out.append(f"default {p.name}={p.default!r} in torch, {e.default!r} in ember")
                if p.default is not P.empty and e.default is P.empty:
                    out.append(f"{p.name}= has a default in torch, is required in ember")
    if e_pos and not any(e_pos[:len(t)] == t[:len(e_pos)] for t, _ in t_pos_lists if t) and not (
            e_varargs and any(v for _, v in t_pos_lists)):
        best = max((t for t, _ in t_pos_lists), key=len, default=[])
        out.append(f"positional order ({', '.join(e_pos)}) vs torch's ({', '.join(best)})")
    longest = max((t for t, _ in t_pos_lists), key=len, default=[])
    if len(longest) > len(e_pos) and not e_varargs:
        out.append(f"takes {len(e_pos)} positional arguments, torch {len(longest)} ({', '.join(longest)})")
    return sorted(set(out))


def _same_default(a, b):
    """Equal defaults, torch's against ember's: dtypes and functions (F.relu) by name, each library's
    default_generator (random_split's)."""
    if a is torch.default_generator:
        return b is getattr(sys.modules.get("ember"), "default_generator", None)
    if callable(a) and callable(b):
        return getattr(a, "__name__", a) == getattr(b, "__name__", b)
    if type(a) in (tuple, list) and type(b) in (tuple, list):
        return list(a) == list(b)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(b, (torch.dtype,)) or type(b).__module__.startswith("ember"):
        return str(a).replace("torch.", "") == str(b).replace("torch.", "").replace("ember.", "")
    return type(a) in (type(b), bool, int, float) and a == b
