"""Where nbgrad's time goes on the two benchmarks: a report for whoever optimises the engine.

Run from the repository root:  python -m benchmarks.profile_engine

Sections:

1. chain: forward / backward split per op, then the cost of each piece of one op, timed by
   calling nbgrad's internals directly (``run_op``'s lines, ``Tensor._make``, ``_record``, the
   node, the engine's ``_run_node``...), then a cProfile table normalised per op.
2. MLP: time per forward op and per backward node, from the observation points (a listener
   that takes a timestamp), next to what the same step costs in NumPy by hand.
3. Observation points: the cost of the empty listener lists, and of one no-op listener.
4. The garbage collector's share of the chain.

Sections 1 and 2 reach into nbgrad's internals (``nbgrad.autograd.dispatch``, ``engine``,
``node``): when a piece is renamed or removed, its row reads ``n/a`` instead of failing.
Everything runs with BLAS pinned to one thread. Absolute times are for this machine; compare
rows with each other and with the chain's per-op time printed at the top.
"""

import cProfile
import gc
import io
import pstats
import statistics
import time

import numpy as np

import nbgrad
from benchmarks import chain, harness, mlp
from nbgrad.autograd import engine, observe
from nbgrad.ops.derivatives import OPS

SAMPLE_SECONDS = 0.02


def per_call(fn, repeats=7):
    """Seconds per call of ``fn``: the minimum over ``repeats`` batches of about
    ``SAMPLE_SECONDS`` (for pieces this small the minimum is the least noisy estimate)."""
    calls = harness.calls_per_sample(fn, SAMPLE_SECONDS)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return min(samples)


def try_per_call(fn):
    """``per_call``, or None when ``fn`` uses an internal that no longer exists."""
    try:
        fn()
    except (AttributeError, TypeError, KeyError, NameError, ImportError):
        return None
    return per_call(fn)


def ns(seconds):
    return "n/a" if seconds is None else f"{seconds * 1e9:,.0f}"


def share(seconds, total):
    return "" if seconds is None else f"{100 * seconds / total:.0f}%"


def internal(module, name):
    """An internal of nbgrad, or a stand-in that fails (and so reads n/a) if it is gone."""

    def missing(*args, **kwargs):
        raise AttributeError(f"{module.__name__}.{name} no longer exists")

    return getattr(module, name, missing)


def leaves():
    x = nbgrad.tensor(np.linspace(-0.5, 0.5, chain.SIZE, dtype=np.float32), requires_grad=True)
    w = nbgrad.tensor(np.linspace(0.9, 1.1, chain.SIZE, dtype=np.float32), requires_grad=True)
    return x, w, nbgrad.ones(chain.SIZE)


# --- 1. the chain --------------------------------------------------------------------------------


def chain_phases():
    """Seconds per op (minimum of batches): forward (building the graph), backward, both."""
    x, w, seed = leaves()
    forward = per_call(lambda: chain.chain(nbgrad, x, w)) / chain.OPS

    # backward needs a fresh graph each time: build a batch of graphs, then time their backward
    backward_samples = []
    for _ in range(7):
        graphs = [chain.chain(nbgrad, x, w) for _ in range(50)]
        start = time.perf_counter()
        for out in graphs:
            out.backward(seed)
        backward_samples.append((time.perf_counter() - start) / len(graphs))
    backward = min(backward_samples) / chain.OPS

    def step():
        x.grad = None
        w.grad = None
        chain.chain(nbgrad, x, w).backward(seed)

    total = per_call(step) / chain.OPS
    return forward, backward, total


def chain_graph_nodes(out):
    """Every node of ``out``'s graph, from the output down (table nodes, then accumulators)."""
    nodes, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        stack.extend(child for child, _ in node.next_functions)
    return nodes


