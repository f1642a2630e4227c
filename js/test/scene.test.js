// Drawing only what is on screen (draw.js's scene): what is in the DOM follows the viewport,
// and the classes of selection, search and the timeline follow the nodes drawn later.
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { CULL_MIN_NODES, MAX_DOM_NODES, createScene, cullRect, visibleParts } from "../src/draw.js";
import { s } from "../src/dom.js";
import { layeredTrace } from "./fixtures.js";

/** A column of `n` nodes 60 px apart, each joined to the next, in one group box per 10 nodes. */
function column(n) {
  const nodes = [];
  const positions = new Map();
  const edges = [];
  const groups = [];
  for (let i = 0; i < n; i++) {
    nodes.push({ id: `v${i}`, kind: "node", label: `Op${i}`, sub: "", group: `g${Math.floor(i / 10)}` });
    positions.set(`v${i}`, { x: 100, y: 30 + 60 * i, width: 80, height: 40 });
    if (i) edges.push({ from: `v${i - 1}`, to: `v${i}`, points: [{ x: 100, y: 50 + 60 * (i - 1) }, { x: 100, y: 10 + 60 * i }] });
  }
  for (let k = 0; k * 10 < n; k++) groups.push({ path: `g${k}`, x: 50, y: 60 * 10 * k, width: 100, height: 600 });
  return { graph: { nodes, edges }, laid: { positions, edges, groups, width: 200, height: 60 * n } };
}

function sceneOf(n) {
  const layers = { groups: s("g"), edges: s("g"), nodes: s("g") };
  const svg = s("svg", null, layers.groups, layers.edges, layers.nodes);
  document.body.append(svg);
  const scene = createScene(layers, "arrow");
  const { graph, laid } = column(n);
  scene.show(graph, laid, {});
  const ids = () => [...layers.nodes.querySelectorAll("[data-node-id]")].map((el) => el.getAttribute("data-node-id"));
  return { scene, layers, ids };
}

describe("what meets the screen", () => {
  it("is found from the layout's coordinates: nodes, edges and group boxes in a rectangle", () => {
    const { laid } = column(100);
    const parts = visibleParts(laid, { x: 0, y: 600, width: 200, height: 300 });
    // nodes whose boxes meet y 600..900: centres 630..870 and the one reaching into 600
    expect(parts.nodes).toEqual(["v10", "v11", "v12", "v13", "v14"]);
    expect(parts.edges).toContain("v9>v10"); // it ends at y 610
    expect(parts.edges).not.toContain("v20>v21");
    expect(parts.groups).toEqual(["g0", "g1"]); // g0 ends at y 600 exactly
    expect(visibleParts(laid, { x: 300, y: 0, width: 100, height: 9999 }).nodes).toEqual([]);
  });

  it("keeps a margin around the screen", () => {
    expect(cullRect({ x: 100, y: 200, width: 400, height: 300 }, 0.5)).toEqual({ x: -100, y: 50, width: 800, height: 600 });
  });
});

