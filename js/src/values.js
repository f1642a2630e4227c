// A tensor's value (or grad) in the inspector: a number, a vector, a matrix as a table with a
// colour scale, or, for a large array, its statistics and a preview, with a button that fetches
// the whole array from the kernel when the trace kept it.

import { h } from "./dom.js";
import { formatNumber, formatShape, isSummary, shapeOf, toNumber } from "./format.js";

const NON_FINITE = new Set(["NaN", "Infinity", "-Infinity"]); // how JSON carries them
const MAX_CELLS = 400; // a fetched array larger than this is shown as rows of its first cells
// an array of at most this many elements that the kernel kept is loaded as soon as it is shown
// (a learner should not have to click for a 5x20 weight); a larger one waits for "load full array"
export const AUTO_LOAD_MAX_ELEMENTS = 1024;

/** A background colour for v on a scale symmetric around 0: blue below, red above. */
export function cellColour(v, maxAbs) {
  const x = toNumber(v);
  if (!Number.isFinite(x) || !maxAbs) return "transparent";
  const t = Math.min(1, Math.abs(x) / maxAbs);
  const alpha = (0.08 + 0.5 * t).toFixed(2);
  return x >= 0 ? `rgba(214, 69, 65, ${alpha})` : `rgba(52, 120, 198, ${alpha})`;
}

function flat(value) {
  return Array.isArray(value) ? value.flatMap(flat) : [value];
}

function maxAbsOf(values) {
  let m = 0;
  for (const v of values) {
    const x = Math.abs(toNumber(v));
    if (Number.isFinite(x) && x > m) m = x;
  }
  return m;
}

// A matrix in its own horizontal scroll box: wide arrays scroll inside the panel instead of
// clipping at its edge or widening it; each number is one cell that never wraps (style.css).
function matrixTable(rows, dtype, maxAbs) {
  const columns = Math.max(...rows.map((row) => (Array.isArray(row) ? row.length : 1)));
  return h(
    "div",
    { class: "scroll-x matrix-scroll", "data-columns": columns },
    h(
    "table",
    { class: "matrix" },
    h(
      "tbody",
      null,
      rows.map((row) =>
        h(
          "tr",
          null,
          (Array.isArray(row) ? row : [row]).map((v) =>
            h("td", { style: `background:${cellColour(v, maxAbs)}`, text: formatNumber(v, dtype) }),
          ),
        ),
      ),
    ),
    ),
  );
}

function isIntegerLike(v) {
  return v === null || typeof v === "boolean" || typeof v === "string" || (typeof v === "number" && Number.isInteger(v));
}

/** A saved value that is not a tensor (a size, a dim, a flag), as Python writes it: (5, 3), 15, True. */
export function pythonLiteral(value) {
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : formatNumber(value, "float64");
  if (typeof value === "string") return NON_FINITE.has(value) ? formatNumber(value, "float64") : value;
  if (Array.isArray(value)) {
    const items = value.map(pythonLiteral);
    return `(${items.join(", ")}${items.length === 1 ? "," : ""})`;
  }
  if (value && "slice" in value) return `slice(${value.slice.map((v) => (v === null ? "None" : v)).join(", ")})`;
  return JSON.stringify(value);
}

/** Whether a saved non-tensor value reads as a Python literal (sizes, strides, dims, flags). */
export function isPlainSaved(value) {
  if (Array.isArray(value)) return flat(value).every(isIntegerLike);
  return typeof value !== "object" || value === null;
}

/** A saved value that is not a tensor: a literal when it is one, else an array. */
export function renderSavedValue(value, options = {}) {
  if (isPlainSaved(value)) return h("code", { class: "literal", "data-literal": "", text: pythonLiteral(value) });
  return renderValue(value, "float32", options);
}

