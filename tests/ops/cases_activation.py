"""Op table rows: activations, through torch.* / Tensor methods and torch.nn.functional."""
import importlib
import warnings

from .harness import Case as C, T

NAN = float("nan")
INF = float("inf")
F32 = ("float32",)
F64 = ("float64",)
INT = ("int64",)
HALF = ("float16", "bfloat16")

WIDE = T((3, 4), low=-4, high=4)
EDGE = T(values=[-INF, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 25.0, INF, NAN], grad=False)
# values exactly on the kinks of the piecewise activations (gradients there follow torch's conventions)
KINKS = T(values=[-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 2.0, -2.0])


def F(t):
    """torch.nn.functional or ember.nn.functional (imported on first use, so a broken nn package
    fails these rows only, not the collection of the whole op table)."""
    return importlib.import_module(t.__name__ + ".nn.functional")


def _fn(name, inp=WIDE, kw=None, gradgrad=False, **opts):
    """F.name(x, **kw)."""
    kw = kw or {}
    return C(f"F.{name}", [inp], lambda t, x, n=name, k=kw: getattr(F(t), n)(x, **k), gradgrad=gradgrad, **opts)


def _inplace(name, kw=None, **opts):
    """F.name(x.clone(), inplace=True) returns the (modified) clone."""
    kw = kw or {}

    def fn(t, x, n=name, k=kw):
        y = x.clone()
        r = getattr(F(t), n)(y, inplace=True, **k)
        return r is y, r
    return C(f"F.{name}", [WIDE], fn, id="inplace", **opts)


