"""The generated bad-input sweep (issue 18): every public function of ember's op table that torch also has,
the Tensor methods, and torch.nn.functional / linalg / special / fft, called with a wrong value (None, a
string, a list of strings, a float for an int, a dict, an int list holding a float) in each position and
keyword, with out-of-range dims and with a bad out=, on torch and on ember from the same NumPy inputs.

Each call is classified: `match` (both raise, ember's type is torch's or a subclass, not an internal
error), `same` (both return the same result), and the mismatches `silent` (torch raises, ember returns),
`internal` (ember leaks AttributeError/KeyError/a NumPy exception), `type` (another exception type),
`refused` (torch returns, ember raises), `differs` (both return, different results). Run it as a script
for the counts: `python -m tests._bad_input_sweep [--sample N]`.
"""
import inspect
import signal
import sys
import warnings

import numpy as np
import torch

import ember

BAD = {"None": None, "str": "a", "list-of-str": ["a", "b"], "float": 1.5, "dict": {}, "ints-float": [1, 1.5]}
NAMESPACES = [("torch", torch, ember), ("F", torch.nn.functional, ember.nn.functional),
              ("linalg", torch.linalg, ember.linalg), ("special", torch.special, ember.special),
              ("fft", torch.fft, ember.fft)]
EXTRA = ("can_cast", "promote_types", "result_type", "is_complex", "is_floating_point", "numel", "is_tensor")
# never called: global state, files, processes, printing, what needs a model or a graph to be meaningful
SKIP = {"set_default_dtype", "set_default_device", "set_printoptions", "manual_seed", "seed", "save", "load",
        "compile", "set_num_threads", "set_rng_state", "use_deterministic_algorithms", "from_file",
        "multi_head_attention_forward", "set_grad_enabled", "empty_permuted", "rrelu_", "rrelu"}
RANDOM = ("rand", "normal", "bernoulli", "multinomial", "poisson", "dropout", "exponential", "cauchy", "geometric",
          "uniform", "gumbel", "fractional", "empty", "random", "alpha_dropout", "lowrank")
INTERNAL = (AttributeError, KeyError)
TENSOR_NAMES = {"input", "self", "other", "tensor", "mat1", "mat2", "mat", "vec", "vec1", "vec2", "batch1",
                "batch2", "tensor1", "tensor2", "weight", "target", "A", "B", "x", "y", "end", "exponent", "src",
                "values", "source", "elements", "test_elements", "sorted_sequence", "boundaries", "query", "key",
                "value", "grid", "theta", "x1", "x2", "anchor", "positive", "negative", "input1", "input2"}
INT_NAMES = {"dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "k", "n", "diagonal", "offset", "chunks",
             "sections", "split_size", "split_size_or_sections", "repeats", "groups", "upscale_factor",
             "downscale_factor", "num_classes", "steps", "kernel_size", "output_size", "size", "length", "start",
             "step", "ndim", "q", "correction", "indices_or_sections", "bins", "window_length", "num_samples",
             "pad", "ord", "p", "N", "m", "row", "col", "dims",
             "n_fft", "num_groups"}


_DATA = np.random.RandomState(0).rand(4, 4).astype(np.float32) + 0.5


def _data():
    """A fresh copy of the sweep's 4x4 input (a RandomState per call was half the sweep's time)."""
    return _DATA.copy()


def _fill(lib, name, default):
    """A plausible valid value for parameter `name` (its default when it has one)."""
    if default is not inspect.Parameter.empty:
        return default
    if name in ("index", "indices"):
        return lib.zeros(4, 4, dtype=lib.int64)
    if name == "mask":
        return lib.ones(4, 4, dtype=lib.bool)
    if name in ("tensors", "inputs"):
        return [lib.tensor(_data()), lib.tensor(_data())]
    if name == "dtype":
        return lib.float32
    if name in INT_NAMES:
        return 1
    if name in ("equation",):
        return "ij->ji"
    return lib.tensor(_data())  # TENSOR_NAMES and everything else


def _params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def cases(method_names=None):
    """[(kind, name, position or keyword, label, build)]: build(lib) -> (callable, args, kwargs)."""
    out = []
    for ns, tmod, emod in NAMESPACES:
        names = [n for n in dir(tmod) if not n.startswith("_") and n not in SKIP and hasattr(emod, n)]
        if ns == "torch":
            from ember._ops._registry import namespace
            names = [n for n in names if n in namespace or n in EXTRA]
        for n in sorted(names):
            t, e = getattr(tmod, n), getattr(emod, n)
            if isinstance(t, type) or isinstance(e, type) or not callable(t) or not callable(e):
                continue
            out += _calls_for(ns, n, e, lambda lib, ns=ns, n=n: getattr(_module(lib, ns), n), method=False)
    from ember._ops._registry import ALL_OPS
    for n in sorted(method_names or ALL_OPS):
        if n in SKIP or not hasattr(torch.Tensor, n) or not hasattr(ember.Tensor, n):
            continue
        e = getattr(ember.Tensor, n)
        if not callable(e) or isinstance(inspect.getattr_static(ember.Tensor, n), property):
            continue
        out += _calls_for("Tensor", n, e, None, method=True)
    return out


def _module(lib, ns):
    return {"torch": lib, "F": lib.nn.functional, "linalg": lib.linalg, "special": lib.special, "fft": lib.fft}[ns]


