"""Op table rows: F.linear_cross_entropy (torch's reference path: cross_entropy of a linear projection) and
nn.LinearCrossEntropyLoss."""
from .harness import Case as C, T

TGT = T((4,), dtype="int64", low=0, high=5)


def _module(t, x, target, **kw):
    t.manual_seed(0)
    m = t.nn.LinearCrossEntropyLoss(3, 5, **kw)
    return repr(m), tuple(n for n, _ in m.named_parameters())


def _module_forward(t, x, w, b, target):
    m = t.nn.LinearCrossEntropyLoss(3, 5, out_features=(2,), bias=True, reduction="sum", dtype=x.dtype)
    with t.no_grad():
        m.linear.weight.copy_(w)
        m.linear.bias.copy_(b)
    return m(x, target)


CASES = [
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 3), TGT],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y), gradgrad=True),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 3), (5,), TGT, T((5,), low=0.5, high=1.5, grad=False)],
      lambda t, x, w, b, y, cw: t.nn.functional.linear_cross_entropy(x, w, y, linear_bias=b, weight=cw,
                                                                     reduction="sum", label_smoothing=0.1),
      id="bias-weight-smoothing"),
    C("nn.functional.linear_cross_entropy", [(3,), (5, 3), T((), dtype="int64", low=0, high=5)],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y, reduction="none"), id="unbatched"),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 2, 3), (5, 2), T((4, 2), dtype="int64", low=0, high=5)],
      lambda t, x, w, b, y: t.nn.functional.linear_cross_entropy(x, w, y, linear_bias=b, ignore_index=1),
      id="k-dim"),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 3), T((4, 5), low=0, high=1, grad=False)],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y.softmax(-1)), id="probabilities"),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 3), T((4, 5), low=0, high=1, grad=False)],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y, ignore_index=0), error=RuntimeError,
      id="probabilities-ignore"),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 4), TGT],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y), error=RuntimeError, id="features"),
    C("nn.functional.linear_cross_entropy", [(2, 4, 3), (5, 3), TGT],
      lambda t, x, w, y: t.nn.functional.linear_cross_entropy(x, w, y), error=RuntimeError, id="3d"),
    C("nn.functional.linear_cross_entropy", [(4, 3), (5, 3), (4,), TGT],
      lambda t, x, w, b, y: t.nn.functional.linear_cross_entropy(x, w, y, linear_bias=b), error=RuntimeError,
      id="bias-shape"),
    C("nn.LinearCrossEntropyLoss", [(4, 3), TGT], lambda t, x, y: _module(t, x, y, bias=True, out_features=(2,)),
      grad=False),
    C("nn.LinearCrossEntropyLoss", [(4, 3), T((10, 3), grad=False), T((10,), grad=False),
                                     T((4, 2), dtype="int64", low=0, high=5)], _module_forward, id="forward"),
    C("nn.LinearCrossEntropyLoss", [(4, 3), TGT],
      lambda t, x, y: t.nn.LinearCrossEntropyLoss(3, 5, label_smoothing=1.5), error=RuntimeError, id="smoothing"),
]