def forward_pieces():
    """The cost of the pieces of one recorded op, ``h * w`` (both require grad, so the node has
    two edges and saves both inputs).

    Only entry points that survive refactoring are called: the operator, ``run_op`` with grad
    mode on and off (their difference is what recording the graph costs), and the objects a
    recorded op makes (``Tensor``, the node, ``SavedTensor``). Rows marked "rest" are what is
    left of their parent row, by difference.
    """
    from nbgrad.autograd import dispatch, node
    from nbgrad.autograd.tensor import Tensor

    x, w, _ = leaves()
    h = nbgrad.tanh(x)  # a non-leaf, like every op input in the chain after the first
    alive = h * w  # noqa: F841 - keeps w's AccumulateGrad alive, as a graph being built does
    spec = OPS["mul"]
    node_class = spec.node_class or node.node_class_for(spec)
    run_op = internal(dispatch, "run_op")
    saved_tensor = internal(node, "SavedTensor")
    accumulator_of = internal(node, "accumulator_of")
    a, b = h._data, w._data

    def new_node():  # a node object, as cheaply as Python makes one (no __init__)
        return object.__new__(node_class)

    t = {
        "op": try_per_call(lambda: h * w),
        "run_op": try_per_call(lambda: run_op(spec, (h, w))),
        "numpy": try_per_call(lambda: np.multiply(a, b)),
        "make": try_per_call(lambda: Tensor._make(a)),
        "node": try_per_call(new_node),
        "saved": try_per_call(lambda: saved_tensor(h, False)),
        "accumulator": try_per_call(lambda: accumulator_of(w)),
        "listeners": try_per_call(lambda: observe.op_listeners and None),
    }
    previous = nbgrad.is_grad_enabled()
    nbgrad.set_grad_enabled(False)
    try:
        t["no_grad"] = try_per_call(lambda: run_op(spec, (h, w)))
    finally:
        nbgrad.set_grad_enabled(previous)
    recording = _minus(t["run_op"], t["no_grad"])
    twice = None if t["saved"] is None else 2 * t["saved"]
    return [
        ("the whole op: h * w", t["op"]),
        ("  rest: operator layers (methods, functions, _operand)", _minus(t["op"], t["run_op"])),
        ("  dispatch.run_op(mul, (h, w))", t["run_op"]),
        ("    run_op under no_grad (computing, no graph)", t["no_grad"]),
        ("      NumPy forward: np.multiply(a, b)", t["numpy"]),
        ("      Tensor._make(out)", t["make"]),
        ("      if observe.op_listeners: (empty)", t["listeners"]),
        (
            "      rest (inputs loop, dtype checks, grad mode test)",
            _minus(t["no_grad"], _sum(t["numpy"], t["make"], t["listeners"])),
        ),
        ("    recording the graph: run_op minus run_op under no_grad", recording),
        ("      a node object: object.__new__(MulBackward0)", t["node"]),
        ("      SavedTensor(...) x 2 (self, other)", twice),
        ("      accumulator_of(w) (leaf edge, weakref)", t["accumulator"]),
        (
            "      rest (edges, metadata, save plan, node attributes)",
            _minus(recording, _sum(t["node"], twice, t["accumulator"])),
        ),
    ]


def backward_pieces():
    """Per node of the chain's graph: the formula alone, unpacking, ``node.apply``, the
    engine's ``_run_node``, and the engine's loop around it (by difference)."""
    x, w, seed = leaves()
    out = chain.chain(nbgrad, x, w)
    nodes = [n for n in chain_graph_nodes(out) if hasattr(n, "spec")]
    grad = seed._data
    run_node = internal(engine, "_run_node")
    count = internal(engine, "_count_dependencies")
    unpacked = [(n, n.unpacked(False)) for n in nodes]

    def formulas():
        for n, saved in unpacked:
            for vjp, (child, _) in zip(n.spec.array_vjps, n.next_functions):
                if vjp is not None and child is not None:
                    vjp(grad, *saved)

    def unpack():
        for n in nodes:
            n.unpacked(False)

    def apply_all():
        for n in nodes:
            n.apply([grad], False)

    def run_all():
        for n in nodes:
            run_node(n, [grad], False)

    def release_and_restore():
        for n, saved in originals:
            n.release_saved()
            n._saved = saved

    def restore():
        for n, saved in originals:
            n._saved = saved

    originals = [(n, list(n._saved)) for n in nodes]
    k = len(nodes)
    t = {
        name: None if v is None else v / k
        for name, v in {
            "formulas": try_per_call(formulas),
            "unpack": try_per_call(unpack),
            "apply": try_per_call(apply_all),
            "run_node": try_per_call(run_all),
            "release": _minus(try_per_call(release_and_restore), try_per_call(restore)),
            "count": try_per_call(lambda: count([out.grad_fn])),
        }.items()
    }
    rows = [
        ("engine._run_node(node, grads)", t["run_node"]),
        ("  node.apply(grads)", t["apply"]),
        ("    derivative formulas (NumPy)", t["formulas"]),
        ("    node.unpacked(): saved values, version checks", t["unpack"]),
        (
            "    rest of apply (list of outputs, edge tests)",
            _minus(t["apply"], _sum(t["formulas"], t["unpack"])),
        ),
        (
            "  rest of _run_node (None tests, output shape/dtype check)",
            _minus(t["run_node"], t["apply"]),
        ),
        ("node.release_saved()", t["release"]),
        ("engine._count_dependencies, per node", t["count"]),
    ]
    return rows, t, k


