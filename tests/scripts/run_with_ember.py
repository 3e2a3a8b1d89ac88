"""Run a script written for PyTorch with ember in torch's place, unchanged:

    python tests/scripts/run_with_ember.py SCRIPT [SCRIPT ARGS...]

`import torch` (and torch.nn, torch.nn.functional, torch.optim, torch.utils.data ...) in the script
resolve to the matching ember modules."""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small per-step GEMMs: one BLAS thread per process

import ember  # noqa: E402
import ember.nn.functional  # noqa: E402,F401
import ember.nn.init  # noqa: E402,F401
import ember.nn.utils  # noqa: E402,F401
import ember.optim  # noqa: E402,F401
import ember.utils.data  # noqa: E402,F401

for name, module in list(sys.modules.items()):
    if name == "ember" or name.startswith("ember."):
        sys.modules["torch" + name[len("ember"):]] = module

script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
