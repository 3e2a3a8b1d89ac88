"""ember.func (torch.func): composable function transforms on ember's autograd.

grad/vjp/jacrev are reverse mode; jvp/jacfwd/hessian/linearize compute forward-mode products by
Note [jvp by double vjp] (_forward.py); vmap runs a function once on the whole batch through
batching rules (Note [Vectorized vmap], _batched.py) and falls back to a per-sample loop
(Note [vmap is a loop], _vmap.py).
How nesting works: Note [Transforms on the autograd graph] (_common.py).
See https://pytorch.org/docs/stable/func.api.html
"""
from ._eager import debug_unwrap, functionalize, replace_all_batch_norm_modules_
from ._forward import hessian, jacfwd, jvp, linearize
from ._functional_call import functional_call, stack_module_state
from ._reverse import grad, grad_and_value, jacrev, vjp
from ._vmap import vmap

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]
