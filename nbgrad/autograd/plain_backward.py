"""A table op's plain backward, written out as one Python function per op.

``TableNode.apply`` reads the saved values in a loop, checks each, and calls one formula
function per input: general, but a training step runs a dozen such nodes, and each layer of
calls costs. This module turns an op's entry of the table into the same work as straight-line
code, once per op, for the common case: a plain backward (gradients as NumPy arrays) whose saved
tensors are still there, unhooked. For ``MulBackward0`` it writes::

    def apply(node, grads, create_graph):
        if create_graph:
            return generic(node, grads, create_graph)
        other, self = node._saved
        if type(other) is SavedTensor:
            if other.counter.value != other.version:
                raise modified_by_inplace(other, node)
            other = other.data
        elif other is FREED or type(other) is PackedSavedTensor:
            return generic(node, grads, create_graph)
        ... the same for self ...
        grad = grads[0]
        (edge0, _), (edge1, _) = node.next_functions
        return [
            (grad * other) if edge0 is not None else None,
            (grad * self) if edge1 is not None else None,
        ]

Anything unusual (a differentiable backward, a freed or hooked saved tensor) goes to the general
path, ``TableNode.apply_formulas``, which raises PyTorch's errors and runs the unpack hooks. The
formulas are the table's text, unchanged: the engine and the widget still read one declaration.
"""

from nbgrad.autograd import errors
from nbgrad.autograd.node import FREED, PackedSavedTensor, SavedTensor, TableNode
from nbgrad.generated import compile_registered
from nbgrad.ops.formula_math import ARRAY_NAMESPACE


def compile_apply(spec):
    """``apply(node, grads, create_graph)`` for the nodes of ``spec``, or None for the ops that
    keep the general path (variadic ones: their one formula returns a list)."""
    if spec.variadic:
        return None
    tensor_kinds = ("input", "result")
    fallback = "    return generic(node, grads, create_graph)"
    lines = [
        "def apply(node, grads, create_graph):",
        "    if create_graph:",
        "        return generic(node, grads, create_graph)",
    ]
    if spec.saves:
        # A trailing comma keeps a single name an unpacking: ``dim, = node._saved``.
        lines.append(f"    {', '.join(spec.saves)}, = node._saved")
    for position in spec.buffer_positions:
        name = spec.saves[position]
        if spec.save_sources[position][0] in tensor_kinds:
            lines += [
                f"    if type({name}) is SavedTensor:",
                f"        if {name}.counter.value != {name}.version:",
                f"            raise modified_by_inplace({name}, node)",
                f"        {name} = {name}.data",
                f"    elif {name} is FREED or type({name}) is PackedSavedTensor:",
                f"    {fallback}",
            ]
        else:  # an index array or mask kept as an attr: freed after backward too; a
            # tensor argument kept as an attr (batch_norm's running stats) is checked too
            lines += [
                f"    if {name} is FREED or type({name}) is PackedSavedTensor:",
                f"    {fallback}",
                f"    if type({name}) is SavedTensor:",
                f"        if {name}.counter.value != {name}.version:",
                f"            raise modified_by_inplace({name}, node)",
                f"        {name} = {name}.data",
            ]
    # Several outputs (split): ``grad`` is their list of gradients (None where missing).
    lines.append("    grad = grads" if spec.multi_output else "    grad = grads[0]")
    formulas = [spec.grads.get(name) for name in spec.inputs]
    if len(formulas) == 1:  # one input, so it has an edge: it is why the node exists
        lines.append(f"    return [{formulas[0] or 'None'}]")
    else:
        edges = ", ".join(f"(edge{i}, _)" for i in range(len(formulas)))
        lines.append(f"    {edges}, = node.next_functions")
        parts = [
            "None" if text is None else f"({text}) if edge{i} is not None else None"
            for i, text in enumerate(formulas)
        ]
        lines.append(f"    return [{', '.join(parts)}]")
    scope = {
        **ARRAY_NAMESPACE,
        "__name__": "nbgrad.ops.formulas",
        "SavedTensor": SavedTensor,
        "PackedSavedTensor": PackedSavedTensor,
        "FREED": FREED,
        "modified_by_inplace": errors.modified_by_inplace,
        "generic": TableNode.apply_formulas,
    }
    exec(compile_registered("\n".join(lines), f"<{spec.node} backward>"), scope)  # noqa: S102
    return scope["apply"]
