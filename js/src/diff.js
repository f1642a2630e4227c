// Two recordings drawn as one graph: what `nbgrad.diff(a, b)` sends (nbgrad/trace/diff.py).
// The trace is A's, with B's records that A has not added under fresh ids, and a "diff" key
// (docs/trace-schema.md): per record its status ("a": only in A, "b": only in B, "differs",
// "same"), what was compared on both sides, and the edges only one side has. Nothing here
// lays out: B's edges are added to the view before layout, the colours are classes that the
// scene sets like a selection's, and the inspector gets one more section.

import { h } from "./dom.js";
import { GROUP_PREFIX } from "./groups.js";
import { renderValue } from "./values.js";

export const DIFF_STATUSES = ["a", "b", "differs", "same"];
// a folded group takes the colour of the most telling record inside it
const PRIORITY = { a: 3, b: 3, differs: 2, same: 1 };

/** The trace's "diff" key, or null for an ordinary trace. */
export function diffOf(index) {
  const diff = index && index.trace && index.trace.diff;
  return diff && diff.records ? diff : null;
}

/** What the legend and the inspector call each status. */
export function statusText(diff, status) {
  const [a, b] = diff.labels || ["A", "B"];
  return { a: `only in ${a}`, b: `only in ${b}`, differs: "values differ", same: "same" }[status] || status;
}

/** The view ({ nodes, edges } of views.js) with the edges only B has added (A's are there
 * already): an edge between two drawn nodes, in the view's direction. */
export function withDiffEdges(view, index, viewName) {
  const diff = diffOf(index);
  if (!diff) return view;
  const ids = new Set(view.nodes.map((n) => n.id));
  const added = (diff.edges || []).filter((e) => e.in === "b" && e.view === viewName && ids.has(e.from) && ids.has(e.to));
  if (!added.length) return view;
  return { ...view, edges: [...view.edges, ...added.map((e) => ({ from: e.from, to: e.to, slot: e.slot }))] };
}

/** Add the diff classes to paint()'s maps: `mark(map, key, class)`, `drawnIdsOf(id)` the drawn
 * nodes standing for a record, `hasEdge(key)` whether the scene drew that edge. */
export function markDiff(index, viewName, { nodes, edges }, mark, drawnIdsOf, hasEdge) {
  const diff = diffOf(index);
  if (!diff) return;
  const groups = new Map(); // folded group -> the status that shows for it
  for (const [id, record] of Object.entries(diff.records)) {
    for (const drawn of drawnIdsOf(id)) {
      if (!drawn) continue;
      if (drawn.startsWith(GROUP_PREFIX)) {
        const before = groups.get(drawn);
        if (!before || PRIORITY[record.status] > PRIORITY[before]) groups.set(drawn, record.status);
      } else mark(nodes, drawn, `diff-${record.status}`);
    }
  }
  for (const [group, status] of groups) mark(nodes, group, `diff-${status}`);
  for (const edge of diff.edges || []) {
    if (edge.view !== viewName) continue;
    for (const from of drawnIdsOf(edge.from)) {
      for (const to of drawnIdsOf(edge.to)) {
        if (hasEdge(`${from}>${to}`)) mark(edges, `${from}>${to}`, `diff-${edge.in}`);
      }
    }
  }
}

/** The legend under the drawing: a swatch per status with its count, and the tolerance. */
export function renderDiffLegend(host, index) {
  const diff = diffOf(index);
  host.hidden = !diff;
  if (!diff) {
    host.replaceChildren();
    return;
  }
  const counts = diff.counts || {};
  const [a, b] = diff.labels || ["A", "B"];
  const tolerance = diff.tolerance ? `rtol ${diff.tolerance.rtol}, atol ${diff.tolerance.atol}` : "tolerance by dtype (as torch.testing.assert_close)";
  host.replaceChildren(
    h("span", { class: "diff-title", text: `${a} vs ${b}:` }),
    ...DIFF_STATUSES.map((status) =>
      h(
        "span",
        { class: "diff-key", "data-status": status },
        h("span", { class: `diff-swatch diff-${status}`, "aria-hidden": "true" }),
        `${statusText(diff, status)} (${counts[status] || 0})`,
      ),
    ),
    h("span", { class: "diff-tolerance", text: tolerance }),
  );
  host.title = `records ${DIFF_STATUSES.map((s) => `${statusText(diff, s)}: ${counts[s] || 0}`).join(", ")}; ${tolerance}`;
}

function formatDifference(x) {
  if (x === null || x === undefined) return "∞ (missing or another shape)";
  if (x === 0) return "0";
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? String(Number(x.toPrecision(3))) : x.toExponential(2);
}

/** The inspector's section for a record of a diff: its status and both sides of what it
 * carries, or null for an ordinary trace. */
export function diffSection(ctx, id) {
  const diff = diffOf(ctx.index);
  if (!diff || !id) return null;
  const record = diff.records[id];
  if (!record) return null;
  const [a, b] = diff.labels || ["A", "B"];
  let headline = statusText(diff, record.status);
  if (record.status === "differs") headline = `values differ: largest |difference| ${formatDifference(record.difference)}${record.what ? ` in ${record.what}` : ""}`;
  if (record.status === "same") headline = `the same in ${a} and ${b} (within the tolerance)`;
  const inBoth = record.status === "differs" || record.status === "same";
  const side = (which, label, value) => h("div", { class: "row diff-side", "data-side": which }, h("span", { class: "key", text: label }), h("span", { class: "val scroll-x" }, renderValue(value, record.dtype || "float32", ctx)));
  const gapText = (c) => {
    if (c.differs) return ` |difference| ${formatDifference(c.difference)}`;
    return c.difference === 0 ? " equal" : ` |difference| ${formatDifference(c.difference)} (within tolerance)`;
  };
  // a record only in one trace shows that side; a record in both, both sides
  const items = (record.compared || []).map((c) =>
    h(
      "div",
      { class: `diff-item${c.differs ? " differs" : ""}`, "data-what": c.what },
      h("div", { class: "diff-what" }, h("span", { text: c.what }), inBoth ? h("span", { class: "diff-gap", text: gapText(c) }) : null),
      // a record the same in both carries one value: B's equals A's within the tolerance
      record.status === "same" && !("b" in c) ? side("both", `${a} = ${b}`, c.a) : null,
      (inBoth && "b" in c) || record.status === "a" ? side("a", a, c.a) : null,
      (inBoth && "b" in c) || record.status === "b" ? side("b", b, c.b) : null,
    ),
  );
  const note = record.note ? h("div", { class: "note", text: record.note }) : null;
  const lineB = record.line_b && record.status === "b" ? h("div", { class: "code-line" }, h("span", { class: "line-no", text: `${b}, line ${record.line_b[0]}` }), h("code", { text: record.line_b[1] })) : null;
  return h("section", { class: `diff-section diff-${record.status}`, "data-role": "diff-section" }, h("h4", { text: `${a} vs ${b}` }), h("div", { class: "diff-headline", "data-status": record.status, text: headline }), note, lineB, ...items);
}
