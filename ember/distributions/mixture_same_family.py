"""MixtureSameFamily(Categorical, components): a finite mixture whose components are the
rightmost batch dim of one distribution (torch.distributions.MixtureSameFamily).

Shapes: the components have batch shape B + (k,) and event shape E; the mixture has batch shape
B and event shape E. Values of shape S + B + E get a singleton dim before E (`_add_component_dim`)
to be scored by all k components at once."""
import ember

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


def _check_parts(mixture, components):
    """torch's argument checks, with its messages."""
    if not isinstance(mixture, Categorical):
        raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
    if not isinstance(components, Distribution):
        raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
    mixture_batch = mixture.batch_shape
    outer_batch = components.batch_shape[:-1]
    for mine, theirs in zip(mixture_batch[::-1], outer_batch[::-1]):
        if 1 not in (mine, theirs) and mine != theirs:
            raise ValueError(f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                             f"`component_distribution.batch_shape`({outer_batch})")
    weights = mixture.logits.shape[-1]
    count = components.batch_shape[-1]
    if weights != count:
        raise ValueError(f"`mixture_distribution component` ({weights}) does not equal "
                         f"`component_distribution.batch_shape[-1]` ({count})")


def _component_index(choice, event_shape):
    """The chosen component per draw, shaped for gather along the component dim: a singleton dim
    for the components, then repeated over the event dims."""
    event_ndims = len(event_shape)
    index = choice.reshape(tuple(choice.shape) + (1,) * (1 + event_ndims))
    keep = (1,) * (choice.dim() + 1)
    return index.repeat(keep + tuple(event_shape))


class MixtureSameFamily(Distribution):
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        _check_parts(mixture_distribution, component_distribution)
        self._num_component = mixture_distribution.logits.shape[-1]
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(component_distribution.batch_shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        with_components = batch_shape + (self._num_component,)
        new._component_distribution = self._component_distribution.expand(with_components)
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        for name in ("_num_component", "_event_ndims"):
            setattr(new, name, getattr(self, name))
        return self._expanded(new, batch_shape)

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _component_weights(self):
        """The mixture probabilities laid out to broadcast against component values (B + (k,) + E).
        (Like torch, a mixture with exactly one batch dim is not padded.)"""
        probs = self.mixture_distribution.probs
        mixture_ndims = len(self.mixture_distribution.batch_shape)
        missing = 0 if mixture_ndims == 1 else len(self.batch_shape) - mixture_ndims
        leading, count = tuple(probs.shape[:-1]), tuple(probs.shape[-1:])
        return probs.reshape(leading + (1,) * missing + count + (1,) * self._event_ndims)

    def _average(self, weights, values):
        """Sum of weights * values over the component dim."""
        return (weights * values).sum(-1 - self._event_ndims)

    def _add_component_dim(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self):
        return self._average(self._component_weights(), self.component_distribution.mean)

    @property
    def variance(self):
        """Law of total variance: E[Var(Y | k)] + Var(E[Y | k])."""
        weights = self._component_weights()
        within = self._average(weights, self.component_distribution.variance)
        deviation = self.component_distribution.mean - self._add_component_dim(self.mean)
        return within + self._average(weights, deviation.pow(2.0))

    def cdf(self, x):
        per_component = self.component_distribution.cdf(self._add_component_dim(x))
        return (per_component * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        per_component = self.component_distribution.log_prob(self._add_component_dim(x))
        log_weights = ember.log_softmax(self.mixture_distribution.logits, dim=-1)
        return ember.logsumexp(per_component + log_weights, dim=-1)

    def sample(self, sample_shape=ember.Size()):
        # draws the components first, then a sample from every component, as torch does (same random stream)
        with ember.no_grad():
            sample_shape = ember.Size(sample_shape)
            component_dim = len(sample_shape) + len(self.batch_shape)
            choice = self.mixture_distribution.sample(sample_shape)
            draws = self.component_distribution.sample(sample_shape)
            index = _component_index(choice, self.event_shape)
            return ember.gather(draws, component_dim, index).squeeze(component_dim)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
