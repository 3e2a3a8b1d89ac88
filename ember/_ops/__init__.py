"""Op declarations grouped by family. Importing this package installs every op
(ember.*, Tensor methods, in-place variants, dunders) through _registry.install."""
from . import _registry  # noqa: F401
from . import (creation, pointwise, reduction, sorting, shape, indexing, random, linalg,  # noqa: F401
               conv, pool, norm, loss, activation, embedding, misc)
from . import combinatorics, calculus, histogram, covariance, layout_ops, gamma_inc  # noqa: F401
from . import native_norm, householder, lowrank  # noqa: F401
from . import hashing  # noqa: F401  (hash_tensor)
from . import dropout  # noqa: F401
from . import rnn, attention  # noqa: F401
from . import sampling  # noqa: F401
from . import grid_volumetric  # noqa: F401  (grid_sampler, grid_sampler_2d/3d)
from . import window_functions  # noqa: F401  (hann_window, hamming_window ...)
from . import spectral  # noqa: F401  (stft, istft)
from . import surface  # noqa: F401  (fill_diagonal_, is_nonzero, vander, torch.* forms of small APIs)
from . import surface_tensor  # noqa: F401  (frombuffer, binomial, Tensor.dim_order/apply_/map_ ...)
