"""``torch.autograd.profiler``: time spent in each op and backward node, as PyTorch reports it.

While a ``profile`` is active it listens at the observation points (``autograd/observe.py``):
every table op (``run_op`` / ``run_inplace``) and every node the engine runs becomes an event with
its start and end, nested by time as the calls nest. Names follow PyTorch's: a table op is
``aten::<entry name>`` (``aten::mul``; an in-place run ``aten::mul_``), a backward node is
``autograd::engine::evaluate_function: MulBackward0`` with the node's own ``MulBackward0`` event
inside it, a leaf's accumulation ``torch::autograd::AccumulateGrad``, and ``record_function``
blocks their own name. What is not a table op (creation functions, Python-level decompositions
themselves) has no event of its own: its time is the enclosing event's self time.
"""

import json
import time

from nbgrad.autograd import observe

# Table entries that are nbgrad's own variants of one aten op.
_ATEN_NAMES = {
    "add_scaled": "add", "sub_scaled": "sub", "div_rounded": "div", "pow_tensor": "pow",
    "normal_tensor_tensor": "normal", "normal_tensor_float": "normal",
    "normal_float_tensor": "normal", "bernoulli_float_": "bernoulli_",
    "bernoulli_tensor_": "bernoulli_", "random_to_": "random_", "random_full_": "random_",
}  # fmt: skip


def _aten(name):
    return "aten::" + _ATEN_NAMES.get(name, name)


def _shapes(values):
    return [list(v.shape) if hasattr(v, "_data") else [] for v in values]


class FunctionEvent:
    """One timed call: ``name``, start and end in microseconds, its children's time, shapes."""

    def __init__(self, id, name, start_us, thread=0, input_shapes=None):  # noqa: A002
        self.id = id
        self.name = name
        self.key = name
        self.start_us = start_us
        self.end_us = start_us
        self.children_us = 0.0
        self.thread = thread
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.count = 1

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return max(self.cpu_time_total - self.children_us, 0.0)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
            f"self_cpu_time={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them), added up."""

    def __init__(self, key, input_shapes):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, event):
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} "
            f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
            f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events with PyTorch's ``table``, ``key_averages`` and ``total_average``."""

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None,
              top_level_events_only=False, max_shapes_column_width=80, **_ignored):  # fmt: skip
        return _build_table(self, sort_by, row_limit, max_name_column_width, header,
                            max_shapes_column_width)  # fmt: skip

    def key_averages(self, group_by_input_shape=False):
        groups = {}
        for event in self:
            shapes = str(event.input_shapes) if group_by_input_shape else None
            key = (event.key, shapes)
            if key not in groups:
                groups[key] = FunctionEventAvg(
                    event.key, event.input_shapes if group_by_input_shape else None
                )
            groups[key].add(event)
        return EventList(groups.values())

    def total_average(self):
        total = FunctionEventAvg("Total", None)
        for event in self:
            total.count += event.count
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
        return total

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def export_chrome_trace(self, path):
        trace = {
            "traceEvents": [
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": e.name,
                    "pid": 0,
                    "tid": e.thread,
                    "ts": e.start_us,
                    "dur": e.cpu_time_total,
                    "args": {"Input Dims": e.input_shapes} if e.input_shapes else {},
                }
                for e in self
            ],
            "displayTimeUnit": "ms",
        }
        with open(path, "w") as file:
            json.dump(trace, file)


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _build_table(events, sort_by, row_limit, max_name_width, header, max_shapes_width):
    """PyTorch's ``_build_table`` for CPU events: the same columns, widths and formats."""
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{: >" + str(w) + "}  " for w in widths)
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    lines += [separator, row_format.format(*headers), separator]
    for event in events[:row_limit]:
        name = event.key
        if len(name) >= max_name_width - 3:
            name = name[: max_name_width - 3] + "..."
        row = [
            name,
            _format_share(event.self_cpu_time_total, total),
            _format_time(event.self_cpu_time_total),
            _format_share(event.cpu_time_total, total),
            _format_time(event.cpu_time_total),
            _format_time(event.cpu_time),
            event.count,
        ]
        if has_shapes:
            row.append(str(event.input_shapes)[:shapes_width])
        lines.append(row_format.format(*row))
    lines += [separator, f"Self CPU time total: {_format_time(total)}", ""]
    return "\n".join(lines)


# --- recording --------------------------------------------------------------------------------

_active = []  # the profiles listening now (one at a time is the usual case)


class profile:  # noqa: N801 - PyTorch's name
    """``with profile(record_shapes=...) as prof:`` records every op and backward node run."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None,
                 acc_events=False, custom_trace_id_callback=None):  # fmt: skip
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False
        self._events = EventList()
        self._stack = []  # open events, innermost last
        self._next_id = 0
        self._origin = 0.0

    # The listeners: each event is opened at a start and closed by the matching end.

    def _now(self):
        return (time.perf_counter() - self._origin) * 1e6

    def _open(self, name, shapes=None):
        event = FunctionEvent(self._next_id, name, self._now(), input_shapes=shapes)
        self._next_id += 1
        self._stack.append(event)
        self._events.append(event)
        return event

    def _close(self, name):
        now = self._now()
        stack = self._stack
        # An op that raised left its event open: close the events above the one ending here.
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth].name == name:
                break
        else:
            return None
        while len(stack) > depth:
            event = stack.pop()
            event.end_us = now
            if stack:
                stack[-1].children_us += event.cpu_time_total
        return event

    def _op_start(self, name):
        self._open(_aten(name))

    def _op_end(self, node, name, inputs, outputs):
        event = self._close(_aten(name))
        if event is not None and self.record_shapes:
            event.input_shapes = _shapes(inputs)

    def _node_start(self, node):
        name = node.name()
        outer = self._open("autograd::engine::evaluate_function: " + name)
        outer.children_us = 0.0
        self._open(name)

    def _node_end(self, node, grads, outputs):
        name = node.name()
        self._close(name)
        self._close("autograd::engine::evaluate_function: " + name)

    _POINTS = (
        ("op_start_listeners", "_op_start"),
        ("op_listeners", "_op_end"),
        ("node_start_listeners", "_node_start"),
        ("node_listeners", "_node_end"),
    )

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._origin = time.perf_counter()
        self._bound = [(getattr(observe, lst), getattr(self, m)) for lst, m in self._POINTS]
        for listeners, method in self._bound:
            listeners.append(method)
        _active.append(self)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        for listeners, method in self._bound:
            listeners.remove(method)
        _active.remove(self)
        now = self._now()
        while self._stack:  # close what is still open (a record_function left by an error)
            event = self._stack.pop()
            event.end_us = now
        return False

    # The results, as PyTorch gives them.

    @property
    def function_events(self):
        self._check_finished()
        return self._events

    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **_ignored):
        self._check_finished()
        if group_by_input_shape and not self.record_shapes:
            raise AssertionError(
                "Can't group by input shape, record_shapes must be enabled for this profiler"
            )
        return self._events.key_averages(group_by_input_shape)

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self):
        return self._events.total_average()

    @property
    def self_cpu_time_total(self):
        return self._events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finished()
        self._events.export_chrome_trace(path)

    def _check_finished(self):
        if self in _active:
            raise RuntimeError("Profiler didn't finish running")

    def __str__(self):
        return self.table()


class record_function:  # noqa: N801 - PyTorch's name
    """A named block of the profile: ``with record_function("forward"):`` (or a decorator)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args

    def __enter__(self):
        for prof in _active:
            prof._open(self.name)
        return self

    def __exit__(self, *exc):
        for prof in _active:
            prof._close(self.name)
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return func(*args, **kwargs)

        return wrapper
