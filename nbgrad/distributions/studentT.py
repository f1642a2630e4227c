# ruff: noqa: N999 - the module is named as PyTorch's, torch.distributions.studentT
"""StudentT(df, loc, scale): loc + scale * X / sqrt(V / df) for X standard normal and V Chi2(df);
heavier tails than the Normal, which it becomes as df grows."""

import math

import nbgrad

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .normal import _standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        batch_shape = self._take_parameters(df=df, loc=loc, scale=scale)
        # V of the definition; built (and its df checked) before StudentT checks its own
        self._chi2 = Chi2(self.df)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        m = self.loc.clone()
        m[self.df <= 1] = math.nan  # no mean for df <= 1
        return m

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        v = df.clone()
        finite = df > 2
        v[finite] = self.scale[finite].pow(2) * df[finite] / (df[finite] - 2)
        v[(df <= 2) & (df > 1)] = math.inf
        v[df <= 1] = math.nan
        return v

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype)
        v = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * nbgrad.rsqrt(v / self.df))

    def _log_normalizer(self):
        """log of scale sqrt(df pi) Gamma(df / 2) / Gamma((df + 1) / 2)."""
        df = self.df
        return (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + nbgrad.lgamma(0.5 * df)
            - nbgrad.lgamma(0.5 * (df + 1.0))
        )

    def log_prob(self, value):
        self._checked(value)
        z = (value - self.loc) / self.scale
        return -0.5 * (self.df + 1.0) * nbgrad.log1p(z**2 / self.df) - self._log_normalizer()

    def entropy(self):
        df = self.df
        log_beta = nbgrad.lgamma(0.5 * df) + math.lgamma(0.5) - nbgrad.lgamma(0.5 * (df + 1))
        tail = 0.5 * (df + 1) * (nbgrad.digamma(0.5 * (df + 1)) - nbgrad.digamma(0.5 * df))
        return self.scale.log() + tail + 0.5 * df.log() + log_beta