/** A small array (nested lists) or a number. */
export function renderArray(value, dtype) {
  if (!Array.isArray(value)) return h("span", { class: "number", text: formatNumber(value, dtype) });
  const shape = shapeOf(value);
  const maxAbs = maxAbsOf(flat(value));
  if (shape.length === 1) return matrixTable([value], dtype, maxAbs);
  if (shape.length === 2) return matrixTable(value, dtype, maxAbs);
  // more dimensions: one matrix per leading index
  const blocks = [];
  const walk = (v, prefix) => {
    if (shapeOf(v).length === 2) {
      blocks.push(h("div", { class: "slice-title", text: `[${prefix.join(", ")}, :, :]` }), matrixTable(v, dtype, maxAbs));
      return;
    }
    v.forEach((item, i) => walk(item, [...prefix, i]));
  };
  walk(value, []);
  return h("div", { class: "slices" }, blocks);
}

function statsTable(stats, dtype) {
  const rows = ["min", "max", "mean", "std"].map((key) =>
    h("tr", null, h("th", { text: key }), h("td", { text: formatNumber(stats[key], "float64") })),
  );
  if (stats.nonfinite) rows.push(h("tr", null, h("th", { text: "nan/inf" }), h("td", { text: String(stats.nonfinite) })));
  return h("table", { class: "stats", "data-dtype": dtype }, h("tbody", null, rows));
}

// Typed arrays by how the kernel (or a saved page) sends an array's bytes: little-endian.
const TYPED = {
  "<f4": Float32Array,
  "<f8": Float64Array,
  "<i8": BigInt64Array,
  "<i4": Int32Array,
  "<i2": Int16Array,
  i1: Int8Array,
  u1: Uint8Array,
};

function nest(flatValues, shape) {
  if (shape.length === 0) return flatValues[0];
  if (shape.length === 1) return flatValues;
  const step = shape[0] ? flatValues.length / shape[0] : 0;
  return Array.from({ length: shape[0] }, (_, i) => nest(flatValues.slice(i * step, (i + 1) * step), shape.slice(1)));
}

/** An array sent as bytes (storage "<f4", "<i8", "u1", ...) as nested lists, like the JSON's. */
export function decodeArray(bytes, storage, shape, dtype) {
  const Typed = TYPED[storage];
  if (!Typed) throw new Error(`unknown storage ${storage}`);
  const own = bytes.slice(); // aligned, and the caller's bytes stay theirs
  const typed = new Typed(own.buffer, 0, own.byteLength / Typed.BYTES_PER_ELEMENT);
  let values = Array.from(typed, (v) => (typeof v === "bigint" ? Number(v) : v));
  if (dtype === "bool") values = values.map((v) => v !== 0);
  else values = values.map((v) => (Number.isNaN(v) ? "NaN" : v === Infinity ? "Infinity" : v === -Infinity ? "-Infinity" : v));
  return nest(values, shape || [values.length]);
}

/** min, max, mean, std (population) and the non-finite count of a fetched array. */
export function statsOf(data) {
  const values = flat(data).map(toNumber);
  const finite = values.filter(Number.isFinite);
  const stats = { min: NaN, max: NaN, mean: NaN, std: NaN };
  if (finite.length) {
    let sum = 0;
    for (const v of finite) sum += v;
    const mean = sum / finite.length;
    let square = 0;
    for (const v of finite) square += (v - mean) * (v - mean);
    stats.min = Math.min(...finite);
    stats.max = Math.max(...finite);
    stats.mean = mean;
    stats.std = Math.sqrt(square / finite.length);
  }
  if (finite.length < values.length) stats.nonfinite = values.length - finite.length;
  return stats;
}

/** An array of a saved page whose bytes ride along: decoded when it is shown. */
function renderCarried(summary, fetchBuffer) {
  const dtype = summary.dtype;
  const box = h("div", { class: "summary", "data-carried": "" });
  const status = h("div", { class: "load-status loading", text: "decoding…" });
  box.append(h("div", { class: "summary-head", text: `${formatShape(summary.shape)} ${dtype}` }), status);
  if (!fetchBuffer) {
    status.className = "load-status error";
    status.textContent = "The values cannot be read here.";
    return box;
  }
  fetchBuffer(summary.buffer).then(
    (reply) => {
      status.className = "load-status loaded";
      status.textContent = "";
      status.append(statsTable(statsOf(reply.data), dtype), renderFetched(reply, dtype));
    },
    (error) => {
      status.className = "load-status error";
      status.textContent = `Could not read the array: ${error && error.message ? error.message : error}`;
    },
  );
  return box;
}