def _sum(*values):
    return None if any(v is None for v in values) else sum(values)


def _minus(a, b):
    return None if a is None or b is None else a - b


def cprofile_table(limit=18):
    """cProfile of the chain, tottime per op (cProfile slows calls: read the shares, not µs)."""
    x, w, seed = leaves()
    runs = 300

    def step():
        x.grad = None
        w.grad = None
        chain.chain(nbgrad, x, w).backward(seed)

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt
    rows = []
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in entries[:limit]:
        where = filename.split("nbgrad/")[-1] if "nbgrad/" in filename else filename
        label = f"{where}:{line}({name})" if line else name
        rows.append(
            (
                label,
                f"{ncalls / (runs * chain.OPS):.2f}",
                f"{tottime / (runs * chain.OPS) * 1e9:,.0f}",
                f"{cumtime / (runs * chain.OPS) * 1e9:,.0f}",
                f"{100 * tottime / total:.0f}%",
            )
        )
    headers = ("function", "calls/op", "tottime ns/op", "cumtime ns/op", "share of total")
    return harness.markdown_table(headers, rows)


# --- 2. the MLP ----------------------------------------------------------------------------------


def mlp_steps(style="addmm", runs=300):
    """Seconds per forward op and per backward node, from timestamps taken by listeners."""
    model, transposed, indices = mlp.STYLES[style]
    x0, onehot0, params0 = mlp.make_data()
    x = nbgrad.tensor(x0)
    target = nbgrad.tensor(onehot0.argmax(axis=1)) if indices else nbgrad.tensor(onehot0)
    params = {
        k: nbgrad.tensor(v.T.copy() if transposed and k.startswith("W") else v, requires_grad=True)
        for k, v in params0.items()
    }
    names = {id(p): k for k, p in params.items()}
    labels = {}
    stamps = []

    def on_op(node, name, inputs, outputs):
        count = sum(1 for label in labels.values() if label.split("#")[0] == name)
        label = f"{name}#{count + 1}"
        labels[node] = label
        stamps.append((label, time.perf_counter()))

    def on_node(node, grads_in, grads_out):
        if hasattr(node, "variable"):
            label = f"AccumulateGrad({names.get(id(node.variable), '?')})"
        else:
            label = f"{type(node).__name__} of {labels.get(node, '?')}"
        stamps.append((label, time.perf_counter()))

    forward, backward = {}, {}
    for _ in range(runs):
        for p in params.values():
            p.grad = None
        labels.clear()
        stamps.clear()
        observe.op_listeners.append(on_op)
        start = time.perf_counter()
        try:
            loss = model(nbgrad, x, target, params)
        finally:
            observe.op_listeners.remove(on_op)
        _collect(forward, stamps, start)
        stamps.clear()
        observe.node_listeners.append(on_node)
        start = time.perf_counter()
        try:
            loss.backward()
            stamps.append(("(engine exit)", time.perf_counter()))
        finally:
            observe.node_listeners.remove(on_node)
        _collect(backward, stamps, start)
    return (
        {k: statistics.median(v) for k, v in forward.items()},
        {k: statistics.median(v) for k, v in backward.items()},
    )


def _collect(into, stamps, start):
    previous = start
    for label, t in stamps:
        into.setdefault(label, []).append(t - previous)
        previous = t


def mlp_numpy_floor():
    """What each step of the MLP costs in NumPy by hand (the lines of ``mlp.numpy_*``)."""
    x, onehot, p = mlp.make_data()
    z1 = x @ p["W1"] + p["b1"]
    hidden = np.maximum(z1, 0)
    logits = hidden @ p["W2"] + p["b2"]
    _, (_, probs) = mlp.numpy_forward(x, onehot, p)
    d_logits = (probs - onehot) / mlp.BATCH
    d_hidden = d_logits @ p["W2"].T
    rows = [
        ("x @ W1 + b1", lambda: np.add(x @ p["W1"], p["b1"])),
        ("maximum(z1, 0)", lambda: np.maximum(z1, 0)),
        ("hidden @ W2 + b2", lambda: np.add(hidden @ p["W2"], p["b2"])),
        ("log-softmax + loss", lambda: _loss(logits, onehot)),
        ("d_logits = (probs - onehot) / B", lambda: (probs - onehot) / mlp.BATCH),
        (
            "dW2, db2, d_hidden",
            lambda: (hidden.T @ d_logits, d_logits.sum(0), d_logits @ p["W2"].T),
        ),
        (
            "ReLU mask: d_hidden *= hidden > 0",
            lambda: np.multiply(d_hidden, hidden > 0, out=d_hidden),
        ),
        ("dW1 = x.T @ d_hidden", lambda: x.T @ d_hidden),
        ("db1 = d_hidden.sum(0)", lambda: d_hidden.sum(0)),
    ]
    return [(label, per_call(fn)) for label, fn in rows]


