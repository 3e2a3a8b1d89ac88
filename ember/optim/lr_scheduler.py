"""torch.optim.lr_scheduler: https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate

Most schedulers are *chainable*: get_lr() computes the next lr from the group's current lr
(so several schedulers can act on one optimizer), and the closed form `_get_closed_form_lr`
is used only when step() is given an explicit epoch, as torch does. A scheduler's state_dict
is its __dict__ without the optimizer.
"""
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau",
           "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _group_values(optimizer, key):
    """Each group's value of key (tensor values are cloned, so later fills don't alias)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set_group_value(group, key, value):
    """Write value into the group; a tensor-valued option is filled in place (it may be shared)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _per_group(name, optimizer, value):
    """One value per param group (tensors cloned): a list of the right length, or a scalar repeated."""
    count = len(optimizer.param_groups)
    values = value if isinstance(value, (list, tuple)) else [value] * count
    if len(values) != count:
        raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(value)} "
                         f"values, param_groups has {count}.")
    return [v.clone() if isinstance(v, Tensor) else v for v in values]


def _load_all_but(sched, state_dict, key):
    """Load every entry of state_dict except key into sched, and return key's entry. The dict is handed back
    whole, with key moved to its end, as torch leaves it."""
    held = state_dict.pop(key)
    sched.__dict__.update(state_dict)
    state_dict[key] = held
    return held


def _require_optimizer(optimizer):
    """Schedulers drive an ember Optimizer's param_groups; anything else is a caller's mistake."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _cosine_point(low, high, done, period):
    """Half a cosine wave: high when done is 0, low when done reaches period."""
    return low + (high - low) * (1 + math.cos(math.pi * done / period)) / 2


def _callable_state(fn):
    """What a state_dict keeps of a user callable: nothing for a plain function, a callable object's __dict__."""
    if isinstance(fn, types.FunctionType):
        return None
    return fn.__dict__.copy()


class _Flag:
    """Set a boolean attribute of a scheduler for the duration of a with-block."""

    def __init__(self, sched, name):
        self.sched = sched
        self.name = name

    def __enter__(self):
        setattr(self.sched, self.name, True)

    def __exit__(self, *exc):
        setattr(self.sched, self.name, False)


def _record_initial_lrs(optimizer):
    """A fresh schedule starts from each group's current lr, unless an earlier scheduler recorded one."""
    for group in optimizer.param_groups:
        if "initial_lr" not in group:
            lr = group["lr"]
            group["initial_lr"] = lr.clone() if isinstance(lr, Tensor) else lr


def _check_resumable(optimizer):
    """Resuming (last_epoch >= 0) needs the initial_lr a fresh schedule would have recorded."""
    missing = [i for i, group in enumerate(optimizer.param_groups) if "initial_lr" not in group]
    if missing:
        raise KeyError(f"param 'initial_lr' is not specified in param_groups[{missing[0]}] when resuming "
                       "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume "
                       "training from a checkpoint but haven't properly loaded the optimizer state\n2. You're using "
                       "last_epoch >= 0 for a fresh training run (not recommended)")


