"""``StudentT(df, loc=0, scale=1)``: a Normal whose precision is drawn from Chi2(df) / df.

The module keeps PyTorch's name, ``torch.distributions.studentT``.
"""
# ruff: noqa: N999

import math

import nbgrad
from nbgrad.distributions import constraints
from nbgrad.distributions.chi2 import Chi2
from nbgrad.distributions.distribution import Distribution
from nbgrad.distributions.utils import _standard_normal, broadcast_all

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
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = nbgrad.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
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
        m = self.df.clone()
        finite = self.df > 2
        m[finite] = self.scale[finite].pow(2) * self.df[finite] / (self.df[finite] - 2)
        m[(self.df <= 2) & (self.df > 1)] = math.inf
        m[self.df <= 1] = math.nan
        return m

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype)
        Z = self._chi2.rsample(sample_shape)
        Y = X * nbgrad.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + nbgrad.lgamma(0.5 * self.df)
            - nbgrad.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * nbgrad.log1p(y**2.0 / self.df) - Z

    def entropy(self):
        lbeta = nbgrad.lgamma(0.5 * self.df) + math.lgamma(0.5) - nbgrad.lgamma(0.5 * (self.df + 1))
        digamma_gap = nbgrad.digamma(0.5 * (self.df + 1)) - nbgrad.digamma(0.5 * self.df)
        return self.scale.log() + 0.5 * (self.df + 1) * digamma_gap + 0.5 * self.df.log() + lbeta
