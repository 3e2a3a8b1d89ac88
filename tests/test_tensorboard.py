"""ember.utils.tensorboard.SummaryWriter against torch.utils.tensorboard's: the same calls into two log dirs,
both read back with TensorBoard's event reader, every event equal but its wall time (tags, steps, scalars,
histogram protos, images with their PNGs decoded and compared pixel for pixel, text, hparams sessions, PR-curve
tensors, custom-scalar layouts, tensors, audio, meshes), the same directory layout (add_scalars' runs,
add_hparams' run, the embedding projector's files) and the same projector files byte for byte."""
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import tensorboard  # noqa: E402,F401  (ember[tensorboard], in the test extra: a missing one fails, not skips)
from PIL import Image  # noqa: E402  (the tensorboard package requires Pillow)
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

import ember  # noqa: E402
from ember.utils.tensorboard import SummaryWriter as EmberWriter  # noqa: E402


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "hist": rng.standard_normal((40, 5)).astype(np.float32),
        "hist_int": rng.integers(-20, 20, (100,)),
        "chw": rng.random((3, 6, 7)).astype(np.float32),
        "hwc_u8": rng.integers(0, 256, (5, 4, 3)).astype(np.uint8),
        "hw": (rng.random((4, 6)) * 1.4 - 0.2).astype(np.float64),  # out of [0, 1]: clipped
        "chw1": rng.random((1, 5, 5)).astype(np.float32),
        "nchw": rng.random((11, 3, 4, 5)).astype(np.float32),
        "nhwc": rng.integers(0, 256, (3, 4, 5, 1)).astype(np.uint8),
        "rgba": rng.random((4, 4, 4)).astype(np.float32),
        "boxes": np.array([[1.0, 1.0, 5.0, 4.0], [0.0, 2.0, 3.0, 5.0]], np.float32),
        "labels": rng.integers(0, 2, (64,)),
        "preds": rng.random((64,)).astype(np.float32),
        "weights": rng.random((64,)),
        "emb": rng.standard_normal((6, 3)).astype(np.float32),
        "label_img": rng.random((6, 3, 4, 4)).astype(np.float32),
        "tensor": rng.standard_normal((2, 3)).astype(np.float64),
        "tensor_h": rng.standard_normal((3,)).astype(np.float16),
        "audio": np.sin(np.linspace(0, 20, 200)) * 1.2,
        "verts": rng.random((1, 5, 3)).astype(np.float32),
        "faces": rng.integers(0, 5, (1, 4, 3)).astype(np.int32),
        "colors": rng.integers(0, 256, (1, 5, 3)).astype(np.uint8),
    }


def _scenario(lib, Writer, root):
    """The same calls on `lib`'s SummaryWriter: values as `lib` tensors, NumPy arrays and Python numbers."""
    a = _arrays()
    T = {k: lib.from_numpy(v.copy()) for k, v in a.items()}
    with Writer(os.path.join(root, "run"), purge_step=3, filename_suffix=".x") as w:
        w.add_scalar("loss", 0.5, 0)
        w.add_scalar("loss", T["tensor"][0, 0], 1)
        w.add_scalar("loss", lib.tensor([2.25]), 2)
        w.add_scalar("loss", np.float32(1.5), 3)
        w.add_scalar("acc", a["tensor"][1, 1:2], 4, new_style=True)
        w.add_scalar("acc", 1 / 3, 5, new_style=True, double_precision=True)
        w.add_scalar("bf", lib.tensor(1.3, dtype=lib.bfloat16), 6)
        w.add_scalars("group/a", {"x": 1.0, "y": T["tensor"][0, 1]}, 0)
        w.add_scalars("group/a", {"x": 2, "z": 3.5}, 1)
        w.add_histogram("h", T["hist"], 0)
        w.add_histogram("h", a["hist"], 1, bins="auto")
        w.add_histogram("h", T["hist_int"], 2, bins=7)
        w.add_histogram("h", T["hist"], 3, bins="fd", max_bins=4)
        w.add_histogram("h", T["hist"], 4, max_bins=100)
        w.add_histogram("h", np.array([0.25, 0.5]), 5, bins=[0, 0.3, 0.6, 1.0])
        w.add_histogram_raw("raw", -1.0, 3.0, 6, 4.0, 12.0, [0.0, 1.0, 3.0], [1, 3, 2], 0)
        w.add_image("img/chw", T["chw"], 0)
        w.add_image("img/hwc_u8", T["hwc_u8"], 1, dataformats="HWC")
        w.add_image("img/hw", a["hw"], 2, dataformats="HW")
        w.add_image("img/chw1", T["chw1"], 3)
        w.add_image("img/rgba", T["rgba"], 4, dataformats="HWC")
        w.add_images("imgs/nchw", T["nchw"], 0)
        w.add_images("imgs/nhwc", T["nhwc"], 0, dataformats="NHWC")
        w.add_image_with_boxes("boxes", T["chw"], T["boxes"], 0, labels=["cat", "dog"])
        w.add_image_with_boxes("boxes", T["chw"], T["boxes"], 1, rescale=2, labels="one")
        w.add_text("notes", "hello **world**", 0)
        w.add_text("notes", "ünïcödé", 1)
        w.add_pr_curve("pr", T["labels"], T["preds"], 0)
        w.add_pr_curve("pr", a["labels"], T["preds"], 1, num_thresholds=200, weights=a["weights"])
        w.add_pr_curve("pr", T["labels"], a["preds"], 2, num_thresholds=10)
        w.add_pr_curve_raw("prraw", a["preds"][:5], a["preds"][5:10], a["preds"][10:15], a["preds"][15:20],
                           a["preds"][20:25], a["preds"][25:30], 0, num_thresholds=5)
        w.add_custom_scalars({"cat": {"lines": ["Multiline", ["loss", "acc"]],
                                      "band": ["Margin", ["loss", "lo", "hi"]]}})
        w.add_custom_scalars_multilinechart(["loss"], category="c2", title="t2")
        w.add_custom_scalars_marginchart(["a", "b", "c"])
        w.add_tensor("t64", T["tensor"], 0)
        w.add_tensor("t16", T["tensor_h"], 1)
        w.add_tensor("ti", T["hist_int"][:4], 2)
        w.add_audio("snd", T["audio"], 0, sample_rate=8000)
        w.add_mesh("mesh", T["verts"], colors=T["colors"], faces=T["faces"], config_dict={"camera": {"fov": 75}},
                   global_step=0)
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "adam", "nest": True, "none": None, "t": lib.tensor([0.5])},
                      {"hp/acc": 0.9, "hp/loss": T["tensor"][1, 0]},
                      hparam_domain_discrete={"opt": ["adam", "sgd"], "bs": [16, 32]}, run_name="hp", global_step=7)
        w.add_embedding(T["emb"], metadata=list("abcdef"), label_img=T["label_img"], global_step=2, tag="e/m%b")
        w.add_embedding(a["emb"], metadata=[[i, i * i] for i in range(6)], metadata_header=["i", "sq"])
        w.flush()
        w.add_scalar("after_flush", 1, 9)
        assert w.get_logdir() == os.path.join(root, "run")
    w.close()  # (a second close does nothing)


