import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { BINS, colourOfBin, formatNorm, gradNorms, magnitudeClass, magnitudeLegend, magnitudeScale, parameterRows, parameterTable, scaleTicks, sortRows } from "../src/magnitude.js";
import { nonfiniteMarks, nonfiniteOrigin } from "../src/nonfinite.js";
import { indexTrace } from "../src/trace.js";
import { layeredTrace, simpleTrace } from "./fixtures.js";

// simpleTrace: e = (a + b) * d with a = 2, b = 3, d = 4; backward: de/de = 1, de/dc = d = 4,
// de/dd = c = 5, de/da = de/db = 4. Norms of scalars are their absolute values.
function withNorms(trace) {
  // per step (n3, n4, n0, n2, n1): the norm received, then the norm sent along each next edge
  trace.grad_norms = {
    steps: [[1, 4, 5], [5], [4, 4, 4], [4], [4]],
    parameters: [
      ["t0", 4, 2],
      ["t1", 4, 3],
      ["t3", 5, 4],
    ],
  };
  return trace;
}

// a made-up log(0): the op o0 (add here) stands in as the origin, its node n0 spread -inf to
// n1 and n2; mul (o1) ran after it on a bad input
function withNonfinite(trace) {
  trace.nonfinite = {
    phase: "forward",
    kinds: ["-inf"],
    node: "n0",
    op: "o0",
    tensor: "t2",
    line: 6,
    already_bad: [],
    text: "first -inf in forward op add (AddBackward0) -> c at line 6: c = a + b; made here (every input was finite)",
    spread: ["n3", "n0", "n1", "n2"],
    spread_edges: [
      ["n0", "n1"],
      ["n0", "n2"],
    ],
    spread_ops: ["o1"],
  };
  return trace;
}

describe("the magnitude scale", () => {
  it("spans whole decades around the norms", () => {
    // 3e-7 .. 0.2: from 1e-7 to 1 is 7 decades, one per bin
    expect(magnitudeScale([3e-7, 0.2, 0.004])).toEqual({ lowExp: -7, step: 1, count: 7 });
    expect(scaleTicks(magnitudeScale([3e-7, 0.2]))).toEqual(["1e-7", "1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1"]);
    // 14 decades (1e-12 .. 99) in 7 bins: 2 decades each
    expect(magnitudeScale([1e-12, 99])).toEqual({ lowExp: -12, step: 2, count: 7 });
    // one decade: one bin, drawn in the middle colour
    const one = magnitudeScale([2, 3, 9]);
    expect(one).toEqual({ lowExp: 0, step: 1, count: 1 });
    expect(magnitudeClass(one, 5)).toBe(`mag-${Math.floor(BINS / 2)}`);
    // zeros, NaN and strings for infinities are left out of the range
    expect(magnitudeScale([0, "NaN", "Infinity", 0.5])).toEqual({ lowExp: -1, step: 1, count: 1 });
    expect(magnitudeScale([0, "NaN"])).toBeNull();
  });

  it("classes a norm by its bin, zero, non-finite or missing", () => {
    const scale = magnitudeScale([1e-7, 0.5]); // 1e-7 .. 1: 7 bins
    expect(magnitudeClass(scale, 3e-7)).toBe("mag-0");
    expect(magnitudeClass(scale, 0.05)).toBe("mag-5");
    expect(magnitudeClass(scale, 0.5)).toBe("mag-6");
    expect(magnitudeClass(scale, 0)).toBe("mag-zero");
    expect(magnitudeClass(scale, "NaN")).toBe("mag-bad");
    expect(magnitudeClass(scale, "Infinity")).toBe("mag-bad");
    expect(magnitudeClass(scale, null)).toBeNull();
    // three bins spread over the palette: first, middle, last colour
    const three = { lowExp: 0, step: 1, count: 3 };
    expect([0, 1, 2].map((k) => colourOfBin(three, k))).toEqual([0, 3, 6]);
  });

  it("writes norms short", () => {
    expect(formatNorm(2.7412e-6)).toBe("2.74e-6");
    expect(formatNorm(0.00123456)).toBe("0.00123");
    expect(formatNorm(1234.5)).toBe("1230"); // plain up to 4 digits before the point
    expect(formatNorm(12345)).toBe("1.23e4");
    expect(formatNorm(1e-8)).toBe("1e-8");
    expect(formatNorm(0)).toBe("0");
    expect(formatNorm("NaN")).toBe("NaN");
    expect(formatNorm("Infinity")).toBe("inf");
    expect(formatNorm(null)).toBe("–");
  });

  it("shows the legend's numbers", () => {
    const legend = magnitudeLegend(magnitudeScale([0.002, 3]));
    const swatches = [...legend.querySelectorAll(".mag-bar .mag-swatch")].map((el) => el.textContent);
    expect(swatches).toEqual(["0.001+", "0.01+", "0.1+", "1+"]);
    expect(legend.querySelector(".mag-end").textContent).toBe("below 10");
    expect(legend.textContent).toContain("exactly 0");
    expect(legend.textContent).toContain("NaN/inf");
  });
});

