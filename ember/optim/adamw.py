"""torch.optim.AdamW: https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html"""
from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2): the same update as Adam(decoupled_weight_decay=True)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        # unpickled groups decouple whatever they recorded: that is what makes this AdamW
        for options in self.param_groups:
            options.update(decoupled_weight_decay=True)
