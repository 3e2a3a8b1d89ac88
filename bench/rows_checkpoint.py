"""Activation checkpointing rows: peak memory of a deep MLP's training step with and without
torch.utils.checkpoint (each library in its own fresh process, as the ResNet memory row).

The saving is the ratio of the two rows within one library (shown in the notes of the report);
the rows' own ratio compares ember with torch as every measure row does.
"""
import importlib

from bench.harness import row
from bench.rows import _probe


def _smoke(name, model):
    """Minimal mode: build with a small batch and run one step in this process."""
    from bench import training
    step, _ = training.BUILDERS[model](importlib.import_module(name), batch=4)
    step()
    return 0.0


def _memory_row(model):
    def measure(name, smoke):
        if smoke:
            return _smoke(name, model)
        return _probe("memory", name, model)
    return measure


row("peak memory of a deep MLP step (16 blocks)", "system", "measure", "MB", rounds=3,
    note="Linear-LayerNorm-GELU x16, width 512, batch 1024, SGD; peak RSS of the step over the baseline")(
    _memory_row("deep_mlp"))
row("peak memory of a deep MLP step, blocks checkpointed", "system", "measure", "MB", rounds=3,
    note="the same step with every block in torch.utils.checkpoint(use_reentrant=False)")(
    _memory_row("deep_mlp_checkpoint"))
