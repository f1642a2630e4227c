import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { BOX_PADDING, LABEL_FONT_PX, MAX_TEXT_WIDTH, MIN_READABLE_SCALE, MIN_SCREEN_FONT_PX, SUB_FONT_PX, nodeLabels, shorten, shortenToWidth, textWidth } from "../src/labels.js";
import { legendText } from "../src/legend.js";
import { createSearchCursor, findMatches } from "../src/search.js";
import { hideShapeOnly, isShapeOnly, withoutNodes } from "../src/shapes.js";
import { backwardView, forwardView } from "../src/views.js";
import { indexTrace } from "../src/trace.js";
import { layeredTrace, simpleTrace } from "./fixtures.js";

function mount(trace, options = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const events = [];
  const app = createApp(el, { trace, onSelect: (id) => events.push(["select", id]), onHeight: (px) => events.push(["height", px]), ...options });
  return { el, app, events };
}

/** loss = (x.view(6).unsqueeze(0) * w).sum(): two shape-only ops between x and the mul. */
function reshapeTrace() {
  const t = (id, name, role, extra = {}) => ({ id, name, role, shape: [6], dtype: "float32", requires_grad: true, value: [1, 2, 3, 4, 5, 6], ...extra });
  return {
    version: 2,
    source: { kind: "cell", lines: {} },
    status: { complete: true },
    modules: {},
    formulas: {},
    tensors: [
      t("t0", "x", "leaf", { shape: [2, 3] }),
      t("t1", "w", "leaf"),
      t("t2", "x.view(6)", "intermediate", { grad_fn: "n1", op: "o0" }),
      t("t3", "x.view(6).unsqueeze(0)", "intermediate", { grad_fn: "n2", op: "o1" }),
      t("t4", "prod", "intermediate", { grad_fn: "n3", op: "o2" }),
      t("t5", "loss", "output", { shape: [], value: 1, grad_fn: "n4", op: "o3" }),
    ],
    ops: [
      { id: "o0", op: "view", inputs: ["t0"], outputs: ["t2"], node: "n1" },
      { id: "o1", op: "unsqueeze", inputs: ["t2"], outputs: ["t3"], node: "n2" },
      { id: "o2", op: "mul", inputs: ["t3", "t1"], outputs: ["t4"], node: "n3" },
      { id: "o3", op: "sum", inputs: ["t4"], outputs: ["t5"], node: "n4" },
    ],
    nodes: [
      { id: "n0", name: "AccumulateGrad", next: [], saved: {}, variable: "t0" },
      { id: "n1", name: "ViewBackward0", op: "o0", next: [["n0", 0]], saved: {} },
      { id: "n2", name: "UnsqueezeBackward0", op: "o1", next: [["n1", 0]], saved: {} },
      { id: "n3", name: "MulBackward0", op: "o2", next: [["n2", 0], ["n5", 0]], saved: {} },
      { id: "n4", name: "SumBackward0", op: "o3", next: [["n3", 0]], saved: {} },
      { id: "n5", name: "AccumulateGrad", next: [], saved: {}, variable: "t1" },
    ],
    passes: [{ index: 0, kind: "backward", roots: [["n4", 0]] }],
    steps: [],
    accumulations: [],
  };
}

const edgeSet = (graph) => graph.edges.map((e) => `${e.from}>${e.to}`).sort();

