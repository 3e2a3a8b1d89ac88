"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)
(torch.distributions.MultivariateNormal). Everything goes through the lower Cholesky factor L
of the covariance: sampling loc + L eps, densities through triangular solves with L."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)
_MATRICES = ("covariance_matrix", "scale_tril", "precision_matrix")


def _matvec(matrix, vector):
    """matrix @ vector over broadcast batch dims."""
    column = vector.unsqueeze(-1)
    return ember.matmul(matrix, column).squeeze(-1)


def _squared_mahalanobis(L, x):
    """|L^-1 x|^2 for x (..., n) and L (..., n, n) with broadcastable batch dims; an unbatched L
    solves all right-hand sides at once (one triangular solve, no copies of L)."""
    n = x.shape[-1]
    if L.dim() == 2:
        columns = x.reshape(-1, n).T
        solved = ember.linalg.solve_triangular(L, columns, upper=False)
        return solved.pow(2).sum(0).reshape(x.shape[:-1])
    batch = tuple(ember.broadcast_shapes(L.shape[:-2], x.shape[:-1]))
    rhs = x.expand(batch + (n,)).unsqueeze(-1)
    solved = ember.linalg.solve_triangular(L.expand(batch + (n, n)), rhs, upper=False).squeeze(-1)
    return solved.pow(2).sum(-1)


def _half_log_det(L):
    """log sqrt(det(L L^T)) = sum of log diag(L), for a Cholesky factor L."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _cholesky_of_inverse(precision):
    """The lower Cholesky factor of precision^-1."""
    inverse = ember.cholesky_inverse(ember.linalg.cholesky(precision))
    return ember.linalg.cholesky(inverse)


# the unbroadcast Cholesky factor of the covariance, from whichever matrix was given
_TO_SCALE_TRIL = {"scale_tril": lambda m: m, "covariance_matrix": lambda m: ember.linalg.cholesky(m),
                  "precision_matrix": _cholesky_of_inverse}


def _matrix_shape(batch_shape, event_shape):
    return tuple(batch_shape) + tuple(event_shape) * 2


class MultivariateNormal(Distribution):
    """The given matrix and loc are kept broadcast to the batch; the other two matrices are lazy."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {name: m for name, m in given.items() if m is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        ((name, matrix),) = given.items()
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{label} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = tuple(ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _TO_SCALE_TRIL[name](matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        new.loc = self.loc.expand(tuple(batch_shape) + tuple(self._event_shape))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in _MATRICES:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(_matrix_shape(batch_shape, self._event_shape)))
        return self._expanded(new, batch_shape)

    def _batch_matrix_shape(self):
        return _matrix_shape(self._batch_shape, self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._batch_matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._batch_matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=ember.Size()):
        noise = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _matvec(self._unbroadcasted_scale_tril, noise)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        L = self._unbroadcasted_scale_tril
        distance = _squared_mahalanobis(L, value - self.loc)
        half_log_det = _half_log_det(L)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + distance) - half_log_det

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        # an unbatched entropy is returned as is, not as an expanded view
        return h.expand(self._batch_shape) if self._batch_shape else h
