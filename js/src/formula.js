// A node's local-gradient formulas as a learner writes them, with the program's names put in.
//
// The kernel resolves each formula of the op table against what the node saved
// (nbgrad/trace/readable.py: constants put in, conditions decided, helpers turned into math)
// and sends it as a small tree (the trace's `readable` table, docs/trace-schema.md). Here the
// tree becomes MathML (typeset natively by the browser) and plain text (to copy, and for screen
// readers), with the formula's names (`self`, `other`, `result`) replaced by the program's
// (`model(x) - target`) and the incoming gradient written ∂L/∂(output): for e = (c - d) ** 2,
// "∂L/∂(c - d) = 2 · (c - d) · ∂L/∂e".

import { formatNumber } from "./format.js";

const MATHML = "http://www.w3.org/1998/Math/MathML";
const SIMPLE_NAME = /^[A-Za-z_][A-Za-z0-9_.]*(\[[0-9, ]*\])?$/;

/** A name as an operand: parenthesised when it is an expression ("c * d"). */
export function operand(name) {
  return SIMPLE_NAME.test(name) ? name : `(${name})`;
}

function plainText(value) {
  if (value === null || value === undefined) return "None";
  if (typeof value === "number" || typeof value === "string") return formatNumber(value, typeof value === "number" && !Number.isInteger(value) ? "float64" : "int64");
  if (typeof value === "boolean") return value ? "True" : "False";
  return null; // an array: keep the name
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

/** The names a node's formulas are written in, mapped to the program's names (unparenthesised). */
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
    if (typeof value === "string" && index.tensors.has(value)) names[inputs[k]] = index.tensors.get(value).name;
    else if (value && typeof value === "object" && "const" in value) names[inputs[k]] = plainText(value.const) ?? inputs[k];
  }
  const outputs = op ? op.outputs || [] : [];
  if (outputs.length && index.tensors.has(outputs[0])) names.result = index.tensors.get(outputs[0]).name;
  outputs.forEach((id, k) => {
    if (index.tensors.has(id)) names[`result${k}`] = names[`result${k}`] ?? index.tensors.get(id).name;
  });
  for (const [name, saved] of Object.entries(node.saved || {})) {
    if (Object.hasOwn(names, name)) continue;
    if (saved.tensor && index.tensors.has(saved.tensor)) names[name] = index.tensors.get(saved.tensor).name;
  }
  return names;
}

function outputName(index, node) {
  const op = node.op ? index.ops.get(node.op) : null;
  const outputs = op && op.outputs ? op.outputs : index.outputsOfNode.get(node.id) || [];
  const id = outputs[0];
  return id && index.tensors.has(id) ? index.tensors.get(id).name : "out";
}

/**
 * For each next edge: { input, operandName, tree, text, lhs } or null (no formula for it).
 * `text` is the whole plain-text formula, "∂L/∂x = ...".
 */
export function localGradients(index, node) {
  const entry = index.formulas[node.formula];
  if (!entry) return [];
  const table = (index.trace && index.trace.readable) || {};
  const trees = node.readable && table[node.readable] ? table[node.readable] : null;
  const names = formulaNames(index, node);
  const out = outputName(index, node);
  const seen = {}; // how many edges of each input came before: cat's input k gets piece k
  return edgeInputs(index, node).map((edge) => {
    if (!edge || (entry.grads || {})[edge.input] === undefined) return null;
    const k = (seen[edge.input] = (seen[edge.input] ?? -1) + 1);
    let operandName = names[edge.input] ?? edge.input;
    if (typeof edge.operand === "string" && index.tensors.has(edge.operand)) operandName = index.tensors.get(edge.operand).name;
    // a trace without the readable table (written by an older nbgrad): say what runs, in words
    let tree = trees && trees[edge.input] ? trees[edge.input] : ["say", `computed by ${node.name}`];
    if (tree[0] === "pieces") tree = pieceOf(tree, k, inputLengths(index, node, edge.input, tree[2]));
    const lhs = ["lhs", operandName];
    return { input: edge.input, operandName, tree, lhs, text: `${toText(lhs, names, out)} = ${toText(tree, names, out)}`, names, out };
  });
}

