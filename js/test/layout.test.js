import dagre from "@dagrejs/dagre";
import { describe, expect, it } from "vitest";
import { groupPaths, inGroup, initialCollapsed, visibleGraph } from "../src/groups.js";
import { CLUSTER_LIMIT, clustersOf, layout, layoutInput, longestPathRanks, nodeSize } from "../src/layout.js";
import { indexTrace } from "../src/trace.js";
import { backwardView, drawnIdFor, forwardView } from "../src/views.js";
import { layeredTrace, simpleTrace } from "./fixtures.js";

describe("views", () => {
  it("the forward view has tensors and ops joined input -> op -> output", () => {
    const view = forwardView(indexTrace(simpleTrace()));
    expect(view.nodes.map((n) => n.id)).toEqual(["t0", "t1", "o0", "t2", "t3", "o1", "t4"]);
    expect(view.nodes.find((n) => n.id === "t0")).toMatchObject({ kind: "tensor", label: "a", role: "leaf", sub: "scalar float32" });
    expect(view.nodes.find((n) => n.id === "o1")).toMatchObject({ kind: "op", label: "mul", sub: "MulBackward0" });
    expect(view.edges.map((e) => `${e.from}>${e.to}`)).toEqual(["t0>o0", "t1>o0", "o0>t2", "t2>o1", "t3>o1", "o1>t4"]);
  });

  it("the backward view joins grad_fn nodes by next_functions down to AccumulateGrad", () => {
    const view = backwardView(indexTrace(simpleTrace()));
    const byId = Object.fromEntries(view.nodes.map((n) => [n.id, n]));
    expect(byId.n3).toMatchObject({ label: "MulBackward0", sub: "e", role: "root" });
    expect(byId.n1).toMatchObject({ label: "AccumulateGrad", sub: "a", role: "accumulate" });
    expect(view.edges.map((e) => `${e.from}>${e.to}`)).toEqual(["n0>n1", "n0>n2", "n3>n0", "n3>n4"]);
  });

  it("maps a selection between the views", () => {
    const index = indexTrace(simpleTrace());
    expect(drawnIdFor(index, "n3", "forward")).toBe("o1");
    expect(drawnIdFor(index, "n1", "forward")).toBe("t0");
    expect(drawnIdFor(index, "t0", "backward")).toBe("n1");
    expect(drawnIdFor(index, "t2", "backward")).toBe("n0");
    expect(drawnIdFor(index, "o1", "backward")).toBe("n3");
  });
});

describe("layout input", () => {
  it("gives dagre one box per drawn node and one edge per drawn edge", () => {
    const view = backwardView(indexTrace(simpleTrace()));
    const input = layoutInput(view);
    expect(input.nodes).toHaveLength(5);
    expect(input.edges).toEqual(view.edges.map((e) => ({ v: e.from, w: e.to })));
    for (const node of input.nodes) {
      expect(node.width).toBeGreaterThanOrEqual(56);
      expect(node.height).toBeGreaterThan(0);
    }
    expect(nodeSize({ label: "AccumulateGrad", sub: "a" }).width).toBeGreaterThan(nodeSize({ label: "a", sub: "" }).width);
  });

  it("places every node, parents above children", () => {
    const view = backwardView(indexTrace(simpleTrace()));
    const laid = layout(view);
    for (const node of view.nodes) expect(laid.positions.get(node.id)).toBeDefined();
    for (const edge of view.edges) expect(laid.positions.get(edge.from).y).toBeLessThan(laid.positions.get(edge.to).y);
    expect(laid.width).toBeGreaterThan(0);
  });

  it("ranks a 20,000-deep chain without overflowing the stack (longest path, sinks at 0)", () => {
    const g = new dagre.graphlib.Graph();
    g.setGraph({});
    g.setDefaultEdgeLabel(() => ({ minlen: 1 }));
    for (let i = 0; i < 20000; i++) g.setNode(`v${i}`, {});
    for (let i = 1; i < 20000; i++) g.setEdge(`v${i - 1}`, `v${i}`, { minlen: 1 });
    g.setNode("leaf", {});
    g.setEdge("leaf", "v19999", { minlen: 1 });
    longestPathRanks(g);
    expect(g.node("v19999").rank - g.node("v0").rank).toBe(19999);
    expect(g.node("leaf").rank).toBe(g.node("v19999").rank - 1); // a source: right above its child
  });

  it("hangs a sink right under its lowest parent, not at the foot of the graph", () => {
    const g = new dagre.graphlib.Graph();
    g.setGraph({});
    for (let i = 0; i < 50; i++) g.setNode(`v${i}`, {});
    for (let i = 1; i < 50; i++) g.setEdge(`v${i - 1}`, `v${i}`, { minlen: 1 });
    g.setNode("acc", {});
    g.setEdge("v0", "acc", { minlen: 1 });
    longestPathRanks(g);
    expect(g.node("acc").rank).toBe(g.node("v0").rank + 1);
  });

  it("lays out a deep 1,500-node graph", () => {
    const view = forwardView(indexTrace(layeredTrace(190)));
    expect(view.nodes.length).toBeGreaterThan(1400);
    const laid = layout(view);
    expect(laid.positions.size).toBe(view.nodes.length);
  });
});

