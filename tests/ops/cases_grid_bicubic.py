"""Op table rows: F.grid_sample(mode='bicubic'), every padding mode and align_corners, grid points inside and
outside [-1, 1]; input and grid gradients (and second order)."""
from .harness import Case as C, T

G = T((2, 4, 7, 2), low=-1.3, high=1.3)
X = (2, 3, 5, 6)


def _gs(padding_mode, align_corners):
    return lambda t, x, g: t.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode,
                                                       align_corners=align_corners)


CASES = [
    C("nn.functional.grid_sample", [X, G], _gs("zeros", False), gradgrad=True, id="bicubic"),
    C("nn.functional.grid_sample", [X, G], _gs("zeros", True), id="bicubic-align"),
    C("nn.functional.grid_sample", [X, G], _gs("border", False), id="bicubic-border"),
    C("nn.functional.grid_sample", [X, G], _gs("border", True), id="bicubic-border-align"),
    C("nn.functional.grid_sample", [X, G], _gs("reflection", False), id="bicubic-reflection"),
    C("nn.functional.grid_sample", [(1, 2, 1, 4), T((1, 3, 3, 2), low=-1, high=1)], _gs("reflection", True),
      id="bicubic-reflection-align-1row"),
]