/** The lengths along `dim` of the tensors a node's list input (cat's `tensors`) received. */
function inputLengths(index, node, input, dim) {
  const op = node.op ? index.ops.get(node.op) : null;
  if (!op) return null;
  const lengths = [];
  edgeInputs(index, node).forEach((edge) => {
    if (!edge || edge.input !== input) return;
    const tensor = typeof edge.operand === "string" ? index.tensors.get(edge.operand) : null;
    lengths.push(tensor && tensor.shape ? tensor.shape[dim] ?? null : null);
  });
  return lengths.every((n) => Number.isInteger(n)) ? lengths : null;
}

/** Piece k of cat's or stack's gradient: ∂L/∂y[3:5] (dim 0), ∂L/∂y[:, 2] (dim 1 of a stack). */
export function pieceOf(tree, k, inputs = null) {
  const [, grad, dim] = tree;
  const lengths = tree[3] === "inputs" ? inputs : tree[3];
  if (tree[3] === "inputs" && !lengths) return ["say", grad, ` cut along dim ${dim}, piece ${k}`];
  let where;
  if (lengths === null || lengths === undefined) where = String(k);
  else {
    const start = lengths.slice(0, k).reduce((a, b) => a + b, 0);
    where = `${start}:${start + (lengths[k] ?? 0)}`;
  }
  return ["idx", grad, [...Array(Math.max(0, dim)).fill(":"), where].join(", ")];
}

// --- plain text ------------------------------------------------------------------------------

const PRECEDENCE = { cases: 1, or: 2, and: 3, not: 4, cmp: 5, add: 6, sub: 6, mul: 7, mm: 7, div: 7, neg: 8, pow: 9, T: 10, idx: 10 };
// ∂L/∂y is a fraction: raised to a power or transposed, it takes parentheses, (∂L/∂y)ᵀ
const precedenceOf = (tree) => (tree[0] === "g" ? 9.5 : PRECEDENCE[tree[0]] ?? 11);

function nameText(names, name) {
  return operand(names[name] ?? name);
}

/** A readable-formula tree as plain text (the same reading as readable.to_text in Python). */
export function toText(tree, names = {}, out = "out") {
  const grouped = (t, level) => (precedenceOf(t) < level ? `(${render(t)})` : render(t));
  const render = (t) => {
    switch (t[0]) {
      case "lhs":
        return `∂L/∂${operand(t[1])}`;
      case "g":
        return t.length > 1 ? `∂L/∂${operand(out)}[${t[1]}]` : `∂L/∂${operand(out)}`;
      case "v":
        return nameText(names, t[1]);
      case "n":
      case "tuple":
        return t[1];
      case "add":
      case "sub":
      case "div": {
        const p = PRECEDENCE[t[0]];
        return `${grouped(t[1], p)}${{ add: " + ", sub: " − ", div: " / " }[t[0]]}${grouped(t[2], p + 1)}`;
      }
      case "mul":
        return t.slice(1).map((f) => grouped(f, 7)).join(" · ");
      case "mm":
        return `${grouped(t[1], 7)} ${grouped(t[2], 8)}`;
      case "neg":
        return `−${grouped(t[1], 7)}`;
      case "pow":
        return `${grouped(t[1], 10)}^${grouped(t[2], 10)}`;
      case "T":
        return `${grouped(t[1], 10)}ᵀ`;
      case "abs":
        return `|${render(t[1])}|`;
      case "sqrt":
        return `√(${render(t[1])})`;
      case "f": // exp(x), exp(c - d): a compound name is not parenthesised twice
        return `${t[1]}(${t.slice(2).map((a) => (a[0] === "v" ? names[a[1]] ?? a[1] : render(a))).join(", ")})`;
      case "cmp":
        return `${grouped(t[2], 6)} ${t[1]} ${grouped(t[3], 6)}`;
      case "and":
      case "or":
        return t.slice(1).map((a) => grouped(a, PRECEDENCE[t[0]] + 1)).join(t[0] === "and" ? " and " : " or ");
      case "not":
        return `not ${grouped(t[1], 5)}`;
      case "cases":
        return `{ ${t.slice(1).map(([v, c]) => (c ? `${render(v)} when ${render(c)}` : `${render(v)} otherwise`)).join("; ")} }`;
      case "ind":
        return `𝟙[${render(t[1])}]`;
      case "idx":
        return `${grouped(t[1], 10)}[${t[2]}]`;
      case "sum":
        return `Σ_{${t[2]}} ${grouped(t[1], 7)}`;
      case "say":
        return t.slice(1).map((p) => (typeof p === "string" ? p : grouped(p, 8))).join("");
      case "pieces":
        return `${grouped(t[1], 10)} cut along dim ${t[2]}`;
      default:
        return "?";
    }
  };
  return render(tree);
}