def _loss(logits, onehot):
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    return -((shifted - np.log(total)) * onehot).sum() / mlp.BATCH, exp / total


def mlp_extras():
    """NumPy costs of what nbgrad's MLP backward does beyond the hand-written backward."""
    x, _, p = mlp.make_data()
    rng = np.random.default_rng(1)
    grad = rng.standard_normal((mlp.BATCH, mlp.HIDDEN)).astype(np.float32)
    result = np.maximum(rng.standard_normal((mlp.BATCH, mlp.HIDDEN)).astype(np.float32), 0)
    dw1 = x.T @ grad
    scalar_grad = np.float32(1.0)
    rows = [
        ("addmm mat2 formula: matrix_t(mat1) @ grad * alpha", lambda: x.T @ grad * 1),
        ("  the same without '* alpha' (alpha == 1)", lambda: x.T @ grad),
        ("addmm self formula + sum_to: (grad * beta).sum(0)", lambda: (grad * 1).sum(0)),
        ("  without '* beta'", lambda: grad.sum(0)),
        (
            "AccumulateGrad, first grad: np.array(dW1, dtype) copy",
            lambda: np.array(dw1, np.float32),
        ),
        ("relu formula: where(result > 0, grad, 0)", lambda: np.where(result > 0, grad, 0)),
        ("  grad * (result > 0)", lambda: grad * (result > 0)),
        (
            "mean formula: expand(grad / numel, sizes) (broadcast_to)",
            lambda: np.broadcast_to(scalar_grad / 64, (64,)),
        ),
    ]
    return [(label, per_call(fn)) for label, fn in rows]


# --- 3. observation points, 4. garbage collector -------------------------------------------------


def observation_costs():
    """The empty tests as the engine writes them, and the chain with one no-op listener each."""
    rows = [
        (
            "run_op: if observe.op_listeners: (module attribute + test)",
            lambda: observe.op_listeners and None,
        ),
        ("engine: if listeners: (local, per node)", _local_test()),
        ("accumulate: for listener in observe.accumulate_listeners:", _empty_loop),
    ]
    micro = [(label, per_call(fn)) for label, fn in rows]

    x, w, seed = leaves()

    def step():
        x.grad = None
        w.grad = None
        chain.chain(nbgrad, x, w).backward(seed)

    def with_listeners():
        lists = (observe.op_listeners, observe.node_listeners, observe.accumulate_listeners)
        for listeners in lists:
            listeners.append(lambda *args: None)
        try:
            step()
        finally:
            for listeners in lists:
                listeners.pop()

    timings = harness.time_interleaved(
        {"empty lists": step, "one no-op listener each": with_listeners}
    )
    return micro, {k: v.median / chain.OPS for k, v in timings.items()}


def _local_test():
    listeners = observe.node_listeners
    return lambda: listeners and None


def _empty_loop():
    for listener in observe.accumulate_listeners:
        listener()


def gc_share():
    x, w, seed = leaves()

    def step():
        x.grad = None
        w.grad = None
        chain.chain(nbgrad, x, w).backward(seed)

    def step_without_gc():
        gc.disable()
        try:
            step()
        finally:
            gc.enable()

    timings = harness.time_interleaved({"gc on": step, "gc off": step_without_gc})
    return {k: v.median / chain.OPS for k, v in timings.items()}


# --- the report ----------------------------------------------------------------------------------


def main():
    busy = harness.wait_until_quiet()
    print(harness.PINNING)
    if busy is not None:
        print(f"- other processes' CPU use just before the run: {busy:.0%} of the cores")
    print("\n".join(f"- {line}" for line in harness.machine_lines()))
    with harness.one_thread():
        report()


