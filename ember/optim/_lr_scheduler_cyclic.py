"""The cyclic schedules (CyclicLR, CosineAnnealingWarmRestarts, OneCycleLR) and ReduceLROnPlateau.

Part of ember.optim.lr_scheduler (split off to keep files short); import them from there.
Attribute names are torch's wherever they end up in a state_dict, so saved schedulers load in either library.
"""
import math
import warnings
from functools import partial

from .lr_scheduler import (EPOCH_DEPRECATION_WARNING, LRScheduler, _callable_state, _cosine_point, _Flag,
                           _group_values, _per_group, _require_optimizer, _set_group_value)


# ---- momentum cycled against the lr (CyclicLR, OneCycleLR) -------------------------------------------------

def _check_cyclable_momentum(sched, optimizer):
    """cycle_momentum needs SGD-style `momentum` or Adam-style `betas`; remember which of them is cycled."""
    has_momentum = "momentum" in optimizer.defaults
    has_betas = "betas" in optimizer.defaults
    if not (has_momentum or has_betas):
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    sched.use_beta1 = has_betas


def _write_momentum(sched, group, value):
    """Set the group's momentum, or beta1 (keeping the other betas) for Adam-style optimizers."""
    if not sched.use_beta1:
        group["momentum"] = value
        return
    betas = group["betas"]
    group["betas"] = (value, *betas[1:])


def _start_momentum_at_max(sched, optimizer, lows, highs):
    """A fresh schedule starts at the top of the momentum range; the bounds are stored in each group."""
    for group, low, high in zip(optimizer.param_groups, lows, highs):
        _write_momentum(sched, group, high)
        group["max_momentum"] = high
        group["base_momentum"] = low


# ---- CyclicLR ----------------------------------------------------------------------------------------------

_CYCLIC_MODES = ("triangular", "triangular2", "exp_range")


def _constant_height(x):
    """triangular: every cycle reaches max_lr."""
    return 1.0


def _halving_height(x):
    """triangular2: each cycle is half as high as the one before."""
    return 1 / (2.0 ** (x - 1))


def _decaying_height(gamma, x):
    """exp_range: the height shrinks by gamma at every iteration."""
    return gamma ** x


def _builtin_scale(mode, gamma):
    """The height scaling of a built-in mode, and what its argument counts ("cycle" or "iterations")."""
    if mode == "triangular":
        return _constant_height, "cycle"
    if mode == "triangular2":
        return _halving_height, "cycle"
    return partial(_decaying_height, gamma), "iterations"


def _triangle(x, rise_share):
    """A triangle wave over one cycle, x in [0, 1): 0 at both ends, 1 after rise_share of the cycle."""
    if x > rise_share:
        return (x - 1) / (rise_share - 1)
    return x / rise_share