describe("labels", () => {
  const chars = (s) => s.length;

  it("shortens at a word boundary, with an ellipsis, and keeps short texts whole", () => {
    expect(shortenToWidth("MulBackward0", 20, chars)).toBe("MulBackward0");
    expect(shortenToWidth("linalg_vector_norm in F.cosine_similarity(u, v)#2", 26, chars)).toBe("linalg_vector_norm in F…");
    expect(shortenToWidth("div in F.cosine_similarity(u, v)#2", 30, chars)).toBe("div in F.cosine_similarity(u…");
    expect(shortenToWidth("model.encoder.layers.11.self_attn", 24, chars)).toBe("model.encoder.layers.11…");
    expect(shorten("clamp_ in F.cosine_similarity(u, v)", 12)).toBe("clamp_ in F…");
    // never cut inside a word when a whole word fits ...
    for (const max of [8, 12, 16, 20, 24, 28]) {
      const cut = shortenToWidth("linalg_vector_norm in F.cosine_similarity(u, v)#2", max, chars);
      expect(cut.length).toBeLessThanOrEqual(max);
      expect(cut.endsWith("…")).toBe(true);
    }
    // ... and a single word longer than the room is cut inside it
    expect(shortenToWidth("AVeryLongFunctionClassNameBackward0", 10, chars)).toBe("AVeryLong…");
  });

  it("sizes each box to its texts, no text wider than its box", () => {
    const long = { kind: "node", label: "LinalgVectorNormBackward0", sub: "linalg_vector_norm in F.cosine_similarity(u, v)#2" };
    const short = { kind: "node", label: "AddBackward0", sub: "c" };
    for (const node of [long, short]) {
      const { width, label, sub } = nodeLabels(node);
      expect(textWidth(label, LABEL_FONT_PX, true) + 2 * BOX_PADDING).toBeLessThanOrEqual(width);
      expect(textWidth(sub, SUB_FONT_PX) + 2 * BOX_PADDING).toBeLessThanOrEqual(width);
      expect(textWidth(sub, SUB_FONT_PX)).toBeLessThanOrEqual(MAX_TEXT_WIDTH);
    }
    expect(nodeLabels(long).sub).toMatch(/^linalg_vector_norm in .*…$/);
    expect(nodeLabels(long).width).toBeGreaterThan(nodeLabels(short).width);
    expect(nodeLabels(short)).toMatchObject({ label: "AddBackward0", sub: "c" });
  });

  it("puts the whole text in the node's tooltip when it is shortened", () => {
    const trace = simpleTrace();
    trace.tensors[4].name = "a_rather_long_name for the output of this whole computation";
    const { el } = mount(trace);
    const root = el.querySelector('[data-node-id="n3"]');
    expect(root.querySelector("text.sub").textContent).toMatch(/…$/);
    expect(root.querySelector("title").textContent).toContain("a_rather_long_name for the output of this whole computation");
  });

  it("draws no text smaller than the minimum at the smallest readable scale", () => {
    expect(Math.min(LABEL_FONT_PX, SUB_FONT_PX) * MIN_READABLE_SCALE).toBeGreaterThanOrEqual(MIN_SCREEN_FONT_PX - 1e-9);
  });
});

describe("fit and the first view", () => {
  const scale = (el) => Number(/scale\(([-\d.e]+)\)/.exec(el.querySelector("g.viewport").getAttribute("transform"))[1]);

  it("shows a small graph whole, with no note", () => {
    const { el } = mount(simpleTrace());
    expect(scale(el)).toBeGreaterThanOrEqual(MIN_READABLE_SCALE);
    expect(el.querySelector('[data-role="fit-note"]').hidden).toBe(true);
    expect(el.querySelector('[data-role="minimap"]').hidden).toBe(true); // all of it is on screen
  });

  it("opens a large graph on its loss at a readable scale, says so, and fit does the same", () => {
    const { el, app } = mount(layeredTrace(12, { backward: true }), { view: "backward" });
    expect(scale(el)).toBeCloseTo(MIN_READABLE_SCALE, 6);
    const note = el.querySelector('[data-role="fit-note"]');
    expect(note.hidden).toBe(false);
    expect(note.textContent).toContain("too small to read");
    // the loss (the root of the backward pass) is on screen: 800 x 500 in jsdom
    const root = app.state.index.passes[0].roots[0][0];
    const box = app.state.laid.positions.get(root);
    const { x, y, k } = app.state.viewport || readTransform(el);
    expect(x + box.x * k).toBeGreaterThan(0);
    expect(x + box.x * k).toBeLessThan(800);
    expect(y + box.y * k).toBeGreaterThan(0);
    expect(y + box.y * k).toBeLessThan(500);
    expect(el.querySelector('[data-role="minimap"]').hidden).toBe(false);
    el.querySelector('[data-role="zoom-out"]').click();
    expect(scale(el)).toBeLessThan(MIN_READABLE_SCALE);
    el.querySelector('[data-role="fit"]').click();
    expect(scale(el)).toBeCloseTo(MIN_READABLE_SCALE, 6);
  });

  it("opens the forward view on the output tensor", () => {
    const { el, app } = mount(layeredTrace(12), { view: "forward" });
    const output = app.state.index.trace.tensors.find((t) => t.role === "output").id;
    const box = app.state.laid.positions.get(output);
    const { x, y, k } = readTransform(el);
    expect(y + box.y * k).toBeGreaterThan(0);
    expect(y + box.y * k).toBeLessThan(500);
    expect(x + box.x * k).toBeGreaterThan(0);
    expect(x + box.x * k).toBeLessThan(800);
  });

  function readTransform(el) {
    const m = /translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/.exec(el.querySelector("g.viewport").getAttribute("transform"));
    return { x: Number(m[1]), y: Number(m[2]), k: Number(m[3]) };
  }
});

