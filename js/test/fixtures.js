// Traces for the tests, in the JSON schema of docs/trace-schema.md.

/** e = (a + b) * d; e.backward(), as nbgrad.record() writes it. */
export function simpleTrace() {
  return {
    version: 2,
    source: { kind: "cell", lines: { 2: "a = torch.tensor(2.0, requires_grad=True)", 6: "c = a + b", 8: "e = c * d", 9: "e.backward()" } },
    status: { complete: true, truncated: null, error: null },
    modules: {},
    formulas: {
      add: { node: "AddBackward0", inputs: ["self", "other"], saves: ["alpha"], grads: { self: "grad", other: "grad" } },
      mul: { node: "MulBackward0", inputs: ["self", "other"], saves: ["self", "other"], grads: { self: "grad * other", other: "grad * self" } },
    },
    tensors: [
      { id: "t0", name: "a", role: "leaf", shape: [], dtype: "float32", requires_grad: true, value: 2.0, grad: 4.0 },
      { id: "t1", name: "b", role: "leaf", shape: [], dtype: "float32", requires_grad: true, value: 3.0, grad: 4.0 },
      { id: "t2", name: "c", role: "intermediate", shape: [], dtype: "float32", requires_grad: true, value: 5.0, grad: 4.0, grad_fn: "n0", op: "o0" },
      { id: "t3", name: "d", role: "leaf", shape: [], dtype: "float32", requires_grad: true, value: 4.0, grad: 5.0 },
      { id: "t4", name: "e", role: "output", shape: [], dtype: "float32", requires_grad: true, value: 20.0, grad: 1.0, grad_fn: "n3", op: "o1" },
    ],
    ops: [
      { id: "o0", op: "add", inputs: ["t0", "t1"], outputs: ["t2"], node: "n0", line: 6 },
      { id: "o1", op: "mul", inputs: ["t2", "t3"], outputs: ["t4"], node: "n3", line: 8 },
    ],
    nodes: [
      { id: "n0", name: "AddBackward0", op: "o0", formula: "add", next: [["n1", 0], ["n2", 0]], saved: { alpha: { value: 1 } } },
      { id: "n1", name: "AccumulateGrad", next: [], saved: {}, variable: "t0" },
      { id: "n2", name: "AccumulateGrad", next: [], saved: {}, variable: "t1" },
      { id: "n3", name: "MulBackward0", op: "o1", formula: "mul", next: [["n0", 0], ["n4", 0]], saved: { self: { tensor: "t2" }, other: { tensor: "t3" } }, freed_at: 0 },
      { id: "n4", name: "AccumulateGrad", next: [], saved: {}, variable: "t3" },
    ],
    passes: [{ index: 0, kind: "backward", roots: [["n3", 0]], line: 9 }],
    steps: [
      { pass: 0, node: "n3", grads_in: [1.0], grads_out: [4.0, 5.0], freed: true },
      { pass: 0, node: "n4", grads_in: [5.0], grads_out: [] },
      { pass: 0, node: "n0", grads_in: [4.0], grads_out: [4.0, 4.0] },
      { pass: 0, node: "n2", grads_in: [4.0], grads_out: [] },
      { pass: 0, node: "n1", grads_in: [4.0], grads_out: [] },
    ],
    accumulations: [
      { tensor: "t3", pass: 0, step: 1, grad: 5.0, total: 5.0 },
      { tensor: "t1", pass: 0, step: 3, grad: 4.0, total: 4.0 },
      { tensor: "t0", pass: 0, step: 4, grad: 4.0, total: 4.0 },
    ],
  };
}

/** A chain of `layers` modules model.layers.<i>, each y = relu(x @ w + b): 8 nodes per layer in
 * the forward view (3 ops, 5 tensors), made as the recorder makes them; `backward: true` adds a
 * backward pass that runs every node. */
export function layeredTrace(layers, { backward = false } = {}) {
  const tensors = [];
  const ops = [];
  const nodes = [];
  const modules = { model: "Sequential" };
  let tid = 0;
  let oid = 0;
  let nid = 0;
  const tensor = (name, role, extra = {}) => {
    const t = { id: `t${tid++}`, name, role, shape: [4], dtype: "float32", requires_grad: role !== "constant", value: [0.5, -1, 2, 0], ...extra };
    tensors.push(t);
    return t;
  };
  const accumulators = new Map();
  const accumulate = (leaf) => {
    const n = { id: `n${nid++}`, name: "AccumulateGrad", next: [], saved: {}, variable: leaf.id };
    nodes.push(n);
    accumulators.set(leaf.id, n);
    return n;
  };
  let x = tensor("x", "constant");
  let xNode = null;
  for (let i = 0; i < layers; i++) {
    const path = `model.layers.${i}`;
    modules[path] = "Linear";
    const w = tensor(`${path}.weight`, "leaf");
    const b = tensor(`${path}.bias`, "leaf");
    const wAcc = accumulate(w);
    const bAcc = accumulate(b);
    const step = (name, inputs, nodeName, nexts, module) => {
      const out = tensor(`${name}${i}`, "intermediate");
      const node = { id: `n${nid++}`, name: nodeName, op: `o${oid}`, next: nexts.map((n) => (n ? [n.id, 0] : null)), saved: {} };
      nodes.push(node);
      ops.push({ id: `o${oid++}`, op: name, inputs: inputs.map((t) => t.id), outputs: [out.id], node: node.id, module });
      out.grad_fn = node.id;
      out.op = ops[ops.length - 1].id;
      return [out, node];
    };
    const [h, hNode] = step("mm", [x, w], "MmBackward0", [xNode, wAcc], path);
    const [z, zNode] = step("add", [h, b], "AddBackward0", [hNode, bAcc], path);
    [x, xNode] = step("relu", [z], "ReluBackward0", [zNode], "model");
  }
  x.role = "output";
  const trace = { version: 2, source: { kind: "cell", lines: {} }, status: { complete: true }, modules, formulas: {}, tensors, ops, nodes, passes: [], steps: [], accumulations: [] };
  if (backward) {
    trace.passes.push({ index: 0, kind: "backward", roots: [[xNode.id, 0]] });
    for (const node of [...nodes].reverse()) trace.steps.push({ pass: 0, node: node.id, grads_in: [1], grads_out: (node.next || []).map(() => 1) });
  }
  return trace;
}
