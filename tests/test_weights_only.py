"""ember.load(weights_only=True) accepts exactly what torch 2.13's default allow-list accepts (checkpoints
written by torch.save) and refuses the rest with torch's UnpicklingError text."""
import collections
import datetime
import fractions
import pickle

import numpy as np
import pytest
import torch

import ember

CASES = {
    "set": {1, 2}, "frozenset": frozenset({1}), "ordered": collections.OrderedDict(a=torch.ones(1)),
    "counter": collections.Counter("aab"), "defaultdict": collections.defaultdict(list), "tuple": (1, (2, 3)),
    "complex": 1 + 2j, "size": torch.Size([2, 3]), "dtype": torch.float16, "bf16": torch.bfloat16,
    "device": torch.device("cpu"), "slice": slice(1, 5, 2), "range": range(3), "bytes": b"abc",
    "bytearray": bytearray(b"ab"), "big_int": 2 ** 70, "layout": torch.strided, "type_int": int,
    "param": torch.nn.Parameter(torch.ones(2)), "fraction": fractions.Fraction(1, 3),
    "date": datetime.date(2020, 1, 1), "numpy_scalar": np.float64(1.5), "numpy_array": np.ones(2),
    "optimizer_like": {"state": {0: {"step": torch.tensor(1.0)}},
                       "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]},
}


def _load(lib, path):
    try:
        obj = lib.load(path, weights_only=True)
    except Exception as e:  # the type and the text are compared
        return type(e).__name__, str(e)
    return "ok", repr(obj).replace("ember.", "torch.")


@pytest.mark.parametrize("name", sorted(CASES))
def test_allow_list_matches_torch(name, tmp_path):
    path = tmp_path / f"{name}.pt"
    torch.save(CASES[name], path)
    t = _load(torch, path)
    e = _load(ember, path)
    assert e[0] == t[0]
    if t[0] == "ok":
        assert e[1] == t[1]
    else:
        assert e[0] == "UnpicklingError" and e[1] == t[1]
        assert isinstance(pytest.raises(pickle.UnpicklingError, ember.load, path, weights_only=True).value,
                          pickle.UnpicklingError)
        assert ember.load(path, weights_only=False) is not None


def test_safe_globals_allow_a_refused_global(tmp_path):
    path = tmp_path / "f.pt"
    torch.save(fractions.Fraction(1, 3), path)
    for lib in (torch, ember):
        with lib.serialization.safe_globals([fractions.Fraction]):
            assert lib.load(path, weights_only=True) == fractions.Fraction(1, 3)
        with pytest.raises(pickle.UnpicklingError):
            lib.load(path, weights_only=True)


def test_get_unsafe_globals_in_checkpoint(tmp_path):
    path = tmp_path / "mixed.pt"
    torch.save({"a": fractions.Fraction(1, 3), "b": collections.defaultdict(list), "c": torch.ones(2),
                "d": {1, 2}, "e": slice(1, 2), "f": collections.OrderedDict()}, path)
    expected = set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    assert set(ember.serialization.get_unsafe_globals_in_checkpoint(path)) == expected
    assert expected == {"collections.defaultdict", "fractions.Fraction", "builtins.slice", "builtins.list"}
    clean = tmp_path / "clean.pt"
    torch.save({"w": torch.ones(2), "n": 3}, clean)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(str(clean)) == []


def test_parameter_class_is_an_allowed_global(tmp_path):
    """A checkpoint naming the class torch.nn.parameter.Parameter itself loads with weights_only in both, and
    get_unsafe_globals_in_checkpoint lists nothing; a file that is not a zip checkpoint is a ValueError there."""
    path = tmp_path / "cls.pt"
    torch.save({"cls": torch.nn.Parameter}, path)
    assert torch.load(path, weights_only=True)["cls"] is torch.nn.Parameter
    assert ember.load(path, weights_only=True)["cls"] is ember.nn.Parameter
    assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == []
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
            lib.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "junk.pt")
