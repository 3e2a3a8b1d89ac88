"""ember.nn.modules: the layer classes, one file per family, mirroring torch/nn/modules/.

To add a family: create `<family>.py` with an `__all__`, then add one
`from .<family> import *` line below (above the `__all__` computation).
"""
from .module import Module
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403

# everything public that is a Module class is re-exported as ember.nn.<Name>
__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and issubclass(obj, Module) and not name.startswith("_")]