describe("the scene", () => {
  it("draws a small graph whole, whatever is on screen", () => {
    const { scene, ids } = sceneOf(CULL_MIN_NODES);
    scene.update({ x: 0, y: 0, width: 10, height: 10 });
    expect(ids()).toHaveLength(CULL_MIN_NODES);
  });

  it("puts in the DOM only what is on screen, and follows a pan", () => {
    const { scene, layers, ids } = sceneOf(1000);
    scene.update({ x: 0, y: 0, width: 400, height: 300 });
    expect(ids()).toEqual(["v0", "v1", "v2", "v3", "v4"]);
    expect(layers.edges.querySelectorAll("path.edge")).toHaveLength(5); // v4>v5 reaches y 310
    expect(layers.groups.querySelectorAll("[data-group]")).toHaveLength(1);
    scene.update({ x: 0, y: 30000, width: 400, height: 300 });
    expect(ids()).toEqual(["v500", "v501", "v502", "v503", "v504"]);
    expect(layers.nodes.querySelector('[data-node-id="v0"]')).toBeNull();
  });

  it("gives a node drawn later the classes it was given while off screen", () => {
    const { scene, layers } = sceneOf(1000);
    scene.update({ x: 0, y: 0, width: 400, height: 300 });
    scene.decorate({ nodes: new Map([["v0", ["selected"]], ["v700", ["match", "current"]]]), edges: new Map([["v700>v701", ["lit"]]]) });
    expect(layers.nodes.querySelector('[data-node-id="v0"]').classList.contains("selected")).toBe(true);
    expect(layers.nodes.querySelector('[data-node-id="v700"]')).toBeNull();
    scene.update({ x: 0, y: 60 * 700, width: 400, height: 300 });
    const node = layers.nodes.querySelector('[data-node-id="v700"]');
    expect([...node.classList]).toEqual(expect.arrayContaining(["match", "current"]));
    const edge = layers.edges.querySelector('[data-from="v700"][data-to="v701"]');
    expect(edge.classList.contains("lit")).toBe(true);
    expect(edge.getAttribute("marker-end")).toBe("url(#arrow-lit)");
    expect(layers.edges.lastElementChild).toBe(edge); // drawn on top
    // classes taken away while off screen are gone when it comes back
    scene.decorate({ nodes: new Map(), edges: new Map() });
    scene.update({ x: 0, y: 0, width: 400, height: 300 });
    expect(layers.nodes.querySelector('[data-node-id="v0"]').classList.contains("selected")).toBe(false);
  });

  it("draws outlines, not thousands of elements, when zoomed out that far", () => {
    const { scene, layers, ids } = sceneOf(3000);
    scene.decorate({ nodes: new Map([["v10", ["selected"]]]), edges: new Map() });
    scene.update({ x: 0, y: 0, width: 10000, height: 60 * 3000 });
    expect(ids()).toEqual([]);
    expect(layers.nodes.querySelector(".outline-nodes").getAttribute("d").match(/M/g)).toHaveLength(3000);
    expect(layers.nodes.querySelector(".outline-marked").getAttribute("d").match(/M/g)).toHaveLength(1);
    expect(3000).toBeGreaterThan(MAX_DOM_NODES);
    // zoomed in again: elements, and no outline
    scene.update({ x: 0, y: 0, width: 400, height: 300 });
    expect(ids()).toHaveLength(5);
    expect(layers.nodes.querySelector(".outline-nodes")).toBeNull();
  });
});

describe("a large graph in the widget", () => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

  it("has only the nodes on screen in the DOM, draws more on a pan, and keeps the selection", async () => {
    const el = document.createElement("div");
    document.body.append(el);
    const app = createApp(el, { trace: layeredTrace(120, { backward: true }), view: "backward" });
    el.querySelector('[data-role="expand-all"]').click();
    await frame(); // the first frame fits the view to the page
    const total = app.state.visible.nodes.length;
    expect(total).toBeGreaterThan(CULL_MIN_NODES);
    const inDom = () => [...el.querySelectorAll("svg.graph [data-node-id]")].map((n) => n.getAttribute("data-node-id"));
    const first = inDom();
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(total / 4);
    // select a node far from the screen: the view moves there, and it is drawn selected
    const far = [...app.state.laid.positions.entries()].sort((a, b) => b[1].y - a[1].y)[0][0];
    expect(first).not.toContain(far);
    app.select(far);
    await frame();
    const node = el.querySelector(`[data-node-id="${far}"]`);
    expect(node).not.toBeNull();
    expect(node.classList.contains("selected")).toBe(true);
    expect(inDom().length).toBeLessThan(total / 4);
  });
});

/** h = relu(h @ w) `steps` times with one weight w, no modules: w's AccumulateGrad is drawn once
 * per use and the steps fold into a loop (fold.js); a backward pass runs every node. */
