"""A Trace as JSON-ready data, in the schema documented in docs/trace-schema.md.

Records refer to each other by id ("t3" a tensor, "o2" an op, "n5" a node), so the JSON has
no cycles and each tensor's value is written once; gradients in the backward log are written
where they travelled.
"""

import json

import numpy as np

from nbgrad.trace.history import history_json
from nbgrad.trace.node_check import jacobians_for
from nbgrad.trace.readable import readable
from nbgrad.trace.values import (
    PREVIEW_SIDE,
    ArraySummary,
    _stat_json,
    array_data_json,
    plain_json,
    value_json,
)

# In the APART and CARRIED forms, arrays up to this size are written out: a learner's 2 x 3 or
# 4 x 4 tensor shows whole at once, and costs about what its summary would.
APART_INLINE_ELEMENTS = 16

# How a trace's values are written (docs/trace-schema.md, "Values"; ``limits.values``):
INLINE = "inline"  # arrays of up to inline_elements elements as lists (Trace.to_json)
APART = "apart"  # structure up front: every array of over 16 elements a summary, a buffer id
CARRIED = "carried"  # like APART, but the arrays whose bytes ride along (save_html) carry no
#                      statistics or preview: the page computes them from the bytes


def trace_json(trace, version, values=INLINE, carried=None):
    """The trace as JSON-ready data. ``values`` is INLINE, APART or CARRIED; with CARRIED,
    ``carried(buffer_id, array)`` says whether that array's bytes ride along with the JSON."""
    from nbgrad.trace.trace import TensorRecord

    if values not in (INLINE, APART, CARRIED):
        raise ValueError(f"values is 'inline', 'apart' or 'carried', got {values!r}")
    policy = trace.policy
    buffers = _BufferIds(trace, policy, apart=values != INLINE)
    summaries = {}  # id(array) -> its summary JSON, once per array (values are shared)

    def value(v):
        if values == INLINE:
            return value_json(v, policy, buffers.id_for(v))
        return _apart_json(v, buffers, summaries, carried if values == CARRIED else None)

    def ref(record):
        return record.id if record is not None else None

    tensors = []
    for record in trace.tensors.values():
        entry = {
            "id": record.id,
            "name": record.name,
            "named_by": record.named_by,
            "role": record.role,
            "shape": list(record.shape),
            "dtype": record.dtype,
            "requires_grad": record.requires_grad,
            "version": record.version,
            "value": value(record.value),
            "grad": value(record.grad),
            "grad_fn": ref(record.grad_fn),
            "output_nr": record.output_nr,
            "op": ref(record.op),
        }
        if record.aliases:
            entry["aliases"] = list(record.aliases)
        tensors.append(_without_defaults(entry))

    ops = []
    for op in trace.ops:
        ops.append(
            _without_defaults(
                {
                    "id": op.id,
                    "op": op.op,
                    "inputs": [
                        i.id if type(i) is TensorRecord else {"const": plain_json(i, policy)}
                        for i in op.inputs
                    ],
                    "outputs": [o.id for o in op.outputs],
                    "node": ref(op.node),
                    "line": op.line,
                    "span": list(op.span) if op.span is not None else None,
                    "module": op.module,
                    "in_backward": op.in_backward,
                    "function": ref(op.function),
                }
            )
        )

    nodes = []
    readable_table = _ReadableFormulas()
    jacobians = jacobians_for(trace)  # the small nodes' local Jacobians (node_check)
    for node in trace.nodes:
        saved = {}
        for name, kept in node.saved.items():
            tensor = node.saved_tensors.get(name)
            if tensor is not None:
                saved[name] = {"tensor": tensor.id}
            elif isinstance(kept, (np.ndarray, ArraySummary)):
                saved[name] = {"value": value(kept)}
            else:
                saved[name] = {"value": plain_json(kept, policy)}
        entry = {
            "id": node.id,
            "name": node.name,
            "op": ref(node.op),
            "formula": node.op_name,
            "next": [[ref(child), nr] if child is not None else None for child, nr in node.next],
            "saved": saved,
            "freed_at": node.freed_at,
            "observed": node.observed,
        }
        if node.variable is not None:
            entry["variable"] = node.variable.id
        entry["readable"] = readable_table.key_for(node)
        if node in jacobians:
            entry["jacobian"] = jacobians[node]
        nodes.append(_without_defaults(entry))

    passes = [
        _without_defaults(
            {
                "index": p.index,
                "kind": p.kind,
                "roots": [[ref(node), nr] for node, nr in p.roots],
                "retain_graph": p.retain_graph,
                "create_graph": p.create_graph,
                "line": p.line,
            }
        )
        for p in trace.passes
    ]
    steps = [
        _without_defaults(
            {
                "pass": s.pass_index,
                "node": s.node.id,
                "grads_in": [value(g) for g in s.grads_in],
                "grads_out": [value(g) for _, _, g in s.grads_out],
                "freed": s.freed,
            }
        )
        for s in trace.backward_steps
    ]
    accumulations = [
        _without_defaults(
            {
                "tensor": a.tensor.id,
                "pass": a.pass_index,
                "step": a.step,
                "grad": value(a.grad),
                "total": value(a.total),
            }
        )
        for a in trace.accumulation_log
    ]

    from nbgrad import __version__
    from nbgrad.trace.nonfinite import first_nonfinite, magnitude_json

    engine, engine_version = trace.engine or ("nbgrad", __version__)
    out = {
        "version": version,
        "producer": {"engine": engine, "engine_version": engine_version},
        "name": trace.name,
        "source": {
            "kind": trace.source_kind,
            "filename": trace.filename,
            "lines": {str(line): text for line, text in trace.source_lines.items()},
        },
        "status": {
            "complete": trace.complete,
            "truncated": trace.truncated,
            "error": trace.error,
        },
        "limits": {
            "max_elements": policy.max_elements,
            "inline_elements": policy.inline_elements
            if values == INLINE
            else min(policy.inline_elements, APART_INLINE_ELEMENTS),
            "full": policy.full,
            "values": values,
        },
        "modules": dict(trace.modules),
        "formulas": trace.formulas,
        "readable": readable_table.table,
        "backward_sources": dict(getattr(trace, "backward_sources", {})),
        "tensors": tensors,
        "ops": ops,
        "nodes": nodes,
        "passes": passes,
        "steps": steps,
        "accumulations": accumulations,
        # optional: the call that raised, when the recorded code failed (trace/failure.py)
        **({"failure": trace.failure.to_json()} if getattr(trace, "failure", None) else {}),
    }
    found = first_nonfinite(trace)
    if found is not None:
        out["nonfinite"] = found.to_json()
    magnitudes = magnitude_json(trace)
    if magnitudes is not None:
        out["grad_norms"] = magnitudes
    history = history_json(trace)  # optional: per-parameter numbers of every pass
    if history is not None:
        out["history"] = history
    return out


