"""ExponentialFamily: distributions p(x; t) = h(x) exp(<t, T(x)> - F(t)), whose entropy and KL
divergence follow from the log normalizer F by differentiation (Bregman divergences)."""
import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses define `_natural_params` (t), `_log_normalizer(*t)` (F) and
    `_mean_carrier_measure` (E[log h(x)])."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *etas):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def _sum_per_batch_item(self, x):
        """x summed over everything right of the batch dims (a natural parameter's own dims)."""
        return x.reshape(tuple(self._batch_shape) + (-1,)).sum(-1)

    def entropy(self):
        """H = F(t) - <t, grad F(t)> - E[log h(x)], with grad F from autograd on detached copies
        of t (create_graph keeps H differentiable in the parameters)."""
        carrier = self._mean_carrier_measure
        etas = [eta.detach().requires_grad_() for eta in self._natural_params]
        normalizer = self._log_normalizer(*etas)
        slopes = ember.autograd.grad(normalizer.sum(), etas, create_graph=True)
        entropy = -carrier + normalizer
        for eta, slope in zip(etas, slopes):
            entropy = entropy - self._sum_per_batch_item(eta * slope)
        return entropy