// --- MathML ----------------------------------------------------------------------------------

function m(tag, attrs, ...children) {
  const el = document.createElementNS(MATHML, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child);
  }
  return el;
}
const mo = (text, attrs) => m("mo", attrs, text); // text goes in as a text node, never markup
const mi = (text) => m("mi", text.length > 1 ? { mathvariant: "normal" } : null, text);
// MathML drops the spaces at the ends of an mtext: non-breaking ones stay
const mtext = (text) => m("mtext", null, text.replace(/^ | $/g, "\u00a0"));
const paren = (inner) => m("mrow", null, mo("("), inner, mo(")"));

/** A program's name: a letter, a word, or an expression ("model(x) - target", in parentheses). */
function nameMath(name) {
  if (/^[A-Za-z]$/.test(name) || /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return mi(name);
  if (SIMPLE_NAME.test(name)) return m("mi", { mathvariant: "normal" }, name);
  return paren(mtext(name));
}

function partial(nameNode) {
  return m("mfrac", null, m("mrow", null, mi("∂"), mi("L")), m("mrow", null, mi("∂"), nameNode));
}

/** The whole formula "∂L/∂x = ..." as MathML: a <span> of <math> pieces (see the end). */
export function toMathML(lhs, tree, names = {}, out = "out") {
  const grouped = (t, level) => (precedenceOf(t) < level ? paren(render(t)) : render(t));
  const render = (t) => {
    switch (t[0]) {
      case "lhs":
        return partial(nameMath(t[1]));
      case "g":
        return t.length > 1 ? m("msub", null, partial(nameMath(out)), m("mn", null, String(t[1]))) : partial(nameMath(out));
      case "v":
        return nameMath(names[t[1]] ?? t[1]);
      case "n":
        return /^[0-9.e+-]+$/.test(t[1]) ? m("mn", null, t[1]) : mi(t[1]);
      case "tuple":
        return m("mn", null, t[1]);
      case "add":
      case "sub": {
        const p = PRECEDENCE[t[0]];
        return m("mrow", null, grouped(t[1], p), mo(t[0] === "add" ? "+" : "−"), grouped(t[2], p + 1));
      }
      case "div":
        // a fraction of fractions (∂L/∂y over 5) shrinks to unreadable: written with a slash
        if (/\["(g|div)"/.test(JSON.stringify(t.slice(1)))) return m("mrow", null, grouped(t[1], 7), mo("/"), grouped(t[2], 8));
        return m("mfrac", null, render(t[1]), render(t[2]));
      case "mul":
        return m("mrow", null, t.slice(1).flatMap((f, i) => (i ? [mo("·"), grouped(f, 7)] : [grouped(f, 7)])));
      case "mm":
        return m("mrow", null, grouped(t[1], 7), m("mspace", { width: "0.25em" }), grouped(t[2], 8));
      case "neg":
        return m("mrow", null, mo("−"), grouped(t[1], 7));
      case "pow":
        return m("msup", null, grouped(t[1], 10), render(t[2]));
      case "T":
        return m("msup", null, grouped(t[1], 10), m("mi", { mathvariant: "normal" }, "T"));
      case "abs":
        return m("mrow", null, mo("|"), render(t[1]), mo("|"));
      case "sqrt":
        return m("msqrt", null, render(t[1]));
      case "f": {
        const arg = (a) => (a[0] === "v" ? m("mi", { mathvariant: "normal" }, names[a[1]] ?? a[1]) : render(a));
        return m("mrow", null, mi(t[1]), mo("\u2061"), mo("("), t.slice(2).flatMap((a, i) => (i ? [mo(","), arg(a)] : [arg(a)])), mo(")"));
      }
      case "cmp":
        return m("mrow", null, grouped(t[2], 6), mo(t[1]), grouped(t[3], 6));
      case "and":
      case "or":
        return m("mrow", null, t.slice(1).flatMap((a, i) => (i ? [mtext(t[0] === "and" ? " and " : " or "), grouped(a, PRECEDENCE[t[0]] + 1)] : [grouped(a, PRECEDENCE[t[0]] + 1)])));
      case "not":
        return m("mrow", null, mtext("not "), grouped(t[1], 5));
      case "cases":
        return m(
          "mrow",
          null,
          mo("{", { stretchy: "true" }),
          m(
            "mtable",
            { columnalign: "left left" },
            t.slice(1).map(([v, c]) => m("mtr", null, m("mtd", null, render(v)), m("mtd", null, c ? m("mrow", null, mtext("when "), render(c)) : mtext("otherwise")))),
          ),
        );
      case "ind":
        return m("mrow", null, mi("𝟙"), mo("["), render(t[1]), mo("]"));
      case "idx":
        return m("mrow", null, grouped(t[1], 10), mo("["), mtext(t[2]), mo("]"));
      case "sum":
        return m("mrow", null, m("munder", null, mo("Σ"), mtext(t[2])), grouped(t[1], 7));
      case "say":
        return m("mrow", null, t.slice(1).map((p) => (typeof p === "string" ? mtext(p) : grouped(p, 8))));
      case "pieces":
        return m("mrow", null, grouped(t[1], 10), mtext(` cut along dim ${t[2]}`));
      default:
        return mtext("?");
    }
  };
  // The formula as a row of <math> pieces, cut between the top-level factors or terms, so that a
  // narrow panel wraps it between them (browsers do not break MathML lines) instead of clipping.
  const pieces = [[render(lhs), mo("=")]];
  const top = tree[0];
  if (top === "mul") tree.slice(1).forEach((f, i, all) => pieces.push([grouped(f, 7), i < all.length - 1 ? mo("·") : null]));
  else if (top === "add" || top === "sub") pieces.push([grouped(tree[1], 6), mo(top === "add" ? "+" : "−")], [grouped(tree[2], 7)]);
  else if (top === "mm") pieces.push([grouped(tree[1], 7)], [grouped(tree[2], 8)]);
  else pieces.push([render(tree)]);
  const box = document.createElement("span");
  box.className = "formula-pieces";
  for (const piece of pieces) box.append(m("math", { displaystyle: "true" }, m("mrow", null, piece))); // fractions full size
  return box;
}

// --- the local derivative, where the formula is one ----------------------------------------

/**
 * The factor f of a formula "∂L/∂x = f · ∂L/∂out" (elementwise: the local derivative ∂out/∂x
 * that the chain rule multiplies in), or null when the formula is not such a product.
 */
export function localFactor(tree) {
  if (tree[0] === "g" && tree.length === 1) return ["n", "1"];
  if (tree[0] === "neg") {
    const inner = localFactor(tree[1]);
    return inner ? (inner[0] === "n" && inner[1] === "1" ? ["n", "-1"] : ["neg", inner]) : null;
  }
  if (tree[0] === "mul") {
    const last = tree[tree.length - 1];
    const rest = tree.slice(1, -1);
    if (last[0] !== "g" || last.length !== 1 || rest.some((f) => JSON.stringify(f).includes('["g"'))) return null;
    return rest.length === 1 ? rest[0] : ["mul", ...rest];
  }
  if (tree[0] === "div" && !JSON.stringify(tree[2]).includes('["g"')) {
    const top = localFactor(tree[1]);
    return top ? ["div", top, tree[2]] : null;
  }
  return null;
}

/** "de/dc = d" and the value d stands for (when a saved tensor or a number), or null. */
export function localDerivative(index, node, gradient) {
  const factor = localFactor(gradient.tree);
  if (!factor) return null;
  const text = `d${operand(gradient.out)}/d${operand(gradient.operandName)} = ${toText(factor, gradient.names, gradient.out)}`;
  let value = null;
  if (factor[0] === "v") {
    const saved = (node.saved || {})[factor[1]];
    if (saved && saved.tensor && index.tensors.has(saved.tensor)) value = index.tensors.get(saved.tensor).value ?? null;
  }
  return { text, value };
}
