// Across training steps: the small line chart in a leaf's inspector. The trace's optional
// `history` (docs/trace-schema.md, nbgrad/trace/history.py) keeps, for every backward pass of a
// recorded loop (past --max-passes too), each parameter's |grad|, the size of its update and
// |value|. The chart draws the three over the steps: one SVG, axes with numbers, a log scale
// when the numbers span a decade or more (an update is often a hundredth of the value).

import { h, s } from "./dom.js";
import { toNumber } from "./format.js";

// The three series, in the order the legend lists them. Each has its own dash as well as its
// colour, so the chart reads without colour too.
export const SERIES = [
  { key: "grad_norm", label: "|grad|", colour: "#c2410c", dash: "" },
  { key: "update_norm", label: "update", colour: "#2563eb", dash: "5 3" },
  { key: "value_norm", label: "|value|", colour: "#047857", dash: "1.5 2.5" },
];

// The chart's own coordinates (the viewBox): it is drawn at the panel's width, up to 1.3 times
// these, so that its text stays between about 10 and 13 pixels.
const WIDTH = 320;
const HEIGHT = 176;
const MARGIN = { left: 50, right: 12, top: 10, bottom: 36 };
const LOG_FROM = 10; // largest / smallest positive value at which the scale becomes log

/** The history entry of the parameter that `tensorId` is a record of (any of its values), or null. */
export function parameterHistory(trace, tensorId) {
  const parameters = (trace && trace.history && trace.history.parameters) || [];
  return parameters.find((p) => p.tensor === tensorId || (p.tensors || []).includes(tensorId)) || null;
}

/** 1, 2 or 5 times a power of ten: the step between `count`-ish ticks over [lo, hi]. */
function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

/** Ticks for a linear axis: round numbers from lo up to at least hi. */
export function linearTicks(lo, hi, count = 4) {
  if (!(hi > lo)) hi = lo + (lo === 0 ? 1 : Math.abs(lo));
  const step = niceStep(hi - lo, count);
  const first = Math.floor(lo / step) * step;
  const ticks = [];
  for (let v = first; v <= hi + step * 0.5; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1] < hi) ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  return ticks;
}

/** Ticks for a log axis: the powers of ten around [lo, hi] (every second one past 6 decades). */
export function logTicks(lo, hi) {
  const first = Math.floor(Math.log10(lo));
  const last = Math.ceil(Math.log10(hi));
  const every = last - first > 6 ? 2 : 1;
  const ticks = [];
  for (let k = first; k <= last; k += every) ticks.push(10 ** k);
  if (Math.log10(ticks[ticks.length - 1]) < last) ticks.push(10 ** last);
  return ticks;
}

/** A tick's text: "0.01", "100", "1e-5", "2.5". */
export function tickText(v) {
  if (v === 0) return "0";
  const abs = Math.abs(v);
  if (abs >= 1e4 || abs < 1e-3) {
    const [mantissa, exponent] = v.toExponential(1).split("e");
    const m = mantissa.replace(/\.0$/, "");
    return `${m}e${Number(exponent)}`;
  }
  return String(Number(v.toPrecision(3)));
}

