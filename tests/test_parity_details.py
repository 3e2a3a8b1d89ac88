"""Small behaviours found to differ from torch while the nn, fx, data and distributions modules were rewritten in
ember's own structure (2026-11-30), each compared with torch here."""
import sys
import warnings

import pytest
import torch

import ember

LIBS = (torch, ember)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the error is the observation
        return type(e).__name__, str(e)


def _same(fn):
    got = [_outcome(lambda: fn(lib)) for lib in LIBS]
    assert got[0] == got[1], got
    return got[0]


def test_bilinear_with_no_input_features():
    assert _same(lambda lib: repr(lib.nn.Bilinear(0, 2, 3)))[0] == "ValueError"
    _same(lambda lib: repr(lib.nn.Bilinear(2, 0, 3)))


@pytest.mark.parametrize("make", [lambda lib: lib.nn.Conv2d(0, 4, 3), lambda lib: lib.nn.Conv1d(2, 3, 0),
                                  lambda lib: lib.nn.ConvTranspose2d(0, 2, 3)])
def test_conv_with_an_empty_weight_draws_its_bias_from_a_zero_interval(make):
    """fan_in 0: the bias comes from U(0, 0), zeros, and the generator advances as torch's."""
    states = []
    for lib in LIBS:
        lib.manual_seed(7)
        conv = make(lib)
        states.append((conv.bias.tolist(), lib.rand(3).tolist()))
    assert states[0] == states[1]


def test_conv_transpose_quotes_an_output_size_as_given():
    def call(lib):
        conv = lib.nn.ConvTranspose2d(1, 1, 3, stride=2)
        return conv(lib.zeros(1, 1, 4, 4), output_size=(20, 20)).shape
    assert _same(call)[0] == "ValueError"


def test_avg_pool1d_is_an_avg_pool():
    assert isinstance(ember.nn.AvgPool1d(2), ember.nn.modules.pooling._AvgPoolNd)
    assert isinstance(torch.nn.AvgPool1d(2), torch.nn.modules.pooling._AvgPoolNd)


def test_binomial_nan_probability_and_half_precision():
    def nan_prob(lib):
        lib.manual_seed(0)
        d = lib.distributions.Binomial(5, probs=lib.tensor([float("nan"), 0.5]), validate_args=False)
        return [str(v) for v in d.sample().tolist()]
    _same(nan_prob)
    for dtype in ("float16", "bfloat16"):
        _same(lambda lib: lib.distributions.Binomial(lib.tensor([5.0], dtype=getattr(lib, dtype)),
                                                     probs=lib.tensor([0.5], dtype=getattr(lib, dtype))).sample())


def test_fx_boxed_run():
    def run(lib, boxed):
        gm = lib.fx.symbolic_trace(lib.nn.Sequential(lib.nn.ReLU()))
        return [round(v, 6) for v in lib.fx.Interpreter(gm).boxed_run(boxed)[0].tolist()]
    for boxed in (lambda lib: [lib.tensor([-1.0, 2.0])], lambda lib: (lib.tensor([1.0]),), lambda lib: []):
        _same(lambda lib: run(lib, boxed(lib)))


def test_multi_head_attention_reports_the_query_projection_first():
    """key is value and both the query's and the key/value's projections have mismatched shapes: torch
    projects (and fails on) the query first."""
    def call(lib):
        q, kv = lib.zeros(2, 3, 6), lib.zeros(5, 3, 8)  # the key/value's features do not fit the weight either
        return lib.nn.functional.multi_head_attention_forward(
            q, kv, kv, 6, 2, lib.zeros(18, 4), lib.zeros(18), None, None, False, 0.0, lib.zeros(6, 6), None,
            need_weights=False)[0]
    assert _same(call)[0] == "RuntimeError"


def test_parametrization_right_inverse_of_several_tensors_rejects_a_non_tensor():
    def call(lib):
        class Split(lib.nn.Module):
            def forward(self, a, b):
                return a + b

            def right_inverse(self, w):
                return (w, 1.0)
        return lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Split())
    assert _same(call)[0] != "ok"


def test_hub_load_runs_the_entry_point_with_its_directory_importable(tmp_path):
    """An entry point that imports a sibling module lazily, inside the function, finds it (torch keeps the
    directory on sys.path during the call)."""
    (tmp_path / "helper_mod_for_hub_test.py").write_text("VALUE = 41\n")
    (tmp_path / "hubconf.py").write_text(
        "dependencies = []\n\n\ndef answer():\n    import helper_mod_for_hub_test\n"
        "    return helper_mod_for_hub_test.VALUE + 1\n")
    got = []
    for lib in LIBS:
        sys.modules.pop("helper_mod_for_hub_test", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got.append(lib.hub.load(str(tmp_path), "answer", source="local"))
    assert got == [42, 42]


def test_subset_getitems_passes_the_nested_result_through():
    def call(lib):
        class Short(lib.utils.data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return i

            def __getitems__(self, indices):
                return [0]  # fewer items than asked: torch's Subset does not check
        return lib.utils.data.Subset(Short(), [1, 2]).__getitems__([0, 1])
    assert _same(call) == ("ok", [0])


@pytest.mark.parametrize("scope", ["global", "module"])
def test_always_call_hook_failing_after_a_failed_forward_warns_with_its_scope(scope):
    got = []
    for lib in LIBS:
        def bad_hook(module, args, result):
            raise ValueError("hook fails")

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise RuntimeError("forward fails")
        m = Boom()
        if scope == "global":
            handle = lib.nn.modules.module.register_module_forward_hook(bad_hook, always_call=True)
        else:
            handle = m.register_forward_hook(bad_hook, always_call=True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(RuntimeError, match="forward fails"):
                    m(lib.zeros(1))
        finally:
            handle.remove()
        got.append([str(w.message) for w in caught])
    assert got[0] == got[1] and len(got[0]) == 1