def report():
    forward, backward, total = chain_phases()
    print(f"\n## 1. Chain ({chain.OPS} ops, {chain.SIZE} float32 elements), nbgrad\n")
    print(
        harness.markdown_table(
            ("phase", "ns/op", "share"),
            [
                ("forward (op + node creation)", ns(forward), share(forward, total)),
                ("backward (engine)", ns(backward), share(backward, total)),
                ("forward + backward, with .grad reset", ns(total), "100%"),
            ],
        )
    )

    print("\n### Forward: one recorded op, h * w (ns per call, share of fwd+bwd per op)\n")
    print(
        harness.markdown_table(
            ("piece", "ns", "share of per-op total"),
            [(label, ns(t), share(t, total)) for label, t in forward_pieces()],
        )
    )

    pieces, t, k = backward_pieces()
    print(f"\n### Backward: per table node, averaged over the chain's {k} nodes\n")
    loop = _minus(backward, _sum(t["run_node"], t["release"], t["count"]))
    pieces.append(
        (
            "engine loop around them, by difference (heap, buffers, dependency counts, "
            "hook tests, AccumulateGrad, backward() setup)",
            loop,
        )
    )
    print(
        harness.markdown_table(
            ("piece", "ns per node", "share of per-op total"),
            [(label, ns(v), share(v, total)) for label, v in pieces],
        )
    )

    print("\n### cProfile of the chain (per op; cProfile inflates call costs)\n")
    print(cprofile_table())

    print(f"\n## 2. MLP {mlp.IN}-{mlp.HIDDEN}-{mlp.OUT}, batch {mlp.BATCH}, nbgrad\n")
    print("Each row: time since the previous timestamp (the previous op / node, including the")
    print(
        "engine's routing of its gradients); the first backward row includes backward()'s setup.\n"
    )
    for style in [s for s in mlp.STYLES if mlp.has_style(s)]:
        print(f"### Style {style!r} (see benchmarks/mlp.py)\n")
        forward_steps, backward_steps = mlp_steps(style)
        rows = [("forward: " + k, f"{v * 1e6:.1f}") for k, v in forward_steps.items()]
        rows += [("backward: " + k, f"{v * 1e6:.1f}") for k, v in backward_steps.items()]
        step_total = sum(forward_steps.values()) + sum(backward_steps.values())
        rows.append(("sum of medians", f"{step_total * 1e6:.1f}"))
        print(harness.markdown_table(("step", "us"), rows))
        print()

    floor = mlp_numpy_floor()
    print("### The same steps in NumPy by hand (style 'addmm')\n")
    floor_rows = [(label, f"{t * 1e6:.1f}") for label, t in floor]
    floor_rows.append(("sum", f"{sum(t for _, t in floor) * 1e6:.1f}"))
    print(harness.markdown_table(("step", "us"), floor_rows))

    print("\n### NumPy costs of formula choices in the MLP's backward\n")
    print("The formulas as the op table has them now:\n")
    for name in ("addmm", "relu", "mean", "sum_dim", "log_softmax"):
        spec = OPS.get(name)
        if spec is not None:
            formulas = "; ".join(f"{inp}: {text}" for inp, text in spec.grads.items())
            print(f"- {spec.node}: {formulas}")
    print()
    print(
        harness.markdown_table(
            ("expression", "us"), [(label, f"{t * 1e6:.1f}") for label, t in mlp_extras()]
        )
    )

    micro, ab = observation_costs()
    print("\n## 3. Observation points (nbgrad/autograd/observe.py)\n")
    print(harness.markdown_table(("empty test", "ns"), [(label, ns(t)) for label, t in micro]))
    per_op = micro[0][1] + micro[1][1] + micro[2][1] * 2 / chain.OPS
    print(
        f"\nPer chain op (one op test, one node test, 2 accumulations per 100 ops): "
        f"{ns(per_op)} ns = {share(per_op, total)} of the per-op total."
    )
    print()
    print(
        harness.markdown_table(
            ("chain, fwd+bwd", "ns/op", "vs empty"),
            [(k, ns(v), f"{v / ab['empty lists']:.3f}x") for k, v in ab.items()],
        )
    )

    timings = gc_share()
    print("\n## 4. Garbage collector, chain fwd+bwd\n")
    print(
        harness.markdown_table(
            ("gc", "ns/op", "vs gc on"),
            [(k, ns(v), f"{v / timings['gc on']:.3f}x") for k, v in timings.items()],
        )
    )


if __name__ == "__main__":
    main()
