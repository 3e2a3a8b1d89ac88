"""Run several scripts one after another in this interpreter, each as `__main__`, under real torch.

    python tests/scripts/_run_batch.py SPEC.json RESULT.json

SPEC is a list of {"name": ..., "argv": [script, args...]}; RESULT maps each name to
{"ok": bool, "stdout": str, "error": traceback or ""}. Used for the torch side of
tests/test_scripts.py: importing real torch once (its first optimizer step also imports
torch._dynamo, several seconds) instead of once per script. Each script still gets fresh globals,
its own sys.argv and the default dtype float32; the scripts seed their own random generators.
"""
import contextlib
import io
import json
import os
import runpy
import sys
import traceback


def run_one(argv):
    import torch
    script = os.path.abspath(argv[0])
    out = io.StringIO()
    saved_argv, saved_dtype = sys.argv, torch.get_default_dtype()
    sys.argv = [script] + list(argv[1:])
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
        return {"ok": True, "stdout": out.getvalue(), "error": ""}
    except BaseException:  # SystemExit from argparse included: the script failed
        return {"ok": False, "stdout": out.getvalue(), "error": traceback.format_exc()}
    finally:  # a script's torch.set_default_dtype must not reach the next one
        sys.argv = saved_argv
        torch.set_default_dtype(saved_dtype)


def main(spec_path, result_path):
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    assert torch.__name__ == "torch" and hasattr(torch, "_C"), "expected real PyTorch"
    results = {}
    for entry in spec:
        results[entry["name"]] = run_one(entry["argv"])
    with open(result_path + ".tmp", "w") as f:
        json.dump(results, f)
    os.replace(result_path + ".tmp", result_path)  # readers poll for the final name


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
