"""Profiler events and their summaries in torch's shapes: FunctionEvent (one recorded call),
FunctionEventAvg (calls grouped by name), EventList (table() in torch's layout, export_chrome_trace)."""
import json
import os


def _format_time(us):
    """torch's time format: 1.234s, 1.234ms or 1.234us."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us, total):
    if total == 0:
        return "NaN"
    return f"{us * 100.0 / total:.2f}%"


class _NoDevice:
    """Device-time fields torch's events carry; ember runs on the CPU only, so they are 0 (sorting a table
    by "cuda_time_total", as CPU scripts written for GPUs do, works and keeps the CPU order's ties)."""
    device_time_total = self_device_time_total = device_time = 0.0
    cuda_time_total = self_cuda_time_total = cuda_time = 0.0
    device_memory_usage = self_device_memory_usage = 0
    use_device = None


class FunctionEvent(_NoDevice):
    """One recorded call: a name, start and end (microseconds), its nested calls, input shapes."""

    def __init__(self, id, name, start_us, input_shapes, stack, parent, is_user_annotation=False):
        self.id = id
        self.name = name
        self.start_us = start_us
        self.end_us = start_us
        self.input_shapes = input_shapes
        self.stack = stack
        self.cpu_parent = parent
        self.cpu_children = []
        self.is_user_annotation = is_user_annotation
        self.thread = 0
        self.count = 1
        self.is_async = False
        self.node_id = -1
        self.cpu_memory_usage = 0

    @property
    def key(self):
        return self.name

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_NoDevice):
    """Calls with the same key (name, and input shapes / stack when grouped by them), summed."""

    def __init__(self, key, input_shapes, stack):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.is_user_annotation = False
        self.is_async = False
        self.cpu_parent = None
        self.node_id = -1

    def add(self, evt):
        self.count += 1
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        self.is_user_annotation = evt.is_user_annotation
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


def _format_memory(nbytes):
    """torch's memory format: 1.50 MB, 2.00 KB, 12 B."""
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class EventList(list):
    """A list of events with torch's summaries; profile_memory adds the memory columns to table()."""

    def __init__(self, events=(), profile_memory=False):
        super().__init__(events)
        self.profile_memory = profile_memory

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One FunctionEventAvg per name (and input shapes / top stack frames when asked), in first-seen order.
        (torch spells this parameter group_by_input_shapes here, group_by_input_shape on the profilers.)"""
        groups = {}
        for evt in self:
            shapes = str(evt.input_shapes) if group_by_input_shapes else ""
            stack = tuple(evt.stack[:group_by_stack_n]) if group_by_stack_n and evt.stack else ()
            key = (evt.key, shapes, stack)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(evt.key, evt.input_shapes if group_by_input_shapes else None,
                                                     list(stack))
            avg.add(evt)
        return EventList(groups.values(), self.profile_memory)

    def total_average(self):
        total = FunctionEventAvg("Total", None, [])
        for evt in self:
            total.add(evt)
        return total

    @property
    def self_cpu_time_total(self):
        return sum(evt.self_cpu_time_total for evt in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """torch's profiler table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
        # of Calls (+ Input Shapes, Source Location when recorded), sorted by `sort_by` descending."""
        return _build_table(self, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, top_level_events_only, time_unit, self.profile_memory)

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON (complete "X" events), which chrome://tracing and Perfetto open."""
        events = []
        for evt in _walk(self):
            record = {"ph": "X", "cat": "user_annotation" if evt.is_user_annotation else "cpu_op",
                      "name": evt.name, "pid": os.getpid(), "tid": evt.thread, "ts": evt.start_us,
                      "dur": evt.cpu_time_total, "args": {"External id": evt.id}}
            if evt.input_shapes:
                record["args"]["Input Dims"] = evt.input_shapes
            events.append(record)
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        return path


def _walk(events):
    """Every event once (events may already hold all nested events, or only roots)."""
    seen = set()
    stack = list(reversed(events))
    while stack:
        evt = stack.pop()
        if id(evt) in seen or not isinstance(evt, FunctionEvent):
            continue
        seen.add(id(evt))
        yield evt
        stack.extend(reversed(evt.cpu_children))


def _build_table(events, sort_by, header, row_limit, max_src_width, max_name_width, max_shapes_width,
                 top_level_only, time_unit, profile_memory):
    if len(events) == 0:
        return ""
    if sort_by is not None:
        key = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = sorted(events, key=lambda evt: getattr(evt, key), reverse=True)
    has_shapes = any(evt.input_shapes for evt in events)
    has_stack = any(evt.stack for evt in events)
    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_width is not None:
        name_width = min(name_width, max_name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    n_fixed = len(headers)
    if has_shapes:
        shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
        headers.append("Input Shapes")
        widths.append(min(shapes_width, max_shapes_width) if max_shapes_width is not None else shapes_width)
        aligns.append(">")
    if has_stack:
        src_width = max(len(entry) for evt in events for entry in (evt.stack or [""])) + 4
        headers.append("Source Location")
        widths.append(min(src_width, max_src_width) if max_src_width is not None else src_width)
        aligns.append("<")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(widths) + 2 * (len(widths) - 1)
    total = sum(evt.self_cpu_time_total for evt in events)

    def fmt(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[:max_name_width - 3] + "..."
        row = [name, _format_share(evt.self_cpu_time_total, total), fmt(evt.self_cpu_time_total),
               _format_share(evt.cpu_time_total, total), fmt(evt.cpu_time_total), fmt(evt.cpu_time)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if has_shapes:
            shapes = str(evt.input_shapes)
            w = widths[n_fixed]
            row.append(shapes if len(shapes) <= w else shapes[:w - 3] + "...")
        if has_stack:
            src = evt.stack[0] if evt.stack else ""
            row.append(src[-widths[-1]:])
        out.append(row_format.format(*row))
        for entry in (evt.stack or [])[1:]:
            out.append(row_format.format(*([""] * (len(headers) - 1) + [entry[-widths[-1]:]])))
    out += [sep, f"Self CPU time total: {fmt(total)}"]
    return "\n".join(out) + "\n"