class CyclicLR(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.CyclicLR.html

    One step per batch: lr follows a triangle wave from base_lr up to max_lr and back (momentum the other way),
    its height multiplied by the mode's scale function of the cycle or iteration number (or scale_fn's).
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        low_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, low in zip(optimizer.param_groups, low_lrs):
                _set_group_value(group, "lr", low)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        rise = float(step_size_up)
        fall = rise if step_size_down is None else float(step_size_down)
        self.total_size = rise + fall
        self.step_ratio = rise / self.total_size
        if scale_fn is None and mode not in _CYCLIC_MODES:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._use_mode_scale()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _check_cyclable_momentum(self, optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                _start_momentum_at_max(self, optimizer, self.base_momentums, self.max_momentums)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = low_lrs

    def _use_mode_scale(self):
        """Without a user scale_fn the mode decides both the scaling and scale_mode."""
        if self._scale_fn_custom is None:
            self._mode_scale, self.scale_mode = _builtin_scale(self.mode, self.gamma)

    def scale_fn(self, x):
        custom = self._scale_fn_custom
        return self._mode_scale(x) if custom is None else custom(x)

    def get_lr(self):
        self._warn_outside_step()
        progress = self.last_epoch / self.total_size
        cycle = math.floor(1 + progress)
        wave = _triangle(1.0 + progress - cycle, self.step_ratio)
        scale = self.scale_fn(self.last_epoch if self.scale_mode != "cycle" else cycle)
        lrs = [low + (high - low) * wave * scale for low, high in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            bounds = zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums)
            for group, low, high in bounds:
                _write_momentum(self, group, high - (high - low) * wave * scale)
        return lrs

    def state_dict(self):
        state = super().state_dict()
        state.pop("_mode_scale", None)  # rebuilt from mode and gamma on load
        custom = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if custom is None else _callable_state(custom)
        return state

    def load_state_dict(self, state_dict):
        custom_state = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if custom_state is not None:
            self._scale_fn_custom.__dict__.update(custom_state)
        self._use_mode_scale()


# ---- CosineAnnealingWarmRestarts ---------------------------------------------------------------------------

def _check_restart_options(T_0, T_mult, eta_min):
    """T_0 and T_mult are whole numbers of at least 1 (for ints, T_0 <= 0 is T_0 < 1); eta_min is a number."""
    wanted = ((T_0, f"Expected positive integer T_0, but got {T_0}"),
              (T_mult, f"Expected integer T_mult >= 1, but got {T_mult}"))
    for value, message in wanted:
        if value < 1 or not isinstance(value, int):
            raise ValueError(message)
    if not isinstance(eta_min, (float, int)):
        raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")


class CosineAnnealingWarmRestarts(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.CosineAnnealingWarmRestarts.html

    T_cur counts epochs into the current period of T_i epochs; each restart makes T_i T_mult times longer.
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        _check_restart_options(T_0, T_mult, eta_min)
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        return [_cosine_point(self.eta_min, base_lr, self.T_cur, self.T_i) for base_lr in self.base_lrs]

    def step(self, epoch=None):
        """Without epoch: one epoch on; with it: go straight there (fractional epochs are allowed)."""
        if epoch is not None:
            self._go_to(epoch)
        elif self.last_epoch < 0:  # the construction step
            epoch = 0
            self._go_to(epoch)
        else:
            epoch = self.last_epoch + 1
            self._advance()
        self.last_epoch = math.floor(epoch)
        with _Flag(self, "_get_lr_called_within_step"):
            lrs = self.get_lr()
        self._store_lrs(lrs)

    def _advance(self):
        self.T_cur = self.T_cur + 1
        if self.T_cur >= self.T_i:  # the period is over: restart with a longer one
            self.T_cur %= self.T_i
            self.T_i *= self.T_mult

    def _go_to(self, epoch):
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch >= self.T_0:
            self._after_restarts(epoch)
        else:
            self.T_i = self.T_0
            self.T_cur = epoch

    def _after_restarts(self, epoch):
        """Find the period holding epoch: n whole periods T_0, T_0*m, ... end at T_0 * (m**n - 1) / (m - 1)."""
        first, m = self.T_0, self.T_mult
        if m == 1:
            self.T_cur = epoch % first
            return
        n = int(math.log(epoch / first * (m - 1) + 1, m))
        self.T_cur = epoch - first * (m ** n - 1) / (m - 1)
        self.T_i = first * m ** n


# ---- OneCycleLR --------------------------------------------------------------------------------------------

# Per phase, the group keys it anneals between: lr from, lr to, momentum from, momentum to.
_PHASE_FIELDS = ("start_lr", "end_lr", "start_momentum", "end_momentum")
_TWO_PHASES = (("initial_lr", "max_lr", "max_momentum", "base_momentum"),
               ("max_lr", "min_lr", "base_momentum", "max_momentum"))
_THREE_PHASES = (("initial_lr", "max_lr", "max_momentum", "base_momentum"),
                 ("max_lr", "initial_lr", "base_momentum", "max_momentum"),
                 ("initial_lr", "min_lr", "max_momentum", "max_momentum"))


def _one_cycle_length(total_steps, epochs, steps_per_epoch):
    """The schedule's length: total_steps, or else epochs * steps_per_epoch."""
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    for name, count in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
        if not isinstance(count, int) or count <= 0:
            raise ValueError(f"Expected positive integer {name}, but got {count}")
    return epochs * steps_per_epoch


def _one_cycle_phases(pct_start, total, three_phase):
    """The phases as torch stores them in the state_dict: the step each one ends at, and its keys."""
    warmup_end = float(pct_start * total) - 1
    if three_phase:
        ends = (warmup_end, float(2 * pct_start * total) - 2, total - 1)
        keys = _THREE_PHASES
    else:
        ends = (warmup_end, total - 1)
        keys = _TWO_PHASES
    return [{"end_step": end, **dict(zip(_PHASE_FIELDS, names))} for end, names in zip(ends, keys)]


def _cos_anneal(start, end, pct):
    """Half a cosine from start (pct 0) to end (pct 1)."""
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear_anneal(start, end, pct):
    return start + pct * (end - start)


_ANNEALERS = {"cos": _cos_anneal, "linear": _linear_anneal}


class OneCycleLR(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.OneCycleLR.html

    Warm up from max_lr/div_factor to max_lr, then anneal far below the start (momentum moves the other way);
    three_phase returns to the start before the final descent.
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _one_cycle_length(total_steps, epochs, steps_per_epoch)
        # built before pct_start is checked, as torch does (a bad pct_start may fail here first)
        self._schedule_phases = _one_cycle_phases(pct_start, self.total_steps, three_phase)
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        peak_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, peak_lrs):
                start = peak / div_factor
                group["initial_lr"] = start
                group["max_lr"] = peak
                group["min_lr"] = start / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _check_cyclable_momentum(self, optimizer)
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                _start_momentum_at_max(self, optimizer, lows, highs)
        super().__init__(optimizer, last_epoch)

    def _phase_at(self, step):
        """The phase holding step (the last one for anything beyond) and the fraction of it done."""
        phases = self._schedule_phases
        begin = 0.0
        for phase in phases[:-1]:
            if step <= phase["end_step"]:
                break
            begin = phase["end_step"]
        else:
            phase = phases[-1]
        return phase, (step - begin) / (phase["end_step"] - begin)

    def get_lr(self):
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        phase, pct = self._phase_at(step)
        anneal = _ANNEALERS[self._anneal_func_type]
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                _write_momentum(self, group, momentum)
        return lrs


# ---- ReduceLROnPlateau -------------------------------------------------------------------------------------

def _plateau_floors(optimizer, min_lr):
    """(default_min_lr, min_lrs): a scalar min_lr is kept to cover groups added later; a list is not."""
    count = len(optimizer.param_groups)
    if not isinstance(min_lr, (list, tuple)):
        return min_lr, [min_lr] * count
    if len(min_lr) != count:
        raise ValueError(f"expected {count} min_lrs, got {len(min_lr)}")
    return None, list(min_lr)


class ReduceLROnPlateau(LRScheduler):
    """https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.ReduceLROnPlateau.html

    Multiply every lr by factor (not below its min_lr) once the metric has gone more than `patience` steps
    without beating its best by the threshold; then wait `cooldown` steps before counting again.
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        self.default_min_lr, self.min_lrs = _plateau_floors(optimizer, min_lr)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._set_comparison(mode, threshold, threshold_mode)
        self._start_tracking()

    def _start_tracking(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        current = float(metrics)  # a 0-d tensor is accepted too
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        else:
            epoch = self.last_epoch + 1
        self.last_epoch = epoch
        self._record(current)
        if self.num_bad_epochs > self.patience:
            self._lower_lrs()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _record(self, current):
        """Update best and the bad-epoch count; epochs spent in cooldown never count as bad."""
        if self._improves_on(self.best, current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0

    def _lower_lrs(self):
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                                   f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due "
                                   "to a new param group being added to the optimizer. Please modify the `min_lrs` "
                                   "field to match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:  # a change within eps is not worth making
                _set_group_value(group, "lr", new)

    def _improves_on(self, best, value):
        """Whether value beats best by more than the threshold (a fraction of best when threshold_mode is rel)."""
        minimizing = self.mode == "min"
        if self.threshold_mode == "rel":
            bar = best * (1.0 - self.threshold) if minimizing else best * (self.threshold + 1.0)
        else:
            bar = best - self.threshold if minimizing else best + self.threshold
        return value < bar if minimizing else value > bar

    def _set_comparison(self, mode, threshold, threshold_mode):
        """Check and store how metrics are compared; mode_worse is the best value before any step."""
        choices = (("mode", mode, {"min", "max"}), ("threshold mode", threshold_mode, {"rel", "abs"}))
        for label, value, allowed in choices:
            if value not in allowed:
                raise ValueError(label + " " + value + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._set_comparison(self.mode, self.threshold, self.threshold_mode)