function sharedWeightTrace(steps) {
  const t = (id, name, role) => ({ id, name, role, shape: [2], dtype: "float32", requires_grad: role !== "constant", value: [1, 2] });
  const tensors = [t("x", "x", "constant"), t("w", "w", "leaf")];
  const nodes = [{ id: "nw", name: "AccumulateGrad", next: [], saved: {}, variable: "w" }];
  const ops = [];
  let prev = null;
  let input = "x";
  for (let i = 0; i < steps; i++) {
    for (const [op, name, nexts, inputs] of [
      ["mm", "MmBackward0", [prev, "nw"], [input, "w"]],
      ["relu", "ReluBackward0", null, null],
    ]) {
      const id = `${op}${i}`;
      const next = nexts || [`n_mm${i}`];
      nodes.push({ id: `n_${id}`, name, op: `o_${id}`, next: next.map((n) => (n ? [n, 0] : null)), saved: {} });
      tensors.push({ ...t(`t_${id}`, `${op}${i}`, "intermediate"), grad_fn: `n_${id}`, op: `o_${id}` });
      ops.push({ id: `o_${id}`, op, inputs: inputs || [`t_mm${i}`], outputs: [`t_${id}`], node: `n_${id}` });
    }
    prev = `n_relu${i}`;
    input = `t_relu${i}`;
  }
  tensors[tensors.length - 1].role = "output";
  const order = [...nodes].reverse();
  return {
    version: 1,
    source: { kind: "cell", lines: {} },
    status: { complete: true },
    modules: {},
    formulas: {},
    tensors,
    ops,
    nodes,
    passes: [{ index: 0, kind: "backward", roots: [[prev, 0]] }],
    steps: order.map((n) => ({ pass: 0, node: n.id, grads_in: [1], grads_out: n.next.map(() => 1) })),
    accumulations: [],
  };
}

describe("folded loops, leaves drawn per use, and the neighbourhood", () => {
  function mountShared() {
    const el = document.createElement("div");
    document.body.append(el);
    const app = createApp(el, { trace: sharedWeightTrace(100), view: "backward" });
    el.querySelector('[data-role="expand-all"]').click();
    return { el, app };
  }

  it("lights every copy of a leaf drawn per use at its timeline step", () => {
    const { el, app } = mountShared();
    const copies = app.state.visible.copies.get("nw");
    expect(copies.length).toBe(100);
    expect(el.querySelectorAll('[data-node-id^="nw~"]')).toHaveLength(100); // 300 nodes: not culled
    const step = app.state.index.steps.findIndex((s) => s.node === "nw") + 1;
    app.setStep(step);
    expect(el.querySelectorAll('[data-node-id^="nw~"].current')).toHaveLength(100);
    // the step of a MmBackward0 lights its edge to its own copy of w
    const mm = app.state.index.steps.findIndex((s) => s.node === "n_mm50") + 1;
    app.setStep(mm);
    const lit = [...el.querySelectorAll(".edge.lit")].map((e) => `${e.getAttribute("data-from")}>${e.getAttribute("data-to")}`);
    expect(lit.some((key) => key.startsWith("n_mm50>nw~"))).toBe(true);
  });

  it("says what a folded loop is, not a module class", () => {
    const { el, app } = mountShared();
    const loop = Object.keys(app.state.index.modules).find((p) => /^loop\d+$/.test(p));
    expect(loop).toBeDefined();
    app.select(`group:${loop}`);
    const text = el.querySelector('[data-role="inspector"]').textContent;
    expect(text).toMatch(/repeated loop body, \d+ times/);
    expect(text).not.toContain("class");
    expect(text).not.toMatch(/loop ×/);
    app.select(`group:${loop}.3`);
    expect(el.querySelector('[data-role="inspector"]').textContent).toMatch(/repetition 4 of \d+ of a loop body/);
  });

  it("draws a node's parents and children alone when asked, and goes back", () => {
    const { el, app } = mountShared();
    const whole = app.state.visible.nodes.length;
    app.showNeighbourhood("n_mm50");
    const ids = app.state.visible.nodes.map((n) => n.id);
    // 8 edges up and down the chain of steps (relu, mm alternate), and the copies of w they use
    expect(ids).toContain("n_mm50");
    expect(ids).toContain("n_mm54"); // 8 edges up
    expect(ids).toContain("n_relu46"); // 8 edges down
    expect(ids).not.toContain("n_mm55");
    expect(ids).not.toContain("n_relu45");
    expect(ids.filter((id) => id.startsWith("nw~")).length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(40);
    const status = el.querySelector('[data-role="status"]').textContent;
    expect(status).toContain(`showing ${ids.length} of`);
    expect(status).toContain("MmBackward0 and its parents and children up to 8 edges away");
    expect(el.querySelector('[data-node-id="n_mm50"]').classList.contains("selected")).toBe(true);
    el.querySelector('[data-role="whole-graph"]').click();
    expect(app.state.visible.nodes.length).toBe(whole);
    expect(el.querySelector('[data-role="whole-graph"]')).toBeNull();
  });
});
