import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { withDiffEdges } from "../src/diff.js";
import { indexTrace } from "../src/trace.js";
import { backwardView } from "../src/views.js";
import { simpleTrace } from "./fixtures.js";

/** before: e = (a + b) * d; after: e = (a * b) * d, with a = 2, b = 3, d = 4, as nbgrad.diff
 * writes it (nbgrad/trace/diff.py): A's trace, B's mul for c added as o2 and n5, the "diff" key.
 * By hand: after, c = 6, e = 24, a.grad = d * b = 12, b.grad = d * a = 8, d.grad = c = 6. */
function diffTrace() {
  const trace = simpleTrace();
  trace.ops.push({ id: "o2", op: "mul", inputs: ["t0", "t1"], outputs: ["t2"], node: "n5" });
  trace.nodes.push({ id: "n5", name: "MulBackward0", op: "o2", formula: "mul", next: [["n1", 0], ["n2", 0]], saved: { self: { tensor: "t0" }, other: { tensor: "t1" } } });
  const differs = (name, kind, what, a, b) => ({ status: "differs", kind, name, difference: Math.abs(a - b), what, dtype: "float32", compared: [{ what, a, b, difference: Math.abs(a - b), differs: true }] });
  trace.diff = {
    labels: ["before", "after"],
    engines: ["nbgrad", "nbgrad"],
    counts: { a: 2, b: 2, differs: 10, same: 0 },
    records: {
      t0: differs("a", "tensor", "grad", 4, 12),
      t1: differs("b", "tensor", "grad", 4, 8),
      t2: differs("c", "tensor", "value", 5, 6),
      t3: differs("d", "tensor", "grad", 5, 6),
      t4: differs("e", "tensor", "value", 20, 24),
      o0: { status: "a", kind: "op", name: "add → c", compared: [{ what: "output", a: 5, b: null, difference: null, differs: false }] },
      o1: differs("mul → e", "op", "output", 20, 24),
      o2: { status: "b", kind: "op", name: "mul → c", line_b: [6, "c = a * b"], compared: [{ what: "output", a: null, b: 6, difference: null, differs: false }] },
      n0: { status: "a", kind: "node", name: "AddBackward0 (c)", compared: [] },
      n1: differs("AccumulateGrad(a)", "node", "gradient in", 4, 12),
      n2: differs("AccumulateGrad(b)", "node", "gradient in", 4, 8),
      n3: differs("MulBackward0 (e)", "node", "gradient out 1", 5, 6),
      n4: differs("AccumulateGrad(d)", "node", "gradient in", 5, 6),
      n5: { status: "b", kind: "node", name: "MulBackward0 (c)", compared: [] },
    },
    edges: [
      { view: "backward", from: "n3", to: "n0", slot: 0, in: "a" },
      { view: "backward", from: "n0", to: "n1", slot: 0, in: "a" },
      { view: "backward", from: "n0", to: "n2", slot: 1, in: "a" },
      { view: "backward", from: "n3", to: "n5", slot: 0, in: "b" },
      { view: "backward", from: "n5", to: "n1", slot: 0, in: "b" },
      { view: "backward", from: "n5", to: "n2", slot: 1, in: "b" },
      { view: "forward", from: "t0", to: "o0", slot: 0, in: "a" },
      { view: "forward", from: "t1", to: "o0", slot: 1, in: "a" },
      { view: "forward", from: "o0", to: "t2", slot: 0, in: "a" },
      { view: "forward", from: "o2", to: "t2", slot: 0, in: "b" },
    ],
  };
  return trace;
}

function mount(trace, options = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const app = createApp(el, { trace, ...options });
  return { el, app };
}

const classesOf = (el, id) => el.querySelector(`[data-node-id="${id}"]`).getAttribute("class").split(" ");
const edgeClasses = (el, from, to) => el.querySelector(`path.edge[data-from="${from}"][data-to="${to}"]`).getAttribute("class").split(" ");

