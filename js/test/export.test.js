// Issue 18, parts 5 and 6: a failed call drawn and marked (failure.js), a small loop rolled into
// one "× N" group and unrolled (fold.js), the drawing exported (export.js).

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app.js";
import { EXPORT_PADDING, MAX_CANVAS_SIDE, PNG_SCALE, REPORT_DELAY_MS, REPORT_MAX_NODES, createDrawingReporter, exportName, pngSize, svgDocument } from "../src/export.js";
import { FAILED_ID, failedViewIds, failureTarget, withFailedCall } from "../src/failure.js";
import { foldRepeats, prepareView } from "../src/fold.js";
import { initialCollapsed, visibleGraph } from "../src/groups.js";
import { indexTrace } from "../src/trace.js";
import { forwardView } from "../src/views.js";
import { layeredTrace, simpleTrace } from "./fixtures.js";

/** simpleTrace, then `f = e @ g` raised: g is a constant the recorder met as the call's input. */
function failedForwardTrace() {
  const trace = simpleTrace();
  trace.tensors.push({ id: "t5", name: "g", role: "constant", shape: [4, 5], dtype: "float32", requires_grad: false, value: null });
  trace.status.error = "RuntimeError: both arguments to matmul need to be at least 1D, but they are 0D and 2D";
  trace.source.lines[10] = "f = e @ g";
  trace.failure = { where: "forward", call: "matmul", type: "RuntimeError", message: "both arguments to matmul need to be at least 1D, but they are 0D and 2D", line: 10, inputs: ["t4", "t5"] };
  return trace;
}

/** simpleTrace with a second e.backward() that raised in MulBackward0 (its saved values freed). */
function failedBackwardTrace() {
  const trace = simpleTrace();
  const message = "Trying to backward through the graph a second time";
  trace.passes.push({ index: 1, kind: "backward", roots: [["n3", 0]], line: 10 });
  trace.status.error = `RuntimeError: ${message}`;
  trace.failure = { where: "backward", call: "MulBackward0", type: "RuntimeError", message, line: 10, node: "n3", pass: 1 };
  return trace;
}

function mount(trace, options = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const app = createApp(el, { trace, ...options });
  return { el, app };
}

describe("a failed call", () => {
  it("is a placeholder op fed by its inputs in the forward view", () => {
    const index = indexTrace(failedForwardTrace());
    const view = withFailedCall(forwardView(index), index, "forward");
    const placeholder = view.nodes.find((n) => n.id === FAILED_ID);
    expect(placeholder).toMatchObject({ kind: "op", label: "matmul", role: "failed", sub: "raised RuntimeError" });
    // e was drawn already; g, which no drawn op touched, is drawn for the call
    expect(view.edges.filter((e) => e.to === FAILED_ID).map((e) => e.from)).toEqual(["t4", "t5"]);
    expect(view.nodes.filter((n) => n.id === "t5")).toHaveLength(1);
    expect(failedViewIds(index, "forward")).toEqual([FAILED_ID]);
    expect(failedViewIds(index, "backward")).toEqual([]);
    expect(failureTarget(index)).toEqual({ id: FAILED_ID, view: "forward" });
  });

  it("of backward marks its node, and its op in the forward view", () => {
    const index = indexTrace(failedBackwardTrace());
    expect(failureTarget(index)).toEqual({ id: "n3", view: "backward" });
    expect(failedViewIds(index, "backward")).toEqual(["n3"]);
    expect(failedViewIds(index, "forward")).toEqual(["o1"]); // n3 is the grad_fn of the mul o1
    const view = forwardView(index);
    expect(withFailedCall(view, index, "forward")).toBe(view); // nothing to add
  });

  it("opens the widget on the forward placeholder, marked, with the message", () => {
    const { el, app } = mount(failedForwardTrace());
    expect(app.state.view).toBe("forward");
    expect(app.state.selected).toBe(FAILED_ID);
    const node = el.querySelector(`[data-node-id="${FAILED_ID}"]`);
    expect(node.classList.contains("failed")).toBe(true);
    expect(node.classList.contains("selected")).toBe(true);
    const inspector = el.querySelector('[data-role="inspector"]');
    expect(inspector.querySelector('[data-role="failure-message"]').textContent).toBe("both arguments to matmul need to be at least 1D, but they are 0D and 2D");
    expect(inspector.textContent).toContain("line 10: f = e @ g");
    expect([...inspector.querySelectorAll(".failure-input")].map((b) => b.textContent)).toEqual(["e scalar", "g [4, 5]"]);
  });

  it("opens the widget on the backward node that raised", () => {
    const { el, app } = mount(failedBackwardTrace());
    expect(app.state.view).toBe("backward");
    expect(app.state.selected).toBe("n3");
    expect(el.querySelector('[data-node-id="n3"]').classList.contains("failed")).toBe(true);
    expect(el.querySelectorAll(".node.failed")).toHaveLength(1);
    const panel = el.querySelector('[data-role="inspector"] [data-role="failure"]');
    expect(panel.textContent).toContain("MulBackward0 raised while backward ran it (pass 2)");
    // another node's inspector has no failure block
    app.select("n0");
    expect(el.querySelector('[data-role="inspector"] [data-role="failure"]')).toBeNull();
  });
});

