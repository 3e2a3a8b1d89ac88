"""ember.save/ember.load against real torch: both directions, dtypes, sharing, safety."""
import io
import os
import pickle
import subprocess
import sys
import types
import warnings
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember

from ._stories import check_story

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128"]


def _np(t):
    """Raw bytes-equivalent view of a tensor's values (bfloat16 via uint16 bits)."""
    if isinstance(t, torch.Tensor):
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy()
        return t.numpy()
    arr = t.numpy()
    if arr.dtype.name == "bfloat16":
        return arr.view(np.int16)
    return arr


def _make_pair(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dtype.startswith("complex"):
        a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    elif dtype.startswith(("int", "uint")):
        a = rng.integers(0, 100, shape).astype(dtype)
    else:
        a = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bfloat16":
        t = torch.from_numpy(a).to(torch.bfloat16)
        e = ember.from_numpy(a).to(ember.bfloat16)
    elif dtype == "float16":
        t = torch.from_numpy(a.astype(np.float16))
        e = ember.from_numpy(a.astype(np.float16))
    else:
        t = torch.from_numpy(a.copy())
        e = ember.from_numpy(a.copy())
    return t, e


@pytest.mark.parametrize("dtype", DTYPES)
def test_ember_to_torch_dtypes_and_strides(dtype, tmp_path):
    t, e = _make_pair(dtype)
    obj = {"full": e, "row": e[1], "col": e[:, 2], "t": e.t(), "scalar": e[0, 0]}
    path = tmp_path / "e.pt"
    ember.save(obj, path)
    back = torch.load(path)
    for k, v in obj.items():
        assert str(back[k].dtype) == repr(v.dtype)
        assert tuple(back[k].shape) == tuple(v.shape)
        assert back[k].stride() == v.stride()
        np.testing.assert_array_equal(_np(back[k]), _np(v))
    # sharing is preserved: all views share the storage of 'full'
    assert back["row"].untyped_storage().data_ptr() == back["full"].untyped_storage().data_ptr()
    back["full"].view(-1)[5] = back["full"].view(-1)[0]
    assert back["row"].view(-1)[1] == back["full"].view(-1)[5]


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_to_ember_dtypes_and_strides(dtype, tmp_path):
    t, e = _make_pair(dtype)
    obj = {"full": t, "row": t[1], "col": t[:, 2], "t": t.t(), "nested": [t[0], (t[2], {"x": t})]}
    path = tmp_path / "t.pt"
    torch.save(obj, path)
    back = ember.load(path)
    for k in ("full", "row", "col", "t"):
        assert repr(back[k].dtype) == str(obj[k].dtype)
        assert tuple(back[k].shape) == tuple(obj[k].shape)
        assert back[k].stride() == obj[k].stride()
        np.testing.assert_array_equal(_np(back[k]), _np(obj[k]))
    back["full"][1, 0] = back["full"][0, 0]
    assert bool(back["row"][0] == back["full"][0, 0])  # shared storage
    assert back["nested"][1][1]["x"] is not None


def test_state_dict_roundtrip_with_torch_module(tmp_path):
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    torch.save(m.state_dict(), tmp_path / "m.pt")
    sd = ember.load(tmp_path / "m.pt")
    assert list(sd.keys()) == list(m.state_dict().keys())
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())
    ember.save(sd, tmp_path / "e.pt")
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    m2.load_state_dict(torch.load(tmp_path / "e.pt"))
    x = torch.randn(5, 4)
    torch.testing.assert_close(m(x), m2(x))


def test_python_values_and_optimizer_like_state(tmp_path):
    obj = {"step": 7, "lr": 0.1, "name": "adam", "betas": (0.9, 0.999), "flags": [True, None],
           "state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.zeros(2, 2)}}, "dtype": ember.float64,
           "size": ember.Size([2, 3])}
    ember.save(obj, tmp_path / "o.pt")
    t = torch.load(tmp_path / "o.pt")
    assert t["step"] == 7 and t["betas"] == (0.9, 0.999) and t["dtype"] is torch.float64
    assert t["size"] == torch.Size([2, 3])
    back = ember.load(tmp_path / "o.pt")
    assert back["dtype"] is ember.float64 and back["flags"] == [True, None]
    assert float(back["state"][0]["step"]) == 3.0


def test_file_objects_both_ways():
    buf = io.BytesIO()
    ember.save({"a": ember.arange(4)}, buf)
    buf.seek(0)
    assert torch.load(buf)["a"].tolist() == [0, 1, 2, 3]
    buf = io.BytesIO()
    torch.save({"a": torch.arange(4)}, buf)
    buf.seek(0)
    assert ember.load(buf)["a"].tolist() == [0, 1, 2, 3]