/** A norm for the text line: 4 significant digits, or nan / inf. */
function normText(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return "inf";
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/** The parameter's series as numbers (NaN and infinities arrive as strings). */
export function seriesOf(parameter) {
  const steps = (parameter.steps || []).map(Number);
  return SERIES.map((series) => ({ ...series, values: (parameter[series.key] || []).map(toNumber), steps }));
}

/** The y scale for the series: log when their positive finite values span LOG_FROM or more. */
export function chooseScale(series) {
  const finite = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
  const positive = finite.filter((v) => v > 0);
  if (positive.length) {
    const lo = Math.min(...positive);
    const hi = Math.max(...positive);
    if (hi / lo >= LOG_FROM) {
      const ticks = logTicks(lo, hi);
      return { log: true, ticks, lo: ticks[0], hi: ticks[ticks.length - 1] };
    }
  }
  const lo = Math.min(0, ...finite);
  const hi = finite.length ? Math.max(...finite) : 1;
  const ticks = linearTicks(lo, hi);
  return { log: false, ticks, lo: ticks[0], hi: ticks[ticks.length - 1] };
}

/** The chart of one parameter's history: an SVG element. */
export function historyChart(parameter) {
  const series = seriesOf(parameter);
  const steps = series[0].steps;
  const scale = chooseScale(series);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  // Steps are shown from 1, as the inspector numbers backward passes.
  const firstStep = steps.length ? steps[0] + 1 : 1;
  const lastStep = steps.length ? steps[steps.length - 1] + 1 : 1;
  const x = (step) => MARGIN.left + (lastStep === firstStep ? plotW / 2 : ((step + 1 - firstStep) / (lastStep - firstStep)) * plotW);
  const y = scale.log
    ? (v) => MARGIN.top + plotH - ((Math.log10(v) - Math.log10(scale.lo)) / (Math.log10(scale.hi) - Math.log10(scale.lo))) * plotH
    : (v) => MARGIN.top + plotH - ((v - scale.lo) / (scale.hi - scale.lo)) * plotH;
  const drawable = (v) => Number.isFinite(v) && (!scale.log || v > 0);

  const parts = [];
  // y axis: grid lines and their numbers
  for (const tick of scale.ticks) {
    const ty = y(tick);
    parts.push(s("line", { class: "grid", x1: MARGIN.left, x2: MARGIN.left + plotW, y1: ty, y2: ty }));
    parts.push(s("text", { class: "tick y-tick", x: MARGIN.left - 5, y: ty + 3.5, "text-anchor": "end", text: tickText(tick) }));
  }
  // x axis: steps, integers only
  const xTicks = firstStep === lastStep ? [firstStep] : linearTicks(firstStep, lastStep, 5).filter((t) => Number.isInteger(t) && t >= firstStep && t <= lastStep);
  if (!xTicks.includes(firstStep)) xTicks.unshift(firstStep);
  for (const tick of xTicks) {
    const tx = x(tick - 1);
    parts.push(s("line", { class: "axis-tick", x1: tx, x2: tx, y1: MARGIN.top + plotH, y2: MARGIN.top + plotH + 4 }));
    parts.push(s("text", { class: "tick x-tick", x: tx, y: MARGIN.top + plotH + 15, "text-anchor": "middle", text: String(tick) }));
  }
  parts.push(s("line", { class: "axis", x1: MARGIN.left, x2: MARGIN.left + plotW, y1: MARGIN.top + plotH, y2: MARGIN.top + plotH }));
  parts.push(s("line", { class: "axis", x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: MARGIN.top + plotH }));
  parts.push(s("text", { class: "axis-label x-label", x: MARGIN.left + plotW / 2, y: HEIGHT - 4, "text-anchor": "middle", text: "training step (backward pass)" }));
  parts.push(
    s("text", {
      class: "axis-label y-label",
      x: 0,
      y: 0,
      transform: `translate(11 ${MARGIN.top + plotH / 2}) rotate(-90)`,
      "text-anchor": "middle",
      text: scale.log ? "L2 norm (log scale)" : "L2 norm",
    }),
  );

  // the lines: a gap where a value cannot be drawn (not finite, or not positive on a log scale)
  const markers = steps.length <= 30;
  for (const line of series) {
    let path = "";
    let pen = false;
    line.values.forEach((v, i) => {
      if (!drawable(v)) {
        pen = false;
        return;
      }
      path += `${pen ? "L" : "M"}${x(line.steps[i]).toFixed(1)} ${y(v).toFixed(1)}`;
      pen = true;
    });
    const group = s("g", { class: "series", "data-series": line.key });
    if (path) group.append(s("path", { d: path, fill: "none", stroke: line.colour, "stroke-width": 1.6, "stroke-dasharray": line.dash || null }));
    if (markers) {
      line.values.forEach((v, i) => {
        if (!drawable(v)) return;
        group.append(
          s(
            "circle",
            { cx: x(line.steps[i]).toFixed(1), cy: y(v).toFixed(1), r: 2.2, fill: line.colour },
            s("title", { text: `step ${line.steps[i] + 1}: ${line.label} ${normText(v)}` }),
          ),
        );
      });
    }
    parts.push(group);
  }
  return s(
    "svg",
    {
      class: "history-chart",
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: "img",
      "aria-label": `${SERIES.map((x) => x.label).join(", ")} over ${steps.length} training steps${scale.log ? ", log scale" : ""}`,
      "data-scale": scale.log ? "log" : "linear",
    },
    ...parts,
  );
}

/** The inspector's section for a leaf with a history, or null. */
export function historySection(trace, tensorId) {
  const parameter = parameterHistory(trace, tensorId);
  if (!parameter || !(parameter.steps || []).length) return null;
  const series = seriesOf(parameter);
  const count = parameter.steps.length;
  const last = series.map((line) => `${line.label} ${normText(line.values[line.values.length - 1])}`);
  const notDrawn = series.reduce((n, line) => n + line.values.filter((v) => !Number.isFinite(v)).length, 0);
  const legend = h(
    "div",
    { class: "history-legend" },
    SERIES.map((line) =>
      h(
        "span",
        { class: "history-key" },
        s("svg", { class: "history-sample", width: 22, height: 8, "aria-hidden": "true" }, s("line", { x1: 1, x2: 21, y1: 4, y2: 4, stroke: line.colour, "stroke-width": 2, "stroke-dasharray": line.dash || null })),
        line.label,
      ),
    ),
  );
  return h(
    "section",
    { class: "history", "data-role": "history" },
    h("h4", { text: "across training steps" }),
    h("div", { class: "note", text: `${count} backward pass${count === 1 ? "" : "es"} reached it; at the last: ${last.join(", ")}` }),
    legend,
    h("div", { class: "history-frame" }, historyChart(parameter)),
    notDrawn ? h("div", { class: "note", text: `${notDrawn} value${notDrawn === 1 ? "" : "s"} not finite (nan or inf): gaps in the lines.` }) : null,
    trace.history.error ? h("div", { class: "note", text: trace.history.error }) : null,
  );
}
