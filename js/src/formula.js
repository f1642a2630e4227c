// A node's local-gradient formulas, from the op table's text (trace.formulas), with the
// program's names put in: MulBackward0 of e = c * d has "grad * other" for input `self`, shown
// as "de/dc = d"; a formula that is not a plain product shows the vector-Jacobian product it
// computes, with L the value backward started from: "∂L/∂c = expand(∂L/∂e, [2])".

import { formatNumber } from "./format.js";

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/g;
const SIMPLE_NAME = /^[A-Za-z_][A-Za-z0-9_.]*(\[[0-9, ]*\])?$/;

/** A name as an operand: parenthesised when it is an expression ("c * d"). */
export function operand(name) {
  return SIMPLE_NAME.test(name) ? name : `(${name})`;
}

function plainText(value) {
  if (value === null || value === undefined) return "None";
  if (typeof value === "number" || typeof value === "string") return formatNumber(value, typeof value === "number" && !Number.isInteger(value) ? "float64" : "int64");
  if (typeof value === "boolean") return value ? "True" : "False";
  if (Array.isArray(value)) return JSON.stringify(value);
  if (value && "slice" in value) return `slice(${value.slice.map((v) => (v === null ? "None" : v)).join(", ")})`;
  return null; // an array summary: keep the name
}

/** Replace the formula's names (self, other, result, saved values) by the program's. */
export function substitute(text, names) {
  return text.replace(IDENTIFIER, (word) => (Object.hasOwn(names, word) ? names[word] : word));
}

/** "grad * X" -> X, "grad" -> 1, "-grad * X" -> -X, "grad / X" -> 1 / X, or null. */
export function localFactor(text) {
  const t = text.trim();
  if (t === "grad") return "1";
  if (t === "-grad") return "-1";
  let m = /^grad \* (.+)$/.exec(t);
  if (m && !/\bgrad\b/.test(m[1])) return m[1];
  m = /^-grad \* (.+)$/.exec(t);
  if (m && !/\bgrad\b/.test(m[1])) return `-${m[1]}`;
  m = /^grad \/ (.+)$/.exec(t);
  if (m && !/\bgrad\b/.test(m[1])) return `1 / ${m[1]}`;
  m = /^(.+) \* grad$/.exec(t);
  if (m && !/\bgrad\b/.test(m[1])) return m[1];
  return null;
}

/** Which formula input each `next` edge of a node belongs to, with the operand it carries. */
export function edgeInputs(index, node) {
  const entry = index.formulas[node.formula];
  const op = node.op ? index.ops.get(node.op) : null;
  const next = node.next || [];
  if (!entry) return next.map(() => null);
  const names = entry.inputs || [];
  const operands = op ? op.inputs || [] : [];
  return next.map((_, k) => {
    const input = names.length === next.length ? names[k] : names[Math.min(k, names.length - 1)];
    return { input, operand: operands[k] };
  });
}

/** The names a node's formulas are written in, mapped to the program's names. */
export function formulaNames(index, node) {
  const entry = index.formulas[node.formula] || { inputs: [] };
  const op = node.op ? index.ops.get(node.op) : null;
  const names = {};
  const operands = op ? op.inputs || [] : [];
  const inputs = entry.inputs || [];
  // one operand per input; when an input is a list (cat's `tensors`), only those before it
  const mapped = inputs.length === operands.length ? inputs.length : inputs.length - 1;
  for (let k = 0; k < mapped; k++) {
    const value = operands[k];
    if (typeof value === "string" && index.tensors.has(value)) names[inputs[k]] = operand(index.tensors.get(value).name);
    else if (value && typeof value === "object" && "const" in value) names[inputs[k]] = plainText(value.const) ?? inputs[k];
  }
  const outputs = op ? op.outputs || [] : [];
  if (outputs.length && index.tensors.has(outputs[0])) names.result = operand(index.tensors.get(outputs[0]).name);
  for (const [name, saved] of Object.entries(node.saved || {})) {
    if (Object.hasOwn(names, name)) continue;
    if (saved.tensor && index.tensors.has(saved.tensor)) names[name] = operand(index.tensors.get(saved.tensor).name);
    else if ("value" in saved) {
      const text = plainText(saved.value);
      if (text !== null && text.length <= 24) names[name] = text;
    }
  }
  return names;
}

/** For each next edge: { input, operandName, text, kind: "local" | "vjp", value }. */
export function localGradients(index, node) {
  const entry = index.formulas[node.formula];
  if (!entry) return [];
  const op = node.op ? index.ops.get(node.op) : null;
  const names = formulaNames(index, node);
  const outputId = op && op.outputs ? op.outputs[0] : null;
  const outName = outputId && index.tensors.has(outputId) ? index.tensors.get(outputId).name : "out";
  return edgeInputs(index, node).map((edge) => {
    if (!edge) return null;
    const source = (entry.grads || {})[edge.input];
    if (source === undefined) return null;
    let operandName = edge.input;
    if (typeof edge.operand === "string" && index.tensors.has(edge.operand)) operandName = index.tensors.get(edge.operand).name;
    else if (edge.operand && typeof edge.operand === "object" && "const" in edge.operand) operandName = plainText(edge.operand.const);
    const factor = localFactor(source);
    if (factor !== null) {
      const text = `d${operand(outName)}/d${operand(operandName)} = ${substitute(factor, names)}`;
      return { input: edge.input, operandName, text, kind: "local", value: factorValue(index, node, factor) };
    }
    const vjp = substitute(source, { ...names, grad: `∂L/∂${operand(outName)}` });
    return { input: edge.input, operandName, text: `∂L/∂${operand(operandName)} = ${vjp}`, kind: "vjp", value: null };
  });
}

/** The number a one-name factor stands for ("other" -> the saved d = 4.), when it is known. */
function factorValue(index, node, factor) {
  if (factor === "1" || factor === "-1") return factor;
  const saved = (node.saved || {})[factor];
  if (!saved) return null;
  if (saved.tensor && index.tensors.has(saved.tensor)) return index.tensors.get(saved.tensor).value ?? null;
  return "value" in saved ? saved.value : null;
}
