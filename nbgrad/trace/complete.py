"""The last steps of finishing a trace, the same whichever engine was recorded: the grads of
tensors that are gone, each tensor's role, the text of the lines that ran."""

import numpy as np


def grads_of_ended_tensors(trace, accumulations, live_records):
    """``.grad`` for records whose tensor is gone or was changed in place since: a leaf's last
    running total, or the grad its node received (summed over passes when all are kept whole)."""
    for record in trace.tensors.values():
        if record.grad is not None or record in live_records:
            continue
        if record in accumulations:
            record.grad = accumulations[record][-1].total
        elif record.grad_fn is not None and record.grad_fn.steps:
            received = [
                step.grads_in[record.output_nr]
                for step in record.grad_fn.steps
                if record.output_nr < len(step.grads_in)
                and step.grads_in[record.output_nr] is not None
            ]
            if len(received) == 1:
                record.grad = received[0]
            elif received and all(isinstance(g, np.ndarray) for g in received):
                record.grad = sum(received[1:], received[0].copy())


def assign_roles(trace):
    roots = set()
    unobserved_roots = set()  # (node, output_nr) of roots made before recording: no op to ask
    for backward_pass in trace.passes:
        for node_record, nr in backward_pass.roots:
            if node_record.op is None:
                unobserved_roots.add((id(node_record), nr))
            for record in node_record.outputs:
                if record.output_nr == nr:
                    roots.add(record)
    if unobserved_roots:
        for record in trace.tensors.values():
            if (
                record.grad_fn is not None
                and (id(record.grad_fn), record.output_nr) in unobserved_roots
            ):
                roots.add(record)
    for record in trace.tensors.values():
        if record.grad_fn is not None:
            record.role = "intermediate"
        elif record.requires_grad:
            record.role = "leaf"
        else:
            record.role = "constant"
    if not roots:
        # Without backward, the results are the tracked tensors nothing else used.
        roots = {r for r in trace.tensors.values() if r.grad_fn is not None and not r.uses}
    for record in roots:
        if record.grad_fn is not None:
            record.role = "output"


def note_source_lines(trace, source):
    lines = {}
    for op in trace.ops:
        line = op.line
        if line is not None:
            text = lines.get(line)
            if text is None and line not in lines:  # each line's text is looked up once
                text = lines[line] = source.line_text(line)
            op.code = text
    for backward_pass in trace.passes:
        if backward_pass.line is not None:
            backward_pass.code = lines.setdefault(
                backward_pass.line, source.line_text(backward_pass.line)
            )
    failure = getattr(trace, "failure", None)  # the call that raised ran a line too
    if failure is not None and failure.line is not None:
        lines.setdefault(failure.line, source.line_text(failure.line))
    trace.source_lines = {line: text for line, text in sorted(lines.items()) if text is not None}
