"""One library of a bench run in an interpreter of its own (Note [Separate processes] in bench/harness.py).

    python -m bench.worker ember        # or torch; the parent (harness.Worker) talks to it over stdin/stdout

Requests and replies are one JSON object a line:
- {"cmd": "build", "threads": n, "row": NAME} or {..., "model": "resnet", "batch": 32}: set the library's
  threads, build the row (or bench/training.py's model at that batch), warm it up for "warm" seconds;
  reply {"items": items per step};
- {"cmd": "sample", "min_time": s}: gc, then time the built step as harness.time_step does; reply {"seconds": s};
- {"cmd": "exit"}.
An error comes back as {"error": "Type: message"}; the worker stays up for the next row.
"""
import gc
import importlib
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness, training  # noqa: E402
from bench import rows, rows_allocator, rows_checkpoint, rows_extra, rows_func  # noqa: E402,F401 (register rows)


def build(lib, req):
    harness.set_threads(req["threads"], lib)
    if "row" in req:
        r = harness.ROWS[req["row"]]
        step, items = harness._unpack(r, r.fn(lib))
    else:
        step, items = getattr(training, req["model"])(lib, batch=req["batch"])
    harness.time_step(step, req.get("warm", 0.1))
    return step, items


def main():
    lib = importlib.import_module(sys.argv[1])
    replies = sys.stdout
    sys.stdout = sys.stderr  # whatever a row prints stays off the reply channel
    step = None
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["cmd"] == "exit":
                break
            if req["cmd"] == "build":
                step = None
                gc.collect()
                step, items = build(lib, req)
                reply = {"items": items}
            else:
                gc.collect()
                reply = {"seconds": harness.time_step(step, req["min_time"])}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=4)}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
