"""torch's ModuleInfo database as the oracle: every module ember has, built, loaded and run on both.

For each ModuleInfo in `torch.testing._internal.common_modules.module_db` whose class ember.nn has, each
ModuleInput of `module_inputs_func(..., dtype=float64, requires_grad=True, training=...)` (training mode,
and eval mode too where the ModuleInfo says they differ; all of them unless EMBER_MODULEINFO_INPUTS caps
them): the same constructor arguments, `.to(float64)`, torch's state_dict loaded into the ember module
(tensors copied through NumPy), forward on the same inputs, then outputs, buffers after forward, and the
gradients of the inputs and parameters under one random upstream gradient compared with assert_close's
float64 tolerances (ten times for gradients).

What fails today is listed in tests/moduleinfo_expected_failures.txt and must match exactly (see
tests/test_opinfo.py for the mechanism); `python -m tests.test_moduleinfo` prints the summary.
"""
import os
import sys
import warnings
import zlib

import numpy as np
import pytest
import torch
from torch.testing._internal.common_modules import module_db

import ember
from tests._torchdb import (Converter, Unsupported, check_against_expected, compare, flatten, raises_like,
                            read_expected, short, within_cap, write_expected)

EXPECTED_PATH = os.path.join(os.path.dirname(__file__), "moduleinfo_expected_failures.txt")
MAX_INPUTS = int(os.environ.get("EMBER_MODULEINFO_INPUTS", "1000000"))


def module_key(info):
    return info.name + ("." + info.variant_test_name if getattr(info, "variant_test_name", "") else "")


def ember_class(info):
    return getattr(ember.nn, info.module_cls.__name__, None)


def _seed(key):
    return zlib.crc32(key.encode())


def _floating(t):
    return t.is_floating_point() or t.is_complex()


def run_input(info, ecls, minput, training, rng):
    """One ModuleInput: construct, load torch's state, forward, compare outputs, buffers and gradients."""
    conv = Converter()
    cargs, ckwargs = minput.constructor_input.args, minput.constructor_input.kwargs
    try:
        t_mod = info.module_cls(*cargs, **ckwargs).to(torch.float64)
    except Exception as exc:
        raises_like(exc, lambda: ecls(*conv(cargs), **conv(ckwargs)), "constructor")
        return
    try:
        e_mod = ecls(*conv(cargs), **conv(ckwargs)).to(ember.float64)
    except Exception as exc:
        raise AssertionError(f"constructor: ember raised {short(exc)}") from exc
    t_mod.train(training)
    e_mod.train(training)
    fargs, fkwargs = minput.forward_input.args, minput.forward_input.kwargs
    if any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in t_mod.parameters()):
        with torch.no_grad():  # a Lazy module: torch's state_dict exists once a forward has materialized it
            t_mod(*fargs, **fkwargs)
    state = {k: Converter()(v.detach()) for k, v in t_mod.state_dict().items()}
    e_mod.load_state_dict(state)
    e_fargs, e_fkwargs = conv(fargs), conv(fkwargs)
    try:
        t_out = t_mod(*fargs, **fkwargs)
    except Exception as exc:
        raises_like(exc, lambda: e_mod(*e_fargs, **e_fkwargs), "forward")
        return
    try:
        e_out = e_mod(*e_fargs, **e_fkwargs)
    except Exception as exc:
        raise AssertionError(f"forward: ember raised {short(exc)}") from exc
    compare(t_out, e_out)
    t_bufs = dict(t_mod.named_buffers())
    e_bufs = dict(e_mod.named_buffers())
    assert sorted(t_bufs) == sorted(e_bufs), f"buffers: torch {sorted(t_bufs)} vs ember {sorted(e_bufs)}"
    for name in t_bufs:
        compare(t_bufs[name], e_bufs[name], f"buffer {name}")
    _check_grads(t_mod, e_mod, fargs, fkwargs, conv, t_out, e_out, rng)