describe("the norms the trace carries", () => {
  it("are, in the recorded fixture, the ones worked out by hand", () => {
    const recorded = simpleTrace().grad_norms; // nbgrad's own recording (scripts/make_js_fixtures.py)
    expect(recorded).toEqual(withNorms({}).grad_norms);
  });

  it("give each node, edge and tensor its size", () => {
    const norms = gradNorms(indexTrace(withNorms(simpleTrace())));
    expect(norms.nodes).toEqual({ n3: 1, n4: 5, n0: 4, n2: 4, n1: 4 });
    expect(norms.edges).toEqual({ "n3>n0": 4, "n3>n4": 5, "n0>n1": 4, "n0>n2": 4 });
    // a tensor by its grad_fn (c: n0, e: n3), a leaf by its AccumulateGrad (a: n1, d: n4)
    expect(norms.tensors).toEqual({ t0: 4, t1: 4, t2: 4, t3: 5, t4: 1 });
    expect(norms.parameters).toEqual([
      { tensor: "t0", grad: 4, param: 2 },
      { tensor: "t1", grad: 4, param: 3 },
      { tensor: "t3", grad: 5, param: 4 },
    ]);
  });

  it("combine two gradients along one edge, and read non-finite norms", () => {
    // e = c * c: MulBackward0 (n3) sends 3 and 4 to AddBackward0 (n0) along two next entries
    const trace = simpleTrace();
    trace.nodes[3].next = [
      ["n0", 0],
      ["n0", 0],
    ];
    trace.grad_norms = { steps: [[1, 3, 4], [5], ["Infinity", "NaN", 4], [4], [4]], parameters: [] };
    const norms = gradNorms(indexTrace(trace));
    expect(norms.edges["n3>n0"]).toBe(5); // sqrt(3² + 4²)
    expect(norms.nodes.n0).toBe(Infinity);
    expect(Number.isNaN(norms.edges["n0>n1"])).toBe(true);
  });
});

describe("the parameter table", () => {
  it("has |grad|, |param| and their ratio per parameter, sorted by ratio", () => {
    const index = indexTrace(withNorms(simpleTrace()));
    const rows = parameterRows(index);
    // a: 4 / 2 = 2, b: 4 / 3 = 1.33, d: 5 / 4 = 1.25
    expect(rows.map((r) => [r.name, r.ratio])).toEqual([
      ["a", 2],
      ["b", 4 / 3],
      ["d", 1.25],
    ]);
    expect(sortRows(rows, "ratio").map((r) => r.name)).toEqual(["d", "b", "a"]);
    expect(sortRows(rows, "ratio", true).map((r) => r.name)).toEqual(["a", "b", "d"]);
    expect(sortRows(rows, "name", true).map((r) => r.name)).toEqual(["d", "b", "a"]);
    const nan = { id: "x", name: "x", grad: NaN, param: 1, ratio: NaN };
    const none = { id: "y", name: "y", grad: null, param: 1, ratio: null };
    expect(sortRows([none, nan, ...rows], "ratio").map((r) => r.name)).toEqual(["d", "b", "a", "x", "y"]);
  });

  it("sorts on a click of a column's head and selects on a click of a name", () => {
    const index = indexTrace(withNorms(simpleTrace()));
    const selected = [];
    const host = document.createElement("div");
    host.append(parameterTable(index, magnitudeScale([4, 5]), (id) => selected.push(id)));
    const names = () => [...host.querySelectorAll("tbody tr td:first-child")].map((td) => td.textContent);
    expect(names()).toEqual(["d", "b", "a"]);
    expect([...host.querySelectorAll("tbody tr")][0].querySelectorAll("td.num")[2].textContent).toBe("1.25");
    host.querySelector('th[data-column="ratio"] button').click();
    expect(names()).toEqual(["a", "b", "d"]);
    host.querySelector('th[data-column="grad"] button').click();
    expect(names()).toEqual(["a", "b", "d"]); // 4, 4, 5 (a before b: a stable sort)
    host.querySelector("tbody a").click();
    expect(selected).toEqual(["t0"]);
  });
});

