// Gradient magnitude at a glance: every node and edge coloured by the size (L2 norm) of the
// gradient through it, on a log scale, with its legend, and a table of the parameters' |grad|,
// |param| and their ratio. The norms come with the trace (its "grad_norms" key, written by
// nbgrad/trace/nonfinite.py from what both recorders record): this file only places them.

import { h } from "./dom.js";

// Colours from small to large (viridis, light text on the dark ones): a vanishing gradient is
// dark blue, an exploding one yellow. Seven bins are few enough to tell apart at a glance.
export const COLOURS = ["#440154", "#443983", "#31688e", "#21918c", "#35b779", "#90d743", "#fde725"];
export const BINS = COLOURS.length;

/** A JSON number as the schema writes it ("NaN", "Infinity", "-Infinity" for non-finite). */
export function numberOf(x) {
  if (x === "NaN") return NaN;
  if (x === "Infinity") return Infinity;
  if (x === "-Infinity") return -Infinity;
  return typeof x === "number" ? x : null;
}

/** The log scale for a set of norms: bins of whole decades (one decade each, or more when the
 * norms span more than BINS decades), from the power of ten below the smallest positive finite
 * norm to the one above the largest: { lowExp, step (decades per bin), count (bins) }. null
 * when no norm is positive and finite. */
export function magnitudeScale(norms) {
  let low = Infinity;
  let high = -Infinity;
  for (const raw of norms) {
    const v = numberOf(raw);
    if (v === null || !(v > 0) || !Number.isFinite(v)) continue;
    low = Math.min(low, v);
    high = Math.max(high, v);
  }
  if (low === Infinity) return null;
  const lowExp = Math.floor(Math.log10(low));
  const decades = Math.max(1, Math.floor(Math.log10(high)) + 1 - lowExp);
  const step = Math.ceil(decades / BINS);
  return { lowExp, step, count: Math.ceil(decades / step) };
}

/** The colour (0 .. BINS - 1) of bin k of a scale: the bins spread over the whole palette, so
 * that two decades apart look far apart even when there are only two. */
export function colourOfBin(scale, k) {
  if (scale.count === 1) return Math.floor(BINS / 2);
  return Math.round((k * (BINS - 1)) / (scale.count - 1));
}

/** The class of a norm on the scale: "mag-0" ... "mag-6" (its bin's colour), "mag-zero",
 * "mag-bad" (NaN or infinite), or null (no gradient went through). */
export function magnitudeClass(scale, raw) {
  const v = numberOf(raw);
  if (v === null) return null;
  if (!Number.isFinite(v)) return "mag-bad";
  if (v === 0) return "mag-zero";
  if (!scale) return null;
  const bin = Math.floor((Math.floor(Math.log10(v)) - scale.lowExp) / scale.step);
  return `mag-${colourOfBin(scale, Math.max(0, Math.min(scale.count - 1, bin)))}`;
}

/** Where each bin starts, and where the last one ends, as powers of ten ("1e-8", "0.01", "1",
 * "100"): count + 1 texts. */
export function scaleTicks(scale) {
  const ticks = [];
  for (let k = 0; k <= scale.count; k++) ticks.push(formatNorm(10 ** (scale.lowExp + k * scale.step)));
  return ticks;
}

/** A norm in a few characters: 3 significant digits, powers of ten written 1e-8. */
export function formatNorm(raw) {
  const v = numberOf(raw);
  if (v === null) return "–";
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return "0";
  const exp = Math.floor(Math.log10(Math.abs(v)));
  if (exp >= -3 && exp < 4) return String(Number(v.toPrecision(3)));
  const mantissa = Number((v / 10 ** exp).toPrecision(3));
  return mantissa === 1 ? `1e${exp}` : `${mantissa}e${exp}`;
}

const NORMS = new WeakMap(); // index -> its norms, worked out once

/** The sizes of the trace's gradients, or null when it recorded none: { nodes: id -> norm of
 * what the node received in its last step, edges: "from>to" -> norm of what it sent along that
 * edge (an input used twice: both gradients as one vector), tensors: id -> the norm its
 * grad_fn (a leaf: its AccumulateGrad) received, parameters: [{ tensor, grad, param }] }. The
 * trace carries them compactly (docs/trace-schema.md, grad_norms): per step [in, out...]. */
