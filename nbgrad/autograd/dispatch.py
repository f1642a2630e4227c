"""Running a table operation: compute it with NumPy and, when a graph is wanted, record its node.

``run_op`` is the one place where forward results become Tensors and grad_fn nodes are made;
``run_inplace`` is its twin for operations that write into an existing tensor.
"""

import warnings

import numpy as np

from nbgrad import dtypes, float_warnings
from nbgrad.autograd import anomaly, errors, grad_mode, observe, views
from nbgrad.autograd.node import (
    NotImplementedNode,
    SavedTensor,
    _sequence,
    accumulator_of,
    edge_of,
    node_class_for,
    save,
    saved_tensor_code,
    saved_tensors_hook_stack,
    set_history,
)
from nbgrad.autograd.tensor import Tensor, VersionCounter, strides_of
from nbgrad.flags import FAST_PATHS
from nbgrad.generated import compile_registered
from nbgrad.ops import result_layout
from nbgrad.ops.storage_geometry import partially_overlaps

_make = Tensor._make
# The very list observe holds, bound here so that the test on every op is one global read.
_op_starts = observe.op_start_listeners
# nbgrad's warnings filter as run_op last found it at the front of the filters (float_warnings).
_quiet_filter = None


def run_op(spec, inputs, attrs=()):
    """Apply ``spec`` to ``inputs`` (Tensors or Python numbers; a list for variadic ops)."""
    global _quiet_filter
    # NumPy's log(0) notice stays quiet whatever filters the user set since (float_warnings)
    try:
        quiet = warnings.filters[0] is _quiet_filter
    except IndexError:  # the user emptied the filters
        quiet = False
    if not quiet:
        _quiet_filter = float_warnings.put_first()
    if _op_starts:
        for listener in _op_starts:
            listener(spec.name)
    tensors = inputs[0] if spec.variadic else inputs
    graph_wanted = grad_mode._enabled
    first = tensors[0] if tensors else None
    if not FAST_PATHS or spec.variadic or len(tensors) > 2 or not isinstance(first, Tensor):
        arrays, edges, metas, needs, common, mixed, inference = _gather(tensors, graph_wanted)
    else:
        # Unary and binary ops with a tensor first are nearly every op a model runs: their
        # inputs are gathered here without the general loop's lists and bookkeeping.
        common = first._dtype
        mixed = False
        inference = False
        if graph_wanted:
            extras = first._extras
            if extras is not None:
                if extras.view is not None:
                    views.refresh(first)  # a write into its base may have given it a new history
                inference = extras.inference
        if graph_wanted and first._requires_grad:
            grad_fn = first._grad_fn
            edge = (grad_fn, first._output_nr) if grad_fn else (accumulator_of(first), 0)
            meta = (first._data.shape, common)
            needs = 1
        else:
            edge, meta, needs = _NO_EDGE, None, 0
        if len(tensors) == 1:
            arrays, edges, metas = [first._data], (edge,), [meta]
        else:
            other = tensors[1]
            other_edge, other_meta = _NO_EDGE, None
            if isinstance(other, Tensor):
                mixed = other._dtype is not common
                if graph_wanted:
                    extras = other._extras
                    if extras is not None:
                        if extras.view is not None:
                            views.refresh(other)
                        inference = inference or extras.inference
                if graph_wanted and other._requires_grad:
                    grad_fn = other._grad_fn
                    other_edge = (
                        (grad_fn, other._output_nr) if grad_fn else (accumulator_of(other), 0)
                    )
                    other_meta = (other._data.shape, other._dtype)
                    needs |= 2
                arrays = [first._data, other._data]
            else:
                arrays = [first._data, other]
            edges, metas = (edge, other_edge), [meta, other_meta]
    # Float tensors of one dtype with Python numbers need no cast (the common case, kept cheap);
    # anything else goes through PyTorch's type promotion.
    if (spec.promote or spec.floating) and (mixed or common is None or common._category != 2):
        arrays = _convert(spec, tensors, arrays)
    if spec.variadic:
        out = spec.forward(arrays, *attrs)
    else:  # without attrs (most ops), a call that does not join two argument lists
        out = spec.forward(*arrays, *attrs) if attrs else spec.forward(*arrays)
    if spec.multi_output:
        return _multi_output_results(
            spec, tensors, out, attrs, edges, metas, needs, graph_wanted, arrays
        )
    extras = ()
    if spec.extra_outputs:
        out, *extras = out
        # (a NumPy function of a 0-d array gives a scalar: saved, it must read back as a tensor)
        extras = [np.asarray(e) if isinstance(e, np.generic) else e for e in extras]
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    # (contiguous operands give a contiguous result under every rule: the common case, cheap)
    if (
        spec.layout is not None
        and (out.ndim > 1 or spec.layout == "self_strides")
        and not (out.flags.c_contiguous and _contiguous_operands(spec, arrays))
    ):
        out = _laid_out(spec, out, arrays, attrs)
        extras = [_laid_out(spec, e, arrays, attrs) if e.shape == out.shape else e for e in extras]

    result = _make(out)
    recording = needs and result._dtype.is_floating_point
    if needs and not recording and spec.name != "to_dtype":
        # A cast to an integer type (x.long()) just drops the graph; any other op with a
        # derivative whose result would be integer (x.sum(dtype=torch.int64)) is refused.
        raise RuntimeError(f"Autograd not support dtype: {dtypes.SCALAR_TYPE_NAMES[result._dtype]}")
    if spec.view:
        source = tensors[0]
        if not out.size:
            result._data = _empty_view(spec, source, out, attrs)
        result._version_counter = source._version_counter
        result._base = source if source._base is None else source._base
        views.note_view(result, source, spec.node, graph_wanted)
        # A view is an inference tensor exactly when its base is one (whatever the mode).
        if result.is_inference() != source.is_inference():
            result._inference = source.is_inference()
    if recording:
        if inference:
            _check_inference_not_saved(spec, tensors, needs)
        result._requires_grad = True
        result._grad_fn = _record(spec, tensors, result, attrs, extras, edges, metas, needs)
    if observe.op_listeners:
        for listener in observe.op_listeners:
            listener(result._grad_fn, spec.name, tuple(tensors), (result,))
    if extras:
        return (result, *(_make(e) for e in extras))
    return result