class LRScheduler:
    """Base class: https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LRScheduler.html"""
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            _record_initial_lrs(optimizer)
        else:
            _check_resumable(optimizer)
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._construction_step()

    def _construction_step(self):
        """The step every scheduler takes at construction (last_epoch -1 -> 0)."""
        self._step_count = 0
        with _Flag(self, "_is_initial"):
            self.step()

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def step(self, epoch=None):
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
                          "later, you should call them in the opposite order: `optimizer.step()` before "
                          "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                          "value of the learning rate schedule. See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        """Advance (or set) last_epoch and write the new lrs into the optimizer."""
        with _Flag(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        self._store_lrs(values)

    def _store_lrs(self, values):
        """Write one lr per group into the optimizer and keep a copy for get_last_lr()."""
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


_LRScheduler = LRScheduler


class _LambdaState:
    """state_dict for schedulers holding user callables: functions are not saved, callable objects'
    __dict__ is."""

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [_callable_state(fn) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        saved_lambdas = _load_all_but(self, state_dict, "lr_lambdas")
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


def _lambdas(optimizer, lr_lambda):
    """One lr_lambda per param group: the list given, or the single one repeated."""
    count = len(optimizer.param_groups)
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * count
    if len(lr_lambda) != count:
        raise ValueError(f"Expected {count} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


class LambdaLR(_LambdaState, LRScheduler):
    """lr = initial_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """lr = lr * lr_lambda(epoch) at every step after the first."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply lr by gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply lr by gamma at each milestone (repeated milestones multiply repeatedly)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch in self.milestones:
            decay = self.gamma ** self.milestones[self.last_epoch]
            return [g["lr"] * decay for g in self.optimizer.param_groups]
        return _group_values(self.optimizer, "lr")

    def _get_closed_form_lr(self):
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)  # counting repeats
        return [base_lr * self.gamma ** passed for base_lr in self.base_lrs]


def _check_factor(value, message, zero_allowed=True):
    """A multiplicative factor lies in [0, 1] (in (0, 1] when zero is not allowed)."""
    if value > 1.0 or (value < 0 if zero_allowed else value <= 0):
        raise ValueError(message)


class ConstantLR(LRScheduler):
    """lr * factor for the first total_iters epochs, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        _check_factor(factor, "Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch == self.total_iters:  # the factor's time is over: undo it
            return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]
        return _group_values(self.optimizer, "lr")

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale lr linearly from start_factor to end_factor over total_iters epochs."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        _check_factor(start_factor, "Starting multiplicative factor expected to be greater than 0 and less or equal "
                                    "to 1.", zero_allowed=False)
        _check_factor(end_factor, "Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        # ratio of consecutive factors: (s + (e-s)*k/T) / (s + (e-s)*(k-1)/T)
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [g["lr"] * ratio for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        delta = self.end_factor - self.start_factor
        return [base_lr * (self.start_factor + delta * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply lr by gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay lr to 0 over total_iters epochs as (1 - epoch/total_iters) ** power."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        now = 1.0 - self.last_epoch / self.total_iters
        before = 1.0 - (self.last_epoch - 1) / self.total_iters
        decay = (now / before) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to eta_min over T_max epochs, by torch's recursive formula
    (which keeps rising again after T_max: the schedule is periodic with period 2*T_max)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        e = self.last_epoch
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and e > 0:  # resuming: start from the closed form
            return self._get_closed_form_lr()
        if (e - 1 - self.T_max) % (2 * self.T_max) == 0:  # the trough: the recursion would divide by 0
            return [g["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, g in zip(self.base_lrs, self.optimizer.param_groups)]
        ratio = (1 + math.cos(math.pi * e / self.T_max)) / (1 + math.cos(math.pi * (e - 1) / self.T_max))
        return [ratio * (g["lr"] - self.eta_min) + self.eta_min for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [_cosine_point(self.eta_min, base_lr, self.last_epoch, self.T_max) for base_lr in self.base_lrs]


def _check_children(owner, optimizer, schedulers):
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             "kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if optimizer != s.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(s).__name__} at index {i} has {s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _Composite:
    """state_dict for schedulers made of schedulers: the children's state_dicts are nested."""

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        children = _load_all_but(self, state_dict, "_schedulers")
        for s, saved in zip(self._schedulers, children):
            s.load_state_dict(saved)


class SequentialLR(_Composite, LRScheduler):
    """Run schedulers one after another, switching at the milestones."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        _check_children(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # the children each took their construction step; undo that and start over with the first one
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self._undo_initial_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._construction_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_steps(self, sched):
        """Decrement last_epoch of every (possibly nested) child scheduler."""
        stack = list(sched._schedulers)
        while stack:
            s = stack.pop()
            if hasattr(s, "_schedulers"):
                stack.extend(s._schedulers)
            elif hasattr(s, "last_epoch"):
                s.last_epoch -= 1

    def recursive_undo(self, sched=None):
        self._undo_initial_steps(self if sched is None else sched)

    def step(self):
        self.last_epoch += 1
        stage = bisect_right(self._milestones, self.last_epoch)
        current = self._schedulers[stage]
        if stage == 0 or self._milestones[stage - 1] != self.last_epoch:
            current.step()
        else:
            current._update_lr(0)  # a scheduler taking over starts at its epoch 0
        self._last_lr = current.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Step every scheduler in the list at each step (their effects compose)."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        if not optimizer:  # torch falls back on a falsy optimizer too, not only None
            optimizer = schedulers[0].optimizer
        _check_children(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


from ._lr_scheduler_cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR, ReduceLROnPlateau  # noqa: E402
