"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks) and activation
checkpointing (ember.utils.checkpoint), as torch.utils."""
from . import checkpoint, data, hooks  # noqa: F401
