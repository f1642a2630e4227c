"""``nbgrad.distributions``: PyTorch's ``torch.distributions`` on nbgrad tensors.

Each distribution is written over nbgrad's public ops in the order PyTorch's Python code uses
them, so that log_prob, entropy, kl_divergence and rsample build PyTorch's graphs (the same
grad_fn names). Sampling draws from nbgrad's generator.
"""

from nbgrad.distributions import constraints, exp_family, transforms, utils
from nbgrad.distributions.bernoulli import Bernoulli
from nbgrad.distributions.beta import Beta
from nbgrad.distributions.categorical import Categorical
from nbgrad.distributions.cauchy import Cauchy
from nbgrad.distributions.chi2 import Chi2
from nbgrad.distributions.dirichlet import Dirichlet
from nbgrad.distributions.distribution import Distribution, ExponentialFamily
from nbgrad.distributions.exponential import Exponential
from nbgrad.distributions.gamma import Gamma
from nbgrad.distributions.independent import Independent
from nbgrad.distributions.kl import kl_divergence, register_kl
from nbgrad.distributions.laplace import Laplace
from nbgrad.distributions.log_normal import LogNormal
from nbgrad.distributions.multivariate_normal import MultivariateNormal
from nbgrad.distributions.normal import Normal
from nbgrad.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from nbgrad.distributions.poisson import Poisson
from nbgrad.distributions.studentT import StudentT
from nbgrad.distributions.transformed_distribution import TransformedDistribution
from nbgrad.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from nbgrad.distributions.uniform import Uniform

__all__ = [
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "SigmoidTransform",
    "TanhTransform",
    "Transform",
    "Bernoulli",
    "Beta",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "Gamma",
    "Independent",
    "Laplace",
    "LogNormal",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Poisson",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