def _implicit_softmax(t, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F(t).softmax(x), F(t).log_softmax(x), F(t).softmin(x)


CASES = [
    # ---- relu and the piecewise-linear family ----------------------------------------------------
    C("relu", [WIDE], lambda t, x: (t.relu(x), x.relu(), F(t).relu(x)), gradgrad=True),
    C("relu", [EDGE], lambda t, x: t.relu(x), id="edge"),
    C("relu", [KINKS], lambda t, x: t.relu(x), id="kinks"),
    C("relu", [T((3, 4), low=-5, high=5)], lambda t, x: t.relu(x), dtypes=("uint8", "int8", "int64"), id="int"),
    C("relu", [WIDE], lambda t, x: x.clone().relu_(), gradgrad=True, id="inplace-method"),
    C("relu", [WIDE], lambda t, x: t.relu_(x.clone()), id="inplace-fn"),
    C("relu", [(4,)], lambda t, x: t.relu(x), dtypes=("bool",), error=RuntimeError, id="bool"),
    C("relu", [(4,)], lambda t, x: t.relu(x), dtypes=("complex64",), error=NotImplementedError, id="complex"),
    C("relu", [(4,)], lambda t, x: x.relu_(), error=RuntimeError, id="inplace-leaf"),
    C("relu", [(0, 3)], lambda t, x: t.relu(x), id="empty"),
    C("relu", [T((3, 4), noncontig=True)], lambda t, x: t.relu(x), id="noncontig"),
    C("relu", [WIDE], lambda t, x: t.relu(x), dtypes=HALF, grad=False, id="half"),
    _inplace("relu"),
    _fn("relu6", gradgrad=True),
    _fn("relu6", KINKS, id="kinks"),
    _inplace("relu6"),
    _fn("hardtanh", kw=dict(min_val=-0.5, max_val=2.0), gradgrad=True),
    _fn("hardtanh", KINKS, id="kinks"),
    C("F.hardtanh", [T((3, 4), low=-3, high=3)], lambda t, x: F(t).hardtanh(x), dtypes=("int8", "int64"),
      id="int"),
    C("F.hardtanh", [T((3,), dtype="uint8")], lambda t, x: F(t).hardtanh(x, -1.0), dtypes=INT,
      error=RuntimeError, id="uint8-negative"),
    C("F.hardtanh", [T((3,), dtype="uint8")], lambda t, x: F(t).hardtanh(x, 0.0, 4.0), dtypes=INT, id="uint8-zero"),
    C("F.hardtanh_", [WIDE], lambda t, x: F(t).hardtanh_(x.clone(), -1.5, 1.5)),
    _inplace("hardtanh"),
    _fn("leaky_relu", gradgrad=True),
    _fn("leaky_relu", kw=dict(negative_slope=0.3), id="slope"),
    _fn("leaky_relu", EDGE, id="edge"),
    _inplace("leaky_relu", kw=dict(negative_slope=0.2)),
    C("F.leaky_relu_", [WIDE], lambda t, x: F(t).leaky_relu_(x.clone(), 0.1)),
    C("F.leaky_relu", [(3,)], lambda t, x: F(t).leaky_relu(x), dtypes=INT, error=NotImplementedError, id="int"),
    C("threshold", [WIDE], lambda t, x: (t.threshold(x, 0.5, -2.0), F(t).threshold(x, -1.0, 7.0)),
      gradgrad=True),
    C("threshold", [KINKS], lambda t, x: F(t).threshold(x, 0.5, 2.0), id="kinks"),
    C("threshold", [T((3, 4), low=-5, high=5)], lambda t, x: t.threshold(x, 1, 9), dtypes=INT, id="int"),
    C("threshold", [WIDE], lambda t, x: (t.threshold_(x.clone(), 0.0, 1.0), F(t).threshold_(x.clone(), 1.0, 0.0)),
      id="inplace"),
    _inplace("threshold", kw=dict(threshold=0.1, value=20.0)),
    C("hardshrink", [WIDE], lambda t, x: (t.hardshrink(x), x.hardshrink(1.0), F(t).hardshrink(x, 0.3)),
      gradgrad=True),
    C("hardshrink", [KINKS], lambda t, x: x.hardshrink(0.5), id="kinks"),
    _fn("softshrink", gradgrad=True),
    _fn("softshrink", EDGE, kw=dict(lambd=1.0), id="edge"),
    _fn("softshrink", KINKS, id="kinks"),
    C("F.softshrink", [(3,)], lambda t, x: F(t).softshrink(x, -0.5), error=RuntimeError, id="negative-lambda"),
    _fn("tanhshrink", gradgrad=True),
    _fn("softsign", gradgrad=True),

    # ---- exponential-linear family ----------------------------------------------------------------
    _fn("elu", gradgrad=True),
    _fn("elu", kw=dict(alpha=0.5), gradgrad=True, id="alpha"),
    _fn("elu", KINKS, gradgrad=True, id="kinks"),
    _fn("elu", EDGE, id="edge"),
    _inplace("elu"),
    C("F.elu_", [WIDE], lambda t, x: F(t).elu_(x.clone(), 2.0)),
    C("selu", [WIDE], lambda t, x: (t.selu(x), F(t).selu(x)), gradgrad=True),
    C("selu", [WIDE], lambda t, x: (t.selu_(x.clone()), F(t).selu(x.clone(), inplace=True)), id="inplace"),
    C("celu", [WIDE], lambda t, x: (t.celu(x), F(t).celu(x, alpha=0.7)), gradgrad=True),
    C("celu", [WIDE], lambda t, x: (t.celu_(x.clone(), 1.5), F(t).celu_(x.clone())), id="inplace"),
    C("celu", [(3,)], lambda t, x: t.celu(x, 0.0), error=RuntimeError, id="alpha-zero"),
    _fn("elu", (3, 4), dtypes=INT, error=NotImplementedError, id="int"),
    _fn("elu", WIDE, dtypes=HALF, grad=False, id="half"),

    # ---- smooth gates --------------------------------------------------------------------------------
    _fn("gelu", T((3, 4), low=-6, high=6), gradgrad=True),
    _fn("gelu", T((3, 4), low=-6, high=6), kw=dict(approximate="tanh"), gradgrad=True, id="tanh"),
    # +inf left out: torch's float32 kernel gives NaN there, its float64 kernel (and ember) inf
    _fn("gelu", T(values=[-INF, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 25.0, NAN], grad=False), id="edge"),
    _fn("gelu", WIDE, dtypes=HALF, grad=False, id="half"),
    C("F.gelu", [(3,)], lambda t, x: F(t).gelu(x, approximate="fast"), error=RuntimeError, id="bad-approximate"),
    _fn("gelu", (3,), dtypes=INT, error=NotImplementedError, id="int"),
    _fn("silu", T((3, 4), low=-30, high=30), gradgrad=True),
    _fn("silu", EDGE, id="edge"),
    _inplace("silu"),
    _fn("silu", (3, 4), dtypes=("complex64",), grad=False, id="complex"),
    _fn("mish", T((3, 4), low=-30, high=30), gradgrad=True),
    _fn("mish", EDGE, id="edge"),
    _inplace("mish"),
    _fn("hardswish", gradgrad=True),
    _fn("hardswish", KINKS, id="kinks"),
    _inplace("hardswish"),
    _fn("hardsigmoid"),  # torch has no double backward for hardsigmoid
    _fn("hardsigmoid", KINKS, id="kinks"),
    _inplace("hardsigmoid"),
    _fn("softplus", T((3, 4), low=-30, high=30), gradgrad=True),
    _fn("softplus", T((3, 4), low=-5, high=5), kw=dict(beta=2.0, threshold=3.0), gradgrad=True, id="beta"),
    _fn("softplus", EDGE, id="edge"),
    _fn("logsigmoid", T((3, 4), low=-40, high=40), gradgrad=True),
    _fn("logsigmoid", EDGE, id="edge"),
    C("sigmoid", [WIDE], lambda t, x: (F(t).sigmoid(x), F(t).tanh(x)), gradgrad=True),
    _fn("glu", (3, 4), gradgrad=True),
    _fn("glu", (4, 3), kw=dict(dim=0), id="dim0"),
    _fn("glu", (3, 5), error=RuntimeError, id="odd"),
    _fn("glu", (), error=RuntimeError, id="0d"),

    # ---- softmax family --------------------------------------------------------------------------------
    C("softmax", [(3, 5)], lambda t, x: (t.softmax(x, 1), x.softmax(0), F(t).softmax(x, dim=-1)), gradgrad=True),
    C("log_softmax", [(3, 5)], lambda t, x: (t.log_softmax(x, 1), x.log_softmax(0), F(t).log_softmax(x, -1)),
      gradgrad=True),
    C("F.softmin", [(3, 5)], lambda t, x: F(t).softmin(x, 1), gradgrad=True),
    C("softmax", [(2, 3, 4)], lambda t, x: (t.softmax(x, 1), t.log_softmax(x, -2)), id="3d"),
    C("softmax", [T((3, 5), low=-1000, high=1000)], lambda t, x: (t.softmax(x, 1), t.log_softmax(x, 1)),
      id="large"),
    C("softmax", [T(values=[[0.0, -INF, 1.0], [-INF, -INF, -INF], [INF, 0.0, 1.0]], grad=False)],
      lambda t, x: (t.softmax(x, 1), t.log_softmax(x, 1)), id="inf"),
    C("softmax", [()], lambda t, x: (t.softmax(x, 0), t.log_softmax(x, -1)), id="0d"),
    C("softmax", [(0, 3)], lambda t, x: (t.softmax(x, 1), t.log_softmax(x, 0)), id="empty"),
    C("softmax", [T((3, 4), noncontig=True)], lambda t, x: (t.softmax(x, 0), t.log_softmax(x, 1)),
      id="noncontig"),
    C("softmax", [(3, 4)], lambda t, x: (t.softmax(x, 1, dtype=t.float64), F(t).log_softmax(x, 0, dtype=t.float64)),
      dtypes=F32, id="dtype"),
    C("softmax", [T((3, 4), low=-5, high=5)], lambda t, x: F(t).softmax(x, 1, dtype=t.float32), dtypes=INT,
      id="int-dtype"),
    C("softmax", [(3, 4)], lambda t, x: t.softmax(x, 1), dtypes=HALF, grad=False, id="half"),
    C("softmax", [(2, 3)], _implicit_softmax, id="implicit-2d"),
    C("softmax", [(2, 3, 4)], _implicit_softmax, id="implicit-3d"),
    C("softmax", [(3, 4)], lambda t, x: t.softmax(x, 2), error=IndexError, id="bad-dim"),
    C("softmax", [(3, 4)], lambda t, x: t.softmax(x, 1), dtypes=INT, error=NotImplementedError, id="int"),
    C("log_softmax", [(3, 4)], lambda t, x: t.log_softmax(x, 1), dtypes=INT, error=NotImplementedError, id="int"),

    # ---- parametric and randomized ------------------------------------------------------------------------
    C("prelu", [(2, 3, 4), T((3,), low=0.0, high=0.5)], lambda t, x, w: (t.prelu(x, w), F(t).prelu(x, w)),
      gradgrad=True),
    C("prelu", [(2, 3), T((1,), low=0.0, high=0.5)], lambda t, x, w: x.prelu(w), gradgrad=True, id="shared"),
    C("prelu", [(5,), T((1,), low=0.0, high=0.5)], lambda t, x, w: t.prelu(x, w), id="1d"),
    C("prelu", [(2, 4), (3,)], lambda t, x, w: t.prelu(x, w), error=RuntimeError, id="mismatch"),
    C("prelu", [(2, 3), T((3,), dtype="float64")], lambda t, x, w: t.prelu(x, w), dtypes=F32, error=RuntimeError,
      id="dtype-mismatch"),
    C("rrelu", [WIDE], lambda t, x: (t.rrelu(x), F(t).rrelu(x, 0.1, 0.3)), gradgrad=True),
    C("rrelu", [WIDE], lambda t, x: (t.rrelu_(x.clone()), F(t).rrelu(x.clone(), inplace=True)), id="inplace"),
    C("rrelu", [T((3, 4), low=-4, high=-0.5)], lambda t, x: t.rrelu(x, 0.1, 0.3, training=True),
      check_values=False, id="training"),
    C("rrelu", [T((50,), low=-4, high=-0.5, grad=False)],
      lambda t, x: bool(((t.rrelu(x, 0.1, 0.3, training=True) / x - 0.2).abs() <= 0.1 + 1e-6).all()),
      id="training-range"),
]

# 0-d inputs: every elementwise activation and its gradient (second order too) on a scalar tensor; NumPy turns
# 0-d intermediates into scalars, which broke kernels that write with out= (Note [0-d kernels])
_ZERO_D = ["relu", "relu6", "hardtanh", "elu", "selu", "celu", "leaky_relu", "gelu", "silu", "mish", "hardswish",
           "hardsigmoid", "softplus", "logsigmoid", "softsign", "tanhshrink", "hardshrink", "softshrink", "sigmoid",
           "tanh"]
CASES += [_fn(n, T((), low=-2.0, high=2.0), gradgrad=n not in ("hardshrink", "softshrink", "hardsigmoid"), id="0d") for n in _ZERO_D]
CASES += [
    _fn("threshold", T((), low=-2.0, high=2.0), kw=dict(threshold=0.1, value=2.0), id="0d"),
    _fn("gelu", T((), low=-2.0, high=2.0), kw=dict(approximate="tanh"), gradgrad=True, id="0d-tanh"),
    _fn("rrelu", T((), low=-2.0, high=2.0), id="0d"),
    C("sigmoid", [T((), low=-2.0, high=2.0)], lambda t, x: (t.sigmoid(x), t.erfc(x), F(t).sigmoid(x)), id="0d"),
    C("F.binary_cross_entropy_with_logits", [T((), low=-2.0, high=2.0)],
      lambda t, x: F(t).binary_cross_entropy_with_logits(x, t.tensor(1.0, dtype=x.dtype)), id="0d"),
]