def _empty_view(spec, source, out, attrs):
    """An empty view with PyTorch's strides. NumPy gives a new empty array strides of 0 where
    PyTorch gives contiguous ones, which its views keep (``torch.zeros(3, 0).t().stride()`` is
    ``(1, 1)``): a view of such a tensor is taken again from its memory laid out as PyTorch's."""
    array = source._data
    if array.size or len(spec.inputs) != 1 or not source._has_fresh_strides():
        return out
    strides = tuple(step * array.itemsize for step in strides_of(array))
    if array.strides == strides:
        return out
    laid_out = np.lib.stride_tricks.as_strided(array, array.shape, strides)
    return spec.forward(laid_out, *attrs) if attrs else spec.forward(laid_out)


def _multi_output_results(
    spec, tensors, arrays, attrs, edges, metas, needs, graph_wanted, tensor_arrays
):
    """The outputs of an op with several differentiable outputs (split, unbind, var_mean): one
    node, each output its edge ``(node, i)``; views of the input for the view ops."""
    extras = ()
    if spec.extra_outputs:  # (outputs, *arrays saved but never returned: LU, pivots)
        arrays, *extras = arrays
    arrays = [a if type(a) is np.ndarray else np.asarray(a) for a in arrays]
    if spec.layout is not None:
        arrays = [_laid_out(spec, a, tensor_arrays, attrs) for a in arrays]
    results = [_make(a) for a in arrays]
    if spec.view:
        source = tensors[0]
        for output_nr, result in enumerate(results):
            result._version_counter = source._version_counter
            result._base = source if source._base is None else source._base
            views.note_view(result, source, spec.node, graph_wanted)
            # PyTorch forbids writing in place into one of several views an op returned.
            result._extras.view.multi_output = (spec.node, output_nr)
    if needs and results and results[0]._dtype.is_floating_point:
        for output_nr, result in enumerate(results):  # saved as requiring grad, numbered
            result._requires_grad = True
            result._output_nr = output_nr
        # Named outputs after the first (``R`` of qr) are saved from ``extras``, before the
        # arrays the forward keeps (see OpSpec._source_of).
        if spec.output_names:
            extras = (*results[1:], *extras)
        node = _record(spec, tensors, results[0], attrs, extras, edges, metas, needs)
        node.num_outputs = len(results)
        node._output_meta = [(r._data.shape, r._dtype) for r in results]
        for result in results:
            result._grad_fn = node
    if observe.op_listeners:
        grad_fn = results[0]._grad_fn if results else None
        for listener in observe.op_listeners:
            listener(grad_fn, spec.name, tuple(tensors), tuple(results))
    return tuple(results)