describe("module groups", () => {
  const trace = layeredTrace(3);
  const index = indexTrace(trace);
  const view = forwardView(index);

  it("lists the groups, parents first", () => {
    expect(groupPaths(view, index.modules)).toEqual(["model", "model.layers.0", "model.layers.1", "model.layers.2"]);
  });

  it("folds a collapsed group into one node, keeping the edges across it", () => {
    const visible = visibleGraph(view, new Set(["model.layers.1"]), index.modules);
    const group = visible.nodes.find((n) => n.id === "group:model.layers.1");
    expect(group).toMatchObject({ kind: "group", label: "model.layers.1", className: "Linear" });
    expect(group.members).toBeGreaterThan(3);
    expect(visible.nodes.some((n) => n.group === "model.layers.1")).toBe(false);
    // relu0 (in model) feeds the folded layer 1; the folded layer feeds relu1
    expect(visible.edges.some((e) => e.to === "group:model.layers.1")).toBe(true);
    expect(visible.edges.some((e) => e.from === "group:model.layers.1")).toBe(true);
    expect(visible.edges.every((e) => e.from !== e.to)).toBe(true);
  });

  it("folds everything into the outermost collapsed group", () => {
    const visible = visibleGraph(view, new Set(groupPaths(view, index.modules)), index.modules);
    expect(visible.nodes.filter((n) => n.kind === "group").map((n) => n.id)).toEqual(["group:model"]);
  });

  it("opens small views expanded and large ones collapsed", () => {
    expect(initialCollapsed(view, index.modules, 300).size).toBe(0);
    const big = forwardView(indexTrace(layeredTrace(50)));
    expect(initialCollapsed(big, {}, 300).size).toBeGreaterThan(0);
  });
});

describe("custom Functions in the forward view", () => {
  it("draws the Function's call, not the ops inside its forward or plain backward arithmetic", () => {
    const trace = {
      tensors: [
        { id: "t0", name: "x", role: "leaf", shape: [2], dtype: "float32" },
        { id: "t1", name: "constant", role: "constant", shape: [2], dtype: "float32", op: "o0" },
        { id: "t2", name: "Square", role: "intermediate", shape: [2], dtype: "float32", grad_fn: "n0", op: "o1" },
        { id: "t4", name: "constant#2", role: "constant", shape: [2], dtype: "float32", op: "o3" },
      ],
      ops: [
        { id: "o0", op: "mul", inputs: ["t0", "t0"], outputs: ["t1"], function: "o1" },
        { id: "o1", op: "Square", inputs: ["t0"], outputs: ["t2"], node: "n0" },
        { id: "o3", op: "mul", inputs: ["t0", { const: 2 }], outputs: ["t4"], in_backward: 0 },
      ],
      nodes: [{ id: "n0", name: "SquareBackward", op: "o1", next: [], saved: { "tensors[0]": { tensor: "t0" } } }],
    };
    const view = forwardView(indexTrace(trace));
    expect(view.nodes.map((n) => n.id)).toEqual(["t0", "o1", "t2"]);
  });
});

