"""Op table rows for result layouts (the harness compares every output's strides and contiguity with
torch's): *_like and clone under each memory format, elementwise ops on mixed layouts (channels-last,
transposed, expanded, sliced inputs: torch's TensorIterator order), views, and ops whose result torch
makes contiguous. Inputs are built in each library from the same values, so only layouts differ."""
from .harness import Case as C, T

F32 = ("float32",)


def cl(t, x):
    """x (N, C, H, W) in channels-last memory."""
    return x.contiguous(memory_format=t.channels_last)


def expanded_t(t, x):
    """issue 19's example: a transposed, unsqueezed, expanded view (4, 5, 3) of a (3, 4) tensor."""
    return x.t().unsqueeze(1).expand(4, 5, 3)


# (name, input shape, maker): one input layout each
LAYOUTS = [
    ("channels-last", (2, 3, 4, 5), cl),
    ("transposed", (3, 4), lambda t, x: x.t()),
    ("permuted", (2, 3, 4), lambda t, x: x.permute(2, 0, 1)),
    ("expanded-transposed", (3, 4), expanded_t),
    ("sliced", (4, 6), lambda t, x: x[:, ::2]),
    ("broadcast-row", (1, 4), lambda t, x: x.expand(3, 4)),
]

FORMATS = [("preserve", lambda t: t.preserve_format), ("contiguous", lambda t: t.contiguous_format)]


def _likes():
    rows = []
    for lname, shape, make in LAYOUTS:
        for fname, fmt in FORMATS:
            rid = f"{lname}-{fname}"
            rows += [
                C("zeros_like", [shape], lambda t, x, m=make, f=fmt: t.zeros_like(m(t, x), memory_format=f(t)),
                  dtypes=F32, grad=False, id=rid),
                C("ones_like", [shape], lambda t, x, m=make, f=fmt: t.ones_like(m(t, x), memory_format=f(t)),
                  dtypes=F32, grad=False, id=rid),
                C("empty_like", [shape], lambda t, x, m=make, f=fmt: t.empty_like(m(t, x), memory_format=f(t)),
                  dtypes=F32, grad=False, check_values=False, id=rid),
                C("rand_like", [shape], lambda t, x, m=make, f=fmt: t.rand_like(m(t, x), memory_format=f(t)),
                  dtypes=F32, grad=False, check_values=False, id=rid),
                C("full_like", [shape], lambda t, x, m=make, f=fmt: t.full_like(m(t, x), 2.5, memory_format=f(t)),
                  dtypes=F32, grad=False, id=rid),
                C("Tensor.clone", [shape], lambda t, x, m=make, f=fmt: m(t, x).clone(memory_format=f(t)),
                  dtypes=F32, id=rid),
            ]
        rows += [
            C("Tensor.contiguous", [shape], lambda t, x, m=make: m(t, x).contiguous(), dtypes=F32, id=lname),
            C("Tensor.to", [shape], lambda t, x, m=make: m(t, x).to(t.float64), dtypes=F32, id=lname),
            C("Tensor.double", [shape], lambda t, x, m=make: m(t, x).double(), dtypes=F32, id=lname),
            C("exp", [shape], lambda t, x, m=make: t.exp(m(t, x)), dtypes=F32, id=lname),
            C("neg", [shape], lambda t, x, m=make: -m(t, x), dtypes=F32, id=lname),
            C("sigmoid", [shape], lambda t, x, m=make: t.sigmoid(m(t, x)), dtypes=F32, id=lname),
            C("mul", [shape], lambda t, x, m=make: m(t, x) * 2, dtypes=F32, id=f"{lname}-scalar"),
            C("add", [shape], lambda t, x, m=make: m(t, x) + m(t, x), dtypes=F32, id=f"{lname}-same"),
            C("gt", [shape], lambda t, x, m=make: m(t, x) > 0, dtypes=F32, grad=False, id=lname),
            C("Tensor.clone", [shape], lambda t, x, m=make: m(t, x).clone(), dtypes=F32, id=f"{lname}-default"),
        ]
    return rows


