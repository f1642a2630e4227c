"""The backward pass: run the graph's nodes in dependency order and route gradients along edges.

Like PyTorch's engine it first counts, for every node reachable from the roots, how many edges
lead into it; a node runs once all of them have delivered their gradient. Among ready nodes the
most recently created runs first (PyTorch's order on the CPU). No recursion: a chain of any
depth works.

Gradients travel as NumPy arrays, or as Tensors when ``create_graph`` asks for a differentiable
backward. Hooks always see Tensors.
"""

import itertools
import sys

import numpy as np

from nbgrad import float_warnings
from nbgrad.autograd import anomaly, grad_mode, observe
from nbgrad.autograd.node import AccumulateGrad
from nbgrad.autograd.ready_queue import ReadyQueue
from nbgrad.autograd.tensor import Tensor
from nbgrad.flags import FAST_PATHS
from nbgrad.ops import result_layout
from nbgrad.ops.formula_math import sum_to

# The passes running, the innermost last: (a number no other pass has, whether the pass computes
# only chosen gradients: autograd.grad or backward(inputs=...)). Read by torch.utils.checkpoint.
_running = []
_pass_numbers = itertools.count(1)


def current_pass():
    """(number, chosen_only) of the innermost backward pass running, or None outside one."""
    return _running[-1] if _running else None


def execute(
    roots, root_grads, keep_graph, create_graph, capture=None, run_only=None, capture_versions=None
):
    """Run backward from ``roots`` (edges) seeded with ``root_grads``.

    Without ``capture``, every reachable node runs and leaves accumulate their ``.grad``.
    With ``capture`` (a list of edges), the gradient arriving at each of those edges is
    returned, in order, and only the nodes needed to produce them run; AccumulateGrad nodes run
    only if listed in ``run_only``. ``capture_versions``, a list as long as ``capture``, is
    filled with how many times each captured gradient was added to in place (its ``_version``).
    """
    float_warnings.keep_first()  # NumPy's 1/0 notice stays quiet whatever the user's filters
    previous_mode = grad_mode._enabled
    grad_mode._enabled = bool(create_graph)
    # The listeners of this pass are those there at its start (one added during the pass, by a
    # hook, hears the next one).
    announce = tuple(observe.backward_listeners)
    if announce:
        # autograd.grad captures without running leaves; backward(inputs=...) passes run_only.
        is_grad = capture is not None and run_only is None
        pass_info = (tuple(roots), keep_graph, create_graph, is_grad)
        for listener in announce:
            listener("start", *pass_info)
    _running.append((next(_pass_numbers), capture is not None))
    try:
        return _execute(
            roots, root_grads, keep_graph, create_graph, capture, run_only, capture_versions
        )
    finally:
        _running.pop()
        grad_mode._enabled = previous_mode
        for listener in announce:
            listener("end", *pass_info)