def _gather(tensors, graph_wanted):
    """One pass over the inputs: their arrays and, if a graph may be wanted, the edges to their
    nodes, the metadata to check gradients against, which inputs need a gradient (bit i for
    input i), their common dtype (None without tensors) and whether they mix dtypes."""
    arrays, edges, metas = [], [], []
    needs = 0
    common = None
    mixed = False
    inference = False
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor):
            arrays.append(t._data)
            dtype = t._dtype
            if common is None:
                common = dtype
            elif dtype is not common:
                mixed = True
            if graph_wanted:
                extras = t._extras
                if extras is not None:
                    if extras.view is not None:
                        views.refresh(t)
                    inference = inference or extras.inference
            if graph_wanted and t._requires_grad:
                grad_fn = t._grad_fn
                edges.append((grad_fn, t._output_nr) if grad_fn else (accumulator_of(t), 0))
                metas.append((t._data.shape, dtype))
                needs |= 1 << i
                continue
        else:
            arrays.append(t)
        edges.append(_NO_EDGE)
        metas.append(None)
    return arrays, tuple(edges), metas, needs, common, mixed, inference


def _check_inference_not_saved(spec, tensors, needs):
    """An inference tensor may enter a recorded op, but PyTorch refuses to save it."""
    for _, kind, i in spec.save_plan(needs):
        if kind == "input" and not spec.variadic:
            t = tensors[i]
            if isinstance(t, Tensor) and t.is_inference():
                raise RuntimeError(errors.INFERENCE_SAVED)


def run_inplace(spec, target, others=(), attrs=()):
    """Apply ``spec`` with ``target``'s value as ``self`` and write the result into ``target``."""
    float_warnings.keep_first()
    if _op_starts:
        for listener in _op_starts:
            listener(spec.name + "_")
    view, recording = _check_write(target, others, spec.name in _FILLS)
    inputs = (target, *others)
    if recording:
        needs = sum(
            1 << i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad
        )
        _check_inference_not_saved(spec, inputs, needs)
    arrays = [t._data if isinstance(t, Tensor) else t for t in inputs]
    if spec.promote:
        arrays = _convert(spec, inputs, arrays)
    new_value = spec.forward(*arrays, *attrs)
    new_value = np.asarray(new_value)
    if not np.can_cast(new_value.dtype, target._data.dtype, casting="same_kind"):
        result_type = new_value.dtype
        if spec.floating and not target._dtype.is_floating_point:
            # NumPy computes sqrt of an int64 in float64; PyTorch's result type is the default
            result_type = dtypes.get_default_dtype().numpy
        raise RuntimeError(
            f"result type {dtypes.name_of(result_type)} can't be cast to the desired output type "
            f"{dtypes.name_of(target._data.dtype)}"
        )

    snapshot = None
    if recording:
        # ``self`` in the formulas means the value before the write: keep a copy of it.
        saved_names = {spec.saves[p] for p, _, _ in spec.save_plan(needs)}
        # When only its history is needed, not its value, the snapshot need not copy.
        value = target._data.copy() if "self" in saved_names else target._data
        snapshot = _make(value, target._requires_grad, target._grad_fn)
        snapshot._output_nr = target._output_nr
        recorded_inputs = (snapshot, *others)
        edges = tuple(edge_of(t) if isinstance(t, Tensor) else _NO_EDGE for t in recorded_inputs)
        metas = [
            (t._data.shape, t._dtype) if edge[0] is not None else None
            for t, edge in zip(recorded_inputs, edges)
        ]
        # Inputs are saved before the write, so that writing into a saved input (``c.mul_(c)``)
        # is caught at backward, as in PyTorch; the result is saved after it.
        node = _record(spec, recorded_inputs, target, attrs, (), edges, metas, needs)
        if "self" in saved_names and edges[0][0] is not None:
            # PyTorch saves ``self.clone()``, made after the node: the saved self's history is
            # a CloneBackward0 (the node's own edge still goes to the history before the write).
            from nbgrad.ops.derivatives import OPS

            snapshot._grad_fn = _record(
                OPS["clone"], (snapshot,), snapshot, (), (), edges[:1], metas[:1], 1
            )
            snapshot._output_nr = 0
    np.copyto(target._data, new_value, casting="unsafe")
    target._version_counter.value += 1
    if recording:
        if view is not None:
            # The write went into a view: the base's history is rewritten (CopySlices).
            views.rebase_history(target, view, node, metas)
        else:
            set_history(target, node)
        for p, kind, _ in spec.save_plan(needs):
            if kind == "result":
                node._saved[p] = save(target, True)
    if observe.op_listeners:
        for listener in observe.op_listeners:
            listener(target._grad_fn, spec.name + "_", inputs, (target,))
    return target