describe("the first non-finite value", () => {
  it("marks the origin and its path in both views", () => {
    const index = indexTrace(withNonfinite(simpleTrace()));
    expect(nonfiniteOrigin(index)).toBe("n0");
    const backward = nonfiniteMarks(index, "backward");
    expect(backward.origin).toBe("n0");
    expect([...backward.path].sort()).toEqual(["n1", "n2", "n3"]);
    expect(backward.edges).toEqual([
      ["n0", "n1"],
      ["n0", "n2"],
    ]);
    const forward = nonfiniteMarks(index, "forward");
    expect(forward.origin).toBe("o0");
    // o1 (mul) ran on the bad c; the tensors c and e are made on the path
    expect([...forward.path].sort()).toEqual(["o1", "t2", "t4"]);
    expect(forward.edges).toContainEqual(["o0", "t2"]);
    expect(forward.edges).toContainEqual(["t2", "o1"]);
  });

  it("opens the widget on the origin, marked, with the banner and the inspector's note", () => {
    const el = document.createElement("div");
    document.body.append(el);
    createApp(el, { trace: withNonfinite(simpleTrace()) });
    expect(el.querySelector('[data-role="inspector"]').getAttribute("data-selected")).toBe("n0");
    expect(el.querySelector('[data-node-id="n0"]').classList.contains("nonfinite")).toBe(true);
    expect(el.querySelector('[data-node-id="n1"]').classList.contains("nonfinite-path")).toBe(true);
    expect(el.querySelector('path.edge[data-from="n0"][data-to="n1"]').classList.contains("nonfinite-path")).toBe(true);
    expect(el.querySelector('path.edge[data-from="n3"][data-to="n4"]').classList.contains("nonfinite-path")).toBe(false);
    expect(el.querySelector('[data-role="nonfinite-banner"]').textContent).toContain("First -inf in forward op add");
    expect(el.querySelector('[data-role="nonfinite-section"]').textContent).toContain("It made it here: every input was finite.");
  });

  it("opens on the loss, unmarked, when every value was finite", () => {
    const el = document.createElement("div");
    document.body.append(el);
    createApp(el, { trace: simpleTrace() });
    expect(el.querySelector(".nonfinite, .nonfinite-path")).toBeNull();
    expect(el.querySelector('[data-role="nonfinite-banner"]')).toBeNull();
  });
});

describe("the magnitude toggle", () => {
  it("colours nodes and edges and shows the legend and table; off again, nothing", () => {
    const el = document.createElement("div");
    document.body.append(el);
    const app = createApp(el, { trace: withNorms(simpleTrace()) });
    const button = el.querySelector('[data-role="magnitude"]');
    expect(el.querySelector('[data-role="magnitude-legend"]')).toBeNull();
    button.click();
    expect(button.getAttribute("aria-pressed")).toBe("true");
    // norms 1 .. 5 lie in one decade [1, 10): every node in the middle colour
    const middle = `mag-${Math.floor(BINS / 2)}`;
    for (const id of ["n0", "n1", "n2", "n3", "n4"]) expect(el.querySelector(`[data-node-id="${id}"]`).classList.contains(middle)).toBe(true);
    expect(el.querySelector('path.edge[data-from="n3"][data-to="n4"]').classList.contains(middle)).toBe(true);
    expect(el.querySelectorAll('[data-role="magnitude-table"] tbody tr').length).toBe(3);
    app.setView("forward");
    expect(el.querySelector('[data-node-id="t3"]').classList.contains(middle)).toBe(true);
    expect(el.querySelector('[data-node-id="o1"]').classList.contains(middle)).toBe(true);
    button.click();
    expect(el.querySelector('[data-role="magnitude-legend"]')).toBeNull();
    expect(el.querySelector(`.${middle}`)).toBeNull();
  });

  it("leaves a folded group uncoloured (it stands for nodes of many sizes)", () => {
    const trace = layeredTrace(3, { backward: true });
    const byId = new Map(trace.nodes.map((n) => [n.id, n]));
    trace.grad_norms = { steps: trace.steps.map((step) => [2, ...(byId.get(step.node).next || []).map(() => 2)]), parameters: [] };
    const el = document.createElement("div");
    document.body.append(el);
    const app = createApp(el, { trace });
    app.collapse("model.layers.1");
    el.querySelector('[data-role="magnitude"]').click();
    const group = el.querySelector('[data-node-id="group:model.layers.1"]');
    expect(group).not.toBeNull();
    expect([...group.classList].some((c) => c.startsWith("mag-"))).toBe(false);
    const coloured = [...el.querySelectorAll("[data-node-id]")].filter((n) => [...n.classList].some((c) => c.startsWith("mag-")));
    expect(coloured.length).toBeGreaterThan(0);
  });
});