def _execute(roots, root_grads, keep_graph, create_graph, capture, run_only, capture_versions):
    root_nodes = [roots[0][0]] if len(roots) == 1 else list(dict.fromkeys(n for n, _ in roots))
    captured = runs = None
    capture_at = {}
    if capture is None:
        dependencies = _count_dependencies(root_nodes)
    else:
        dependencies, runs = _plan_partial(root_nodes, capture, run_only or set())
        captured = [None] * len(capture)
        for slot, (node, nr) in enumerate(capture):
            capture_at.setdefault(node, []).append((nr, slot))

    buffers = {}
    # node -> how many times each of its buffered gradients was added to in place, as PyTorch's
    # InputBuffer does with a gradient nobody else holds (outside create_graph): the count is
    # that gradient's _version once it is returned by autograd.grad or becomes a leaf's .grad.
    written = {}
    for (node, nr), grad in zip(roots, root_grads):
        _add_to_buffer(buffers, node, nr, grad, create_graph, written, root_grads)
    # Newest node first; ready leaves, which share one number, in the order PyTorch's heap
    # gives them (ready_queue.py).
    ready = ReadyQueue()
    for node in root_nodes:
        if not dependencies.get(node):
            ready.push(node)
    listeners = observe.node_listeners
    starts = observe.node_start_listeners

    # ``upcoming`` holds the next node when it is the only one ready: a chain then skips the heap.
    upcoming = None
    while ready or upcoming is not None:
        if upcoming is not None:
            node, upcoming = upcoming, None
        else:
            node = ready.pop()
        grads = buffers.pop(node, None) or [None] * node.num_outputs
        versions = written.pop(node, None) if written else None
        is_leaf_node = type(node) is AccumulateGrad
        if node._extras is not None or (is_leaf_node and _has_backward_hooks(node.variable)):
            # backward(inputs=[non_leaf]) puts the gradient into the non-leaf's .grad itself,
            # once: its retain_grad must not do it too.
            accumulated_later = (
                {nr for nr, _ in capture_at[node]}
                if run_only is not None and node in capture_at
                else ()
            )
            before = grads
            grads = _run_pre_hooks(node, grads, create_graph, accumulated_later)
            if versions is not None:  # a gradient a hook replaced is a new tensor: version 0
                versions = [v if g is b else 0 for v, g, b in zip(versions, grads, before)]
        if capture_at and node in capture_at:
            for nr, slot in capture_at[node]:
                captured[slot] = grads[nr]
                if versions is not None and capture_versions is not None:
                    capture_versions[slot] = versions[nr]
        if runs is not None and node not in runs:
            continue
        if starts:
            for listener in starts:
                listener(node)

        if is_leaf_node:
            leaf_grad = grads[0]
            # (a leaf detached in place since, detach_(), no longer requires grad: AccumulateGrad
            # then leaves its .grad alone, as PyTorch's does)
            if leaf_grad is not None and node.variable._requires_grad:
                # As PyTorch does, a gradient nothing else refers to becomes ``.grad`` without a
                # copy. References now: ``grads``, ``leaf_grad`` and getrefcount's argument.
                owned = sys.getrefcount(leaf_grad) == 3
                version = versions[0] if versions is not None else 0
                accumulate_into_leaf(node.variable, leaf_grad, create_graph, owned, version)
            leaf_grad = None
            outputs = ()
        elif (
            FAST_PATHS
            and node._input_meta is None
            and node._extras is None
            and grads[0] is not None
        ):
            # The common node (element-wise, one output, no hooks), which needs none of
            # _run_node's cases: run here, saving a call per node of a long chain.
            try:
                outputs = node.apply(grads, create_graph)
            except Exception as error:
                anomaly.report_failed_node(node, error)
                raise
            if anomaly.enabled:
                anomaly.check_outputs(node, outputs)
        else:
            outputs = _run_node(node, grads, create_graph)
        if not keep_graph and not is_leaf_node:
            node.release_saved()
        if listeners:
            shown = outputs
            if runs is not None:
                # PyTorch's node computes no gradient for an edge this pass does not need
                # (autograd.grad of some inputs): watchers see none there either.
                shown = tuple(
                    grad if child in dependencies else None
                    for (child, _), grad in zip(node.next_functions, outputs)
                )
            for listener in listeners:
                listener(node, grads, shown)

        for (child, nr), grad in zip(node.next_functions, outputs):
            if child is None or (runs is not None and child not in dependencies):
                continue
            if grad is not None:
                buffer = buffers.get(child)
                if buffer is None:
                    buffers[child] = buffer = [None] * child.num_outputs
                if buffer[nr] is None:
                    buffer[nr] = grad
                else:
                    _accumulate(buffer, child, nr, grad, create_graph, written, outputs)
            remaining = dependencies[child] - 1
            dependencies[child] = remaining
            if remaining == 0:
                if not ready and upcoming is None:
                    upcoming = child
                    continue
                if upcoming is not None:
                    ready.push(upcoming)
                    upcoming = None
                ready.push(child)
        # Drop this step's references, so that a leaf's gradient can be taken without a copy.
        outputs = grad = None
    return captured


def _count_dependencies(root_nodes):
    dependencies = {}
    roots = set(root_nodes)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            count = dependencies.get(child)
            if count is None:  # first reached: the counts double as the set of nodes seen
                dependencies[child] = 1
                if child not in roots:
                    stack.append(child)
            else:
                dependencies[child] = count + 1
    return dependencies


def _plan_partial(root_nodes, capture, run_only):
    """For ``autograd.grad`` and ``backward(inputs=...)``: which nodes must run, and their
    dependency counts counted over those nodes only."""
    capture_nodes = {node for node, _ in capture}
    order = _post_order(root_nodes)
    runs, wanted = set(), set()
    for node in order:  # children come before parents
        if type(node) is AccumulateGrad:
            needed = node in run_only
        else:
            needed = any(child in wanted for child, _ in node.next_functions if child is not None)
        if needed:
            runs.add(node)
        if needed or node in capture_nodes:
            wanted.add(node)
    dependencies = {}
    for node in runs:
        for child, _ in node.next_functions:
            if child is not None and child in wanted:
                dependencies[child] = dependencies.get(child, 0) + 1
    for node in wanted:
        dependencies.setdefault(node, 0)
    return dependencies, runs