def _check_write(target, others, filling, tracked=True):
    """PyTorch's refusals of an in-place write into ``target`` (``others``: the op's other
    operands; ``filling``: one value written everywhere, as ``zero_``; ``tracked``: False for an
    op whose result autograd never sees). Returns the target's ViewInfo (or None) and whether a
    graph records the write."""
    # Views among the operands whose base was written to since their grad_fn was set get their
    # new history first: the target's is the one this write starts from.
    for operand in (target, *others):
        extras = operand._extras if isinstance(operand, Tensor) else None
        if extras is not None and extras.view is not None:
            views.refresh(operand)
    view = target._extras.view if target._extras is not None else None
    if target._extras is not None and target._extras.inference and not grad_mode.is_inference():
        raise RuntimeError(errors.INFERENCE_INPLACE)
    recording = (
        tracked
        and grad_mode._enabled
        and (
            target._requires_grad
            or any(isinstance(t, Tensor) and t._requires_grad for t in others)
            # PyTorch counts a view made in no_grad mode of a base that requires grad as requiring
            # grad itself, so that writing into it raises the error below.
            or (view is not None and view.made_in_no_grad and view.base._requires_grad)
        )
    )
    if recording:
        check_inplace_allowed(target, view)
    # Writing one value everywhere (zero_, fill_) into repeated elements is fine: PyTorch
    # allows it (with a graph, its backward then raises the overlap error; nbgrad raises now).
    if 0 in target._data.strides and (recording or not filling):
        check_no_internal_overlap(target._data)
    for other in others:
        if isinstance(other, Tensor) and partially_overlaps(target._data, other._data):
            raise RuntimeError(errors.PARTIAL_OVERLAP)
    return view, recording


def write_without_derivative(target, new_value, op, others=()):
    """An in-place op PyTorch has no derivative for (``x.floor_divide_(2)``, ``scatter_`` with
    ``reduce=``): ``new_value`` written into ``target`` after the checks every in-place op makes,
    and, when a graph records the write, a NotImplemented grad_fn (under CopySlices for a view),
    whose backward raises PyTorch's "derivative for aten::<op> is not implemented"."""
    view, recording = _check_write(target, others, False)
    before = _make(target._data, target._requires_grad, target._grad_fn) if recording else None
    np.copyto(target._data, new_value, casting="unsafe")
    target._version_counter.value += 1
    if recording:
        before._output_nr = target._output_nr
        tensors = [t for t in others if isinstance(t, Tensor)]
        node = NotImplementedNode(op, [before, *tensors])
        if view is None:
            set_history(target, node)
        else:
            # As in PyTorch, CopySlices takes the wrapped node's first edge to be the view's old
            # value, even where that needs no grad and the node has no edge for it.
            metas = [(t._data.shape, t._dtype) for t in (before, *tensors)]
            views.rebase_history(target, view, node, metas)
    return target


