"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): the Gaussian over vectors whose covariance
is a low-rank part plus a diagonal, S = W W' + D with W of shape n x m (m small) and D diagonal.

Nothing n x n is factorized: by the Woodbury identity and the matrix determinant lemma everything
goes through the m x m "capacitance" C = I + W' D^-1 W and its Cholesky factor L,
    (x' S^-1 x) = x' D^-1 x - |L^-1 W' D^-1 x|^2,   log det S = 2 sum log diag L + sum log D."""

import math

import nbgrad

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _squared_norms_of_solves
from .normal import _standard_normal
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _plus_identity(square):
    """square + I for a (batch of) m x m matrices, written in place on its diagonal: every
    (m + 1)-th entry of each flattened matrix."""
    m = square.shape[-1]
    square.view(-1, m * m)[:, :: m + 1] += 1
    return square


def _capacitance_tril(cov_factor, cov_diag):
    """The Cholesky factor of I + W' D^-1 W."""
    w_over_d = cov_factor.mT / cov_diag.unsqueeze(-2)
    return nbgrad.linalg.cholesky(_plus_identity(nbgrad.matmul(w_over_d, cov_factor).contiguous()))


def _matrix_times_vector(matrices, vectors):
    return nbgrad.matmul(matrices, vectors.unsqueeze(-1)).squeeze(-1)


class LowRankMultivariateNormal(Distribution):
    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if not loc.dim():
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = nbgrad.Size(loc.shape[-1:])
        if cov_factor.dim() <= 1:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        n = event_shape[0]
        if tuple(cov_factor.shape[-2:-1]) != (n,):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if tuple(cov_diag.shape[-1:]) != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        # loc and the diagonal as columns, so that all three broadcast as n x (1 or m) blocks
        loc_column, self.cov_factor, diag_column = nbgrad.broadcast_tensors(
            loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
        )
        self.loc = loc_column[..., 0]
        self.cov_diag = diag_column[..., 0]
        # the parameters as given: what the computations read (the broadcast ones are views)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        for kept in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril"):
            setattr(new, kept, getattr(self, kept))
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # S = D^1/2 (I + D^-1/2 W W' D^-1/2) D^1/2: the inner matrix's Cholesky, rows scaled
        root_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_w = self._unbroadcasted_cov_factor / root_d
        inner = _plus_identity(nbgrad.matmul(scaled_w, scaled_w.mT).contiguous())
        return (root_d * nbgrad.linalg.cholesky(inner)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (nbgrad.matmul(w, w.mT) + nbgrad.diag_embed(d)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: S^-1 = D^-1 - A' A with A = L^-1 W' D^-1
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = nbgrad.linalg.solve_triangular(
            self._capacitance_tril, w.mT / d.unsqueeze(-2), upper=False
        )
        return (nbgrad.diag_embed(d.reciprocal()) - nbgrad.matmul(a.mT, a)).expand(
            self._matrix_shape()
        )

    def rsample(self, sample_shape=()):
        draw_shape = self._extended_shape(sample_shape)
        m = self._unbroadcasted_cov_factor.shape[-1]
        low_rank_noise = _standard_normal(tuple(draw_shape[:-1]) + (m,), dtype=self.loc.dtype)
        diagonal_noise = _standard_normal(draw_shape, dtype=self.loc.dtype)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self.loc + _matrix_times_vector(w, low_rank_noise) + d.sqrt() * diagonal_noise

    def _log_det(self):
        """log det S = 2 sum log diag L + sum log D (the matrix determinant lemma)."""
        diag_of_l = self._capacitance_tril.diagonal(dim1=-2, dim2=-1)
        return 2 * diag_of_l.log().sum(-1) + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value):
        self._checked(value)
        x = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        projected = _matrix_times_vector(w.mT / d.unsqueeze(-2), x)
        diagonal_part = (x.pow(2) / d).sum(-1)
        distance = diagonal_part - _squared_norms_of_solves(self._capacitance_tril, projected)
        dims = self._event_shape[0]
        return -0.5 * (dims * math.log(2 * math.pi) + self._log_det() + distance)

    def entropy(self):
        dims = self._event_shape[0]
        entropy = 0.5 * (dims * (1.0 + math.log(2 * math.pi)) + self._log_det())
        # one number per distribution of the batch (a lone distribution's stays as computed)
        return entropy.expand(self._batch_shape) if self._batch_shape else entropy