def _mixed():
    """Binary and ternary ops whose operands disagree: torch orders the result's dims by the first
    operand that orders them (TensorIterator), NumPy falls back to row-major."""
    nchw = (2, 3, 4, 5)
    return [
        C("add", [nchw, nchw], lambda t, x, y: cl(t, x) + y, dtypes=F32, id="channels-last+contiguous"),
        C("add", [nchw, nchw], lambda t, x, y: x + cl(t, y), dtypes=F32, id="contiguous+channels-last"),
        C("mul", [nchw, (3, 1, 1)], lambda t, x, b: cl(t, x) * b, dtypes=F32, id="channels-last*bias"),
        C("add", [nchw, (5,)], lambda t, x, b: cl(t, x) + b, dtypes=F32, id="channels-last+row"),
        C("sub", [(3, 1, 1), nchw], lambda t, b, x: b - cl(t, x), dtypes=F32, id="bias-channels-last"),
        C("add", [(3, 4), (4, 3)], lambda t, x, y: x.t() + y, dtypes=F32, id="transposed+contiguous"),
        C("add", [(4, 3), (3, 4)], lambda t, x, y: x + y.t(), dtypes=F32, id="contiguous+transposed"),
        C("mul", [(3, 4), (3,)], lambda t, x, y: x.t() * y, dtypes=F32, id="transposed*row"),
        C("mul", [(3, 4), (4, 1)], lambda t, x, y: x.t() * y, dtypes=F32, id="transposed*column"),
        C("add", [(4, 1), (3, 4)], lambda t, x, y: x.expand(4, 3) + y.t(), dtypes=F32, id="expanded+transposed"),
        C("add", [(3, 4), (3,)], lambda t, x, y: y.expand(4, 3) + x.t(), dtypes=F32, id="broadcast+transposed"),
        C("div", [(4, 10), (4, 5)], lambda t, x, y: x[:, ::2] / (y.abs() + 1), dtypes=F32, id="sliced/contiguous"),
        C("maximum", [(2, 3, 4), (4, 2, 3)], lambda t, x, y: t.maximum(x.permute(2, 0, 1), y), dtypes=F32,
          id="permuted-contiguous"),
        C("gt", [(3, 4), (4, 3)], lambda t, x, y: x.t() > y, dtypes=F32, grad=False, id="transposed-contiguous"),
        C("where", [(3, 4), (4, 3)], lambda t, x, y: t.where(x.t() > 0, x.t(), y), dtypes=F32,
          id="transposed-condition"),
        C("where", [(3, 4), (4, 3)], lambda t, x, y: t.where(y > 0, x.t(), y), dtypes=F32,
          id="contiguous-condition"),
        C("add", [(4, 3), (3, 4)], lambda t, x, y: t.add(x, y.t(), alpha=2), dtypes=F32, id="alpha"),
        C("Tensor.add_", [(4, 3), (3, 4)], lambda t, x, y: (x * 1).t().add_(y), dtypes=F32, id="inplace-keeps-self"),
    ]