def test_mmap_load(tmp_path):
    torch.save({"w": torch.arange(1000.)}, tmp_path / "big.pt")
    back = ember.load(tmp_path / "big.pt", mmap=True)
    assert back["w"].sum().item() == sum(range(1000))


class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    evil = _Evil()
    evil.marker = marker
    torch.save({"x": torch.ones(1)}, tmp_path / "ok.pt")
    # rebuild the archive with an evil data.pkl
    src = zipfile.ZipFile(tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "evil.pt", "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("data.pkl"):
                data = pickle.dumps({"x": evil}, protocol=2)
            dst.writestr(info.filename, data)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        ember.load(tmp_path / "evil.pt")
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "evil.pt", weights_only=True)
    assert not marker.exists()


def test_add_safe_globals(tmp_path):
    torch.save({"x": 1}, tmp_path / "a.pt")
    ember.serialization.clear_safe_globals()
    assert ember.load(tmp_path / "a.pt") == {"x": 1}


def test_truncated_and_corrupt_files(tmp_path):
    ember.save({"w": ember.arange(10000.)}, tmp_path / "c.pt")
    raw = (tmp_path / "c.pt").read_bytes()
    (tmp_path / "trunc.pt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RuntimeError, match="trunc.pt"):
        ember.load(tmp_path / "trunc.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(pickle.UnpicklingError, match="junk.pt"):  # as torch: not even a pickle
        ember.load(tmp_path / "junk.pt")


def test_failed_save_leaves_old_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.ones(3)}, path)

    class Boom:
        def __reduce__(self):
            raise RuntimeError("boom in the middle of saving")

    with pytest.raises(RuntimeError, match="boom"):
        ember.save({"w": ember.zeros(3), "bad": Boom()}, path)
    assert ember.load(path)["w"].tolist() == [1.0, 1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temporary file left


def test_killed_save_leaves_old_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.ones(3)}, path)
    code = (
        "import os, ember\n"
        "class Kill:\n"
        "    def __reduce__(self):\n"
        "        os._exit(9)\n"
        f"ember.save({{'w': ember.zeros(3), 'k': Kill()}}, {str(path)!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == 9
    assert ember.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_loader_works_without_torch(tmp_path):
    torch.save({"w": torch.arange(3.)}, tmp_path / "t.pt")
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import ember\n"
        f"d = ember.load({str(tmp_path / 't.pt')!r})\n"
        "assert 'torch' not in sys.modules\n"
        "print(d['w'].tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[0.0, 1.0, 2.0]"


def test_plain_pickle_of_tensors():
    x = ember.arange(6.).reshape(2, 3).requires_grad_()
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.tolist() == x.tolist() and y.dtype is ember.float32
    for t in (ember.tensor(5.0), ember.tensor(3, dtype=ember.int64), x.t(), ember.zeros(0, 3), x[1, ::2]):
        back = pickle.loads(pickle.dumps(t))  # shapes kept (a 0-d tensor came back 1-d before)
        assert back.shape == t.shape and back.tolist() == t.tolist()


def test_legacy_format_written_by_torch(tmp_path):
    x = torch.arange(12.).reshape(3, 4)
    obj = {"a": x, "row": x[1], "t": x.t(), "i": torch.tensor([1, 2]), "bf": torch.ones(2, dtype=torch.bfloat16),
           "sd": torch.nn.Linear(2, 3).state_dict()}
    torch.save(obj, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    back = ember.load(tmp_path / "old.pt")
    np.testing.assert_array_equal(back["a"].numpy(), x.numpy())
    assert back["t"].stride() == x.t().stride()
    assert back["bf"].dtype is ember.bfloat16
    np.testing.assert_array_equal(back["sd"]["weight"].numpy(), obj["sd"]["weight"].numpy())
    back["a"][1, 0] = 100.0
    assert back["row"][0].item() == 100.0  # storage sharing survives
    raw = (tmp_path / "old.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(raw[:-10])
    with pytest.raises(RuntimeError, match="cut.pt"):
        ember.load(tmp_path / "cut.pt")


def test_requires_grad_survives_both_ways(tmp_path):
    """A leaf's requires_grad is part of the checkpoint (torch keeps it through save/load)."""
    a = np.arange(6.0).reshape(2, 3)
    for flag in (True, False):
        torch.save(torch.tensor(a, requires_grad=flag), tmp_path / "t.pt")
        e = ember.load(tmp_path / "t.pt")
        assert e.requires_grad is flag and e.tolist() == a.tolist()
        ember.save(ember.tensor(a, requires_grad=flag), tmp_path / "e.pt")
        assert torch.load(tmp_path / "e.pt").requires_grad is flag
        assert ember.load(tmp_path / "e.pt").requires_grad is flag


@pytest.mark.parametrize("cut", [1, 8])
def test_legacy_checkpoint_cut_inside_its_last_storage(tmp_path, cut):
    """A legacy file whose last storage lacks bytes (a whole number of elements or not): RuntimeError, as torch."""
    torch.save(torch.arange(100.0), tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    (tmp_path / "cut.pt").write_bytes((tmp_path / "old.pt").read_bytes()[:-cut])
    with pytest.raises(RuntimeError):
        torch.load(tmp_path / "cut.pt")
    with pytest.raises(RuntimeError, match="cut.pt"):
        ember.load(tmp_path / "cut.pt")


def test_plain_pickle_is_not_a_legacy_checkpoint(tmp_path):
    """A file of ordinary pickles fails the legacy magic-number check: RuntimeError naming it, as torch's does."""
    (tmp_path / "p.pt").write_bytes(pickle.dumps({"a": 1}) + pickle.dumps(1001) + pickle.dumps(3))
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="magic number"):
            lib.load(tmp_path / "p.pt", weights_only=False)


def test_legacy_checkpoint_cut_inside_its_pickle(tmp_path):
    """Cut before its storages: a RuntimeError naming the file, raised from None (no unpickler traceback chained)."""
    torch.save({"a": torch.arange(12.0), "i": torch.tensor([1, 2])}, tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    raw = (tmp_path / "old.pt").read_bytes()
    for cut in (40, len(raw) // 2):
        (tmp_path / "cut.pt").write_bytes(raw[:cut])
        with pytest.raises(RuntimeError, match="cut.pt") as info:
            ember.load(tmp_path / "cut.pt")
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_tensor_python_attributes_load_from_torch(tmp_path):
    """torch pickles a tensor with Python attributes (or a subclass) through _rebuild_from_type_v2
    with the attributes as state: they come back on ember's tensor, and the type is rebuilt."""
    t = torch.arange(3.0)
    t.note, t.scale = "kept", 2.5
    torch.save({"t": t}, tmp_path / "attrs.pt")
    loaded = ember.load(tmp_path / "attrs.pt", weights_only=False)["t"]
    assert type(loaded) is ember.Tensor and (loaded.note, loaded.scale) == ("kept", 2.5)
    np.testing.assert_array_equal(loaded.numpy(), t.numpy())
    plain = torch.arange(2.0)
    torch.save(plain, tmp_path / "plain.pt")
    assert not ember.load(tmp_path / "plain.pt").__dict__  # no state: nothing added
    # the rebuild hook itself, as a checkpoint names it (torch._tensor._rebuild_from_type_v2), given a
    # Parameter type: both libraries return that type with the state applied
    from torch._tensor import _rebuild_from_type_v2 as torch_rebuild
    ember_rebuild = ember.serialization._torch_global("torch._tensor", "_rebuild_from_type_v2")
    for lib, rebuild in [(torch, torch_rebuild), (ember, ember_rebuild)]:
        r = rebuild(lambda: lib.ones(2), lib.nn.Parameter, (), {"tag": 1})
        assert type(r) is lib.nn.Parameter and r.tag == 1, lib.__name__


def test_non_leaf_saves_and_pickles_as_torch(tmp_path):
    """torch.save and pickle of a tensor computed with grad keep its values and load as a leaf that requires
    grad (torch refuses only deepcopy); both libraries read each other's file."""
    for lib in (torch, ember):
        y = lib.tensor([1.0, -2.0], requires_grad=True) * 3
        lib.save({"y": y}, tmp_path / f"{lib.__name__}.pt")
        back = pickle.loads(pickle.dumps(y))
        assert back.requires_grad and back.is_leaf and back.tolist() == [3.0, -6.0]
    for saved, loader in [(torch, ember), (ember, torch)]:
        y = loader.load(tmp_path / f"{saved.__name__}.pt")["y"]
        assert y.requires_grad and y.is_leaf and y.tolist() == [3.0, -6.0]


def test_save_emits_no_warning(tmp_path):
    """A plain save warns in neither library (ember warns only when asked for the legacy format)."""
    import warnings
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.save({"w": lib.ones(2)}, tmp_path / "w.pt")


def test_zip64_checkpoint_reads_in_torch(tmp_path, monkeypatch):
    """A checkpoint past the plain zip limits (65535 records, 2 GiB) is written with zip64 records, which torch
    reads: the record limit is lowered here so that a few tensors cross it (zipfile reads it at run time)."""
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 4)
    values = [np.full(3, i, dtype=np.float32) for i in range(6)]
    ember.save([ember.tensor(v) for v in values], tmp_path / "many.pt")
    loaded = torch.load(tmp_path / "many.pt")
    assert len(loaded) == 6 and all(np.array_equal(t.numpy(), v) for t, v in zip(loaded, values))


# ---- the ember-only tests above, told again on torch (issue 19) -----------------------------------------------

def test_truncated_and_corrupt_files_raise_like_torch(tmp_path):
    """test_truncated_and_corrupt_files' kinds of damage: torch's exception types (a zip cut short, bytes that are
    not a pickle, a pickle that is not a checkpoint), with and without weights_only. (A zip cut in the middle of
    its data makes torch raise OSError from its reader; ember's RuntimeError names the file: not compared.)"""
    torch.save({"w": torch.arange(10000.)}, tmp_path / "c.pt")
    raw = (tmp_path / "c.pt").read_bytes()
    (tmp_path / "short.pt").write_bytes(raw[:100])
    (tmp_path / "tiny.pt").write_bytes(raw[:10])
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint at all")
    (tmp_path / "magic.pt").write_bytes(pickle.dumps(123))
    for name in ("short.pt", "tiny.pt", "junk.pt", "magic.pt"):
        for kwargs in ({}, {"weights_only": False}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(Exception) as te:
                    torch.load(tmp_path / name, **kwargs)
            with pytest.raises(Exception) as ee:
                ember.load(tmp_path / name, **kwargs)
            assert type(ee.value) is type(te.value), (name, kwargs, ee.value, te.value)


def test_plain_pickle_of_tensors_like_torch():
    """test_plain_pickle_of_tensors on both libraries: values, dtype, flags and what is not kept (grad_fn). (A view
    unpickles contiguous in ember; torch keeps its storage and strides: a known difference, not compared.)"""
    def story(lib):
        x = lib.arange(6.).reshape(2, 3).requires_grad_()
        y = pickle.loads(pickle.dumps(x))
        z = pickle.loads(pickle.dumps(x * 2))
        v = pickle.loads(pickle.dumps(lib.arange(6.).reshape(2, 3).t()))
        return [y, y.is_leaf, y.grad_fn is None, z, z.is_leaf, v, type(y).__name__]
    check_story(story)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("protocol", [2, 3, 4, 5, None, -1])
def test_pickle_protocol_written_and_read_as_torch(protocol):
    """save(pickle_protocol=) pickles with that protocol; under weights_only a framed pickle (protocol >= 4)
    is refused as torch's unpickler refuses it; both libraries read each other's files alike."""
    outcomes = {}
    for writer in (torch, ember):
        buf = io.BytesIO()
        writer.save({"w": writer.tensor(np.arange(4, dtype=np.float32))}, buf, pickle_protocol=protocol)
        for reader in (torch, ember):
            for weights_only in (True, False):
                buf.seek(0)
                try:
                    got = reader.load(buf, weights_only=weights_only)["w"].tolist()
                except Exception as e:  # noqa: BLE001 (the exception type is compared)
                    got = type(e).__name__
                outcomes[(writer.__name__, reader.__name__, weights_only)] = got
    for (writer, reader, weights_only), got in outcomes.items():
        assert got == outcomes[("torch", "torch", weights_only)], (writer, reader, weights_only, outcomes)


def test_public_functions_pickle_by_their_public_names():
    """Every public function of ember, F, linalg, special and fft unpickles as itself (pickle finds a function by
    module and qualified name, as torch's), so a module holding one (TransformerEncoderLayer.activation is F.relu)
    saves whole and loads back."""
    import ember.fft
    import ember.linalg
    import ember.nn.functional
    import ember.special
    bad = []
    for namespace in (ember, ember.nn.functional, ember.linalg, ember.special, ember.fft):
        for name, fn in vars(namespace).items():
            if not name.startswith("_") and isinstance(fn, types.FunctionType):
                try:
                    if pickle.loads(pickle.dumps(fn)) is not fn:
                        bad.append(f"{namespace.__name__}.{name}")
                except Exception:  # noqa: BLE001 -- listed
                    bad.append(f"{namespace.__name__}.{name}")
    assert not bad, bad[:20]
    layer = ember.nn.TransformerEncoderLayer(8, 2, 16, activation=ember.nn.functional.gelu)
    buffer = io.BytesIO()
    ember.save(layer, buffer)
    buffer.seek(0)
    back = ember.load(buffer, weights_only=False)
    assert back.activation is ember.nn.functional.gelu
    np.testing.assert_array_equal(back.linear1.weight.detach().numpy(), layer.linear1.weight.detach().numpy())
