"""ember.utils: data loading (ember.utils.data), hook handles (ember.utils.hooks) and DLPack exchange
(ember.utils.dlpack), as torch.utils."""
from . import data, dlpack, hooks  # noqa: F401