def _views_and_copies():
    return [
        C("Tensor.t", [(3, 4)], lambda t, x: x.t(), dtypes=F32),
        C("Tensor.permute", [(2, 3, 4)], lambda t, x: x.permute(1, 2, 0), dtypes=F32),
        C("Tensor.narrow", [(4, 6)], lambda t, x: x.narrow(1, 1, 3), dtypes=F32),
        C("Tensor.expand", [(3, 1)], lambda t, x: x.expand(3, 4), dtypes=F32),
        C("Tensor.unsqueeze", [(3, 4)], lambda t, x: x.t().unsqueeze(1), dtypes=F32),
        C("Tensor.diagonal", [(3, 4)], lambda t, x: x.diagonal(), dtypes=F32),
        C("Tensor.unfold", [(8,)], lambda t, x: x.unfold(0, 3, 2), dtypes=F32),
        C("Tensor.movedim", [(2, 3, 4)], lambda t, x: x.movedim(0, 2), dtypes=F32),
        C("Tensor.select", [(2, 3, 4)], lambda t, x: cl(t, x.unsqueeze(0)).select(1, 1), dtypes=F32),
        C("Tensor.reshape", [(3, 4)], lambda t, x: x.t().reshape(2, 6), dtypes=F32, id="copy"),
        C("Tensor.reshape", [(3, 4)], lambda t, x: x.reshape(2, 6), dtypes=F32, id="view"),
        C("Tensor.flatten", [(2, 3, 4, 5)], lambda t, x: cl(t, x).flatten(1), dtypes=F32, id="channels-last"),
        C("Tensor.view", [(2, 3, 4, 5)], lambda t, x: cl(t, x).view(2, 3, 20), dtypes=F32, id="channels-last"),
        C("Tensor.view", [(2, 3, 4, 5)], lambda t, x: cl(t, x).view(2, 60), dtypes=F32, error=RuntimeError,
          id="channels-last-no-view"),
        C("Tensor.__getitem__", [(4, 6)], lambda t, x: x.t()[1:, ::2], dtypes=F32, id="layout-slices"),
        C("Tensor.__getitem__", [(2, 3, 4)], lambda t, x: x.permute(2, 0, 1)[[1, 0]], dtypes=F32, id="layout-adv"),
        C("Tensor.__getitem__", [(2, 3, 4)], lambda t, x: x[:, [0, 2], [1, 3]], dtypes=F32, id="layout-adv-adjacent"),
        C("Tensor.__getitem__", [(2, 3, 4)], lambda t, x: x[[[0], [1]], :, [1, 2]], dtypes=F32, id="layout-adv-apart"),
        C("cat", [(2, 3, 4, 5), (2, 3, 4, 5)], lambda t, x, y: t.cat([cl(t, x), cl(t, y)], 1), dtypes=F32,
          id="channels-last"),
        C("cat", [(2, 3, 4, 5), (2, 3, 4, 5)], lambda t, x, y: t.cat([cl(t, x), y], 1), dtypes=F32,
          id="channels-last-mixed"),
        C("cat", [(3, 4), (3, 4)], lambda t, x, y: t.cat([x.t(), y.t()], 1), dtypes=F32, id="transposed"),
        C("stack", [(3, 4), (3, 4)], lambda t, x, y: t.stack([x.t(), y.t()]), dtypes=F32, id="transposed"),
        C("stack", [(2, 3, 4, 5), (2, 3, 4, 5)], lambda t, x, y: t.stack([cl(t, x), cl(t, y)]), dtypes=F32,
          id="channels-last"),
        C("randn_like", [(3, 4)], lambda t, x: t.randn_like(x.t()), dtypes=F32, grad=False, check_values=False,
          id="layout"),
        C("sort", [(3, 5)], lambda t, x: t.sort(x.t(), 0, descending=True), dtypes=F32, id="layout-transposed"),
        C("cumsum", [(2, 3, 4, 5)], lambda t, x: t.cumsum(cl(t, x), 1), dtypes=F32, id="channels-last"),
        C("softmax", [(2, 3, 4, 5)], lambda t, x: t.softmax(cl(t, x), 1), dtypes=F32, id="channels-last"),
        C("mm", [(3, 4), (5, 3)], lambda t, x, y: t.mm(x.t(), y.t()), dtypes=F32, id="layout-transposed"),
        C("matmul", [(2, 3, 4), (2, 5, 3)], lambda t, x, y: t.matmul(x.mT, y.mT), dtypes=F32, id="layout-batched"),
    ]


CASES = _likes() + _mixed() + _views_and_copies()
