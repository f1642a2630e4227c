// Two sections of a Function node's inspector (issue 17):
//
// - "local Jacobian": the matrix the trace carries for a small node (node.jacobian, see
//   docs/trace-schema.md), rows the output's elements and columns the input's, labelled with
//   the program's names, and the identity the engine uses: grad sent = grad in (a row) × J.
//   It is in the trace, so it works offline (save_html) too.
// - "check this node": a button that asks the kernel for a finite-difference check of the
//   node's backward (Python's node.check()) through anywidget's custom messages:
//   { type: "check", node, request } -> { type: "check", request, ok, result | error }.
//   A saved page has no kernel: its stand-in model answers that it needs one.

import { h } from "./dom.js";
import { formatNumber, isSummary } from "./format.js";

export const CHECK_TIMEOUT_MS = 30000; // a check re-runs the forward twice per input element
const SHORT_NAME = 8; // a longer name labels the Jacobian's title, not each row and column

/** Sends check requests over the model's custom messages; resolves with the result object,
 * rejects with an Error saying why (the kernel's message, no kernel, no answer in time). */
export function nodeChecker(model, timeoutMs = CHECK_TIMEOUT_MS) {
  let next = 0;
  const waiting = new Map();
  const onMessage = (message) => {
    if (!message || message.type !== "check") return;
    const pending = waiting.get(message.request);
    if (!pending) return;
    waiting.delete(message.request);
    clearTimeout(pending.timer);
    if (message.ok) pending.resolve(message.result);
    else pending.reject(new Error(message.error || "the kernel could not check this node"));
  };
  model.on("msg:custom", onMessage);
  const checkNode = (nodeId) =>
    new Promise((resolve, reject) => {
      const request = ++next;
      const timer = setTimeout(() => {
        waiting.delete(request);
        reject(new Error("no answer from the kernel: checking a node needs the running kernel (it has stopped, restarted, or is busy). Run the cell again and click again"));
      }, timeoutMs);
      waiting.set(request, { resolve, reject, timer });
      try {
        model.send({ type: "check", node: nodeId, request });
      } catch (error) {
        clearTimeout(timer);
        waiting.delete(request);
        reject(new Error(`checking a node needs the running kernel, which cannot be reached (${error && error.message ? error.message : error})`));
      }
    });
  const stop = () => {
    model.off("msg:custom", onMessage);
    for (const pending of waiting.values()) clearTimeout(pending.timer);
    waiting.clear();
  };
  return { checkNode, stop };
}

// --- the Jacobian ---------------------------------------------------------------------------

/** Labels of a tensor's elements in C order: x[0], x[1], ... or x[0,1] for a matrix. */
export function elementLabels(name, shape) {
  const dims = shape || [];
  const size = dims.reduce((a, b) => a * b, 1);
  const labels = [];
  for (let flat = 0; flat < size; flat++) {
    if (!dims.length) {
      labels.push(name);
      continue;
    }
    const index = [];
    let rest = flat;
    for (let d = dims.length - 1; d >= 0; d--) {
      index.unshift(rest % dims[d]);
      rest = Math.floor(rest / dims[d]);
    }
    labels.push(`${name}[${index.join(",")}]`);
  }
  return labels;
}

function flatNumbers(value) {
  if (value === null || value === undefined || isSummary(value)) return null;
  const flat = Array.isArray(value) ? value.flat(Infinity) : [value];
  return flat.every((x) => typeof x === "number") ? flat : null;
}

/** grad in (a row) × J: what the node sends for that incoming gradient. */
export function rowTimesMatrix(row, matrix) {
  const columns = matrix.length ? matrix[0].length : 0;
  const out = new Array(columns).fill(0);
  matrix.forEach((line, r) => line.forEach((x, c) => (out[c] += row[r] * x)));
  return out;
}

function tensorInfo(index, id, fallback) {
  const tensor = id ? index.tensors.get(id) : null;
  return tensor ? { name: tensor.name, shape: tensor.shape || [] } : { name: fallback, shape: null };
}

/** One block of the Jacobian as a table: a corner cell, column labels, then a row per output element. */
export function jacobianTable(matrix, rowLabels, columnLabels, { dtype = "float64", diagonal = false } = {}) {
  return h(
    "table",
    { class: "nbgrad-jacobian", "data-role": "jacobian-matrix" },
    h("thead", null, h("tr", null, h("th", { class: "corner", text: "∂ row / ∂ column" }), columnLabels.map((label) => h("th", { scope: "col", text: label })))),
    h(
      "tbody",
      null,
      matrix.map((line, r) =>
        h(
          "tr",
          null,
          h("th", { scope: "row", text: rowLabels[r] }),
          line.map((x, c) => h("td", { class: `${x === 0 ? "zero" : ""}${diagonal && r === c ? " diagonal" : ""}`.trim() || null, title: `∂${rowLabels[r]} / ∂${columnLabels[c]} = ${x}`, text: formatNumber(x, dtype) })),
        ),
      ),
    ),
  );
}