def _check_grads(t_mod, e_mod, fargs, fkwargs, conv, t_out, e_out, rng):
    t_inputs = [t for t in flatten([list(fargs), list(fkwargs.values())])
                if isinstance(t, torch.Tensor) and t.requires_grad]
    t_params = [p for _, p in t_mod.named_parameters() if p.requires_grad]
    e_named = dict(e_mod.named_parameters())
    e_params = [e_named[n] for n, p in t_mod.named_parameters() if p.requires_grad]
    t_outs = [o for o in flatten(t_out) if isinstance(o, torch.Tensor) and o.requires_grad and _floating(o)]
    e_outs = [o for o in flatten(e_out) if isinstance(o, ember.Tensor) and o.requires_grad and _floating(o)]
    assert len(t_outs) == len(e_outs), f"grad: {len(t_outs)} differentiable outputs in torch, {len(e_outs)} in ember"
    leaves = t_inputs + t_params
    if not t_outs or not leaves:
        return
    ups = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    t_grads = torch.autograd.grad(t_outs, leaves, [torch.from_numpy(u) for u in ups], allow_unused=True)
    e_leaves = [conv.memo[id(t)][1] for t in t_inputs] + e_params
    e_grads = ember.autograd.grad(e_outs, e_leaves, [ember.from_numpy(u) for u in ups], allow_unused=True)
    names = [f"input {i}" for i in range(len(t_inputs))] + [n for n, p in t_mod.named_parameters() if p.requires_grad]
    for name, tg, eg, leaf in zip(names, t_grads, e_grads, leaves):
        if tg is None:
            tg = torch.zeros_like(leaf)
        if eg is None:
            eg = ember.zeros(tuple(leaf.shape), dtype=ember.float64)
        compare(tg, eg, f"grad of {name}", grad_tol=True)


def run_module(info):
    """All ModuleInputs of one ModuleInfo: {failure key: reason}, [passed, failed]."""
    key = module_key(info)
    ecls = ember_class(info)
    if ecls is None:
        return {f"{key}|missing": "ember.nn lacks the module"}, [0, 0]
    failures, tally = {}, [0, 0]
    modes = (True, False) if info.train_and_eval_differ else (True,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for training in modes:
            mode = "train" if training else "eval"
            torch.manual_seed(_seed(key + mode))
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=True,
                                             training=training)
            rng = np.random.default_rng(_seed(key))
            for i, minput in enumerate(inputs[:MAX_INPUTS]):
                if minput.forward_input is None:
                    continue
                torch.manual_seed(_seed(f"{key}{mode}{i}"))  # parameter init; torch's state is loaded anyway
                try:
                    run_input(info, ecls, minput, training, rng)
                    tally[0] += 1
                except Unsupported:
                    continue
                except Exception as exc:
                    failures[f"{key}|{mode}|{i}"] = short(exc)
                    tally[1] += 1
    return failures, tally


EXPECTED = read_expected(EXPECTED_PATH)


@pytest.mark.parametrize("info", module_db, ids=[module_key(m) for m in module_db])
def test_moduleinfo(info):
    failures, _ = run_module(info)
    check_against_expected(failures, within_cap(EXPECTED, MAX_INPUTS), module_key(info), EXPECTED_PATH)


HEADER = """# ModuleInfo inputs ember fails today (tests/test_moduleinfo.py); one line per input: module|mode|index.
# `module|missing` means ember.nn lacks the module. Keep this list exact: remove a line when it passes.
# Regenerate after fixes: EMBER_UPDATE_EXPECTED=1 python -m tests.test_moduleinfo
"""


def main():
    """Run the whole sweep, print a per-module summary, rewrite the expected list when asked."""
    only = sys.argv[1:]
    torch.set_num_threads(1)  # as tests/conftest.py does
    all_failures, passed, failed, full, partial, missing = {}, 0, 0, [], [], []
    for info in module_db:
        key = module_key(info)
        if only and not any(key.startswith(o) for o in only):
            continue
        failures, (p, f) = run_module(info)
        all_failures.update(failures)
        if f"{key}|missing" in failures:
            missing.append(key)
            continue
        passed, failed = passed + p, failed + f
        (partial if failures else full).append(key)
        print(f"{key:40s} passed {p:3d} failed {f:3d}")
        for k in list(failures)[:3]:
            print(f"    {k}: {failures[k]}")
    print(f"\nmodules: {len(full)} pass every input, {len(partial)} fail some, {len(missing)} missing")
    print(f"  inputs passed {passed} failed {failed} ({100 * passed / max(passed + failed, 1):.1f}%)")
    print("missing:", " ".join(missing))
    if os.environ.get("EMBER_UPDATE_EXPECTED") and not only:
        assert MAX_INPUTS >= 10 ** 6, "write the list from an uncapped run (unset EMBER_MODULEINFO_INPUTS)"
        write_expected(EXPECTED_PATH, HEADER, all_failures)


if __name__ == "__main__":
    main()