def write_untracked(target, new_value, others=()):
    """An in-place op whose result autograd never differentiates (``logical_and_``,
    ``bitwise_and_``): as in PyTorch, the value is written and the version goes up, but the
    history stays as it was (even on a leaf that requires grad, which PyTorch allows here)."""
    _check_write(target, others, False, tracked=False)
    np.copyto(target._data, new_value, casting="unsafe")
    target._version_counter.value += 1
    return target


def _record(spec, inputs, result, attrs, extras, edges, metas, needs):
    """Make the grad_fn node of one operation, with its edges (a tuple) and what its backward
    needs."""
    node_class = spec.node_class
    if node_class is None:
        node_class = spec.node_class = node_class_for(spec)
    # Made without calling __init__: this is the hottest allocation in the engine.
    node = object.__new__(node_class)
    node._sequence_nr = next(_sequence)
    node._extras = None
    node.next_functions = edges  # a tuple already
    node._input_meta = None if spec.same_shape else metas
    saver = spec.savers.get(needs)
    if saver is None:
        saver = spec.savers[needs] = _make_saver(spec, needs)
    if saved_tensors_hook_stack:  # a pack hook sees the result as it will be: with its grad_fn
        result._requires_grad = True
        result._grad_fn = node
    node._saved = saver(inputs, result, attrs, extras)
    if anomaly.enabled:
        anomaly.remember_forward(node)
    return node


_NO_EDGE = (None, 0)


def _make_saver(spec, needs):
    """Compile, once per op and combination of needed inputs, the function that builds a node's
    saved list from ``(inputs, result, attrs, extras)``. Every node of the op runs it, so the
    save plan's kinds are turned into code here instead of being branched on for every node,
    and each SavedTensor is filled in place (its constructor's call is the cost of a save)."""
    constants = {}
    parts = ["None"] * len(spec.saves)
    tensors = []  # (position, code of the tensor, is_output)
    plan = spec.save_plan(needs)
    for p, kind, i in plan:
        if kind == "input":  # a Tensor, or a Python number kept as it is
            tensors.append((p, f"inputs[{i}]", False))
            parts[p] = f"saved{p}"
        elif kind == "result":  # the output, or one of several (``extras[i - 1]``)
            tensors.append((p, f"extras[{i - 1}]" if i else "result", True))
            parts[p] = f"saved{p}"
        elif kind == "attr":
            parts[p] = f"attrs[{i}]"
        elif kind == "constant":
            constants[f"constant{p}"] = i
            parts[p] = f"constant{p}"
        elif kind == "extra":
            parts[p] = f"extras[{i}]"
        elif kind == "sizes":
            parts[p] = (
                "[t._data.shape for t in inputs]" if spec.variadic else f"inputs[{i}]._data.shape"
            )
        elif kind == "strides":
            # PyTorch keeps an input's strides for its own gradient only: () when not needed
            parts[p] = f"inputs[{i}].stride()" if needs >> i & 1 else "()"
        elif kind == "numel":
            parts[p] = f"inputs[{i}]._data.size"
        else:  # "dtype"
            parts[p] = f"inputs[{i}]._dtype"
    # PyTorch saves an op's inputs before running it and its result after, and a pack hook
    # (``save``, when HOOKS is not empty) sees them in that order.
    tensors.sort(key=lambda entry: entry[2])
    lines = ["def saver(inputs, result, attrs, extras):"]
    for p, value, is_output in tensors:
        name = f"saved{p}"
        lines.append(f"    {name} = tensor = {value}")
        if not is_output:
            lines.append("    if isinstance(tensor, Tensor):")
        indent = "    " if is_output else "        "
        lines += [indent + "if HOOKS:", indent + f"    {name} = save(tensor, {is_output})"]
        lines += [indent + "else:"]
        lines += [indent + "    " + line for line in saved_tensor_code(name, is_output)]
    lines.append(f"    return [{', '.join(parts)}]")
    scope = {
        "SavedTensor": SavedTensor,
        "VersionCounter": VersionCounter,
        "Tensor": Tensor,
        "new": object.__new__,
        "save": save,
        "HOOKS": saved_tensors_hook_stack,
        **constants,
    }
    exec(compile_registered("\n".join(lines), f"<save {spec.node}>"), scope)  # noqa: S102
    return scope["saver"]


