"""Op table rows: elementwise ops (unary, binary, comparisons, where/clamp/lerp ...)."""
import math

from .harness import Case as C, T

POS = T((3, 4), low=0.1, high=3.0)
UNIT = T((3, 4), low=-0.9, high=0.9)

CASES = [
    C("add", [(3, 4), (3, 4)], lambda t, x, y: t.add(x, y), gradgrad=True),
    C("add", [(3, 4), (4,)], lambda t, x, y: x + y, id="broadcast"),
    C("add", [(3, 4)], lambda t, x: x + 1.5, id="scalar"),
    C("add", [(3, 4), (3, 4)], lambda t, x, y: t.add(x, y, alpha=2), id="alpha"),
    C("mul", [(2, 3), (3,)], lambda t, x, y: x * y, gradgrad=True),
    C("div", [(2, 3), T((2, 3), low=0.5)], lambda t, x, y: x / y, gradgrad=True),
    C("exp", [(3, 4)], lambda t, x: t.exp(x), gradgrad=True),
    C("log", [POS], lambda t, x: x.log()),
    C("sin", [T((3, 4), noncontig=True)], lambda t, x: t.sin(x), id="noncontig"),
    C("tanh", [(0, 3)], lambda t, x: t.tanh(x), id="empty"),
    C("add", [T((3,), dtype="int32"), T((3,), dtype="int64")], lambda t, x, y: x + y, dtypes=("int",),
      id="int-promote"),
    C("add", [(2, 3), (4, 3)], lambda t, x, y: x + y, error=RuntimeError, id="bad-shapes"),
]