def _post_order(root_nodes):
    order, seen = [], set()
    for root in root_nodes:
        if root in seen:  # reached from an earlier root: already placed after its children
            continue
        seen.add(root)
        stack = [(root, 0)]
        while stack:
            node, i = stack[-1]
            edges = node.next_functions
            if i < len(edges):
                stack[-1] = (node, i + 1)
                child = edges[i][0]
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def _add_to_buffer(buffers, node, nr, grad, create_graph, written, delivered):
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.num_outputs
    if buffer[nr] is None:
        buffer[nr] = grad
    else:
        _accumulate(buffer, node, nr, grad, create_graph, written, delivered)


def _accumulate(buffer, node, nr, grad, create_graph, written, delivered):
    """Add ``grad`` to the gradient already waiting in ``buffer[nr]``. PyTorch's InputBuffer
    adds in place when nothing else refers to the waiting gradient and it owns dense memory
    (outside create_graph), a new version of it, else into a new tensor (version 0). Here the
    sum is always a new array: nothing else refers to the old one, so no one can tell, but
    the version is counted as PyTorch's (and the recorder, which knows a gradient by its array,
    never sees one array with two values). ``delivered``: the gradients the node that made
    ``grad`` is handing out (PyTorch moves them into the buffers; that list still holds them)."""
    old = buffer[nr]
    # References to ``old`` when nothing else holds it: the buffer, this name, getrefcount's
    # argument, and ``delivered`` once per time it lists it. A view of it (another gradient made
    # from it), a hook or a saved value would hold one more.
    in_place = (
        not create_graph
        and old is not grad
        and np.shape(grad) == np.shape(old)
        and sys.getrefcount(old) == 3 + sum(1 for g in delivered if g is old)
        and (
            isinstance(old, np.generic)  # a 0-d gradient NumPy made a scalar
            or (
                type(old) is np.ndarray
                and old.base is None
                and old.flags.writeable
                and old.dtype == grad.dtype
            )
        )
    )
    buffer[nr] = old + grad
    counts = written.get(node)
    if in_place:
        if counts is None:
            counts = written[node] = [0] * node.num_outputs
        counts[nr] += 1
    elif counts is not None:
        counts[nr] = 0  # a new tensor


def _run_node(node, grads, create_graph):
    """Run one node's backward; return one gradient per edge, brought to the input's shape."""
    if node.num_outputs == 1:
        if grads[0] is None:
            return [None] * len(node.next_functions)
    elif all(g is None for g in grads):
        return [None] * len(node.next_functions)
    elif not getattr(node, "takes_missing_grads", False):
        grads = [_zeros_for(node, i, create_graph) if g is None else g for i, g in enumerate(grads)]
    try:
        outputs = node.apply(grads, create_graph)
    except Exception as error:
        anomaly.report_failed_node(node, error)
        raise
    if node._extras is not None and node._extras.post_hooks:
        outputs = _run_post_hooks(node, outputs, grads, create_graph)
    metas = node._input_meta
    if metas is not None:  # None: an element-wise op, whose gradient needs no checking
        for i, grad in enumerate(outputs):
            if grad is not None:
                shape, dtype = metas[i]
                if grad.shape != shape or grad.dtype is not dtype.numpy:
                    outputs[i] = _validate(node, i, grad, shape, dtype, create_graph)
    if anomaly.enabled:
        anomaly.check_outputs(node, outputs)
    return outputs


def _zeros_for(node, output_nr, create_graph):
    shape, dtype = node._output_meta[output_nr]
    zeros = np.zeros(shape, dtype.numpy)
    return Tensor._make(zeros) if create_graph else zeros


def _validate(node, index, grad, shape, dtype, create_graph):
    """Bring a gradient to its input's shape and dtype, as PyTorch's validate_outputs does."""
    if grad.shape != shape:
        if not _expandable(shape, grad.shape):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {index} - got "
                f"[{', '.join(map(str, grad.shape))}] but expected shape compatible with "
                f"[{', '.join(map(str, shape))}]"
            )
        grad = grad.sum_to_size(shape) if create_graph else sum_to(grad, shape)
    if create_graph:
        return grad if grad._dtype is dtype else grad.to(dtype)
    return grad if grad.dtype == dtype.numpy else grad.astype(dtype.numpy)


def _expandable(shape, target):
    if len(shape) > len(target):
        return False
    for size, target_size in zip(reversed(shape), reversed(target)):
        if size != target_size and size != 1:
            return False
    return True


# --- hooks --------------------------------------------------------------------------------------


def _as_tensor(grad):
    if grad is None or isinstance(grad, Tensor):
        return grad
    # NumPy gives a scalar, not a 0-d array, for arithmetic on 0-d arrays (``-grad``): a hook
    # gets a tensor over an array, which it may change in place as PyTorch allows.
    return Tensor._make(grad if type(grad) is np.ndarray else np.asarray(grad))


def _as_grad(value, create_graph):
    if value is None or create_graph:
        return value
    return value._data


