"""torch.autograd.profiler: the legacy profiler API on ember.profiler's recorder (same events, table and
Chrome trace), record_function, and emit_nvtx / emit_itt as no-ops (ember has no NVTX or ITT ranges)."""
import contextlib

from .. import profiler as _profiler
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function

# torch's __all__, less what ember lacks (nvprof parsing, kineto step tracking), plus the averaged event.
__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile:
    """torch.autograd.profiler.profile: records while enabled; use_cpu=False records nothing (ember profiles
    the CPU only); use_cuda / use_device / use_kineto / post_processing_timeout_s / activity_filters are accepted
    and have no effect (they tune torch's device tracing and kineto's post-processing)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled and use_cpu
        self._recorder = _profiler.profile(record_shapes=record_shapes, with_stack=with_stack,
                                           profile_memory=profile_memory, with_flops=with_flops)
        # None until the block exits; the tests and users read it directly.
        self.function_events = None

    def __enter__(self):
        if self.enabled:
            self._recorder.start()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            self.function_events = EventList()
            return False
        self._recorder.stop()
        self.function_events = self._recorder.events()
        return False

    def _events(self):
        """The recorded EventList; asking before the block has exited is an error, as in torch."""
        recorded = self.function_events
        if recorded is None:
            raise RuntimeError("Profiler didn't finish running")
        return recorded

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        widths = dict(max_src_column_width=max_src_column_width, max_name_column_width=max_name_column_width,
                      max_shapes_column_width=max_shapes_column_width)
        return self._events().table(sort_by=sort_by, row_limit=row_limit, header=header,
                                    top_level_events_only=top_level_events_only, **widths)

    def export_chrome_trace(self, path):
        return self._events().export_chrome_trace(path)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self):
        return self._events().self_cpu_time_total

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
