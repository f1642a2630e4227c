"""MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=): the Gaussian
over vectors, density exp(-(x - loc)' S^-1 (x - loc) / 2) / sqrt((2 pi)^n det S).

Whichever matrix is given, the distribution works with L, the lower-triangular Cholesky factor of
the covariance S = L L' (computed once, kept at the batch shape it came with): a draw is
loc + L eps, (x - loc)' S^-1 (x - loc) = |L^-1 (x - loc)|^2 and log sqrt(det S) = sum log diag L."""

import math

import numpy as np

import nbgrad

from . import constraints
from .distribution import Distribution
from .normal import _standard_normal
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _solve_lower(lower, rhs):
    return nbgrad.linalg.solve_triangular(lower, rhs, upper=False)


def _cholesky_of_inverse(precision):
    """L with L L' = precision^-1, without inverting the precision: the Cholesky factor of the
    precision with rows and columns reversed, reversed back and transposed, is the inverse of
    a lower-triangular L; solving against the identity gives L."""
    reversed_factor = nbgrad.linalg.cholesky(precision.flip((-2, -1)))
    inverse_of_l = reversed_factor.flip((-2, -1)).transpose(-2, -1)
    identity = nbgrad.eye(precision.shape[-1], dtype=precision.dtype)
    return _solve_lower(inverse_of_l, identity)


def _squared_norms_of_solves(lower, vectors):
    """|L^-1 v|^2 for every vector v (the last dimension of `vectors`), with L one matrix or a batch
    of matrices that broadcasts against the vectors' batch dimensions.

    All the vectors are solved at once as columns: the vectors' batch dimensions that pair with
    L's are split into (repeat, L's size), the repeats moved in front of L's dimensions, and the
    whole laid out as (number of L's, n, columns)."""
    n = vectors.shape[-1]
    vector_batch = tuple(vectors.shape[:-1])
    l_batch = tuple(lower.shape[:-2])
    outer = len(vector_batch) - len(l_batch)
    split_shape = vector_batch[:outer]
    for l_size, v_size in zip(l_batch, vector_batch[outer:]):
        split_shape += (v_size // l_size, l_size)
    split = vectors.reshape(split_shape + (n,))
    k = len(l_batch)
    repeats = [outer + 2 * i for i in range(k)]
    l_dims = [outer + 2 * i + 1 for i in range(k)]
    order = list(range(outer)) + repeats + l_dims + [outer + 2 * k]
    grouped = split.permute(order)
    lowers = lower.reshape(-1, n, n)
    columns = grouped.reshape(-1, lowers.shape[0], n).permute(1, 2, 0)
    norms = _solve_lower(lowers, columns).pow(2).sum(-2).t()
    # back: (columns, L's) -> grouped batch shape -> interleaved as the vectors' batch
    norms = norms.reshape(tuple(grouped.shape[:-1]))
    back = list(range(outer))
    for i in range(k):
        back += [outer + i, outer + k + i]
    return norms.permute(back).reshape(vector_batch)


class MultivariateNormal(Distribution):
    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {
            "covariance_matrix": covariance_matrix,
            "precision_matrix": precision_matrix,
            "scale_tril": scale_tril,
        }
        given = {name: m for name, m in given.items() if m is not None}
        if len(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        ((name, matrix),) = given.items()
        if matrix.dim() < 2:
            shown = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(
                f"{shown} must be at least two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        self.__dict__[name] = matrix.expand(batch_shape + (-1, -1))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = nbgrad.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _cholesky_of_inverse(matrix)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return nbgrad.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # the diagonal of L L': the squared lengths of L's rows
        rows = self._unbroadcasted_scale_tril.pow(2).sum(-1)
        return rows.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        self._checked(value)
        distance = _squared_norms_of_solves(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + distance) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        entropy = self._half_log_det() + 0.5 * n * (1.0 + math.log(2 * math.pi))
        if len(self._batch_shape) == 0:
            return entropy
        return entropy.expand(self._batch_shape)