describe("module groups laid out as clusters", () => {
  // A small seeded generator (mulberry32), so that every run checks the same graphs.
  const random = (seed) => () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const PATHS = [null, "m", "m.a", "m.a.fc", "m.b", "m.b.fc", "head"];

  /** A random DAG of `size` nodes, each in a random group (or none), edges downwards. */
  function randomGraph(seed, size) {
    const next = random(seed);
    const nodes = [];
    const edges = [];
    for (let i = 0; i < size; i++) {
      nodes.push({ id: `v${i}`, label: `Node${i}`, sub: "", group: PATHS[Math.floor(next() * PATHS.length)] });
      for (let j = 0; j < i; j++) if (next() < 2 / i) edges.push({ from: `v${j}`, to: `v${i}` });
    }
    return { nodes, edges };
  }

  const inside = (inner, outer) =>
    inner.x >= outer.x - 0.5 && inner.y >= outer.y - 0.5 && inner.x + inner.width <= outer.x + outer.width + 0.5 && inner.y + inner.height <= outer.y + outer.height + 0.5;
  const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  const nodeBox = ({ x, y, width, height }) => ({ x: x - width / 2, y: y - height / 2, width, height });

  it("lists each open group with drawn members, nested in the nearest open ancestor", () => {
    const graph = { nodes: [{ id: "a", group: "m.a.fc" }, { id: "b", group: "m" }, { id: "c", group: "x.y" }, { id: "d", group: null }], edges: [] };
    const { parentOf, clusterOfNode } = clustersOf(graph, ["m", "m.a.fc", "x"]);
    expect([...parentOf]).toEqual([["m.a.fc", "m"], ["m", null], ["x", null]]);
    expect([...clusterOfNode]).toEqual([["a", "m.a.fc"], ["b", "m"], ["c", "x"]]);
  });

  /** A random program of module calls, as models run: each call is a short chain of ops in
   * its module, on the previous output (sometimes also an earlier one: a skip connection), with
   * parameter leaves of its own. Edges point forward, as in the forward view. */
  function moduleProgram(seed, calls) {
    const next = random(seed);
    const nodes = [];
    const edges = [];
    const outputs = [];
    const add = (group, inputs) => {
      const id = `v${nodes.length}`;
      nodes.push({ id, label: `Op${nodes.length}`, sub: group || "", group });
      for (const from of inputs) edges.push({ from, to: id });
      return id;
    };
    let last = add(null, []);
    outputs.push(last);
    for (let c = 0; c < calls; c++) {
      const group = PATHS[1 + Math.floor(next() * (PATHS.length - 1))];
      const skip = next() < 0.3 ? outputs[Math.floor(next() * outputs.length)] : null;
      for (let k = 0, length = 1 + Math.floor(next() * 3); k < length; k++) {
        const parameter = next() < 0.5 ? [add(group, [])] : [];
        last = add(group, [last, ...parameter, ...(k === 0 && skip && skip !== last ? [skip] : [])]);
      }
      outputs.push(last);
    }
    add(null, [last]);
    return { nodes, edges };
  }

  function checkBoxes(label, graph, { strict }) {
    const expanded = PATHS.filter((p) => p && graph.nodes.some((n) => inGroup(n, p)));
    const laid = layout(graph, expanded);
    expect(laid.groups.map((b) => b.path).sort()).toEqual([...expanded].sort());
    const boxes = new Map(laid.groups.map((b) => [b.path, b]));
    for (const [path, box] of boxes) {
      const parent = expanded.filter((p) => path.startsWith(`${p}.`)).pop();
      if (parent) expect(inside(box, boxes.get(parent)), `${label}: ${path} in ${parent}`).toBe(true);
      for (const node of graph.nodes) {
        const b = nodeBox(laid.positions.get(node.id));
        if (inGroup(node, path)) expect(inside(b, box), `${label}: ${node.id} in ${path}`).toBe(true);
        else if (strict) expect(overlaps(b, box), `${label}: ${node.id} (${node.group}) crosses ${path}`).toBe(false);
      }
    }
    for (const edge of graph.edges) expect(laid.positions.get(edge.from).y).toBeLessThan(laid.positions.get(edge.to).y);
  }

  it("keeps every group's members in its box and every other node out of it (40 module programs)", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const graph = moduleProgram(seed, 3 + (seed % 12));
      expect(graph.nodes.length).toBeLessThanOrEqual(CLUSTER_LIMIT); // laid out as clusters
      checkBoxes(`program ${seed}`, graph, { strict: true });
    }
  }, 60000);

  it("keeps members in their boxes, and boxes in their parents', in tangled graphs (40 random DAGs)", () => {
    // Groups scattered at random over a random DAG: dagre keeps them apart almost always, not
    // always, so only what the box itself guarantees is checked.
    for (let seed = 1; seed <= 40; seed++) checkBoxes(`random ${seed}`, randomGraph(seed, 8 + (seed % 30)), { strict: false });
  }, 60000);

  it("falls back to bounding boxes above the cluster limit", () => {
    const view = forwardView(indexTrace(layeredTrace(60)));
    expect(view.nodes.length).toBeGreaterThan(CLUSTER_LIMIT);
    const laid = layout(view, groupPaths(view, indexTrace(layeredTrace(60)).modules));
    const box = laid.groups.find((b) => b.path === "model.layers.3");
    for (const node of view.nodes.filter((n) => n.group === "model.layers.3")) expect(inside(nodeBox(laid.positions.get(node.id)), box)).toBe(true);
  });
});