describe("the minimap", () => {
  it("moves the view to where it is clicked", () => {
    const { el, app } = mount(layeredTrace(12, { backward: true }));
    const map = el.querySelector('[data-role="minimap"]');
    const before = el.querySelector("g.viewport").getAttribute("transform");
    // jsdom has no layout: the map's box is 0x0 at (0, 0), so a click at (0, 0) is the top left
    map.dispatchEvent(new MouseEvent("pointerdown", { bubbles: true, button: 0, clientX: 0, clientY: 0 }));
    const after = el.querySelector("g.viewport").getAttribute("transform");
    expect(after).not.toBe(before);
    // the drawing's point (0, 0) is now in the middle of the 800 x 500 view
    expect(after.startsWith("translate(400,250)")).toBe(true);
    expect(app.state.laid).not.toBeNull();
  });
});

describe("search", () => {
  it("finds every match, case-insensitive, in label or sub", () => {
    const nodes = [
      { id: "a", label: "AddBackward0", sub: "c" },
      { id: "b", label: "MulBackward0", sub: "e" },
      { id: "c", label: "AccumulateGrad", sub: "a" },
      { id: "d", label: "AccumulateGrad", sub: "b" },
    ];
    expect(findMatches(nodes, "backward")).toEqual(["a", "b"]);
    expect(findMatches(nodes, "ACCUM")).toEqual(["c", "d"]);
    expect(findMatches(nodes, "mulb")).toEqual(["b"]);
    expect(findMatches(nodes, "E")).toEqual(["b", "c", "d"]);
    expect(findMatches(nodes, "  ")).toEqual([]);
    expect(findMatches(nodes, "grad", (x, y) => (x.sub < y.sub ? 1 : -1))).toEqual(["d", "c"]);
  });

  it("steps through the matches forwards and backwards, wrapping around", () => {
    const cursor = createSearchCursor();
    cursor.set(["p", "q", "r"]);
    expect(cursor.text("x")).toBe("3 matches");
    expect([cursor.next(), cursor.next(), cursor.next(), cursor.next()]).toEqual(["p", "q", "r", "p"]);
    expect(cursor.text("x")).toBe("1 of 3");
    expect([cursor.previous(), cursor.previous()]).toEqual(["r", "q"]);
    expect(cursor.text("x")).toBe("2 of 3");
    cursor.set([]);
    expect(cursor.next()).toBeNull();
    expect(cursor.text("x")).toBe("no match");
    expect(cursor.text("")).toBe("");
  });

  it("highlights every match in the drawing and selects each in turn", () => {
    const { el, app, events } = mount(simpleTrace());
    const input = el.querySelector('[data-role="search"]');
    input.value = "accumulate";
    input.dispatchEvent(new Event("input"));
    expect(el.querySelectorAll(".node.match")).toHaveLength(3);
    expect(el.querySelector('[data-role="search-count"]').textContent).toBe("3 matches");
    const seen = [];
    for (let i = 0; i < 3; i++) {
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      seen.push(app.state.selected);
      expect(el.querySelector('[data-role="search-count"]').textContent).toBe(`${i + 1} of 3`);
      expect(el.querySelectorAll(".node.match-current")).toHaveLength(1);
      expect(el.querySelector(".node.match-current").getAttribute("data-node-id")).toBe(app.state.selected);
    }
    expect(new Set(seen)).toEqual(new Set(["n1", "n2", "n4"]));
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true }));
    expect(app.state.selected).toBe(seen[1]);
    el.querySelector('[data-role="search-next"]').click();
    expect(app.state.selected).toBe(seen[2]);
    expect(events.filter((e) => e[0] === "select").map((e) => e[1])).toContain(seen[0]);
    const result = app.search("nothing like this");
    expect(result.text).toBe("no match");
    expect(el.querySelectorAll(".node.match")).toHaveLength(0);
  });

  it("opens a folded group to reach a match inside it", () => {
    const { el, app } = mount(layeredTrace(50), { view: "forward" }); // 400 nodes: opens folded
    expect(el.querySelectorAll('[data-kind="group"]').length).toBeGreaterThan(0);
    const { matches, current } = app.search("model.layers.7.weight");
    expect(matches).toHaveLength(1);
    expect(app.state.selected).toBe(current);
    expect(el.querySelector(`[data-node-id="${current}"]`)).not.toBeNull();
  });
});

