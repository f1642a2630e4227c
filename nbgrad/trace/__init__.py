"""Recording what autograd does: the Recorder that watches the engine, and the Trace it makes.

with nbgrad.record() as trace:      # or a %%autograd cell (nbgrad.magic)
    ...
trace.tensors["loss"].grad_fn.name
trace.to_json()                     # the schema of docs/trace-schema.md
"""

from nbgrad.trace.api import last_trace, record
from nbgrad.trace.recorder import Recorder, RecordingError
from nbgrad.trace.trace import (
    SCHEMA_VERSION,
    Accumulation,
    BackwardPass,
    BackwardStep,
    NodeRecord,
    OpRecord,
    TensorRecord,
    Trace,
)
from nbgrad.trace.values import ArraySummary, Policy

__all__ = [
    "SCHEMA_VERSION",
    "Accumulation",
    "ArraySummary",
    "BackwardPass",
    "BackwardStep",
    "NodeRecord",
    "OpRecord",
    "Policy",
    "Recorder",
    "RecordingError",
    "TensorRecord",
    "Trace",
    "last_trace",
    "record",
]