def _read(root):
    """{relative path: events (event files) or bytes (other files)} of everything under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            if "tfevents" in f:
                events = [event_pb2.Event.FromString(r) for r in RawEventFileLoader(path).Load()]
                suffix = ".x" if f.endswith(".x") else ""  # (add_hparams' run does not get filename_suffix)
                out[os.path.join(os.path.dirname(rel), "EVENTS" + suffix)] = events
            else:
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
    return out


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)))


def test_same_events_and_files(tmp_path):
    _scenario(torch, TorchWriter, str(tmp_path / "torch"))
    _scenario(ember, EmberWriter, str(tmp_path / "ember"))
    t_files, e_files = _read(str(tmp_path / "torch")), _read(str(tmp_path / "ember"))
    assert sorted(e_files) == sorted(t_files)
    assert os.path.join("run", "group_a_x", "EVENTS.x") in t_files  # add_scalars' runs
    assert os.path.join("run", "hp", "EVENTS") in t_files
    assert os.path.join("run", "00002", "e%2fm%25b", "sprite.png") in t_files
    kinds = set()
    for name in sorted(t_files):
        t, e = t_files[name], e_files[name]
        if "EVENTS" not in name:
            if name.endswith(".png"):
                assert np.array_equal(_pixels(e), _pixels(t)), name
            else:
                assert e == t, name
            continue
        assert len(e) == len(t), name
        for i, (te, ee) in enumerate(zip(t, e)):
            te.ClearField("wall_time")
            ee.ClearField("wall_time")
            for tv, ev in zip(te.summary.value, ee.summary.value):
                kinds.add(tv.WhichOneof("value") or "metadata")
                if tv.HasField("image"):  # pixel equality, then the rest of the proto
                    assert np.array_equal(_pixels(ev.image.encoded_image_string),
                                          _pixels(tv.image.encoded_image_string)), (name, i, tv.tag)
                    tv.image.ClearField("encoded_image_string")
                    ev.image.ClearField("encoded_image_string")
            assert ee == te, f"{name} event {i}:\nember {ee}\ntorch {te}"
    assert kinds >= {"simple_value", "tensor", "histo", "image", "audio", "metadata"}


def test_default_log_dir_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with TorchWriter(comment="_c") as tw, EmberWriter(comment="_c") as ew:
        pattern = r"runs/[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_.+_c"
        assert re.fullmatch(pattern, tw.get_logdir()) and re.fullmatch(pattern, ew.get_logdir())
        assert os.path.basename(ew.get_logdir()).split("_", 2)[2] == os.path.basename(tw.get_logdir()).split("_", 2)[2]
        assert os.path.isdir(ew.get_logdir())
        for w, lib in ((tw, torch), (ew, ember)):
            with pytest.raises(AssertionError):
                w.add_scalar("s", lib.ones(2))
            with pytest.raises(ValueError):
                w.add_histogram_raw("r", 0, 1, 1, 1, 1, [1, 2], [1])
            with pytest.raises(TypeError):
                w.add_hparams([("lr", 1)], {})
            with pytest.raises(ValueError):
                w.add_hparams({"lr": [1]}, {})
            with pytest.raises(AssertionError):
                w.add_custom_scalars_marginchart(["a", "b"])
            with pytest.raises(AssertionError):
                w.add_image("i", lib.ones(2, 2), dataformats="CHW")
            with pytest.raises(NotImplementedError):
                w.add_scalar("s", [1.0])
    with pytest.raises(NotImplementedError, match="add_graph"):
        EmberWriter(str(tmp_path / "g")).add_graph(ember.nn.Linear(2, 2), ember.ones(1, 2))


def test_video_gif(tmp_path):
    """torch's add_video needs moviepy (absent here: it prints and writes an empty image); ember's is a Pillow
    GIF whose frames are the video tiled as torch tiles it."""
    v = np.random.default_rng(1).integers(0, 2, (3, 4, 3, 5, 6)).astype(np.uint8) * 255  # 2 colours: no dither
    with EmberWriter(str(tmp_path)) as w:
        w.add_video("vid", ember.from_numpy(v), 0, fps=5)
    (f,) = [f for f in os.listdir(tmp_path) if "tfevents" in f]
    (ev,) = [event_pb2.Event.FromString(r) for r in RawEventFileLoader(str(tmp_path / f)).Load()][1:]
    img = ev.summary.value[0].image
    assert (img.height, img.width, img.colorspace) == (5, 24, 3)  # 3 videos padded to 4, in torch's 1 x 4 grid
    gif = Image.open(io.BytesIO(img.encoded_image_string))
    assert gif.n_frames == 4 and gif.info["duration"] == 200
    gif.seek(1)
    assert np.array_equal(np.asarray(gif.convert("RGB"))[:5, :6], v[0, 1].transpose(1, 2, 0))
    assert np.asarray(gif.convert("RGB"))[:, 18:].max() == 0  # the padding video


def test_figure(tmp_path):
    """add_figure (one figure, a list as a grid) against torch's: the same Agg rendering, the same pixels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figures():
        made = []
        for k in range(2):
            fig = plt.figure(figsize=(1, 1), dpi=20)
            plt.plot([0, 1], [1, k])
            made.append(fig)
        return made

    for name, Writer in (("torch", TorchWriter), ("ember", EmberWriter)):
        with Writer(str(tmp_path / name)) as w:
            one, two = figures()
            w.add_figure("fig", one, 0, close=False)
            w.add_figure("figs", [one, two], 1)
        assert not plt.get_fignums()  # closed by the second call
    t, e = _read(str(tmp_path / "torch"))["EVENTS"], _read(str(tmp_path / "ember"))["EVENTS"]
    assert len(t) == len(e) == 3
    for te, ee in zip(t[1:], e[1:]):
        ti, ei = te.summary.value[0].image, ee.summary.value[0].image
        assert (ei.height, ei.width, ee.step) == (ti.height, ti.width, te.step)
        assert np.array_equal(_pixels(ei.encoded_image_string), _pixels(ti.encoded_image_string))


