// A trace whose recorded code raised (docs/trace-schema.md, `failure`): the graph up to the call
// that raised, with that call marked, its message in the inspector, and the widget opening on it.
//
// A forward op that raised made nothing, so it has no record: it is drawn as a placeholder op
// (FAILED_ID) fed by the tensors it was given. A backward step that raised is its node's record.

import { h } from "./dom.js";

export const FAILED_ID = "failed-call"; // the placeholder's id in the forward view

/** The trace's failure record, or null. */
export function failureOf(index) {
  const failure = index && index.trace && index.trace.failure;
  return failure && typeof failure === "object" ? failure : null;
}

/** The record id the widget opens on: the placeholder of a forward call, the node of a
 * backward step; and the view it is in. Null when nothing failed. */
export function failureTarget(index) {
  const failure = failureOf(index);
  if (!failure) return null;
  if (failure.where === "backward" && failure.node && index.nodes.has(failure.node)) return { id: failure.node, view: "backward" };
  if (failure.where === "forward") return { id: FAILED_ID, view: "forward" };
  return null;
}

/** The forward view with the placeholder of a forward call that raised: an op node marked
 * "failed", with an edge from each of its inputs that the view draws. Other views as they are. */
export function withFailedCall(view, index, which) {
  const failure = failureOf(index);
  if (!failure || failure.where !== "forward" || which !== "forward") return view;
  const drawn = new Set(view.nodes.map((n) => n.id));
  const node = { id: FAILED_ID, kind: "op", label: String(failure.call || "call"), sub: `raised ${failure.type || "an error"}`, role: "failed", group: null };
  const edges = [];
  (failure.inputs || []).forEach((input, k) => {
    if (drawn.has(input)) edges.push({ from: input, to: FAILED_ID, slot: k });
  });
  // an input the view left out (a tensor no drawn op touched) is drawn for the call
  const nodes = [...view.nodes, node];
  for (const input of failure.inputs || []) {
    const tensor = index.tensors.get(input);
    if (drawn.has(input) || !tensor) continue;
    nodes.splice(nodes.length - 1, 0, { id: input, kind: "tensor", label: tensor.name, sub: (tensor.shape || []).join("×"), role: tensor.role || "constant", group: null });
    drawn.add(input);
    edges.push({ from: input, to: FAILED_ID, slot: (failure.inputs || []).indexOf(input) });
  }
  return { ...view, nodes, edges: [...view.edges, ...edges] };
}

/** The view ids to mark as failed in a view: the placeholder (forward) or the failing node
 * (backward; in the forward view, the op that made it). */
export function failedViewIds(index, which) {
  const failure = failureOf(index);
  if (!failure) return [];
  if (failure.where === "forward") return which === "forward" ? [FAILED_ID] : [];
  const node = failure.node && index.nodes.get(failure.node);
  if (!node) return [];
  if (which === "backward") return [node.id];
  return node.op ? [node.op] : [];
}

/** Whether a selected record id is the failing call (or, in the forward view, its op). */
export function isFailedRecord(index, id) {
  const failure = failureOf(index);
  if (!failure || !id) return false;
  if (failure.where === "forward") return id === FAILED_ID;
  const node = failure.node && index.nodes.get(failure.node);
  return !!node && (id === node.id || (node.op && id === node.op));
}

/** The inspector's block for the failing call: what raised, where, and the message whole. */
export function failurePanel(index) {
  const failure = failureOf(index);
  if (!failure) return null;
  const line = failure.line !== undefined && failure.line !== null ? failure.line : null;
  const text = line !== null ? index.lines[String(line)] : null;
  const what = failure.where === "backward" ? `${failure.call} raised while backward ran it${failure.pass !== undefined ? ` (pass ${failure.pass + 1})` : ""}` : `${failure.call} raised before producing anything`;
  return h(
    "section",
    { class: "failure-panel", "data-role": "failure" },
    h("h3", { class: "failure-title", text: `${failure.type || "Error"} here` }),
    h("div", { class: "failure-what", text: what }),
    line !== null ? h("div", { class: "failure-line", text: `line ${line}${text ? `: ${text.trim()}` : ""}` }) : null,
    h("pre", { class: "failure-message", "data-role": "failure-message", text: String(failure.message || "") }),
  );
}

/** The inspector for the placeholder itself: the failure and the inputs it was given. */
export function failedCallPanel(index, ctx) {
  const failure = failureOf(index) || {};
  const inputs = (failure.inputs || []).filter((id) => index.tensors.has(id));
  return [
    h("header", null, h("h3", { class: "title", text: String(failure.call || "call") }), h("span", { class: "badge failed-badge", text: "raised" })),
    failurePanel(index),
    inputs.length
      ? h(
          "div",
          { class: "failure-inputs" },
          h("div", { class: "failure-inputs-title", text: "it was given" }),
          ...inputs.map((id) => {
            const tensor = index.tensors.get(id);
            return h("button", { type: "button", class: "failure-input link", text: `${tensor.name} ${(tensor.shape || []).length ? `[${tensor.shape.join(", ")}]` : "scalar"}`, onclick: () => ctx.select(id) });
          }),
        )
      : null,
  ];
}
