"""ember.utils: data loading (ember.utils.data) and hook handles (ember.utils.hooks), as torch.utils."""
from . import data, hooks  # noqa: F401