/** The "local Jacobian" section, or null when the trace carries none for this node. */
export function jacobianSection(ctx, node) {
  const jacobian = node.jacobian;
  if (!jacobian || !Array.isArray(jacobian.blocks)) return null;
  const index = ctx.index;
  const stepIds = index.stepsOfNode.get(node.id) || [];
  const step = stepIds.length ? index.steps[stepIds[0]] : null;
  const parts = [];
  jacobian.blocks.forEach((row, j) => {
    const output = tensorInfo(index, (jacobian.of || [])[j], `output ${j}`);
    row.forEach((matrix, i) => {
      const input = tensorInfo(index, (jacobian.wrt || [])[i], `input ${i}`);
      const rowLabels = output.shape ? elementLabels(output.name, output.shape) : matrix.map((_, r) => `${output.name}[${r}]`);
      const columnLabels = input.shape ? elementLabels(input.name, input.shape) : (matrix[0] || []).map((_, c) => `${input.name}[${c}]`);
      // A long name is said once, in the title; the axes then carry only the indexes.
      const axis = (labels, name) => (name.length > SHORT_NAME ? labels.map((label) => label.slice(name.length) || label) : labels);
      // Element i of the output against element i of the input: only when they have one shape
      const sameShape = output.shape && input.shape && output.shape.join() === input.shape.join();
      const gradIn = step && !step.predicted ? flatNumbers((step.grads_in || [])[j]) : null;
      const rule = h("code", { class: "jacobian-rule", text: `grad sent to ${input.name} = grad in (a row) × J` });
      const lines = [h("div", null, rule)];
      // (in practice mode what the node sends is the learner's to work out: the rule stays)
      if (gradIn && gradIn.length === matrix.length && !ctx.practice) {
        const sent = rowTimesMatrix(gradIn, matrix);
        lines.push(
          h("div", { class: "scroll-x" }, h("code", { text: `grad in = ${numbersLine(gradIn)}` })),
          h("div", { class: "scroll-x" }, h("code", { text: `grad sent to ${input.name} = ${numbersLine(sent)}` })),
        );
      }
      const identity = h("div", { class: "jacobian-identity", "data-role": "jacobian-identity" }, ...lines);
      parts.push(
        h(
          "div",
          { class: "jacobian-block", "data-output": output.name, "data-input": input.name },
          h("div", { class: "jacobian-title", text: `J = ∂${output.name} / ∂${input.name}: rows ${rowLabels[0]}…${rowLabels[rowLabels.length - 1]}, columns ${columnLabels[0]}…${columnLabels[columnLabels.length - 1]}` }),
          h("div", { class: "scroll-x" }, jacobianTable(matrix, axis(rowLabels, output.name), axis(columnLabels, input.name), { diagonal: sameShape })),
          identity,
        ),
      );
    });
  });
  return h("section", { "data-role": "jacobian" }, h("h4", { text: "local Jacobian" }), ...parts);
}

// --- the check ------------------------------------------------------------------------------

function numbersLine(values) {
  return `[${values.map((x) => formatNumber(x, "float64")).join(", ")}]`;
}

/** What a finished check shows: the verdict, the largest errors, and per input the analytic
 * and numeric VJPs side by side. */
export function checkResultView(result) {
  return h(
    "div",
    { class: `node-check-result ${result.ok ? "ok" : "wrong"}`, "data-role": "check-result" },
    h("div", { class: "verdict", "data-role": "check-verdict", text: result.verdict }),
    h("div", { class: "note", text: `largest error: ${formatNumber(result.max_abs_error, "float64")} absolute, ${formatNumber(result.max_rel_error, "float64")} relative (right when |analytic − numeric| ≤ ${result.atol} + ${result.rtol}·|numeric|)` }),
    h("div", { class: "note", text: "analytic: what its backward sent; numeric: central finite differences of its forward" }),
    result.note ? h("div", { class: "note", text: result.note }) : null,
    (result.inputs || []).map((input) => {
      const labels = elementLabels(input.name, input.shape);
      const line = (title, values, cls) => h("tr", { class: cls }, h("th", { scope: "row", text: title }), values.map((x) => h("td", { text: formatNumber(x, "float64") })));
      return h(
        "div",
        { class: `node-check-input ${input.ok ? "ok" : "wrong"}`, "data-input": input.name },
        h("div", { class: "node-check-input-title" }, h("span", { class: "mark", text: input.ok ? "✓ right" : "✗ wrong" }), ` gradient sent to ${input.name}: largest error ${formatNumber(input.max_abs_error, "float64")}`),
        h(
          "div",
          { class: "scroll-x" },
          h(
            "table",
            { class: "node-check-table" },
            h("thead", null, h("tr", null, h("th", { text: "" }), labels.map((label) => h("th", { scope: "col", text: label })))),
            h("tbody", null, line("analytic", input.analytic, "analytic"), line("numeric", input.numeric, "numeric")),
          ),
        ),
      );
    }),
  );
}

/** The "check this node" section: a button, then the result or the reason there is none. */
export function checkSection(ctx, node) {
  if (node.variable) return null; // AccumulateGrad only adds: nothing to check
  if (ctx.practice) return null; // its analytic VJP is the answer the learner is asked for
  const out = h("div", { class: "node-check-out", "data-role": "check-out", "aria-live": "polite" });
  const button = h("button", {
    type: "button",
    class: "node-check-button",
    "data-role": "check-node",
    text: "check this node",
    onclick: () => {
      out.replaceChildren(h("div", { class: "note", text: "checking in the kernel (float64 finite differences)…" }));
      if (!ctx.checkNode) {
        out.replaceChildren(h("div", { class: "node-check-error", text: "checking a node needs the running kernel" }));
        return;
      }
      button.disabled = true;
      ctx.checkNode(node.id).then(
        (result) => out.replaceChildren(checkResultView(result)),
        (error) => out.replaceChildren(h("div", { class: "node-check-error", "data-role": "check-error", text: error.message })),
      ).finally(() => (button.disabled = false));
    },
  });
  return h(
    "section",
    { "data-role": "node-check" },
    h("h4", { text: "check this node" }),
    h("div", { class: "note", text: "Compares its backward with finite differences of its forward, in float64, on the recorded inputs and incoming gradient (Python: node.check())." }),
    button,
    out,
  );
}