def _calls_for(ns, name, efn, get, method):
    params = _params(efn)
    if params is None:
        return []
    pos = [p for p in params if p.kind is not p.KEYWORD_ONLY][:4]
    kwonly = [p for p in params if p.kind is p.KEYWORD_ONLY]
    required = [p for p in pos if p.default is p.empty]
    out = []

    def builder(k, bad, key=None, extra=None):
        def build(lib):
            fill = [_fill(lib, p.name, p.default) for p in (pos[:k] if key is None else required)]
            kwargs = {} if key is None else {key: bad(lib) if callable(bad) else bad}
            if key is None:
                fill.append(bad(lib) if callable(bad) else bad)
            if method:
                x = fill[0] if fill and isinstance(fill[0], lib.Tensor) else lib.tensor(_data())
                return getattr(x, name), fill[1:], kwargs
            return get(lib), fill, kwargs
        return build
    first = 1 if method else 0
    for k in range(first, len(pos)):
        for label, bad in BAD.items():
            out.append((ns, name, pos[k].name, label, builder(k, bad)))
        if pos[k].name in ("dim", "dim0", "dim1", "start_dim", "end_dim"):
            out.append((ns, name, pos[k].name, "dim-out-of-range", builder(k, 5)))
    for p in kwonly:
        for label, bad in BAD.items():
            if p.name == "out" and label == "None":
                continue
            out.append((ns, name, p.name, label, builder(0, bad, key=p.name)))
        if p.name == "out":
            out.append((ns, name, "out", "out-int8", builder(0, lambda lib: lib.empty(0, dtype=lib.int8), key="out")))
    return out


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def outcome(build, lib):
    """('ok', result) or ('raise', exception) for one call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        try:
            fn, args, kwargs = build(lib)
            return "ok", fn(*args, **kwargs)
        except _Timeout:
            return "timeout", None
        except Exception as e:  # noqa: BLE001 (the exception is what is compared)
            return "raise", e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _builtin_base(cls):
    for c in cls.__mro__:
        if c.__module__ == "builtins":
            return c
    return Exception


def _is_internal(e):
    mod = type(e).__module__ or ""
    return isinstance(e, INTERNAL) or mod.startswith("numpy")


def _same(a, b):
    if isinstance(a, torch.Tensor):
        if not isinstance(b, ember.Tensor) or tuple(a.shape) != tuple(b.shape) or str(a.dtype) != str(b.dtype):
            return False
        if a.layout != torch.strided:  # sparse COO/CSR: the layouts agree, then the dense values
            return str(a.layout) == str(b.layout) and _close(a.to_dense(), b.to_dense())
        return True if a.is_quantized else _close(a, b)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (bool, int, float, complex)):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return str(a) == str(b)


_VALUES = True


def _close(a, b):
    if not _VALUES:
        return True
    ta = a.detach().resolve_conj().resolve_neg().cpu().numpy()
    tb = b.detach().numpy()
    return np.allclose(ta, tb, rtol=1e-4, atol=1e-5, equal_nan=True)


def classify(name, t, e):
    (tk, tv), (ek, ev) = t, e
    if tk == "timeout" or ek == "timeout":
        return "timeout"
    if tk == "raise":
        if ek == "ok":
            return "silent"
        if isinstance(tv, AttributeError) and type(ev) is TypeError:
            return "match"  # torch's Python-level function leaks an AttributeError: ember names the argument
        if _is_internal(ev) and not isinstance(ev, _builtin_base(type(tv))):
            return "internal"
        if not isinstance(ev, _builtin_base(type(tv))):
            return "type"
        return "match"
    if ek == "raise":
        return "refused"
    global _VALUES
    _VALUES = not any(r in name for r in RANDOM)
    return "same" if _same(tv, ev) else "differs"


def sweep(sample=None, seed=0):
    """[(ns, name, param, label, category, torch's outcome, ember's outcome)]; sample: a random subset."""
    signal.signal(signal.SIGALRM, _alarm)
    all_cases = cases()
    if sample is not None and sample < len(all_cases):
        rs = np.random.RandomState(seed)
        all_cases = [all_cases[i] for i in sorted(rs.choice(len(all_cases), sample, replace=False))]
    rows = []
    for ns, name, param, label, build in all_cases:
        t = outcome(build, torch)
        e = outcome(build, ember)
        rows.append((ns, name, param, label, classify(name, t, e), _words(t), _words(e)))
    return rows


def _words(o):
    kind, v = o
    if kind == "raise":
        return f"{type(v).__name__}: {str(v)[:200]}".replace("\n", " ").replace("\t", " ")
    return kind if kind != "ok" else f"ok {type(v).__name__}"


def main(argv):
    sample = int(argv[argv.index("--sample") + 1]) if "--sample" in argv else None
    report(sweep(sample), argv)


def report(rows, argv):
    """The counts per category; with -v, every row that is not a match."""
    import collections
    counts = collections.Counter(r[4] for r in rows)
    print(f"calls: {len(rows)}")
    for k, v in counts.most_common():
        print(f"  {k}: {v}")
    if "-v" in argv:
        for r in rows:
            if r[4] not in ("match", "same"):
                print("\t".join(map(str, r)))


if __name__ == "__main__":
    main(sys.argv)
