// The two graphs of one trace, as plain nodes and edges to lay out and draw.
//
// forward:  tensors and the ops between them (input tensor -> op -> output tensor)
// backward: grad_fn nodes joined by next_functions, down to one AccumulateGrad per leaf
//
// A drawn node: { id, kind, label, sub, role, group }. id is the record's id in the trace
// ("t3" tensor, "o2" op, "n5" node), so a selection means the same thing in both views.

import { formatShape } from "./format.js";
import { moduleOf } from "./trace.js";

/** Whether an op is drawn in the forward view: not the ops inside a custom Function's forward
 * (the Function's call stands for them), nor the plain arithmetic of a backward formula (only
 * those that made nodes, under create_graph, are part of a graph). */
export function isDrawnOp(op) {
  if (op.function !== undefined && op.function !== null) return false;
  if (op.in_backward !== undefined && op.in_backward !== null && !op.node) return false;
  return true;
}

export function forwardView(index) {
  const nodes = [];
  const edges = [];
  const seen = new Set();
  const addTensor = (id) => {
    if (seen.has(id)) return;
    const tensor = index.tensors.get(id);
    if (!tensor) return;
    seen.add(id);
    nodes.push({
      id,
      kind: "tensor",
      label: tensor.name,
      sub: `${formatShape(tensor.shape)} ${tensor.dtype || ""}`.trim(),
      role: tensor.role || "constant",
      group: moduleOf(index, id),
    });
  };
  const hidden = new Set(); // tensors made by ops that are not drawn
  for (const op of index.ops.values()) {
    if (!isDrawnOp(op)) {
      for (const output of op.outputs || []) hidden.add(output);
      continue;
    }
    for (const input of op.inputs || []) if (typeof input === "string") addTensor(input);
    const node = op.node ? index.nodes.get(op.node) : null;
    nodes.push({
      id: op.id,
      kind: "op",
      label: op.op,
      sub: node ? node.name : "no grad_fn",
      role: op.in_backward !== undefined ? "in-backward" : "op",
      group: moduleOf(index, op.id),
    });
    seen.add(op.id);
    (op.inputs || []).forEach((input, k) => {
      if (typeof input === "string") edges.push({ from: input, to: op.id, slot: k });
    });
    for (const output of op.outputs || []) {
      addTensor(output);
      edges.push({ from: op.id, to: output, slot: 0 });
    }
  }
  // tensors no drawn op touched: leaves and results the program made, not a Function's insides
  for (const [id, tensor] of index.tensors) {
    if (!hidden.has(id) && (tensor.role !== "constant" || !tensor.op)) addTensor(id);
  }
  return { nodes, edges };
}

export function backwardView(index) {
  const nodes = [];
  const edges = [];
  for (const node of index.nodes.values()) {
    let sub = "";
    let role = "function";
    if (node.variable) {
      const leaf = index.tensors.get(node.variable);
      sub = leaf ? leaf.name : "";
      role = "accumulate";
    } else {
      const outputs = index.outputsOfNode.get(node.id) || [];
      sub = outputs.map((id) => index.tensors.get(id).name).join(", ");
      if (outputs.some((id) => index.tensors.get(id).role === "output")) role = "root";
    }
    if (node.observed === false) role += " unobserved";
    nodes.push({ id: node.id, kind: "node", label: node.name, sub, role, group: moduleOf(index, node.id) });
    (node.next || []).forEach((edge, k) => {
      if (edge && index.nodes.has(edge[0])) edges.push({ from: node.id, to: edge[0], slot: k });
    });
  }
  return { nodes, edges };
}

/** The id to show for a record in a view: a node selected in the forward view is its op, a
 * tensor selected in the backward view is its AccumulateGrad or its grad_fn. */
export function drawnIdFor(index, id, view) {
  if (!id) return null;
  if (view === "forward") {
    const node = index.nodes.get(id);
    if (node) return node.op || node.variable || null;
    return id;
  }
  if (index.tensors.has(id)) {
    const tensor = index.tensors.get(id);
    return index.accumulatorOf.get(id) || tensor.grad_fn || null;
  }
  const op = index.ops.get(id);
  if (op) return op.node || null;
  return id;
}
