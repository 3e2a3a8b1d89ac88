"""Op table rows: native_batch_norm / native_layer_norm / native_group_norm (output and statistics;
torch marks group norm's statistics as requiring grad but never propagates through them: ember's are
detached, so they are compared detached)."""
from .harness import Case as C, T

RUNNING = [T((3,), low=-0.5, high=0.5, grad=False), T((3,), low=0.5, high=1.5, grad=False)]


def _bn(t, x, w, b, rm, rv, training):
    out, mean, invstd = t.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
    return out, mean, invstd, rm, rv


def _detached(outs):
    return (outs[0],) + tuple(o.detach() for o in outs[1:])


CASES = [
    # one spatial element per instance: no variance to normalise by when training (torch's ValueError)
    C("F.instance_norm", [(2, 3, 1)], lambda t, x: t.nn.functional.instance_norm(x), error=ValueError,
      id="err-one-spatial"),
    C("F.instance_norm", [(2, 3, 1, 1)], lambda t, x: t.nn.functional.instance_norm(x), error=ValueError,
      id="err-one-spatial-2d"),
    C("native_batch_norm", [(4, 3, 5), (3,), (3,)] + RUNNING, lambda t, *a: _bn(t, *a, True)),
    C("native_batch_norm", [(4, 3, 5), (3,), (3,)] + RUNNING, lambda t, *a: _bn(t, *a, False), id="eval"),
    C("native_batch_norm", [(4, 3)], lambda t, x: t.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
      id="no-params"),
    C("native_layer_norm", [(4, 3, 5), (3, 5), (3, 5)], lambda t, x, w, b: t.native_layer_norm(x, [3, 5], w, b, 1e-5)),
    C("native_layer_norm", [(4, 5)], lambda t, x: t.native_layer_norm(x, (5,), None, None, 1e-3), id="no-params"),
    C("native_layer_norm", [(4, 5), (4,)], lambda t, x, w: t.native_layer_norm(x, (5,), w, None, 1e-3),
      error=RuntimeError, id="bad-weight"),
    C("native_group_norm", [(4, 6, 5), (6,), (6,)],
      lambda t, x, w, b: _detached(t.native_group_norm(x, w, b, 4, 6, 5, 3, 1e-5))),
    C("native_group_norm", [(2, 4, 2, 3)], lambda t, x: _detached(t.native_group_norm(x, None, None, 2, 4, 6, 2,
                                                                                        1e-5)), id="4d"),
    C("native_group_norm", [(4, 6, 5)], lambda t, x: t.native_group_norm(x, None, None, 4, 6, 5, 4, 1e-5),
      error=RuntimeError, id="groups"),
]
