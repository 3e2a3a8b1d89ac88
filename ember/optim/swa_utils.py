"""torch.optim.swa_utils: weight averaging (SWA, EMA) of a model, the SWA learning-rate schedule and the
BatchNorm statistics pass (https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema).

torch's multi-tensor averaging runs _foreach kernels grouped by device and dtype; ember has one device, so
the same update runs tensor by tensor with the same arithmetic (lerp_ for floating tensors)."""
import itertools
import math
from copy import deepcopy

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _inexact(t):
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA over lists of tensors: ema <- decay * ema + (1 - decay) * current (as a lerp)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if _inexact(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean over lists of tensors: avg <- avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if _inexact(averaged_param_list[0]):
            weight = 1 / (num_averaged + 1)
            if isinstance(weight, Tensor):
                weight = weight.item()  # torch's _foreach_lerp_ takes the scalar
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.lerp_(p_model, weight)
        elif isinstance(num_averaged, Tensor):
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.addcdiv_(p_model - p_avg, num_averaged + 1)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.add_(p_model - p_avg, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """EMA of one tensor, returned (not in place)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Running mean of one tensor, returned (not in place)."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """https://pytorch.org/docs/stable/generated/torch.optim.swa_utils.AveragedModel.html

    A deep copy of `model` (as `.module`) whose parameters (and buffers with use_buffers=True) are the
    running average of `model`'s, updated by update_parameters(); `n_averaged` is an int64 buffer."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        from .. import tensor
        self.register_buffer("n_averaged", tensor(0, dtype=D.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _pairs(self, model):
        """(averaged, model) tensor pairs, detached: parameters, or parameters then buffers with
        use_buffers (zipped to the shorter, as torch)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine = self.parameters()
            theirs = model.parameters()
        return [(p_avg.detach(), p_model.detach().to(p_avg.device)) for p_avg, p_model in zip(mine, theirs)]

    def update_parameters(self, model):
        pairs = self._pairs(model)
        first = bool(self.n_averaged == 0)
        if first:
            for p_avg, p_model in pairs:
                p_avg.copy_(p_model)
        else:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                self._average_groups(pairs)
            else:
                for p_avg, p_model in pairs:
                    p_avg.copy_(self.avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
        if not self.use_buffers:  # buffers (BatchNorm statistics ...) follow the model's
            for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1

    def _average_groups(self, pairs):
        """multi_avg_fn once per dtype, in order of first appearance, as torch's grouping by device and dtype.
        Without one, the SWA mean tensor by tensor (get_swa_avg_fn): torch takes that path on the cpu, which
        has no _foreach kernels of its own; its multi-tensor form serves cuda."""
        groups = {}
        for p_avg, p_model in pairs:
            avg_list, model_list = groups.setdefault(p_avg.dtype, ([], []))
            avg_list.append(p_avg)
            model_list.append(p_model)
        for avg_list, model_list in groups.values():
            n_averaged = self.n_averaged.to(avg_list[0].device)
            if self.multi_avg_fn:
                self.multi_avg_fn(avg_list, model_list, n_averaged)
                continue
            avg_fn = get_swa_avg_fn()
            for p_avg, p_model in zip(avg_list, model_list, strict=True):
                p_avg.copy_(avg_fn(p_avg, p_model, n_averaged))


@no_grad()
def update_bn(loader, model, device=None):
    """https://pytorch.org/docs/stable/optim.html#taking-care-of-batch-normalization

    Resets every BatchNorm's running statistics and recomputes them as a cumulative average (momentum None)
    over one pass of `loader` in train mode; a batch that is a list or tuple feeds its first element."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.swa_utils.SWALR.html

    Anneals each group's lr to its swa_lr over anneal_epochs steps ("cos" or "linear"), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the schedule started from, recovered from the current lr and the last step's alpha."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        # chainable: the start lr is recovered from the group's current lr, so other schedulers may act first
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        groups = self.optimizer.param_groups
        start_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / span)))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, start_lrs, strict=True)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
