"""Recording what autograd does: the Recorder that watches the engine, and the Trace it makes.

with nbgrad.record() as trace:      # or a %%autograd cell (nbgrad.magic)
    ...
trace.tensors["loss"].grad_fn.name
trace.to_json()                     # the schema of docs/trace-schema.md
"""

import sys
import types

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


class _CallablePackage(types.ModuleType):
    """``torch.trace(x)`` is the sum of a matrix's diagonal, and ``nbgrad.trace`` is that function
    until this package is imported, when the package takes the name in ``nbgrad`` (Python sets a
    package's attribute on its parent). Calling the package calls the function, so
    ``import nbgrad as torch; torch.trace(x)`` works either way."""

    def __call__(self, input):  # noqa: A002
        from nbgrad.ops.functions.selection import trace

        return trace(input)


sys.modules[__name__].__class__ = _CallablePackage