/** An unrolled RNN of `steps` steps, backward view: h = tanh(h @ W + x), loss = h.sum(). */
function smallRnn(steps) {
  const nodes = [{ id: "sum", kind: "node", label: "SumBackward0" }];
  const edges = [];
  let above = "sum";
  for (let t = steps - 1; t >= 0; t--) {
    nodes.push({ id: `tanh${t}`, kind: "node", label: "TanhBackward0" }, { id: `add${t}`, kind: "node", label: "AddBackward0" }, { id: `mm${t}`, kind: "node", label: "MmBackward0" });
    edges.push({ from: above, to: `tanh${t}` }, { from: `tanh${t}`, to: `add${t}` }, { from: `add${t}`, to: `mm${t}` });
    above = `mm${t}`;
  }
  nodes.push({ id: "accH", kind: "node", label: "AccumulateGrad" });
  edges.push({ from: above, to: "accH" });
  return { nodes: nodes.map((n) => ({ sub: "", role: "function", group: null, ...n })), edges };
}

describe("a repeated block in a small view", () => {
  it("becomes one group marked × N, drawn open", () => {
    const modules = {};
    const view = prepareView(smallRnn(5), modules, "down");
    // 5 steps of 3 nodes each; the ends (the sum, the leaf) stay outside
    expect(view.nodes.filter((n) => n.group === "loop1").map((n) => n.id).sort()).toEqual(
      [0, 1, 2, 3, 4].flatMap((t) => [`add${t}`, `mm${t}`, `tanh${t}`]).sort(),
    );
    expect(modules.loop1).toBe("loop ×5");
    expect(view.groupLabels.loop1).toBe("×5 Tanh … Mm"); // the block, from the top
    expect(initialCollapsed(view, modules, 300).size).toBe(0);
    // rolled: one node standing for the 15, labelled "×5 ..."
    const rolled = visibleGraph(view, new Set(["loop1"]), modules);
    expect(rolled.nodes.map((n) => n.id).sort()).toEqual(["accH", "group:loop1", "sum"]);
    expect(rolled.nodes.find((n) => n.id === "group:loop1").label).toMatch(/^×5 /);
  });

  it("is not made of a single repeated node, nor of two repetitions", () => {
    const chain = { nodes: [], edges: [] };
    for (let i = 0; i < 10; i++) {
      chain.nodes.push({ id: `m${i}`, kind: "node", label: "MulBackward0", sub: "", group: null });
      if (i) chain.edges.push({ from: `m${i - 1}`, to: `m${i}` });
    }
    expect(foldRepeats(chain).loops).toEqual([]);
    expect(foldRepeats(smallRnn(2)).loops).toEqual([]);
  });

  it("rolls on a click on its title and unrolls on a click on its node", () => {
    const trace = rnnTrace(4);
    const { el, app } = mount(trace);
    const drawn = () => [...el.querySelectorAll("[data-node-id]")].map((n) => n.getAttribute("data-node-id"));
    expect(drawn()).toHaveLength(4 * 3 + 2);
    const title = el.querySelector('[data-group="loop1"] .group-title');
    expect(title.textContent).toContain("loop ×4");
    title.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(drawn().sort()).toEqual(["group:loop1", "n0", "n13"]);
    const rolled = el.querySelector('[data-node-id="group:loop1"]');
    expect(rolled.getAttribute("data-label")).toMatch(/^×4 /);
    rolled.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(drawn()).toHaveLength(4 * 3 + 2);
    expect(app.state.collapsed.backward.has("loop1")).toBe(false);
  });
});

/** A backward-only trace of smallRnn's shape (nodes n0 = sum ... n13 = AccumulateGrad). */
function rnnTrace(steps) {
  const view = smallRnn(steps);
  const ids = new Map(view.nodes.map((n, i) => [n.id, `n${i}`]));
  const nodes = view.nodes.map((n) => ({
    id: ids.get(n.id),
    name: n.label,
    next: view.edges.filter((e) => e.from === n.id).map((e) => [ids.get(e.to), 0]),
    saved: {},
    ...(n.label === "AccumulateGrad" ? { variable: "t0" } : {}),
  }));
  return {
    version: 2,
    source: { kind: "graph", lines: {} },
    status: { complete: true, truncated: null, error: null },
    modules: {},
    formulas: {},
    tensors: [{ id: "t0", name: "h", role: "leaf", shape: [3], dtype: "float32", requires_grad: true, value: [0, 0, 0] }],
    ops: [],
    nodes,
    passes: [],
    steps: [],
    accumulations: [],
  };
}

