"""The text summary of a Trace: what a recorded cell shows until the graph widget does.

Deterministic (no memory addresses, no timings), so it reads the same in a notebook's saved
output, in nbval and on GitHub.
"""

import math

import numpy as np

from nbgrad.trace.values import ArraySummary

MAX_ROWS = 30
VALUE_WIDTH = 36


def one_line(trace):
    parts = [
        f"{len(trace.tensors)} tensors",
        f"{len(trace.ops)} ops",
        f"{len(trace.nodes)} nodes",
        f"{len(trace.passes)} backward passes" if len(trace.passes) != 1 else "1 backward pass",
    ]
    state = ""
    if trace.error:
        state = ", stopped by an error"
    elif trace.truncated:
        state = ", truncated"
    title = f" {trace.name!r}" if trace.name else ""
    return f"<Trace{title}: {', '.join(parts)}{state}>"


def render(trace):
    lines = [_title(trace)]
    if trace.error:
        lines.append(f"  stopped by {trace.error}")
    if trace.truncated:
        lines.append(f"  {trace.truncated}: the rest ran without recording")
    found = trace.first_nonfinite
    if found is not None:
        lines.append(f"  {found.describe()}")
    if not trace.ops and not trace.backward_steps:
        lines.append("  no tensor operations ran while recording")
        return "\n".join(lines)

    lines.append("")
    lines.append("forward")
    previous_line = object()
    for op in _first(trace.ops, lines):
        if op.line != previous_line:
            previous_line = op.line
            where = f"line {op.line}: {op.code}" if op.line is not None else "(outside the code)"
            lines.append(f"  {where}")
        outputs = ", ".join(f"{o.name} = {_short(o.value)}" for o in op.outputs)
        node = op.node.name if op.node is not None else "no grad_fn"
        module = f" in {op.module}" if op.module else ""
        inside = f", inside {op.function.op}.forward" if op.function is not None else ""
        detail = f"{node}{module}{inside}"
        saved = op.node.saved if op.node is not None else {}
        if saved:
            detail += ", saved " + ", ".join(
                f"{name}={_saved_text(op.node, name, kept)}" for name, kept in saved.items()
            )
        lines.append(f"      {op.op} -> {outputs}   ({detail})")

    for backward_pass in trace.passes:
        lines.append("")
        flags = []
        if backward_pass.retain_graph:
            flags.append("retain_graph")
        if backward_pass.create_graph:
            flags.append("create_graph")
        where = f" line {backward_pass.line}" if backward_pass.line is not None else ""
        call = f": {backward_pass.code}" if backward_pass.code else ""
        flag_text = f" ({', '.join(flags)})" if flags else ""
        lines.append(f"backward pass {backward_pass.index + 1}{where}{call}{flag_text}")
        for step in _first(backward_pass.steps, lines):
            lines.append(f"  {step.index + 1:>3}. {_node_label(step.node)}")
            if step.grads_in:
                got = ", ".join(_short(g) for g in step.grads_in)
                lines.append(f"       grad in  {got}")
            for child, _, grad in step.grads_out:
                if child is not None and grad is not None:
                    lines.append(f"       sent     {_short(grad)} -> {_node_label(child)}")
            if step.freed:
                lines.append("       saved buffers freed")

    if trace.accumulations:
        lines.append("")
        lines.append("accumulated into .grad")
        for name, items in trace.accumulations.items():
            for number, item in enumerate(items, 1):
                lines.append(f"  {name}  #{number}: + {_short(item.grad)}  => {_short(item.total)}")

    lines.append("")
    lines.append("tensors")
    for record in _first(list(trace.tensors.values()), lines):
        grad = f"  grad {_short(record.grad)}" if record.grad is not None else ""
        shape = "x".join(str(s) for s in record.shape) or "scalar"
        lines.append(
            f"  {record.name}  {record.role}, {shape} {record.dtype}: {_short(record.value)}{grad}"
        )
    return "\n".join(lines)


def _title(trace):
    name = f" {trace.name!r}" if trace.name else ""
    passes = len(trace.passes)
    return (
        f"autograd trace{name}: {len(trace.ops)} ops, {len(trace.nodes)} nodes, "
        f"{passes} backward pass{'es' if passes != 1 else ''}, "
        f"{len(trace.backward_steps)} backward steps"
    )


def _first(items, lines):
    """At most MAX_ROWS items; a line says how many more there are."""
    if len(items) > MAX_ROWS:
        shown = items[:MAX_ROWS]
        lines_after = f"  ... and {len(items) - MAX_ROWS} more"
        yield from shown
        lines.append(lines_after)
        return
    yield from items


def _node_label(node):
    if node.variable is not None:
        return f"{node.name}({node.variable.name})"
    return node.name


def _saved_text(node, name, kept):
    tensor = node.saved_tensors.get(name)
    if tensor is not None:
        return f"{tensor.name}"
    return _short(kept)


def _short(value):
    """A value on one short line: a number, a small array, or a large one's statistics."""
    if value is None:
        return "None"
    if isinstance(value, ArraySummary):
        shape = "x".join(str(s) for s in value.shape)
        return f"[{shape} {value.dtype}: mean {value.mean:.4g}, std {value.std:.4g}]"
    if isinstance(value, np.ndarray):
        text = _array_text(value)
        if len(text) > VALUE_WIDTH:
            text = text[: VALUE_WIDTH - 3] + "..."
        return text
    return repr(value)


def _array_text(array, items=4):
    """``[1., 2., ...]``-style text of an array's first few elements along each dimension."""
    if array.ndim == 0:
        return _number(array.item())
    shown = [_array_text(array[i], max(2, items // 2)) for i in range(min(items, array.shape[0]))]
    if array.shape[0] > items:
        shown.append("...")
    return "[" + ", ".join(shown) + "]"


def _number(x):
    if isinstance(x, (bool, int)):
        return str(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e6:
        return f"{int(x)}."
    return f"{x:.4g}"
