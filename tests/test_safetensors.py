"""ember.utils.safetensors against safetensors.torch (0.8, on torch 2.13): byte-identical files, every
dtype both ways, the same checks (shared memory, non-contiguous, key and metadata types) and errors."""
import json

import numpy as np
import pytest
import safetensors.torch as st
import torch

import ember
from ember.utils import safetensors as es

DTYPES = ["float64", "int64", "complex64", "float32", "int32", "bfloat16", "float16", "int16", "int8", "uint8",
          "bool"]


def _dicts(seed=0):
    """The same tensors (every dtype, odd shapes: 0-d, empty) as a torch dict and an ember dict."""
    rng = np.random.default_rng(seed)
    shapes = [(2, 3), (), (0, 3), (5,), (1, 2, 2)]
    t, e = {}, {}
    for i, name in enumerate(DTYPES):
        shape = shapes[i % len(shapes)]
        a = rng.integers(0, 2, shape) if name == "bool" else rng.standard_normal(shape) * 10
        key = f"layer{i % 3}.{name}"
        t[key] = torch.tensor(a).to(getattr(torch, name))
        e[key] = ember.tensor(a).to(getattr(ember, name))
    return t, e


def _same(td, ed):
    assert sorted(td) == sorted(ed)
    for k in td:
        assert str(td[k].dtype) == str(ed[k].dtype), k
        assert tuple(td[k].shape) == tuple(ed[k].shape), k
        assert torch.equal(td[k], torch.from_dlpack(ed[k])), k


def _same_layout(ours, theirs):
    """Same header length, same header content, same data bytes."""
    n = int.from_bytes(ours[:8], "little")
    assert ours[:8] == theirs[:8] and ours[8 + n:] == theirs[8 + n:]
    assert json.loads(ours[8:8 + n]) == json.loads(theirs[8:8 + n])


def test_bytes_identical_and_round_trips(tmp_path):
    td, ed = _dicts()
    assert es.save(ed, metadata={"format": "pt"}) == st.save(td, metadata={"format": "pt"})
    assert es.save(ed) == st.save(td)
    meta = {"format": "pt", "note": "ünïcode"}  # several keys: safetensors orders them as its hash map does
    _same_layout(es.save(ed, metadata=meta), st.save(td, metadata=meta))
    _same(td, es.load(st.save(td)))
    _same(st.load(es.save(ed)), ed)
    es.save_file(ed, tmp_path / "e.safetensors", metadata=meta)
    st.save_file(td, tmp_path / "t.safetensors", metadata=meta)
    _same_layout((tmp_path / "e.safetensors").read_bytes(), (tmp_path / "t.safetensors").read_bytes())
    _same(st.load_file(tmp_path / "e.safetensors"), ed)
    loaded = es.load_file(str(tmp_path / "t.safetensors"), device="cpu")
    _same(td, loaded)
    assert list(loaded) == list(st.load_file(tmp_path / "t.safetensors"))  # file order
    # loaded tensors own writable memory
    a, b = loaded["layer0.float64"], loaded["layer1.int64"]
    a.fill_(1)
    assert b.ne(1).any().item() or b.numel() == 0


def test_model_state_dict_to_torch(tmp_path):
    em = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    es.save_file(em.state_dict(), tmp_path / "m.safetensors")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    tm.load_state_dict(st.load_file(tmp_path / "m.safetensors"))
    for k, v in em.state_dict().items():
        assert torch.equal(tm.state_dict()[k], torch.from_dlpack(v.detach()))


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["shared", "tied", "noncontig", "complex128", "not_dict", "not_tensor",
                                  "key_type", "meta_type"])
def test_errors_match(case):
    def make(lib):
        x = lib.arange(8.0)
        save = es.save if lib is ember else st.save
        if case == "shared":
            return save({"x": x, "y": x[2:5]})
        if case == "tied":
            emb = lib.nn.Embedding(4, 3)
            head = lib.nn.Linear(3, 4, bias=False)
            head.weight = emb.weight
            return save({"emb.weight": emb.weight.detach(), "head.weight": head.weight.detach()})
        if case == "noncontig":
            return save({"x": x.reshape(2, 4).t()})
        if case == "complex128":
            return save({"x": lib.ones(2, dtype=lib.complex128)})
        if case == "not_dict":
            return save([x])
        if case == "not_tensor":
            return save({"x": 1})
        if case == "key_type":
            return save({1: x})
        return save({"x": x}, metadata={"a": 1})
    assert _error(ember, make) == _error(torch, make)


def test_disjoint_views_of_one_buffer_save():
    # sharing a buffer is fine when the byte ranges do not overlap (safetensors' rule)
    x, y = ember.arange(8.0), torch.arange(8.0)
    assert es.save({"a": x[:4], "b": x[4:]}) == st.save({"a": y[:4], "b": y[4:]})


@pytest.mark.parametrize("data", [b"12", b"\xff" * 8 + b"{}", b"\x02\x00\x00\x00\x00\x00\x00\x00[]",
                                  b"\x10\x00\x00\x00\x00\x00\x00\x00{}"])
def test_malformed_buffers(data):
    with pytest.raises(Exception) as te:
        st.load(data)
    with pytest.raises(es.SafetensorError):
        es.load(data)
    assert type(te.value).__name__ == "SafetensorError"


def test_truncated_data_and_device():
    ed = {"x": ember.ones(4)}
    data = es.save(ed)
    with pytest.raises(es.SafetensorError):
        es.load(data[:-4])
    with pytest.raises(Exception):
        st.load(data[:-4])
    with pytest.raises(AssertionError, match="not compiled with CUDA"):  # (safetensors.torch: a pin_memory error)
        es.load_file(__file__, device="cuda")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        es.load_file(__file__, device=0)