describe("export", () => {
  it("makes PNGs at twice the size, smaller only past a canvas's limits", () => {
    expect(pngSize(300, 200)).toEqual({ width: 600, height: 400, scale: PNG_SCALE });
    const wide = pngSize(20000, 100);
    expect(wide.width).toBe(MAX_CANVAS_SIDE);
    expect(wide.height).toBe(Math.round(100 * (MAX_CANVAS_SIDE / 20000)));
  });

  it("writes a standalone SVG document of the whole drawing at scale 1", () => {
    const { el, app } = mount(simpleTrace());
    const drawing = app.drawing();
    const { width, height } = app.state.laid;
    expect(drawing.width).toBe(Math.ceil(width + 2 * EXPORT_PADDING));
    expect(drawing.height).toBe(Math.ceil(height + 2 * EXPORT_PADDING));
    const doc = new DOMParser().parseFromString(drawing.text, "image/svg+xml");
    expect(doc.querySelector("parsererror")).toBeNull();
    const svg = doc.documentElement;
    expect(svg.getAttribute("xmlns")).toBe("http://www.w3.org/2000/svg");
    expect(svg.getAttribute("viewBox")).toBe(`0 0 ${drawing.width} ${drawing.height}`);
    expect(svg.querySelector(".viewport").getAttribute("transform")).toBe(`translate(${EXPORT_PADDING},${EXPORT_PADDING})`);
    // every drawn node is in it, with its label; nothing of the live widget's keyboard focus
    const labels = [...svg.querySelectorAll("[data-node-id] text.label")].map((t) => t.textContent).sort();
    expect(labels).toEqual(["AccumulateGrad", "AccumulateGrad", "AccumulateGrad", "AddBackward0", "MulBackward0"]);
    expect(svg.querySelector("[tabindex]")).toBeNull();
    // the page's own drawing is untouched (its pan and zoom, its DOM)
    expect(el.querySelector("svg.graph .viewport").getAttribute("transform")).not.toBe(`translate(${EXPORT_PADDING},${EXPORT_PADDING})`);
    expect(exportName({ name: "my run" }, "backward", "svg")).toBe("my_run-backward.svg");
    expect(exportName({}, "forward", "png")).toBe("autograd-graph-forward.png");
  });

  it("writes every drawn node, also those off screen, and leaves the screen's part in the DOM", () => {
    // 60 layers of 8 forward nodes, every group open: over CULL_MIN_NODES, so only what is on
    // screen is in the page's DOM
    const { el, app } = mount(layeredTrace(60), { view: "forward" });
    el.querySelector('[data-role="expand-all"]').click();
    const drawn = app.state.visible.nodes.length;
    expect(drawn).toBeGreaterThan(400);
    const onPage = el.querySelectorAll("svg.graph [data-node-id]").length;
    expect(onPage).toBeLessThan(drawn);
    const doc = new DOMParser().parseFromString(app.drawing().text, "image/svg+xml");
    const ids = [...doc.querySelectorAll("[data-node-id]")].map((n) => n.getAttribute("data-node-id"));
    expect(ids.sort()).toEqual(app.state.visible.nodes.map((n) => n.id).sort());
    expect(el.querySelectorAll("svg.graph [data-node-id]")).toHaveLength(onPage);
  });

  it("has toolbar buttons", () => {
    const { el } = mount(simpleTrace());
    expect(el.querySelector('[data-role="export-svg"]').textContent).toBe("SVG");
    expect(el.querySelector('[data-role="export-png"]').textContent).toBe("PNG");
  });
});

describe("the drawing sent to the kernel", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("goes once the view has settled, while shown, for drawings within the limit", () => {
    const sent = [];
    let shown = true;
    let count = 10;
    const reporter = createDrawingReporter({ drawing: () => ({ text: "<svg/>", width: 1, height: 1 }), isShown: () => shown, nodeCount: () => count, send: (d) => sent.push(d) });
    reporter.schedule();
    vi.advanceTimersByTime(REPORT_DELAY_MS - 1);
    reporter.schedule(); // a change: the wait starts again
    vi.advanceTimersByTime(REPORT_DELAY_MS - 1);
    expect(sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(sent).toHaveLength(1);
    shown = false;
    reporter.schedule();
    vi.advanceTimersByTime(REPORT_DELAY_MS);
    expect(sent).toHaveLength(1);
    shown = true;
    count = REPORT_MAX_NODES + 1;
    reporter.schedule();
    vi.advanceTimersByTime(REPORT_DELAY_MS);
    expect(sent).toHaveLength(1);
  });
});
