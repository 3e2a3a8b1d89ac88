"""torch.amp.GradScaler: loss scaling with inf/NaN step skipping and dynamic scale updates.

See https://pytorch.org/docs/stable/amp.html#gradient-scaling. Each optimizer goes through the stages
READY -> UNSCALED -> STEPPED within an iteration, and update() starts the next one; errors for calls out of
that order, and the state_dict, are torch's. The scale and the growth tracker are 0-d tensors (float32, int32)
created by the first scale(). torch's default device is 'cuda': ember has no CUDA, so that scaler warns and
disables itself (as torch does on a CPU-only build); GradScaler('cpu') scales.
"""
import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    """One optimizer's bookkeeping at the start of an iteration (module level, so the defaultdict pickles)."""
    return dict(stage=OptState.READY, found_inf_per_device={})


# Calls an optimizer's stage forbids, with torch's message for each.
_OUT_OF_ORDER = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}

# state_dict entries kept as self._<name>.
_TUNABLES = ("growth_factor", "backoff_factor", "growth_interval")


def _full(value, dtype):
    """A 0-d tensor of dtype holding value."""
    return Tensor._make(np.full((), value, dtype.np), dtype)


def _grads_to_unscale(optimizer, allow_fp16):
    """Every gradient of the optimizer's parameters (the values of a sparse one), checked as torch does."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
            grad = param.grad
            if grad is None:
                continue
            if grad.dtype is D.float16 and not allow_fp16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            yield grad._values() if grad.is_sparse else grad


def _unscale_in_place(grads, found_inf, inv_scale):
    """torch._amp_foreach_non_finite_check_and_unscale_: set found_inf to 1 if a gradient holds inf or NaN,
    and multiply every gradient by inv_scale (those with infs too)."""
    factor = inv_scale.item()
    for grad in grads:
        if not np.isfinite(grad._data).all():
            found_inf.fill_(1.0)
        if factor != 1.0:
            grad.mul_(inv_scale)


def _grow_or_back_off(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """torch._amp_update_scale_: after an inf, scale *= backoff_factor; after growth_interval clean steps in a
    row, scale *= growth_factor unless that overflows float32. tracker counts the clean steps."""
    if found_inf.item():
        scale.fill_(scale.item() * backoff_factor)
        tracker.fill_(0)
        return
    clean_steps = tracker.item() + 1
    if clean_steps != growth_interval:
        tracker.fill_(clean_steps)
        return
    grown = np.float32(scale.item() * growth_factor)
    if np.isfinite(grown):
        scale.fill_(float(grown))
    tracker.fill_(0)


class GradScaler:
    """Multiplies the loss so small float16/bfloat16 gradients do not flush to zero, unscales them before the
    optimizer step, skips steps whose gradients hold inf/NaN and adapts the scale to how often that happens."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if not self._enabled:
            return
        if growth_factor <= 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale = None  # made by the first scale(), with _growth_tracker
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # ---- the scale tensors ----

    def _require_scale(self, funcname):
        """(scale, growth tracker), or torch's assertion when scale() has not made them yet."""
        hint = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        for name in ("_scale", "_growth_tracker"):
            if getattr(self, name) is None:
                raise AssertionError(f"Attempted {funcname} but {name} is None.  " + hint)
        return self._scale, self._growth_tracker

    def _ensure_scale(self):
        if self._scale is not None:
            return
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = _full(self._init_scale, D.float32)
        self._growth_tracker = _full(self._init_growth_tracker, D.int32)

    def _stage_state(self, funcname, optimizer):
        """The optimizer's bookkeeping for this iteration, once funcname is known to be allowed in its stage."""
        self._require_scale(funcname)
        state = self._per_optimizer_states[id(optimizer)]
        problem = _OUT_OF_ORDER.get((funcname, state["stage"]))
        if problem is not None:
            raise RuntimeError(problem)
        return state

    # ---- one iteration: scale, unscale_, step, update ----

    def scale(self, outputs):
        """outputs (a tensor, or lists, tuples or iterables of them, nested) times the current scale."""
        if not self._enabled:
            return outputs
        return self._scaled(outputs)

    def _scaled(self, value):
        if isinstance(value, Tensor):
            self._ensure_scale()
            return value * self._scale
        if not isinstance(value, abc.Iterable):
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        items = map(self._scaled, value)  # lazy for iterators, as torch's
        return type(value)(items) if isinstance(value, (list, tuple)) else items

    def _unscale_all(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscale the optimizer's gradients in place, a dtype at a time as torch's kernel takes them.
        Returns found_inf_per_device: torch's is keyed by device, ember has one (no entry without grads)."""
        by_dtype = defaultdict(list)
        with no_grad():
            for grad in _grads_to_unscale(optimizer, allow_fp16):
                by_dtype[grad.dtype].append(grad)
            for grads in by_dtype.values():
                _unscale_in_place(grads, found_inf, inv_scale)
        if not by_dtype:
            return {}
        return {found_inf.device: found_inf}

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (once per iteration) and record any inf/NaN."""
        if not self._enabled:
            return
        state = self._stage_state("unscale_", optimizer)
        # the reciprocal is taken in float64, then rounded to float32, as torch does
        inv_scale = _full(np.float32(1.0 / np.float64(self._scale.item())), D.float32)
        state["found_inf_per_device"] = self._unscale_all(optimizer, inv_scale, _full(0.0, D.float32), False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already), then run optimizer.step() unless a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._stage_state("step", optimizer)
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_self_scaling(optimizer, state, args, kwargs)
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        found = state["found_inf_per_device"]
        if not found:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not any(flag.item() for flag in found.values()):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def _step_self_scaling(self, optimizer, state, args, kwargs):
        """Optimizers with _step_supports_amp_scaling unscale and skip by themselves: an old-style step takes
        the scaler as grad_scaler=; otherwise grad_scale and found_inf are lent as attributes for the step."""
        takes_scaler = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if takes_scaler:
            warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed "
                          "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                          "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                          FutureWarning, stacklevel=3)
            kwargs = dict(kwargs, grad_scaler=self)
        else:
            self._lend_scale(optimizer, state)
        result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        if not takes_scaler:
            del optimizer.grad_scale
            del optimizer.found_inf
        return result

    def _lend_scale(self, optimizer, state):
        """Set optimizer.grad_scale (times any the user set; just theirs once unscale_ ran) and found_inf."""
        unscaled = state["stage"] is OptState.UNSCALED
        if state["stage"] is OptState.READY:
            self._check_inf_per_device(optimizer)
        found_inf = sum(state["found_inf_per_device"].values())
        if unscaled:
            grad_scale = getattr(optimizer, "grad_scale", None)
        else:
            grad_scale = self._scale * getattr(optimizer, "grad_scale", 1)
        optimizer.grad_scale = grad_scale
        optimizer.found_inf = found_inf

    def update(self, new_scale=None):
        """Set the next iteration's scale: new_scale if given, else grown or backed off after this one."""
        if not self._enabled:
            return
        scale, tracker = self._require_scale("update")
        if new_scale is None:
            self._adapt_scale(scale, tracker)
        else:
            self._replace_scale(new_scale)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _replace_scale(self, new_scale):
        if isinstance(new_scale, float):
            self._scale.fill_(new_scale)
            return
        if not isinstance(new_scale, Tensor):  # torch reads its .device next: any other object fails there
            raise AttributeError(f"'{type(new_scale).__name__}' object has no attribute 'device'")
        usable = (new_scale.device.type == self._device
                  and new_scale.numel() == 1 and new_scale.requires_grad is not True)
        if not usable:
            raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                                 "torch.FloatTensor with requires_grad=False.")
        self._scale.copy_(new_scale)

    def _adapt_scale(self, scale, tracker):
        """Combine every optimizer's inf flags from this iteration and grow or back off the scale."""
        flags = [flag for state in self._per_optimizer_states.values()
                 for flag in state["found_inf_per_device"].values()]
        if not flags:
            raise AssertionError("No inf checks were recorded prior to update.")
        any_inf = sum(flags[1:], flags[0])
        _grow_or_back_off(scale, tracker, any_inf, self._growth_factor, self._backoff_factor,
                          self._growth_interval)

    # ---- getters, setters, state ----

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        if self._scale is None:
            return self._init_scale
        return self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        state = {"scale": self.get_scale()}
        state.update((name, getattr(self, "_" + name)) for name in _TUNABLES)
        state["_growth_tracker"] = self._get_growth_tracker()
        return state

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        for name in _TUNABLES:
            setattr(self, "_" + name, state_dict[name])
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)

    def __getstate__(self):
        """Pickle only between iterations; the tensors travel as numbers and the next scale() remakes them."""
        state = self.__dict__.copy()
        if not self._enabled:
            return state
        if self._per_optimizer_states:
            raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                 "of an iteration, or at the end after scaler.update().")
        state.update(_init_scale=self.get_scale(), _init_growth_tracker=self._get_growth_tracker(),
                     _scale=None, _growth_tracker=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ---- torch's protocol for optimizers that unscale by themselves ----

    def _check_inf_per_device(self, optimizer):
        """Record the optimizer's inf/NaN gradients without unscaling them."""
        self._require_scale("_check_inf_per_device")
        found = self._unscale_all(optimizer, _full(1.0, D.float32), _full(0.0, D.float32), True)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = found
        return found

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
