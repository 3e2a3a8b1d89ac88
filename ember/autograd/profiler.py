"""torch.autograd.profiler: the legacy profiler API on ember.profiler's recorder (same events, table and
Chrome trace), record_function, and emit_nvtx / emit_itt as no-ops (ember has no NVTX or ITT ranges)."""
import contextlib

from .. import profiler as _profiler
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function  # noqa: F401


class profile:
    """torch.autograd.profiler.profile: records while enabled; use_cpu=False records nothing (ember profiles
    the CPU only); use_cuda / use_device / use_kineto / post_processing_timeout_s / activity_filters are accepted
    and have no effect (they tune torch's device tracing and kineto's post-processing)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled and use_cpu
        self._prof = _profiler.profile(record_shapes=record_shapes, with_stack=with_stack,
                                       profile_memory=profile_memory, with_flops=with_flops)
        self.function_events = None

    def __enter__(self):
        if self.enabled:
            self._prof.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._prof.stop()
            self.function_events = self._prof.events()
        else:
            self.function_events = EventList()
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit, header=header,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width,
                                          top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path):
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        return self.table()


@contextlib.contextmanager
def emit_nvtx(enabled=True, record_shapes=False):
    """No NVTX ranges in ember (no CUDA): the block runs unchanged."""
    yield


@contextlib.contextmanager
def emit_itt(enabled=True, record_shapes=False):
    """No ITT ranges in ember: the block runs unchanged."""
    yield
