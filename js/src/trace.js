// An index over the trace JSON (docs/trace-schema.md): records by id, and the links between
// them that the views and the inspector follow.

import { predictedSteps } from "./predicted.js";

export function indexTrace(trace) {
  const t = trace || {};
  const index = {
    trace: t,
    tensors: new Map(),
    ops: new Map(),
    nodes: new Map(),
    // no backward recorded: the order backward() would follow, marked predicted (predicted.js)
    steps: t.steps && t.steps.length ? t.steps : predictedSteps(t),
    passes: t.passes || [],
    formulas: t.formulas || {},
    modules: t.modules || {},
    lines: (t.source && t.source.lines) || {},
    accumulations: new Map(), // tensor id -> its accumulations, in order
    accumulatorOf: new Map(), // tensor id -> its AccumulateGrad node id
    outputsOfNode: new Map(), // node id -> the tensor ids it is the grad_fn of
    stepsOfNode: new Map(), // node id -> indexes into steps
    usesOfTensor: new Map(), // tensor id -> ops reading it
    opsInside: new Map(), // op id of a custom Function call -> the ops its forward ran
  };
  for (const tensor of t.tensors || []) index.tensors.set(tensor.id, tensor);
  for (const op of t.ops || []) {
    index.ops.set(op.id, op);
    if (op.function) {
      if (!index.opsInside.has(op.function)) index.opsInside.set(op.function, []);
      index.opsInside.get(op.function).push(op.id);
    }
    for (const input of op.inputs || []) {
      if (typeof input !== "string") continue;
      if (!index.usesOfTensor.has(input)) index.usesOfTensor.set(input, []);
      index.usesOfTensor.get(input).push(op.id);
    }
  }
  for (const node of t.nodes || []) {
    index.nodes.set(node.id, node);
    if (node.variable) index.accumulatorOf.set(node.variable, node.id);
  }
  for (const tensor of index.tensors.values()) {
    if (!tensor.grad_fn) continue;
    if (!index.outputsOfNode.has(tensor.grad_fn)) index.outputsOfNode.set(tensor.grad_fn, []);
    index.outputsOfNode.get(tensor.grad_fn).push(tensor.id);
  }
  index.steps.forEach((step, i) => {
    if (!index.stepsOfNode.has(step.node)) index.stepsOfNode.set(step.node, []);
    index.stepsOfNode.get(step.node).push(i);
  });
  for (const acc of t.accumulations || []) {
    if (!index.accumulations.has(acc.tensor)) index.accumulations.set(acc.tensor, []);
    index.accumulations.get(acc.tensor).push(acc);
  }
  return index;
}

/** The name shown for a record id (tensor, op or node), or the id itself. */
export function nameOf(index, id) {
  if (index.tensors.has(id)) return index.tensors.get(id).name;
  if (index.ops.has(id)) return index.ops.get(id).op;
  if (index.nodes.has(id)) return index.nodes.get(id).name;
  return String(id);
}

/** The module path a record ran inside, or null: an op's module; a node's op's module; a
 * tensor's producing op's module, or for a parameter ("model.fc1.weight") its owner. */
export function moduleOf(index, id) {
  const op = index.ops.get(id);
  if (op) return op.module || null;
  const node = index.nodes.get(id);
  if (node) {
    if (node.op) return moduleOf(index, node.op);
    if (node.variable) return moduleOf(index, node.variable);
    return null;
  }
  const tensor = index.tensors.get(id);
  if (!tensor) return null;
  if (tensor.op) return moduleOf(index, tensor.op);
  const dot = tensor.name.lastIndexOf(".");
  if (dot > 0 && tensor.name.slice(0, dot) in index.modules) return tensor.name.slice(0, dot);
  return null;
}

/** True when the trace has nothing to draw. */
export function isEmpty(index) {
  return index.tensors.size === 0 && index.nodes.size === 0 && index.ops.size === 0;
}