# Keys left out of the JSON when they hold these values (docs/trace-schema.md lists them).
_DEFAULTS = {
    "version": 0,
    "output_nr": 0,
    "grad": None,
    "grad_fn": None,
    "op": None,
    "node": None,
    "line": None,
    "span": None,
    "module": None,
    "in_backward": None,
    "function": None,
    "formula": None,
    "readable": None,
    "freed_at": None,
    "observed": True,
    "freed": False,
    "step": None,
    "retain_graph": False,
    "create_graph": False,
}


def _without_defaults(entry):
    return {
        key: value
        for key, value in entry.items()
        if key not in _DEFAULTS or value is not _DEFAULTS[key] and value != _DEFAULTS[key]
    }


def _apart_json(value, buffers, summaries, carried):
    """A value in the APART or CARRIED form: an array of up to APART_INLINE_ELEMENTS elements
    as it is (inline_elements, when smaller, decides); a larger array as its shape, dtype,
    statistics, the first row of its preview and its buffer id (the whole array, fetched when
    inspected); with ``carried``, an array whose bytes ride along is its shape, dtype and buffer
    id only."""
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.size <= buffers.smallest:
        return array_data_json(value)
    known = summaries.get(id(value))
    if known is not None:
        return known
    buffer_id = buffers.id_for(value)
    if buffer_id is not None and carried is not None and carried(buffer_id, value):
        out = {"shape": list(value.shape), "dtype": value.dtype.name, "buffer": buffer_id}
    else:
        summary = value if isinstance(value, ArraySummary) else ArraySummary(value)
        preview = summary.preview
        if buffer_id is not None:  # the whole array is a fetch away: a few numbers will do
            preview = preview[0] if preview.ndim >= 2 else preview[:PREVIEW_SIDE]
        out = {
            "shape": list(summary.shape),
            "dtype": summary.dtype,
            "stats": {
                "min": _stat_json(summary.min),
                "max": _stat_json(summary.max),
                "mean": _stat_json(summary.mean),
                "std": _stat_json(summary.std),
            },
            "preview": array_data_json(preview),
        }
        if summary.nonfinite:
            out["stats"]["nonfinite"] = summary.nonfinite
        if buffer_id is not None:
            out["buffer"] = buffer_id
    summaries[id(value)] = out
    return out


class _BufferIds:
    """Ids for whole arrays that do not travel inline: the widget fetches them by id from the
    kernel (``trace.buffer(id)``) instead of receiving them in the JSON: arrays over
    ``inline_elements``, or with ``apart`` (the APART and CARRIED forms) over
    APART_INLINE_ELEMENTS."""

    def __init__(self, trace, policy, apart=False):
        self._trace = trace
        self._policy = policy
        self.smallest = policy.inline_elements
        if apart:
            self.smallest = min(self.smallest, APART_INLINE_ELEMENTS)
        self._ids = {id(array): key for key, array in trace._buffers.items()}

    def id_for(self, value):
        if not isinstance(value, np.ndarray) or value.size <= self.smallest:
            return None
        key = self._ids.get(id(value))
        if key is None:
            key = f"b{len(self._trace._buffers)}"
            self._trace._buffers[key] = value
            self._ids[id(value)] = key
        return key


class _ReadableFormulas:
    """The trace's ``readable`` table: each node's formulas resolved against what it saved
    (nbgrad/trace/readable.py), written once per distinct result: the nodes of a loop or of
    every layer share one entry."""

    def __init__(self):
        self.table = {}
        self._keys = {}

    def key_for(self, node):
        if not node.op_name or not node.formulas:
            return None
        constants = {}
        for name, kept in node.saved.items():
            if name in node.saved_tensors or isinstance(kept, (np.ndarray, ArraySummary)):
                continue
            constants[name] = kept.item() if isinstance(kept, np.generic) else kept
        cache_key = (node.name, node.op_name, repr(sorted(constants.items(), key=lambda kv: kv[0])))
        key = self._keys.get(cache_key)
        if key is None:
            trees = readable(node.formulas, node.name, constants)
            text = json.dumps(trees, sort_keys=True)
            key = self._keys.get(text)
            if key is None:
                key = f"r{len(self.table)}"
                self.table[key] = trees
                self._keys[text] = key
            self._keys[cache_key] = key
        return key
