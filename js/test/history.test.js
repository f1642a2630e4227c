import { describe, expect, it } from "vitest";
import { chooseScale, historyChart, historySection, linearTicks, logTicks, parameterHistory, seriesOf, tickText } from "../src/history.js";
import { renderInspector } from "../src/inspector.js";
import { indexTrace } from "../src/trace.js";
import { simpleTrace } from "./fixtures.js";

// A history as nbgrad/trace/history.py writes it: leaf "a" (t0) over 5 steps; a later value of
// the same leaf would be another id in `tensors`.
function withHistory(trace, parameter) {
  trace.history = {
    parameters: [
      {
        tensor: "t0",
        tensors: ["t0", "t9"],
        steps: [0, 1, 2, 3, 4],
        grad_norm: [2, 1, 0.5, 0.25, 0.125],
        update_norm: [0.02, 0.01, 0.005, 0.0025, 0.00125],
        value_norm: [3, 2.98, 2.97, 2.965, 2.96],
        ...parameter,
      },
    ],
  };
  return trace;
}

function inspect(trace, id) {
  const panel = document.createElement("aside");
  const ctx = { index: indexTrace(trace), step: 0, select: () => {}, goToStep: () => {}, expand: () => {} };
  renderInspector(panel, ctx, id);
  return panel;
}

describe("history: scales and ticks", () => {
  it("picks round linear ticks covering the range", () => {
    expect(linearTicks(0, 3)).toEqual([0, 1, 2, 3]);
    expect(linearTicks(0, 0.07)).toEqual([0, 0.02, 0.04, 0.06, 0.08]);
    expect(linearTicks(1, 40, 5)).toEqual([0, 10, 20, 30, 40]);
  });

  it("picks powers of ten on a log axis", () => {
    expect(logTicks(0.00125, 3)).toEqual([0.001, 0.01, 0.1, 1, 10]);
    // ten decades: every second power, and the top one
    expect(logTicks(1e-9, 1).map((v) => Math.round(Math.log10(v)))).toEqual([-9, -7, -5, -3, -1, 0]);
  });

  it("writes tick numbers short", () => {
    expect(tickText(0.001)).toBe("0.001");
    expect(tickText(0.0001)).toBe("1e-4");
    expect(tickText(100)).toBe("100");
    expect(tickText(100000)).toBe("1e5");
    expect(tickText(2.5)).toBe("2.5");
    expect(tickText(0)).toBe("0");
  });

  it("uses a log scale only when the numbers span a decade or more", () => {
    // 0.00125 .. 3: more than three decades
    const spread = seriesOf(withHistory(simpleTrace()).history.parameters[0]);
    expect(chooseScale(spread).log).toBe(true);
    // 1 .. 3: linear, from 0
    const close = seriesOf({ steps: [0, 1], grad_norm: [1, 2], update_norm: [1, 1.5], value_norm: [3, 3] });
    const scale = chooseScale(close);
    expect(scale.log).toBe(false);
    expect(scale.ticks[0]).toBe(0);
    expect(scale.ticks[scale.ticks.length - 1]).toBeGreaterThanOrEqual(3);
  });
});

describe("history: the chart", () => {
  it("finds the parameter by any of its records", () => {
    const trace = withHistory(simpleTrace());
    expect(parameterHistory(trace, "t0").tensor).toBe("t0");
    expect(parameterHistory(trace, "t9").tensor).toBe("t0");
    expect(parameterHistory(trace, "t1")).toBeNull();
    expect(parameterHistory(simpleTrace(), "t0")).toBeNull();
  });

  it("draws three lines with labelled axes and numbered ticks", () => {
    const svg = historyChart(withHistory(simpleTrace()).history.parameters[0]);
    expect(svg.getAttribute("data-scale")).toBe("log");
    const texts = [...svg.querySelectorAll("text")].map((t) => t.textContent);
    expect(texts).toContain("training step (backward pass)");
    expect(texts).toContain("L2 norm (log scale)");
    // y ticks: the decades from 0.001 to 10; x ticks: the steps, shown from 1
    expect([...svg.querySelectorAll(".y-tick")].map((t) => t.textContent)).toEqual(["0.001", "0.01", "0.1", "1", "10"]);
    expect([...svg.querySelectorAll(".x-tick")].map((t) => t.textContent)).toEqual(["1", "2", "3", "4", "5"]);
    const paths = svg.querySelectorAll("g.series path");
    expect(paths.length).toBe(3);
    // each line has one point per step: M then 4 L
    for (const path of paths) expect(path.getAttribute("d").match(/[ML]/g)).toEqual(["M", "L", "L", "L", "L"]);
    // the grad line falls by halves: on a log scale its points are evenly spaced in y
    const ys = [...svg.querySelectorAll('g[data-series="grad_norm"] circle')].map((c) => Number(c.getAttribute("cy")));
    const gaps = ys.slice(1).map((v, i) => v - ys[i]);
    for (const gap of gaps) expect(gap).toBeCloseTo(gaps[0], 0);
    expect(svg.querySelector("circle title").textContent).toBe("step 1: |grad| 2");
  });

  it("leaves gaps for nan and inf (strings in the JSON), and says so", () => {
    const trace = withHistory(simpleTrace(), { grad_norm: [2, "NaN", 0.5, "Infinity", 0.125] });
    const section = historySection(trace, "t0");
    const d = section.querySelector('g[data-series="grad_norm"] path').getAttribute("d");
    expect(d.match(/[ML]/g)).toEqual(["M", "M", "M"]);
    expect(section.textContent).toContain("2 values not finite (nan or inf)");
    expect(section.textContent).toContain("at the last: |grad| 0.125, update 0.00125, |value| 2.96");
  });
});

describe("history: in the inspector", () => {
  it("shows the chart in a leaf's panel, and in the panel of its other values", () => {
    const trace = withHistory(simpleTrace());
    trace.tensors.push({ id: "t9", name: "a#2", role: "leaf", shape: [], dtype: "float32", requires_grad: true, value: 1.9 });
    for (const id of ["t0", "t9"]) {
      const panel = inspect(trace, id);
      const section = panel.querySelector('[data-role="history"]');
      expect(section).not.toBeNull();
      expect(section.querySelector("h4").textContent).toBe("across training steps");
      expect(section.querySelector("svg.history-chart")).not.toBeNull();
      expect([...section.querySelectorAll(".history-key")].map((k) => k.textContent)).toEqual(["|grad|", "update", "|value|"]);
    }
  });

  it("shows nothing for a tensor without a history", () => {
    expect(inspect(withHistory(simpleTrace()), "t1").querySelector('[data-role="history"]')).toBeNull();
    expect(inspect(simpleTrace(), "t0").querySelector('[data-role="history"]')).toBeNull();
  });
});