describe("hiding shape-only nodes", () => {
  it("knows the shape-only classes and ops", () => {
    for (const label of ["ViewBackward0", "UnsafeViewBackward0", "ExpandBackward0", "CloneBackward0", "TransposeBackward0", "TBackward0", "PermuteBackward0", "UnsqueezeBackward0", "SqueezeBackward1", "ReshapeAliasBackward0"]) {
      expect(isShapeOnly({ kind: "node", label })).toBe(true);
    }
    for (const label of ["MulBackward0", "TanhBackward0", "AccumulateGrad", "SumBackward0", "MmBackward0"]) expect(isShapeOnly({ kind: "node", label })).toBe(false);
    expect(isShapeOnly({ kind: "op", label: "view", sub: "ViewBackward0" })).toBe(true);
    expect(isShapeOnly({ kind: "op", label: "reshape", sub: "no grad_fn" })).toBe(true);
    expect(isShapeOnly({ kind: "op", label: "mul", sub: "MulBackward0" })).toBe(false);
    expect(isShapeOnly({ kind: "tensor", label: "x", sub: "" })).toBe(false);
  });

  it("joins the edges through a chain of hidden nodes in the backward view", () => {
    const index = indexTrace(reshapeTrace());
    const view = backwardView(index);
    expect(edgeSet(view)).toEqual(["n1>n0", "n2>n1", "n3>n2", "n3>n5", "n4>n3"]);
    const shown = hideShapeOnly(view);
    expect(shown.nodes.map((n) => n.id).sort()).toEqual(["n0", "n3", "n4", "n5"]);
    expect(edgeSet(shown)).toEqual(["n3>n0", "n3>n5", "n4>n3"]);
    // the joined edge keeps the slot it left from (MulBackward0's input 0)
    expect(shown.edges.find((e) => e.to === "n0").slot).toBe(0);
  });

  it("hides the op and its result in the forward view, joining tensor to op", () => {
    const index = indexTrace(reshapeTrace());
    const shown = hideShapeOnly(forwardView(index));
    expect(shown.nodes.map((n) => n.id).sort()).toEqual(["o2", "o3", "t0", "t1", "t4", "t5"]);
    expect(edgeSet(shown)).toEqual(["o2>t4", "o3>t5", "t0>o2", "t1>o2", "t4>o3"]);
  });

  it("keeps a shape op whose result is the output, and a leaf", () => {
    const trace = reshapeTrace();
    trace.tensors[5].role = "intermediate";
    trace.tensors.push({ id: "t6", name: "out", role: "output", shape: [1], dtype: "float32", grad_fn: "n6", op: "o4" });
    trace.ops.push({ id: "o4", op: "view", inputs: ["t5"], outputs: ["t6"], node: "n6" });
    trace.nodes.push({ id: "n6", name: "ViewBackward0", op: "o4", next: [["n4", 0]], saved: {} });
    const shown = hideShapeOnly(forwardView(indexTrace(trace)));
    expect(shown.nodes.map((n) => n.id)).toContain("o4");
    expect(shown.nodes.map((n) => n.id)).toContain("t6");
  });

  it("joins every path once (diamonds through hidden nodes)", () => {
    const graph = {
      nodes: ["a", "v1", "v2", "b"].map((id) => ({ id })),
      edges: [
        { from: "a", to: "v1", slot: 0 },
        { from: "a", to: "v2", slot: 1 },
        { from: "v1", to: "b", slot: 0 },
        { from: "v2", to: "b", slot: 0 },
      ],
    };
    const shown = withoutNodes(graph, new Set(["v1", "v2"]));
    expect(edgeSet(shown)).toEqual(["a>b"]);
  });

  it("toggles in the widget, and says how many it hid", () => {
    const { el, app } = mount(reshapeTrace());
    expect(el.querySelectorAll('[data-label="ViewBackward0"]')).toHaveLength(1);
    const toggle = el.querySelector('[data-role="hide-shapes"]');
    expect(toggle.closest("label").hidden).toBe(false);
    app.setHideShapes(true);
    expect(el.querySelectorAll('[data-label="ViewBackward0"], [data-label="UnsqueezeBackward0"]')).toHaveLength(0);
    expect(el.querySelectorAll(".edge")).toHaveLength(3);
    expect(el.querySelector('[data-role="status"]').textContent).toContain("2 reshapes hidden");
    app.setHideShapes(false);
    expect(el.querySelectorAll('[data-label="ViewBackward0"]')).toHaveLength(1);
  });

  it("offers no toggle where there is nothing to hide", () => {
    const { el } = mount(simpleTrace());
    expect(el.querySelector('[data-role="hide-shapes"]').closest("label").hidden).toBe(true);
  });
});

