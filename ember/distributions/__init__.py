"""ember.distributions: torch.distributions on ember tensors
(https://pytorch.org/docs/stable/distributions.html).

Sampling draws from ember's generator (ember.manual_seed makes it reproducible; the numbers are
not torch's, see Note [Random streams] in ember/random.py). Reparameterized samples (rsample)
carry gradients to the parameters; Gamma, Chi2, Beta and Dirichlet use implicit
reparameterization (ember/distributions/_special.py).
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
           "ExpRelaxedCategorical", "Exponential", "ExponentialFamily", "Gamma", "Geometric", "HalfNormal",
           "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform",
           "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to", "transforms"]
__all__.extend(transforms.__all__)
