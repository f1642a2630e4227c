// The chain rule in words, one backward step at a time: what a node got, each local derivative
// with its value, and what it sent where. Plain text, so it can be selected, copied and read by
// a screen reader:
//
//   "MulBackward0 got dL/de = 1; de/dc = d = 4, so it sent 4 to AddBackward0 (c = a + b);
//    de/dd = c = 5, so it sent 5 to d"
//
// The formulas are the trace's readable trees (formula.js), so constants are already put in;
// the names in them are replaced by the values the node saved, to give each derivative's value.

import { isSummary, shapeOf, toNumber } from "./format.js";
import { localFactor, localGradients, operand, toText } from "./formula.js";

/** A number as a learner writes it: 4, -0.5, 0.3333, 1.5e-05. */
export function numberText(x) {
  const v = toNumber(x);
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** A value of the trace as text: 4, [1, 2, 3] for a vector, [1, 2; 3, 4] for a matrix (the
 * syntax an answer may be typed in), or "a 8×8 array" for what is too large to write. */
export function valueText(value) {
  if (value === null || value === undefined) return "None";
  if (isSummary(value)) return `a ${(value.shape || []).join("×")} array`;
  if (!Array.isArray(value)) return numberText(value);
  const shape = shapeOf(value);
  if (shape.length === 1) return `[${value.map(numberText).join(", ")}]`;
  if (shape.length === 2) return `[${value.map((row) => row.map(numberText).join(", ")).join("; ")}]`;
  return `[${value.map(valueText).join(", ")}]`;
}

/** The values a node's formula names stand for: what it saved, and its op's operands. */
export function formulaValues(index, node) {
  const values = {};
  const entry = index.formulas[node.formula] || { inputs: [] };
  const op = node.op ? index.ops.get(node.op) : null;
  const operands = op ? op.inputs || [] : [];
  const inputs = entry.inputs || [];
  if (inputs.length === operands.length) {
    inputs.forEach((name, k) => {
      const x = operands[k];
      if (typeof x === "string" && index.tensors.has(x)) values[name] = index.tensors.get(x).value;
      else if (x && typeof x === "object" && "const" in x) values[name] = x.const;
    });
  }
  const outputs = op ? op.outputs || [] : index.outputsOfNode.get(node.id) || [];
  if (outputs.length && index.tensors.has(outputs[0])) values.result = index.tensors.get(outputs[0]).value;
  for (const [name, saved] of Object.entries(node.saved || {})) {
    if (saved.tensor && index.tensors.has(saved.tensor)) values[name] = index.tensors.get(saved.tensor).value;
    else if ("value" in saved) values[name] = saved.value;
  }
  return values;
}

// Elementwise arithmetic on numbers and same-shaped nested lists (a number broadcasts).
function elementwise(f, ...xs) {
  const array = xs.find(Array.isArray);
  if (!array) return f(...xs.map(toNumber));
  return array.map((_, i) => elementwise(f, ...xs.map((x) => (Array.isArray(x) ? x[i] : x))));
}

const MATH = {
  exp: Math.exp,
  log: Math.log,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  tanh: Math.tanh,
  cosh: Math.cosh,
  sinh: Math.sinh,
  "σ": (x) => 1 / (1 + Math.exp(-x)),
  sgn: Math.sign,
};

/** The value of a readable tree made of numbers, names and elementwise arithmetic, or null
 * (a matrix product, a sum, a condition: the words then give the formula without its value). */
export function evaluate(tree, values, grad = null) {
  const known = (x) => typeof x === "number" || Array.isArray(x);
  const go = (t) => {
    switch (t[0]) {
      case "n": {
        const v = Number(t[1]);
        return Number.isFinite(v) ? v : null;
      }
      case "v":
        return known(values[t[1]]) ? values[t[1]] : null;
      case "g":
        return t.length === 1 && known(grad) ? grad : null;
      case "neg":
      case "sqrt":
      case "abs": {
        const a = go(t[1]);
        const f = { neg: (x) => -x, sqrt: Math.sqrt, abs: Math.abs }[t[0]];
        return a === null ? null : elementwise(f, a);
      }
      case "f": {
        const a = t.length === 3 ? go(t[2]) : null;
        return a === null || !MATH[t[1]] ? null : elementwise(MATH[t[1]], a);
      }
      case "add":
      case "sub":
      case "div":
      case "pow":
      case "mul": {
        const parts = t.slice(1).map(go);
        if (parts.some((p) => p === null)) return null;
        if (parts.filter(Array.isArray).some((p) => JSON.stringify(shapeOf(p)) !== JSON.stringify(shapeOf(parts.find(Array.isArray))))) return null;
        const f = { add: (x, y) => x + y, sub: (x, y) => x - y, div: (x, y) => x / y, pow: (x, y) => x ** y, mul: (x, y) => x * y }[t[0]];
        return parts.slice(1).reduce((acc, p) => elementwise(f, acc, p), parts[0]);
      }
      default:
        return null;
    }
  };
  return go(tree);
}

export function outputNames(index, node) {
  const op = node.op ? index.ops.get(node.op) : null;
  const outputs = op && op.outputs ? op.outputs : index.outputsOfNode.get(node.id) || [];
  return outputs.map((id) => (index.tensors.has(id) ? index.tensors.get(id).name : "out"));
}

/** How a node that receives a gradient is named in the words: a leaf by its name ("d"), a
 * Function node with the line that made it when that line assigns its output ("AddBackward0
 * (c = a + b)"), else with its output's name. */
export function targetText(index, nodeId) {
  const node = index.nodes.get(nodeId);
  if (!node) return String(nodeId);
  if (node.variable) return index.tensors.has(node.variable) ? index.tensors.get(node.variable).name : "a leaf";
  const [out] = outputNames(index, node);
  const op = node.op ? index.ops.get(node.op) : null;
  const line = op && op.line !== undefined ? (index.lines[String(op.line)] || "").trim() : "";
  if (out && line.length <= 48 && line.replace(/\s+/g, "").startsWith(`${out.replace(/\s+/g, "")}=`)) return `${node.name} (${line})`;
  return out ? `${node.name} (for ${out})` : node.name;
}

/** The formula of one edge with the numbers put in: "∂L/∂c = 4 · 1" (null when the names
 * cannot all be given values). The learner's own working, written out. */
export function pluggedIn(gradient, values, grad) {
  const valueOf = (x) => {
    const text = valueText(x);
    return typeof x === "number" && x < 0 ? `(${text})` : text;
  };
  let complete = true;
  const put = (t) => {
    if (!Array.isArray(t)) return t;
    if (t[0] === "v") {
      const v = values[t[1]];
      if (v === null || v === undefined || isSummary(v) || (typeof v === "object" && !Array.isArray(v))) {
        complete = false;
        return t;
      }
      return ["n", valueOf(v)];
    }
    if (t[0] === "g" && t.length === 1) {
      if (grad === null || grad === undefined || isSummary(grad)) {
        complete = false;
        return t;
      }
      return ["n", valueOf(grad)];
    }
    return t.map(put);
  };
  const tree = put(gradient.tree);
  if (!complete) return null;
  return `∂L/∂${operand(gradient.operandName)} = ${toText(tree, gradient.names, gradient.out)}`;
}

/** What one edge of a step says: "de/dc = d = 4, so it sent 4 to AddBackward0 (c = a + b)". */
export function edgeWords(index, node, stepRecord, k, gradient = localGradients(index, node)[k]) {
  const edge = (node.next || [])[k];
  if (!edge) return null;
  const sent = (stepRecord.grads_out || [])[k];
  const target = targetText(index, edge[0]);
  if (sent === null || sent === undefined) return `it sent no gradient to ${target}`;
  const so = `so it sent ${valueText(sent)} to ${target}`;
  if (!gradient) return `its backward computed the gradient of input ${k}, ${so}`;
  const values = formulaValues(index, node);
  const factor = localFactor(gradient.tree);
  if (factor) {
    const derivative = `d${operand(gradient.out)}/d${operand(gradient.operandName)}`;
    const text = toText(factor, gradient.names, gradient.out);
    const value = evaluate(factor, values);
    const shown = value === null || valueText(value) === text ? "" : ` = ${valueText(value)}`;
    return `${derivative} = ${text}${shown}, ${so}`;
  }
  return `${gradient.text.replace(/∂/g, "d")}, ${so}`;
}

/** The chain rule of step `i` (0-based) in words. */
export function chainWords(index, i) {
  const record = index.steps[i];
  if (!record) return "";
  const node = index.nodes.get(record.node);
  if (!node) return "";
  const grads = record.grads_in || [];
  if (record.predicted) return `${node.name} would run here; no backward pass was recorded, so there are no values.`;
  if (node.variable) {
    const leaf = index.tensors.has(node.variable) ? index.tensors.get(node.variable).name : "the leaf";
    const accumulation = (index.trace.accumulations || []).find((a) => a.step === i);
    const total = accumulation && accumulation.total !== undefined ? ` (${leaf}.grad is now ${valueText(accumulation.total)})` : "";
    return `AccumulateGrad got dL/d${operand(leaf)} = ${valueText(grads[0])} and added it to ${leaf}.grad${total}`;
  }
  const outs = outputNames(index, node);
  const got = grads
    .map((g, k) => (g === null || g === undefined ? null : `dL/d${operand(outs[k] || "out")} = ${valueText(g)}`))
    .filter(Boolean)
    .join(", ");
  const gradients = localGradients(index, node);
  const parts = (node.next || []).map((_, k) => edgeWords(index, node, record, k, gradients[k])).filter(Boolean);
  return [`${node.name} got ${got || "no gradient"}`, ...parts].join("; ");
}
