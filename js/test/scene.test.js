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