def test_onnx_graph(tmp_path, monkeypatch):
    """add_onnx_graph against torch's, onnx.load stood in for (the onnx package is not a test dependency)."""
    from types import ModuleType, SimpleNamespace as NS

    def value(name, dims, elem):
        shape = NS(dim=[NS(dim_value=d) for d in dims])
        return NS(name=name, type=NS(tensor_type=NS(elem_type=elem, shape=shape)))

    attr = NS(ListFields=lambda: [(None, "alpha"), (None, 0.5)])
    graph = NS(input=[value("x", [1, 3], 1)], output=[value("y", [1, 2], 1)],
               node=[NS(output=["h"], op_type="Gemm", input=["x", "w"], attribute=[attr, attr]),
                     NS(output=["y"], op_type="Relu", input=["h"], attribute=[])])
    onnx = ModuleType("onnx")
    onnx.load = lambda path: NS(graph=graph)
    monkeypatch.setitem(sys.modules, "onnx", onnx)
    for name, Writer in (("torch", TorchWriter), ("ember", EmberWriter)):
        with Writer(str(tmp_path / name)) as w:
            w.add_onnx_graph("model.onnx")
    t, e = _read(str(tmp_path / "torch"))["EVENTS"], _read(str(tmp_path / "ember"))["EVENTS"]
    for te, ee in zip(t, e):
        te.ClearField("wall_time")
        ee.ClearField("wall_time")
    assert len(t) == 2 and t[1].graph_def and e == t


def test_import_is_lazy_and_names_the_extra():
    code = ("import sys, ember; assert 'tensorboard' not in sys.modules; sys.modules['tensorboard'] = None\n"
            "try:\n    import ember.utils.tensorboard\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'ember[tensorboard]'" in out
