// Where the first NaN or Inf appeared: the trace's "nonfinite" entry (nbgrad/trace/nonfinite.py,
// docs/trace-schema.md) says which op or backward step made it, on which line, and which nodes
// and edges it spread along. This file turns that into marks on the drawing, the node to open
// on, and the words the banner and the inspector show.

import { h } from "./dom.js";

/** The trace's nonfinite entry, or null when every recorded value was finite. */
export function nonfiniteOf(index) {
  return (index && index.trace && index.trace.nonfinite) || null;
}

/** The record id to open on: the node that made the first non-finite value (its op in the
 * forward view), else the op when it made no node. */
export function nonfiniteOrigin(index) {
  const found = nonfiniteOf(index);
  if (!found) return null;
  return found.node || found.op || null;
}

/** The origin and the path, as ids of a view: { origin, path: Set, edges: [[from, to]] }.
 * Backward view: the node, the nodes whose gradients were non-finite and the edges that
 * carried them. Forward view: the op (and its bad output), the later ops whose results were
 * non-finite, the ops of those backward nodes, and the tensors they made. */
export function nonfiniteMarks(index, view) {
  const found = nonfiniteOf(index);
  if (!found) return null;
  if (view === "backward") {
    const path = new Set((found.spread || []).filter((id) => id !== found.node));
    const edges = (found.spread_edges || []).map(([from, to]) => [from, to]);
    return { origin: found.node || null, path, edges };
  }
  const origin = found.op || (found.node && index.nodes.get(found.node) ? index.nodes.get(found.node).op : null) || null;
  const path = new Set(found.spread_ops || []);
  for (const id of found.spread || []) {
    const node = index.nodes.get(id);
    if (node && node.op) path.add(node.op);
  }
  path.delete(origin);
  // the tensors the path's ops made, and the origin's bad output
  const onPath = new Set([...path, origin].filter(Boolean));
  for (const opId of onPath) for (const out of (index.ops.get(opId) || {}).outputs || []) path.add(out);
  const edges = [];
  for (const opId of onPath) {
    const op = index.ops.get(opId);
    if (!op) continue;
    for (const out of op.outputs || []) edges.push([opId, out]);
    for (const input of op.inputs || []) if (typeof input === "string" && path.has(input)) edges.push([input, opId]);
  }
  return { origin, path, edges };
}

/** The banner's line: the trace's one-line text, and a button that selects the origin. */
export function nonfiniteBanner(index, onShow) {
  const found = nonfiniteOf(index);
  if (!found) return null;
  const origin = nonfiniteOrigin(index);
  return h(
    "div",
    { class: "nonfinite-banner", "data-role": "nonfinite-banner" },
    h("span", { class: "nonfinite-badge", text: kindsText(found) }),
    " ",
    h("span", { text: capitalised(found.text || "a value is not finite") }),
    origin ? " " : null,
    origin ? h("button", { type: "button", class: "status-action", "data-role": "show-nonfinite", text: "show it", onclick: () => onShow(origin) }) : null,
  );
}

/** A section for the inspector of the origin: what it made, and what came in already bad. */
export function nonfiniteSection(index, id) {
  const found = nonfiniteOf(index);
  if (!found || !id) return null;
  const isOrigin = id === found.node || id === found.op;
  if (!isOrigin) {
    if (!(found.spread || []).includes(id) && !(found.spread_ops || []).includes(id)) return null;
    return h("section", { class: "nonfinite-section", "data-role": "nonfinite-section" }, h("div", { class: "note", text: "A non-finite value reached it: it lies on the path the first one spread along." }));
  }
  const cause = (found.already_bad || []).length ? `It was already bad when it came in: ${found.already_bad.join(", ")}.` : found.phase === "forward" ? "It made it here: every input was finite." : "It made it here: the gradient it received was finite.";
  const what = found.phase === "forward" ? "its result" : `the gradient it sent (backward step ${found.step + 1})`;
  return h(
    "section",
    { class: "nonfinite-section", "data-role": "nonfinite-section" },
    h("h4", { text: `First ${kindsText(found)} of the trace` }),
    h("div", { text: `It first appeared in ${what}${found.line !== undefined && found.line !== null ? `, line ${found.line}` : ""}. ${cause}` }),
  );
}

function kindsText(found) {
  return (found.kinds || ["NaN/inf"]).map((k) => (k === "nan" ? "NaN" : k)).join(" and ");
}

function capitalised(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
