"""examples/train_digits.py, the README's main job: full settings, >= 97% test accuracy, and its
checkpoint read by real torch into the same architecture giving the same predictions."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("tqdm")

import ember  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "train_digits.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")

# Runs the example as `python examples/train_digits.py ...` would, then proves torch was never imported.
RUNNER = """
import runpy, sys
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules), "the example imported torch"
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Run the example once at its default (full) settings, with the tqdm bars on."""
    tmp = tmp_path_factory.mktemp("train_digits")
    checkpoint = str(tmp / "digits_cnn.pt")
    proc = subprocess.run([sys.executable, "-c", RUNNER, EXAMPLE, "--checkpoint", checkpoint],
                          cwd=str(tmp), env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc, checkpoint


def _example_module():
    spec = importlib.util.spec_from_file_location("_train_digits_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # definitions only: main() runs under __main__
    return module


def test_train_digits_reaches_97_percent(trained):
    proc, checkpoint = trained
    accuracy = float(re.search(r"^test accuracy: ([0-9.]+)$", proc.stdout, re.M).group(1))
    assert accuracy >= 0.97
    epochs = re.findall(r"^epoch +(\d+) +train loss ([0-9.]+) +test loss ([0-9.]+) +test accuracy", proc.stdout, re.M)
    assert [int(e[0]) for e in epochs] == list(range(1, 9))  # the default: 8 epochs
    assert float(epochs[-1][1]) < float(epochs[0][1])  # training loss went down
    assert "reloaded it: test accuracy" in proc.stdout
    assert re.search(r"epoch  1: +\d+%\|.*\| \d+/22 \[.*it/s, loss=[0-9.]+, lr=", proc.stderr), "no tqdm bar"
    assert os.path.getsize(checkpoint) > 0


class TorchDigitsNet(torch.nn.Module):
    """examples/train_digits.py's DigitsNet, written with real torch."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def test_checkpoint_loads_in_torch_with_same_predictions(trained):
    _, path = trained
    example = _example_module()
    saved = torch.load(path)  # weights_only (torch's default): only tensors and plain containers inside
    assert set(saved) == {"model", "epochs", "test_accuracy", "seed"}
    state = saved["model"]
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert state["features.1.num_batches_tracked"].dtype == torch.int64

    torch_model = TorchDigitsNet()
    torch_model.load_state_dict(state)  # strict: the same keys and shapes
    torch_model.eval()
    ember_model = example.DigitsNet()
    ember_model.load_state_dict(ember.load(path)["model"])
    ember_model.eval()

    _, test_set = example.load_data(saved["seed"])
    images, labels = test_set.tensors
    with ember.no_grad():
        ember_logits = ember_model(images).numpy()
    with torch.no_grad():
        torch_logits = torch_model(torch.from_numpy(images.numpy())).numpy()
    np.testing.assert_allclose(ember_logits, torch_logits, rtol=1e-4, atol=1e-4)
    assert (ember_logits.argmax(1) == torch_logits.argmax(1)).all()
    accuracy = (torch_logits.argmax(1) == labels.numpy()).mean()
    assert accuracy == pytest.approx(saved["test_accuracy"]) and accuracy >= 0.97