def _contiguous_operands(spec, arrays):
    """Whether every array operand is C-contiguous (an op whose layout reads an attr, as where's
    condition, is never taken as such)."""
    if spec.layout_reads_attrs:
        return False
    return all(type(a) is not np.ndarray or a.flags.c_contiguous for a in arrays)


def _laid_out(spec, out, arrays, attrs):
    """``out`` in the memory layout PyTorch gives the op's result (``OpSpec.layout``)."""
    operands = [arrays[i] if kind == "input" else attrs[i] for kind, i in spec.layout_positions]
    return result_layout.lay_out(spec.layout, out, operands)


_FILLS = frozenset({"zero", "fill"})  # fill_ of a tensor value is refused, as in PyTorch


def check_inplace_allowed(target, view):
    """PyTorch's errors for a write in place into ``target`` (``view``: its ViewInfo or None)
    that a graph records."""
    # PyTorch asks a view first: a view made in no_grad mode is a leaf that requires grad, and
    # is refused for having been made in no_grad mode.
    if view is not None:
        views.check_view_write(target, view)
    if target._grad_fn is None and target._requires_grad:
        raise RuntimeError(errors.LEAF_INPLACE)


def check_no_internal_overlap(array):
    """An expanded tensor repeats elements (a stride of 0): PyTorch refuses to write into it
    (an empty one repeats nothing), or into a part of it that repeats one."""
    if array.size == 0:
        return
    for size, stride in zip(array.shape, array.strides):
        if stride == 0 and size > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation."
            )


def _convert(spec, operands, arrays):
    """Cast the input arrays to the dtype PyTorch's type promotion gives."""
    target = result_dtype(operands) if spec.promote else None
    if spec.floating:
        target = target or (operands[0]._dtype if isinstance(operands[0], Tensor) else None)
        if target is None or not target.is_floating_point:
            target = dtypes.get_default_dtype()
    if target is None:
        return arrays
    np_target = target.numpy
    return [
        a.astype(np_target) if type(a) is np.ndarray and a.dtype != np_target else a for a in arrays
    ]


def result_dtype(operands):
    """PyTorch's result type: tensors with dimensions outrank 0-dim tensors, which outrank
    Python numbers, unless a lower rank brings a higher category (bool < integer < float)."""
    first = operands[0]
    if len(operands) == 2 and isinstance(first, Tensor):
        second = operands[1]
        if isinstance(second, Tensor):
            if first._dtype is second._dtype:
                return first._dtype
        elif first._dtype.is_floating_point and isinstance(second, (int, float)):
            return first._dtype
    ranked = []
    for value in operands:
        if value is None:  # an absent optional operand (clamp's min or max)
            continue
        if isinstance(value, Tensor):
            ranked.append((2 if value._data.ndim else 1, value._dtype))
        elif isinstance(value, bool):
            ranked.append((0, dtypes.bool))
        elif isinstance(value, int):
            ranked.append((0, dtypes.int64))
        elif isinstance(value, float):
            ranked.append((0, dtypes.get_default_dtype()))
        else:
            raise TypeError(f"unsupported operand type: {type(value).__name__}")
    top = max(d._category for _, d in ranked)
    for rank in (2, 1, 0):
        group = [d for r, d in ranked if r == rank and d._category == top]
        if group:
            result = group[0]
            for d in group[1:]:
                result = dtypes.promote_types(result, d)
            return result
    raise AssertionError("unreachable")
