"""End-to-end language models: examples/char_lm.py (ember, LSTM and Transformer) and
tests/scripts/word_lm.py, a training script written for PyTorch, run unchanged on ember through
tests/scripts/run_with_ember.py. Each must train (perplexity goes down) in a few tiny epochs; the
word-level script's saved state_dict must load into the same model built with real torch."""
import collections
import importlib
import inspect
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "scripts")


def _run(args, cwd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable] + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("model", ["lstm", "transformer"])
def test_char_lm_example_trains(model, tmp_path):
    out = _run([os.path.join(ROOT, "examples", "char_lm.py"), "--model", model, "--max-chars", "30000",
                "--epochs", "2", "--hidden", "32", "--emb", "16", "--heads", "2", "--seq-len", "32",
                "--samples", "2", "--sample-len", "40"], tmp_path)
    val = [float(v) for v in re.findall(r"val ppl\s+([0-9.]+)", out)]
    train = [float(v) for v in re.findall(r"train ppl\s+([0-9.]+)", out)]
    assert len(val) == 2 and len(train) == 2, out
    assert val[1] < val[0] and train[1] < train[0], out
    assert val[1] < 40  # well below the uniform guess over ~90 characters
    samples = out.split("samples:")[1].strip().splitlines()
    assert len(samples) == 2 and samples[0].startswith("Return") and len(samples[0]) > 30


def _write_corpus(path, vocab_size=400):
    """train/valid/test.txt from stdlib docstrings: lowercase words, rare words as <unk>."""
    lines = []
    for name in ["argparse", "collections", "functools", "itertools", "json", "logging", "os", "pathlib", "re",
                 "textwrap", "typing", "unittest", "subprocess", "threading"]:
        module = importlib.import_module(name)
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if attr.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # typing.io, typing.re
                doc = inspect.getdoc(obj)
            if doc:
                lines.extend(p for p in (re.sub(r"[^a-z0-9]+", " ", para.lower()).strip()
                                         for para in doc.split("\n\n")) if p)
    counts = collections.Counter(w for line in lines for w in line.split())
    keep = {w for w, _ in counts.most_common(vocab_size)}
    lines = [" ".join(w if w in keep else "<unk>" for w in line.split()) for line in lines]
    cut1, cut2 = int(len(lines) * 0.8), int(len(lines) * 0.9)
    for name, part in (("train", lines[:cut1]), ("valid", lines[cut1:cut2]), ("test", lines[cut2:])):
        with open(os.path.join(path, f"{name}.txt"), "w") as f:
            f.write("\n".join(part) + "\n")


def _load_word_lm_with_torch():
    """The script's module with the real torch (for building the same model in torch)."""
    spec = importlib.util.spec_from_file_location("word_lm_torch", os.path.join(SCRIPTS, "word_lm.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", ["LSTM", "Transformer"])
def test_word_lm_pytorch_script_runs_on_ember(model, tmp_path):
    _write_corpus(tmp_path)
    args = ["--data", str(tmp_path), "--model", model, "--emsize", "32", "--nhid", "32", "--nlayers", "2",
            "--epochs", "2", "--bptt", "20", "--batch_size", "10", "--log-interval", "10", "--save",
            str(tmp_path / "model.pt")]
    if model == "Transformer":
        args += ["--lr", "2", "--dropout", "0.1"]
    else:
        args += ["--tied"]
    out = _run([os.path.join(SCRIPTS, "run_with_ember.py"), os.path.join(SCRIPTS, "word_lm.py")] + args, tmp_path)
    train = [float(v) for v in re.findall(r"batches \|.*\| ppl\s+([0-9.]+)", out)]
    val = [float(v) for v in re.findall(r"valid ppl\s+([0-9.]+)", out)]
    ntokens = int(re.search(r"vocabulary (\d+) words", out).group(1))
    assert len(train) >= 4 and len(val) == 2, out
    assert train[-1] < 0.7 * train[0], out  # training perplexity goes down across the two epochs
    assert max(val) < ntokens / 2, out  # far below the uniform guess over the vocabulary
    assert re.search(r"End of training \| test loss\s+[0-9.]+ \| test ppl\s+[0-9.]+", out), out
    # the state_dict ember saved loads, with real torch, into the same model built by real torch
    wl = _load_word_lm_with_torch()
    if model == "Transformer":
        tm = wl.TransformerModel(ntokens, 32, 2, 32, 2, 0.1)
    else:
        tm = wl.RNNModel("LSTM", ntokens, 32, 32, 2, 0.2, tie_weights=True)
    state = torch.load(tmp_path / "model.pt")
    tm.load_state_dict(state)
    assert all(np.isfinite(v.numpy()).all() for v in state.values())
