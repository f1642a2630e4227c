// Numbers, shapes and short value texts, the way PyTorch prints them where it can.

/** A number from the trace JSON: NaN and infinities arrive as strings. */
export function toNumber(x) {
  if (typeof x === "number") return x;
  if (x === "NaN") return NaN;
  if (x === "Infinity") return Infinity;
  if (x === "-Infinity") return -Infinity;
  if (typeof x === "boolean") return x ? 1 : 0;
  return Number(x);
}

export function isFloatDtype(dtype) {
  return typeof dtype === "string" && dtype.startsWith("float");
}

/** 4. for a whole float, 0.1235 for others, 1.234e-05 for tiny or huge ones. */
export function formatNumber(x, dtype = "float32") {
  if (typeof x === "boolean") return x ? "True" : "False";
  const v = toNumber(x);
  if (Number.isNaN(v)) return "nan";
  if (v === Infinity) return "inf";
  if (v === -Infinity) return "-inf";
  if (!isFloatDtype(dtype)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return `${v}.`;
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e6)) return v.toExponential(3).replace("e", "e");
  return String(Number(v.toPrecision(4)));
}

/** "2×3", or "scalar" for a 0-dim tensor. */
export function formatShape(shape) {
  if (!shape || shape.length === 0) return "scalar";
  return shape.join("×");
}

/** Whether a value of the JSON is a summary of an array (stats + preview, or in a saved page
 * only shape, dtype and the buffer whose bytes ride along). */
export function isSummary(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) && ("stats" in value || "buffer" in value);
}

/** A value on one short line, for labels and lists. */
export function shortValue(value, dtype = "float32", max = 4) {
  if (value === null || value === undefined) return "None";
  if (isSummary(value)) {
    return value.stats ? `[${formatShape(value.shape)}: mean ${formatNumber(value.stats.mean)}]` : `[${formatShape(value.shape)}]`;
  }
  if (!Array.isArray(value)) return formatNumber(value, dtype);
  const items = value.slice(0, max).map((v) => shortValue(v, dtype, Math.max(2, max >> 1)));
  if (value.length > max) items.push("…");
  return `[${items.join(", ")}]`;
}

/** The shape of a nested-list value. */
export function shapeOf(value) {
  const shape = [];
  let v = value;
  while (Array.isArray(v)) {
    shape.push(v.length);
    v = v[0];
  }
  return shape;
}
