// Traces for the tests, in the JSON schema of docs/trace-schema.md (nbgrad/trace/schema.json).
// The recorded ones are real: scripts/make_js_fixtures.py writes fixtures/*.json from nbgrad's
// own recordings, and Python's tests check that they are what it writes today.

import fourWeights from "./fixtures/four_weights.json";
import simple from "./fixtures/simple.json";
import smallMlp from "./fixtures/small_mlp.json";

/** e = (a + b) * d; e.backward(), as nbgrad.record() writes it (a fresh copy each call). */
export function simpleTrace() {
  return structuredClone(simple);
}

/** Notebook 2's four-weight example, recorded by nbgrad. */
export function fourWeightsTrace() {
  return structuredClone(fourWeights);
}

/** A two-layer network in modules (matrices, a cross-entropy loss), recorded by nbgrad. */
export function smallMlpTrace() {
  return structuredClone(smallMlp);
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
    const namedBy = role === "intermediate" ? "expression" : "variable";
    const t = { id: `t${tid++}`, name, named_by: namedBy, role, shape: [4], dtype: "float32", requires_grad: role !== "constant", value: [0.5, -1, 2, 0], ...extra };
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
  const trace = { version: 2, source: { kind: "cell", lines: {} }, status: { complete: true, truncated: null, error: null }, modules, formulas: {}, tensors, ops, nodes, passes: [], steps: [], accumulations: [] };
  if (backward) {
    trace.passes.push({ index: 0, kind: "backward", roots: [[xNode.id, 0]] });
    for (const node of [...nodes].reverse()) trace.steps.push({ pass: 0, node: node.id, grads_in: [1], grads_out: (node.next || []).map(() => 1) });
  }
  return trace;
}