export function gradNorms(index) {
  if (NORMS.has(index)) return NORMS.get(index);
  const raw = index.trace && index.trace.grad_norms;
  let norms = null;
  if (raw) {
    norms = { nodes: {}, edges: {}, tensors: {}, parameters: [] };
    const steps = index.trace.steps || [];
    (raw.steps || []).forEach((entry, i) => {
      const step = steps[i];
      const node = step && index.nodes.get(step.node);
      if (!node || !entry) return;
      const received = numberOf(entry[0]);
      if (received !== null) norms.nodes[node.id] = received;
      const squares = new Map(); // "from>to" -> sum of squares, for an input used twice
      (node.next || []).forEach((edge, k) => {
        const sent = numberOf(entry[k + 1]);
        if (!edge || sent === null) return;
        const key = `${node.id}>${edge[0]}`;
        squares.set(key, (squares.get(key) || 0) + sent * sent);
      });
      for (const [key, sum] of squares) norms.edges[key] = Math.sqrt(sum);
    });
    for (const tensor of index.tensors.values()) {
      const node = tensor.grad_fn || index.accumulatorOf.get(tensor.id);
      if (node && node in norms.nodes) norms.tensors[tensor.id] = norms.nodes[node];
    }
    norms.parameters = (raw.parameters || []).map(([tensor, grad, param]) => ({ tensor, grad: numberOf(grad), param: numberOf(param) }));
  }
  NORMS.set(index, norms);
  return norms;
}

/** The magnitude classes of a view: calls markNode(viewId, cls) and markEdge(from, to, cls)
 * with the ids of the view (backward: nodes; forward: tensors and ops), and returns the scale
 * (null when there is nothing to colour). */
export function markMagnitudes(index, view, markNode, markEdge) {
  const norms = gradNorms(index);
  if (!norms) return null;
  const all = view === "forward" ? [...Object.values(norms.tensors || {}), ...Object.values(norms.nodes || {})] : [...Object.values(norms.nodes || {}), ...Object.values(norms.edges || {})];
  const scale = magnitudeScale(all);
  const mark = (fn, ...args) => {
    const cls = magnitudeClass(scale, args.pop());
    if (cls) fn(...args, cls);
  };
  if (view === "backward") {
    for (const [id, v] of Object.entries(norms.nodes || {})) mark(markNode, id, v);
    for (const [key, v] of Object.entries(norms.edges || {})) {
      const [from, to] = key.split(">");
      mark(markEdge, from, to, v);
    }
    return scale;
  }
  // forward: a tensor by its .grad; an op by the gradient its node received; an edge by the
  // gradient of the tensor at its end (input -> op: the input's; op -> output: the output's)
  const tensors = norms.tensors || {};
  for (const [id, v] of Object.entries(tensors)) mark(markNode, id, v);
  for (const op of index.ops.values()) {
    if (op.node && norms.nodes && op.node in norms.nodes) mark(markNode, op.id, norms.nodes[op.node]);
    for (const input of op.inputs || []) if (typeof input === "string" && input in tensors) mark(markEdge, input, op.id, tensors[input]);
    for (const output of op.outputs || []) if (output in tensors) mark(markEdge, op.id, output, tensors[output]);
  }
  return scale;
}

/** The legend: one coloured box per bin with the numbers where the bins start and end, and
 * boxes for zero, NaN/inf and "no gradient". */
export function magnitudeLegend(scale) {
  const swatch = (cls, text, title) => h("span", { class: `mag-swatch ${cls}`, title }, h("span", { class: "mag-swatch-text", text }));
  const title = h("span", { class: "mag-title", text: "|grad| (L2 norm, log scale):" });
  if (!scale) return h("div", { class: "mag-legend", "data-role": "magnitude-legend" }, title, h("span", { text: " no non-zero gradient was recorded" }));
  const ticks = scaleTicks(scale);
  const bar = h("span", { class: "mag-bar" });
  for (let k = 0; k < scale.count; k++) bar.append(swatch(`mag-${colourOfBin(scale, k)}`, `${ticks[k]}+`, `from ${ticks[k]} to ${ticks[k + 1]}`));
  bar.append(h("span", { class: "mag-end", text: `below ${ticks[scale.count]}` }));
  return h(
    "div",
    { class: "mag-legend", "data-role": "magnitude-legend" },
    title,
    bar,
    swatch("mag-zero", "exactly 0", "exactly zero"),
    swatch("mag-bad", "NaN/inf", "not finite"),
    swatch("mag-none", "no grad", "no gradient went through"),
  );
}

