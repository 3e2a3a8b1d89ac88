"""torch.profiler on ember: which ops a program ran, how often, and the time spent in each (self and
total), per op and per backward node, with torch's names, table and Chrome trace.

CPU only (ember has no device). Recording costs nothing while no profiler runs (Note [Profiler hooks] in
_recorder.py). What is recorded: the ops a program calls through ember's public API (ember.*, Tensor
methods and operators, nn.functional) and the kernels they reach, as "aten::<op>", and each backward node
as torch names it inside "autograd::engine::evaluate_function: <node>". Ops ember composes internally from
private helpers do not show up as their own rows (their time counts as the calling op's self time), so
nested rows differ from torch's where torch decomposes differently (torch's aten::linear shows aten::t and
aten::addmm inside).
"""
import contextlib
import enum
import os
import socket
import time
import warnings

from . import _recorder
from ._events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ._recorder import _state

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities"]


class ProfilerActivity(enum.Enum):
    """torch.profiler.ProfilerActivity; ember records CPU activity only."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    """{ProfilerActivity.CPU}: ember has no device to profile."""
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch.profiler.schedule: the action for each step number (skip_first steps, then cycles of wait,
    warmup and active steps, `repeat` times or forever when 0)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(step):
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """torch.profiler.profile: a context manager recording ember's ops (see the module docstring).
    profile_memory counts the bytes of the new tensors each op returns (torch counts allocator traffic, so
    memory an op allocates and frees inside is not seen); with_flops is accepted and records nothing (a
    warning says so)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        acts = set(activities) if activities is not None else supported_activities()
        if acts - supported_activities():
            warnings.warn("ember profiles the CPU only: device activities record nothing", UserWarning,
                          stacklevel=2)
        if with_flops:
            warnings.warn("ember's profiler does not count FLOPs: with_flops adds no column", UserWarning,
                          stacklevel=2)
        self.activities = acts
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._events = []
        self._finished = None
        self._t0 = time.perf_counter_ns()

    # ---- lifetime -----------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        if _state.profiler is not None:
            raise RuntimeError("Can't profile: a profiler is already running (ember records one at a time)")
        _state.profiler = self
        _state.stack = []
        _recorder.install()
        self._set_recording(self.current_action)

    def stop(self):
        if _state.profiler is not self:
            return
        if self.current_action in _RECORDING:
            self._save()
        _state.recording = False
        _state.profiler = None
        _state.stack = []
        _recorder.uninstall()

    def step(self):
        """Advance the schedule one step; the end of an active span hands the trace to on_trace_ready."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev is ProfilerAction.RECORD_AND_SAVE or (prev in _RECORDING and self.current_action not in
                                                      _RECORDING):
            self._save()
        self._set_recording(self.current_action)

    def _set_recording(self, action):
        _state.recording = action in _RECORDING and _state.profiler is self

    def _save(self):
        _state.stack = []
        if self.acc_events and self._finished is not None:
            self._finished = EventList(list(self._finished) + self._events, self.profile_memory)
        else:
            self._finished = EventList(self._events, self.profile_memory)
        self._events = []
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---- results ------------------------------------------------------------------------
    def events(self):
        """Every recorded call (nested calls included), in the order they started."""
        roots = self._finished if self._finished is not None else self._events
        return EventList(_walk_sorted(roots), self.profile_memory)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        return self.events().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Folded stacks (flame graph input): one line per call with its frames and time in microseconds."""
        with open(path, "w") as f:
            for evt in self.events():
                if evt.stack:
                    f.write(";".join(reversed(evt.stack)) + f" {int(getattr(evt, metric))}\n")


def _walk_sorted(roots):
    out = []
    stack = list(reversed(roots))
    while stack:
        evt = stack.pop()
        out.append(evt)
        stack.extend(reversed(evt.cpu_children))
    return out


class record_function(contextlib.ContextDecorator):
    """torch.profiler.record_function: a named span in the profile (context manager or decorator); records
    nothing when no profiler runs."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._evt = None

    def __enter__(self):
        self._evt = _recorder.begin(self.name, is_user_annotation=True)
        return self

    def __exit__(self, *exc):
        _recorder.end(self._evt)
        self._evt = None
        return False


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready callback writing each trace as <dir_name>/<worker>.<ms>.pt.trace.json[.gz], the file
    name TensorBoard's profiler plugin reads (no new dependency: the Chrome trace JSON)."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            import shutil
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
    return handler
