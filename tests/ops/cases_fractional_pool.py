"""Op table rows: F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d, compared with torch given the same
_random_samples (values, indices, gradients); without samples each library draws its own, so only shapes,
dtypes and the max property are compared."""
from .harness import Case as C, T

S2 = T((2, 3, 2), low=0, high=1, grad=False)
S3 = T((1, 2, 3), low=0, high=1, grad=False)
F2 = "nn.functional.fractional_max_pool2d"
F3 = "nn.functional.fractional_max_pool3d"


def _unseeded(t, x):
    out, idx = t.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.6), return_indices=True)
    # every output is the input at its index: the max property, whatever windows were drawn
    picked = x.detach().flatten(2).gather(2, idx.flatten(2)).reshape(idx.shape)
    return out.shape, out.dtype, idx.dtype, bool((picked == out.detach()).all())


CASES = [
    C(F2, [(2, 3, 10, 11), S2], lambda t, x, s: t.nn.functional.fractional_max_pool2d(
        x, 2, output_size=(4, 5), _random_samples=s, return_indices=True)),
    C(F2, [(2, 3, 9, 9), S2], lambda t, x, s: t.nn.functional.fractional_max_pool2d(
        x, (3, 2), output_ratio=(0.5, 0.7), _random_samples=s), id="ratio"),
    C(F2, [(3, 8, 7), T((1, 3, 2), low=0, high=1, grad=False)], lambda t, x, s: t.nn.functional.fractional_max_pool2d(
        x, 2, output_size=(7, 6), _random_samples=s, return_indices=True), id="unbatched-dense"),
    C(F2, [T((1, 1, 6, 6), integer=True, low=0, high=3), T((1, 1, 2), low=0, high=1, grad=False)],
      lambda t, x, s: t.nn.functional.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s,
                                                            return_indices=True), id="ties"),
    C(F2, [(2, 3, 10, 11)], _unseeded, grad=False, id="unseeded"),
    C(F2, [(2, 3, 7, 9)], lambda t, x: t.nn.functional.fractional_max_pool2d(x, 2), error=ValueError,
      id="no-size"),
    C(F2, [(2, 3, 7, 9), S2], lambda t, x, s: t.nn.functional.fractional_max_pool2d(
        x, 4, output_size=(5, 5), _random_samples=s), error=RuntimeError, id="too-large"),
    C(F2, [(2, 3, 7, 9), T((2, 3, 3), low=0, high=1, grad=False)],
      lambda t, x, s: t.nn.functional.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=s),
      error=RuntimeError, id="samples-shape"),
    C(F2, [(2, 3, 7, 9), T((1, 3, 2), low=0, high=1, grad=False)],
      lambda t, x, s: t.nn.functional.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=s),
      error=RuntimeError, id="samples-batch"),
    C(F2, [(2, 3, 7, 9), T((2, 3, 2), dtype="float64", grad=False)],
      lambda t, x, s: t.nn.functional.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=s),
      dtypes=("float32",), error=RuntimeError, id="samples-dtype"),
    C(F3, [(1, 2, 9, 10, 11), S3], lambda t, x, s: t.nn.functional.fractional_max_pool3d(
        x, (2, 3, 2), output_size=(4, 5, 3), _random_samples=s, return_indices=True)),
    C(F3, [(2, 6, 6, 6), T((1, 2, 3), low=0, high=1, grad=False)],
      lambda t, x, s: t.nn.functional.fractional_max_pool3d(x, 2, output_ratio=(0.5, 0.5, 0.7), _random_samples=s),
      id="unbatched-ratio"),
    C("nn.FractionalMaxPool2d", [(2, 3, 10, 11), S2],
      lambda t, x, s: (repr(t.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=s)),
                       t.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=s)(x),
                       list(t.nn.FractionalMaxPool2d(2, output_size=4, _random_samples=s).state_dict()))),
    C("nn.FractionalMaxPool3d", [(1, 2, 9, 10, 11), S3],
      lambda t, x, s: t.nn.FractionalMaxPool3d(2, output_size=(4, 5, 3), return_indices=True,
                                                _random_samples=s)(x)),
    C("nn.FractionalMaxPool2d", [], lambda t: t.nn.FractionalMaxPool2d(2), error=ValueError, id="no-size"),
    C("nn.FractionalMaxPool2d", [], lambda t: t.nn.FractionalMaxPool2d(2, output_ratio=1.5), error=ValueError,
      id="ratio"),
]
