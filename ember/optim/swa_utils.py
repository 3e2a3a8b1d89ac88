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


# ---- averaging rules -------------------------------------------------------------------------

def _check_decay(decay):
    """decay must lie in [0, 1] (NaN passes, as in torch)."""
    if decay < 0.0 or 1.0 < decay:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _inexact(t):
    return t.is_floating_point() or t.is_complex()


def _ema(average, current, decay):
    """decay * average + (1 - decay) * current, as a new tensor."""
    return average * decay + current * (1 - decay)


def _running_mean(average, current, count):
    """The mean of count values (average) extended by one more (current), as a new tensor."""
    gap = current - average
    return average + gap / (count + 1)


def _lerp_weight(count):
    """1 / (count + 1) as a Python float: torch's _foreach_lerp_ takes the scalar, so a tensor count is
    divided as a tensor first, then read out."""
    weight = 1 / (count + 1)
    return weight.item() if isinstance(weight, Tensor) else weight


def _same_length(first, second):
    """Torch's foreach check, made before any tensor of the lists is written."""
    if len(first) != len(second):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(first)} and {len(second)}")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA over lists of tensors: ema <- decay * ema + (1 - decay) * current (as a lerp)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if not _inexact(ema_param_list[0]):  # pair by pair, as torch: a length mismatch ends the zip
            for average, current in zip(ema_param_list, current_param_list, strict=True):
                average.copy_(_ema(average, current, decay))
            return
        _same_length(ema_param_list, current_param_list)
        for average, current in zip(ema_param_list, current_param_list):
            average.lerp_(current, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean over lists of tensors: avg <- avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        pairs = zip(averaged_param_list, current_param_list)
        if _inexact(averaged_param_list[0]):
            _same_length(averaged_param_list, current_param_list)
            weight = _lerp_weight(num_averaged)
            for average, current in pairs:
                average.lerp_(current, weight)
            return
        # integer tensors: a tensor count divides through addcdiv_ (which torch refuses for integers),
        # a Python count scales through add_'s alpha; torch's first list op here is current - averaged
        _same_length(current_param_list, averaged_param_list)
        for average, current in pairs:
            if isinstance(num_averaged, Tensor):
                average.addcdiv_(current - average, num_averaged + 1)
            else:
                average.add_(current - average, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """EMA of one tensor, returned (not in place)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return _ema(ema_param, current_param, decay)

    return ema_update


def get_swa_avg_fn():
    """Running mean of one tensor, returned (not in place)."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return _running_mean(averaged_param, current_param, num_averaged)

    return swa_update


# ---- the averaged model ----------------------------------------------------------------------

class AveragedModel(Module):
    """https://pytorch.org/docs/stable/generated/torch.optim.swa_utils.AveragedModel.html

    A deep copy of `model` (as `.module`) whose parameters (and buffers with use_buffers=True) are the
    running average of `model`'s, updated by update_parameters(); `n_averaged` is an int64 buffer."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        replica = deepcopy(model)
        self.module = replica if device is None else replica.to(device)
        from .. import tensor
        self.register_buffer("n_averaged", tensor(0, dtype=D.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged copy's output for the same arguments."""
        return self.module(*args, **kwargs)

    def _pairs(self, model):
        """(averaged, model) tensor pairs, detached: parameters, or parameters then buffers with
        use_buffers (zipped to the shorter, as torch)."""
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.parameters(), model.parameters()
        return [(a.detach(), m.detach().to(a.device)) for a, m in zip(ours, theirs)]

    def update_parameters(self, model):
        pairs = self._pairs(model)
        if bool(self.n_averaged == 0):
            for average, current in pairs:
                average.copy_(current)
        elif bool(self.n_averaged < 0):  # torch averages only from a positive count (a user may set it)
            pass
        elif self.avg_fn is not None and self.multi_avg_fn is None:
            self._average_each(pairs)
        else:
            self._average_by_dtype(pairs)
        if not self.use_buffers:
            self._copy_buffers(model)
        self.n_averaged += 1

    def _average_each(self, pairs):
        """avg_fn, one pair at a time."""
        for average, current in pairs:
            average.copy_(self.avg_fn(average, current, self.n_averaged.to(average.device)))

    def _average_by_dtype(self, pairs):
        """multi_avg_fn once per dtype, in order of first appearance, as torch's grouping by device and dtype.
        Without one, the SWA mean tensor by tensor (get_swa_avg_fn): torch takes that path on the cpu, which
        has no _foreach kernels of its own; its multi-tensor form serves cuda."""
        by_dtype = {}
        for average, current in pairs:
            by_dtype.setdefault(average.dtype, []).append((average, current))
        for group in by_dtype.values():
            count = self.n_averaged.to(group[0][0].device)
            if not self.multi_avg_fn:
                mean = get_swa_avg_fn()
                for average, current in group:
                    average.copy_(mean(average, current, count))
                continue
            averages = [average for average, _ in group]
            currents = [current for _, current in group]
            self.multi_avg_fn(averages, currents, count)

    def _copy_buffers(self, model):
        """Buffers that are not averaged (BatchNorm statistics ...) follow the model's."""
        for ours, theirs in zip(self.module.buffers(), model.buffers(), strict=True):
            ours.detach().copy_(theirs.detach().to(ours.device))


# ---- BatchNorm statistics ----------------------------------------------------------------------

def _model_input(batch, device):
    """What update_bn feeds the model: a list or tuple batch's first element, on device when one is given."""
    if isinstance(batch, (list, tuple)):
        batch = batch[0]
    return batch if device is None else batch.to(device)


@no_grad()
def update_bn(loader, model, device=None):
    """https://pytorch.org/docs/stable/optim.html#taking-care-of-batch-normalization

    Resets every BatchNorm's running statistics and recomputes them as a cumulative average (momentum None)
    over one pass of `loader` in train mode; a batch that is a list or tuple feeds its first element."""
    saved_momenta = {}
    for layer in model.modules():
        if isinstance(layer, _BatchNorm):
            layer.reset_running_stats()
            saved_momenta[layer] = layer.momentum
    if not saved_momenta:
        return
    was_training = model.training
    model.train()
    for layer in saved_momenta:
        layer.momentum = None
    for batch in loader:
        model(_model_input(batch, device))
    for layer, momentum in saved_momenta.items():
        layer.momentum = momentum
    model.train(was_training)


# ---- the SWA learning-rate schedule ------------------------------------------------------------

def _linear_ramp(t):
    return t


def _cosine_ramp(t):
    """0 at t = 0 to 1 at t = 1 along half a cosine period."""
    return 0.5 * (1 - math.cos(math.pi * t))


def _fraction_done(step, span):
    """step / span, clipped to [0, 1]."""
    return max(0, min(1, step / span))


def _lr_before_annealing(lr, swa_lr, alpha):
    """The lr the schedule started from, recovered from the current lr = alpha * swa_lr + (1 - alpha) * start."""
    if alpha == 1:
        return swa_lr
    return (lr - alpha * swa_lr) / (1 - alpha)


class SWALR(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.swa_utils.SWALR.html

    Anneals each group's lr to its swa_lr over anneal_epochs steps ("cos" or "linear"), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        targets = _per_group("swa_lr", optimizer, swa_lr)
        for target, group in zip(targets, optimizer.param_groups, strict=True):
            group["swa_lr"] = target
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._adopt_strategy(anneal_strategy)
        if not (isinstance(anneal_epochs, int) and anneal_epochs >= 0):
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _adopt_strategy(self, strategy):
        """Record the strategy's name (it goes into state_dict) and its ramp function as anneal_func."""
        self._anneal_strategy = strategy
        self.anneal_func = _cosine_ramp if strategy == "cos" else _linear_ramp

    def get_lr(self):
        # chainable: the start lr is recovered from the group's current lr, so other schedulers may act first
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        groups = self.optimizer.param_groups
        last_alpha = self.anneal_func(_fraction_done(step - 1, span))
        starts = [_lr_before_annealing(g["lr"], g["swa_lr"], last_alpha) for g in groups]
        alpha = self.anneal_func(_fraction_done(step, span))
        return [g["swa_lr"] * alpha + start * (1 - alpha) for g, start in zip(groups, starts, strict=True)]

    def state_dict(self):
        return {k: v for k, v in vars(self).items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        vars(self).update(state_dict)
        self._adopt_strategy(self._anneal_strategy)