describe("the legend", () => {
  it("says which way the arrows run in each view", () => {
    expect(legendText("backward")).toMatch(/from the loss/);
    expect(legendText("backward")).toMatch(/next_functions/);
    expect(legendText("backward")).toMatch(/leaves/);
    expect(legendText("forward")).toMatch(/data/);
    expect(legendText("forward")).toMatch(/inputs/);
  });

  it("follows the view switch", () => {
    const { el } = mount(simpleTrace());
    const legend = el.querySelector('[data-role="legend"]');
    expect(legend.textContent).toBe(legendText("backward"));
    el.querySelector('[data-view="forward"]').click();
    expect(legend.textContent).toBe(legendText("forward"));
  });
});

describe("the widget's height", () => {
  it("starts at the option and follows the handle", () => {
    const { el, app, events } = mount(simpleTrace(), { height: 700 });
    const page = el.querySelector(".nbgrad-widget");
    expect(page.style.height).toBe("700px");
    const handle = el.querySelector('[data-role="resize"]');
    handle.dispatchEvent(new MouseEvent("pointerdown", { bubbles: true, button: 0, clientY: 100 }));
    handle.dispatchEvent(new MouseEvent("pointermove", { bubbles: true, clientY: 250 }));
    handle.dispatchEvent(new MouseEvent("pointerup", { bubbles: true, clientY: 250 }));
    expect(page.style.height).toBe("850px");
    expect(events).toContainEqual(["height", 850]);
    app.setHeight(100); // not below the smallest useful height
    expect(parseFloat(page.style.height)).toBeGreaterThanOrEqual(260);
  });

  it("defaults to 560 px", () => {
    const { el } = mount(simpleTrace());
    expect(el.querySelector(".nbgrad-widget").style.height).toBe("560px");
  });
});