describe("a diff of two traces", () => {
  it("adds the edges only B has to the view, and only between drawn nodes", () => {
    const index = indexTrace(diffTrace());
    const view = withDiffEdges(backwardView(index), index, "backward");
    const key = (e) => `${e.from}>${e.to}`;
    // n5 -> n1 and n5 -> n2 are n5's own next (in the trace); n3 -> n5 is only in the diff
    expect(view.edges.map(key)).toContain("n3>n5");
    expect(view.edges.filter((e) => key(e) === "n3>n5")).toHaveLength(1);
    const plain = indexTrace(simpleTrace());
    expect(withDiffEdges(backwardView(plain), plain, "backward")).toEqual(backwardView(plain));
  });

  it("colours nodes and edges by status", () => {
    const { el } = mount(diffTrace());
    expect(classesOf(el, "n0")).toContain("diff-a");
    expect(classesOf(el, "n5")).toContain("diff-b");
    expect(classesOf(el, "n3")).toContain("diff-differs");
    expect(edgeClasses(el, "n3", "n5")).toContain("diff-b");
    expect(edgeClasses(el, "n3", "n0")).toContain("diff-a");
    expect(edgeClasses(el, "n3", "n4")).not.toContain("diff-a");
  });

  it("colours the forward view too", () => {
    const { el } = mount(diffTrace(), { view: "forward" });
    expect(classesOf(el, "o0")).toContain("diff-a");
    expect(classesOf(el, "o2")).toContain("diff-b");
    expect(classesOf(el, "t2")).toContain("diff-differs");
    expect(edgeClasses(el, "o2", "t2")).toContain("diff-b");
  });

  it("has a legend with the labels and the counts", () => {
    const { el } = mount(diffTrace());
    const legend = el.querySelector('[data-role="diff-legend"]');
    expect(legend.hidden).toBe(false);
    const keys = [...legend.querySelectorAll(".diff-key")].map((k) => k.textContent);
    expect(keys).toEqual(["only in before (2)", "only in after (2)", "values differ (10)", "same (0)"]);
    expect(legend.textContent).toContain("before vs after:");
    expect(legend.querySelector(".diff-swatch.diff-a")).not.toBeNull();
  });

  it("shows both sides in the inspector", () => {
    const { el, app } = mount(diffTrace());
    app.select("t0");
    const section = el.querySelector('[data-role="diff-section"]');
    expect(section.querySelector(".diff-headline").textContent).toBe("values differ: largest |difference| 8 in grad");
    const sides = [...section.querySelectorAll(".diff-side")].map((row) => row.textContent);
    expect(sides).toEqual(["before4.", "after12."]);
    app.select("o2");
    const added = el.querySelector('[data-role="diff-section"]');
    expect(added.querySelector(".diff-headline").textContent).toBe("only in after");
    expect(added.querySelector(".code-line").textContent).toBe("after, line 6c = a * b");
  });

  it("shows a record that is the same once, labelled with both names", () => {
    const trace = diffTrace();
    trace.diff.records.t3 = { status: "same", kind: "tensor", name: "d", difference: 0, dtype: "float32", compared: [{ what: "value", a: 4, difference: 0, differs: false }] };
    const { el, app } = mount(trace);
    app.select("t3");
    const section = el.querySelector('[data-role="diff-section"]');
    expect(section.querySelector(".diff-headline").textContent).toBe("the same in before and after (within the tolerance)");
    expect(section.querySelector(".diff-what").textContent).toBe("value equal");
    expect([...section.querySelectorAll(".diff-side")].map((row) => row.textContent)).toEqual(["before = after4."]);
  });

  it("leaves an ordinary trace as it was", () => {
    const { el, app } = mount(simpleTrace());
    expect(el.querySelector('[data-role="diff-legend"]').hidden).toBe(true);
    app.select("t0");
    expect(el.querySelector('[data-role="diff-section"]')).toBeNull();
    expect(classesOf(el, "n0").some((c) => c.startsWith("diff-"))).toBe(false);
  });
});
