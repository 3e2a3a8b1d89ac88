"""ember.nn.utils: gradient clipping, parameter/vector conversion, weight and spectral norm,
parametrizations (torch.nn.utils)."""
from . import parametrizations, parametrize  # noqa: F401
from . import rnn  # noqa: F401
from . import stateless  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "rnn", "stateless", "remove_spectral_norm",
           "remove_weight_norm", "spectral_norm", "vector_to_parameters", "weight_norm"]