def _run_pre_hooks(node, grads, create_graph, not_retained=()):
    grads = list(grads)
    extras = node._extras
    if type(node) is AccumulateGrad:
        tensor_hooks = [(0, fn) for fn in (node.variable._backward_hooks or {}).values()]
    else:
        tensor_hooks = list(extras.tensor_pre_hooks.values()) if extras is not None else ()
    for nr, fn in tensor_hooks:
        if grads[nr] is not None:
            result = fn(_as_tensor(grads[nr]))
            if result is not None:
                grads[nr] = _as_grad(result, create_graph)
    if extras is None:
        return grads
    # Each dict is tested before it is copied: a recording retains the grad of every node, and
    # most have nothing else.
    if extras.retains_grad:
        for nr, ref in list(extras.retains_grad.items()):
            tensor = ref()
            if tensor is not None and grads[nr] is not None and nr not in not_retained:
                _retain(tensor, grads[nr], create_graph)
    if extras.pre_hooks:
        for fn in list(extras.pre_hooks.values()):
            result = fn(tuple(_as_tensor(g) for g in grads))
            if result is not None:
                grads = [_as_grad(r, create_graph) for r in result]
    return grads


def _run_post_hooks(node, outputs, grads, create_graph):
    for fn in list(node._extras.post_hooks.values()):
        result = fn(tuple(_as_tensor(g) for g in outputs), tuple(_as_tensor(g) for g in grads))
        if result is not None:
            outputs = [_as_grad(r, create_graph) for r in result]
    return outputs


def _retain(tensor, grad, create_graph):
    if tensor._grad is None:
        tensor._grad = grad.clone() if create_graph else Tensor._make(np.array(grad))
    else:
        tensor._grad = tensor._grad + _as_tensor(grad)


def accumulate_into_leaf(variable, grad, create_graph, owned=False, version=0):
    """Add ``grad`` into ``variable.grad``. The first gradient is taken as it is when the caller
    ``owned`` it, keeping its ``version`` (how often the engine added to it in place), else
    copied (so that ``.grad`` never shares memory with anything); later ones are added in place,
    a new version of ``.grad``, as PyTorch's ``variable.grad += new_grad``."""
    old = variable._grad
    if create_graph and old is None:
        # PyTorch's clone_obey_contract: a new tensor shaped like the variable, then copy_ (so
        # a .grad that requires grad comes from CopyBackwards, at _version 1)
        empty = np.empty(variable._data.shape, variable._dtype.numpy)
        copy = Tensor._make(result_layout.gradient_layout(empty, variable._data))
        variable._grad = copy.copy_(_as_tensor(grad))
    elif create_graph:
        variable._grad = old + grad
    elif old is None:
        # In the layout PyTorch's "gradient layout contract" gives it (as the leaf, if dense).
        data = variable._data
        if owned and type(grad) is np.ndarray and grad.base is None:
            if not (data.flags.c_contiguous and grad.flags.c_contiguous):
                laid_out = result_layout.gradient_layout(grad, data)
                if laid_out is not grad:
                    grad, version = laid_out, 0  # a copy: a new tensor
            variable._grad = Tensor._make(grad)
        elif owned and isinstance(grad, np.generic) and grad.dtype == variable._dtype.numpy:
            variable._grad = Tensor._make(np.array(grad))
        else:
            copy = np.array(grad, dtype=variable._dtype.numpy)
            if not data.flags.c_contiguous or not copy.flags.c_contiguous:
                copy = result_layout.gradient_layout(copy, data)
            variable._grad = Tensor._make(copy)
            version = 0  # a copy: a new tensor
        if version:
            variable._grad._version_counter.value = version
    elif not old._data.flags.writeable:  # a .grad the user set to an expanded tensor
        variable._grad = Tensor._make(old._data + grad)
    else:  # ``variable.grad += new_grad`` under no_grad, even when .grad requires grad
        old._data += grad
        old._version_counter.value += 1  # an in-place add, as PyTorch's ``grad += new``
    extras = variable._extras  # read directly: this runs for every leaf of every backward
    if extras is not None and extras.post_accumulate_hooks:
        for fn in list(extras.post_accumulate_hooks.values()):
            fn(variable)
    for listener in observe.accumulate_listeners:
        listener(variable, grad, variable._grad)


def _has_backward_hooks(tensor):
    extras = tensor._extras
    return extras is not None and bool(extras.backward_hooks)


def call_node(node, grads):
    """``node(*grads)``: run one node by hand, as PyTorch allows."""
    arrays = [None if g is None else g._data for g in grads]
    outputs = _run_node(node, arrays, create_graph=False)
    result = tuple(_as_tensor(g) for g in outputs)
    return result[0] if len(result) == 1 else result