/** A large array's summary, with "load full array" when the kernel kept it. */
export function renderSummary(summary, { fetchBuffer } = {}) {
  if (!summary.stats) return renderCarried(summary, fetchBuffer);
  const box = h("div", { class: "summary" });
  const dtype = summary.dtype;
  // the preview: the top-left corner of the first matrix, or (values apart: the rest is a fetch
  // away) its first row; a vector's first values
  const previewTitle = summary.shape.length < 2 ? "preview (first values)" : shapeOf(summary.preview).length >= 2 ? "preview (top-left corner)" : "preview (first row)";
  box.append(
    h("div", { class: "summary-head", text: `${formatShape(summary.shape)} ${dtype}: statistics and a preview` }),
    statsTable(summary.stats, dtype),
    h("div", { class: "preview-title", text: previewTitle }),
    renderArray(summary.preview, dtype),
  );
  if (!summary.buffer) {
    box.append(
      h("div", {
        class: "note",
        text: "The recording kept statistics only. Record with --full to keep whole arrays.",
      }),
    );
    return box;
  }
  const status = h("div", { class: "load-status" });
  const button = h("button", { class: "load-full", type: "button", text: "load full array" });
  const load = () => {
    if (!fetchBuffer) {
      status.className = "load-status error";
      status.textContent = "The full array cannot be loaded here (no kernel).";
      return;
    }
    button.disabled = true;
    status.className = "load-status loading";
    status.textContent = "loading…";
    fetchBuffer(summary.buffer).then(
      (reply) => {
        button.remove();
        status.className = "load-status loaded";
        status.textContent = "";
        status.append(renderFetched(reply, dtype));
      },
      (error) => {
        button.disabled = false;
        status.className = "load-status error";
        status.textContent = `Could not load the array: ${error && error.message ? error.message : error}`;
      },
    );
  };
  button.addEventListener("click", load);
  box.append(button, status);
  const elements = summary.shape.reduce((n, d) => n * d, 1);
  if (fetchBuffer && elements <= AUTO_LOAD_MAX_ELEMENTS) load();
  return box;
}

function renderFetched(reply, dtype) {
  const data = reply.data;
  const count = flat(data).length;
  const note = h("div", { class: "note", text: `${formatShape(reply.shape)} ${reply.dtype || dtype}, ${count} values` });
  if (count <= MAX_CELLS) return h("div", null, note, renderArray(data, reply.dtype || dtype));
  // Too many cells for a table: one line of text per row, numbers padded to one width, in a box
  // that scrolls both ways (a number is never split across lines).
  const rows = shapeOf(data).length === 2 ? data : [flat(data)];
  const cells = rows.map((row) => row.map((v) => formatNumber(v, reply.dtype || dtype)));
  const width = Math.max(...cells.flat().map((c) => c.length));
  const text = cells.map((row) => row.map((c) => c.padStart(width)).join("  ")).join("\n");
  return h("div", null, note, h("pre", { class: "full-array", "data-rows": rows.length, text }));
}

/** Any value of the trace JSON. */
export function renderValue(value, dtype, options = {}) {
  if (value === null || value === undefined) return h("span", { class: "none", text: "None" });
  if (isSummary(value)) return renderSummary(value, options);
  if (typeof value === "object" && !Array.isArray(value)) {
    if ("slice" in value) return h("code", { text: `slice(${value.slice.map((v) => (v === null ? "None" : v)).join(", ")})` });
    return h("code", { text: JSON.stringify(value) });
  }
  if (typeof value === "string" && !NON_FINITE.has(value)) return h("code", { text: value });
  return renderArray(value, dtype);
}