/** The parameters' rows ({ id, name, grad, param, ratio }), from the trace's table. */
export function parameterRows(index) {
  const norms = gradNorms(index);
  if (!norms) return [];
  return (norms.parameters || []).map((p) => {
    const grad = numberOf(p.grad);
    const param = numberOf(p.param);
    let ratio = null;
    if (grad !== null && param !== null) ratio = param === 0 ? (grad === 0 ? 0 : Infinity) : grad / param;
    const tensor = index.tensors.get(p.tensor);
    return { id: p.tensor, name: tensor ? tensor.name : p.tensor, grad, param, ratio };
  });
}

/** Rows sorted by a column ("name", "grad", "param", "ratio"); missing values last, NaN after
 * every number. */
export function sortRows(rows, column, descending = false) {
  const rank = (v) => (v === null || v === undefined ? 2 : Number.isNaN(v) ? 1 : 0);
  return [...rows].sort((a, b) => {
    const ra = rank(a[column]);
    const rb = rank(b[column]);
    if (ra !== rb || ra !== 0) return ra - rb;
    const order = column === "name" ? String(a.name).localeCompare(String(b.name)) : a[column] - b[column];
    return descending ? -order : order;
  });
}

const COLUMNS = [
  ["name", "parameter"],
  ["grad", "|grad|"],
  ["param", "|param|"],
  ["ratio", "|grad| / |param|"],
];

/** The parameter table, sorted by ratio (smallest first: vanishing gradients on top); a click
 * on a column's head sorts by it (again: the other way); a click on a name selects it. */
export function parameterTable(index, scale, onSelect, sort = { column: "ratio", descending: false }) {
  const rows = parameterRows(index);
  const wrap = h("div", { class: "mag-table-wrap", "data-role": "magnitude-table" });
  if (!rows.length) {
    wrap.append(h("div", { class: "mag-empty", text: "No parameter (leaf) has a .grad in this trace." }));
    return wrap;
  }
  const table = h("table", { class: "mag-table" });
  const head = h("tr");
  for (const [column, text] of COLUMNS) {
    const arrow = sort.column === column ? (sort.descending ? " ▼" : " ▲") : "";
    head.append(
      h(
        "th",
        { "data-column": column, "aria-sort": sort.column === column ? (sort.descending ? "descending" : "ascending") : "none" },
        h("button", {
          type: "button",
          class: "mag-sort",
          text: text + arrow,
          title: `sort by ${text}`,
          onclick: () => wrap.replaceWith(parameterTable(index, scale, onSelect, { column, descending: sort.column === column ? !sort.descending : false })),
        }),
      ),
    );
  }
  const body = h("tbody");
  for (const row of sortRows(rows, sort.column, sort.descending)) {
    const cls = magnitudeClass(scale, row.grad) || "mag-none";
    body.append(
      h(
        "tr",
        { "data-tensor": row.id },
        h("td", null, h("a", {
            href: "#",
            class: "link",
            text: row.name,
            onclick: (event) => {
              event.preventDefault();
              onSelect(row.id);
            },
          })),
        h("td", { class: "num" }, h("span", { class: `mag-dot ${cls}` }), formatNorm(row.grad)),
        h("td", { class: "num", text: formatNorm(row.param) }),
        h("td", { class: "num", text: formatNorm(row.ratio) }),
      ),
    );
  }
  table.append(h("thead", null, head), body);
  wrap.append(table);
  return wrap;
}

/** The panel under the drawing while the toggle is on: legend above, table below. */
export function magnitudePanel(index, scale, onSelect) {
  return [magnitudeLegend(scale), parameterTable(index, scale, onSelect)];
}
