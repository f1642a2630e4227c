"""``torch.profiler``: the same recording as ``torch.autograd.profiler.profile`` (see
``nbgrad/autograd/profiler.py``), with ``activities=`` and ``step()``. Only the CPU is profiled."""

import enum

from nbgrad.autograd import profiler as _autograd_profiler
from nbgrad.autograd.profiler import record_function

__all__ = ["ProfilerActivity", "profile", "record_function"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __str__(self):
        return f"ProfilerActivity.{self.name}"

    __repr__ = __str__


class profile(_autograd_profiler.profile):  # noqa: N801 - PyTorch's name
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):  # fmt: skip
        activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        self.activities = activities
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        super().__init__(enabled=ProfilerActivity.CPU in activities, record_shapes=record_shapes)

    def start(self):
        self.__enter__()

    def stop(self):
        self.__exit__(None, None, None)

    def step(self):
        self.step_num += 1

    def __exit__(self, *exc):
        result = super().__exit__(*exc)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return result
