import { describe, expect, it } from "vitest";
import { COPY_SEPARATOR, copySharedLeaves, findRepeat, foldRepeats, originalId, prepareView } from "../src/fold.js";
import { groupPaths, initialCollapsed, visibleGraph, withinBudget } from "../src/groups.js";
import { layeredLayout, rankLayers } from "../src/layered.js";
import { layout, layoutInput } from "../src/layout.js";

/** The backward view of an MLP of nn.Linear + ReLU layers, as nbgrad draws it: each layer's
 * AddmmBackward0 reads the bias's AccumulateGrad, the layer below, and a TBackward0 over the
 * weight's AccumulateGrad. */
function mlpBackward(layers) {
  const nodes = [{ id: "sum", label: "SumBackward0" }];
  const edges = [];
  let above = "sum";
  for (let i = layers - 1; i >= 0; i--) {
    const relu = `relu${i}`;
    const addmm = `addmm${i}`;
    nodes.push({ id: relu, label: "ReluBackward0" }, { id: addmm, label: "AddmmBackward0" });
    nodes.push({ id: `t${i}`, label: "TBackward0" }, { id: `accW${i}`, label: "AccumulateGrad" }, { id: `accB${i}`, label: "AccumulateGrad" });
    edges.push({ from: above, to: relu }, { from: relu, to: addmm }, { from: addmm, to: `accB${i}` });
    edges.push({ from: addmm, to: `t${i}` }, { from: `t${i}`, to: `accW${i}` });
    above = addmm;
  }
  return { nodes: nodes.map((n) => ({ kind: "node", sub: "", role: "function", group: null, ...n })), edges };
}

/** The backward view of an RNN unrolled by hand for `steps` steps: h = tanh(h @ W + x), one
 * AccumulateGrad for W read by every step's MmBackward0, a loss term per step. */
function rnnBackward(steps) {
  const nodes = [{ id: "accW", label: "AccumulateGrad", sub: "W", role: "accumulate" }];
  const edges = [];
  let loss = null;
  for (let t = steps - 1; t >= 0; t--) {
    nodes.push({ id: `loss${t}`, label: "AddBackward0" }, { id: `mean${t}`, label: "MeanBackward0" });
    nodes.push({ id: `tanh${t}`, label: "TanhBackward0" }, { id: `add${t}`, label: "AddBackward0" }, { id: `mm${t}`, label: "MmBackward0" });
    if (loss) edges.push({ from: loss, to: `loss${t}` });
    edges.push({ from: `loss${t}`, to: `mean${t}` }, { from: `mean${t}`, to: `tanh${t}` });
    edges.push({ from: `tanh${t}`, to: `add${t}` }, { from: `add${t}`, to: `mm${t}` }, { from: `mm${t}`, to: "accW" });
    if (t > 0) edges.push({ from: `mm${t}`, to: `tanh${t - 1}` });
    loss = `loss${t}`;
  }
  return { nodes: nodes.map((n) => ({ kind: "node", sub: "", role: "function", group: null, ...n })), edges };
}

/** Ranks of a view's nodes by id. */
function ranksOf(view) {
  const indexOf = new Map(view.nodes.map((n, i) => [n.id, i]));
  const ranks = rankLayers(
    view.nodes.length,
    view.edges.map((e) => indexOf.get(e.from)),
    view.edges.map((e) => indexOf.get(e.to)),
  );
  return new Map(view.nodes.map((n, i) => [n.id, ranks[i]]));
}

describe("ranking: every node near its parents", () => {
  it("puts no TBackward0 of an MLP on the bottom rank: each sits right under its AddmmBackward0", () => {
    const view = mlpBackward(200);
    const ranks = ranksOf(view);
    const bottom = Math.max(...ranks.values());
    for (let i = 0; i < 200; i++) {
      expect(ranks.get(`t${i}`)).toBe(ranks.get(`addmm${i}`) + 1);
      expect(ranks.get(`accW${i}`)).toBe(ranks.get(`t${i}`) + 1);
      expect(ranks.get(`accB${i}`)).toBe(ranks.get(`addmm${i}`) + 1);
    }
    expect(view.nodes.filter((n) => n.label === "TBackward0" && ranks.get(n.id) === bottom).map((n) => n.id)).toEqual([]);
  });

  it("ranks every node with parents right below its lowest parent in an MLP (edges one rank long)", () => {
    const view = mlpBackward(50);
    const ranks = ranksOf(view);
    for (const edge of view.edges) expect(ranks.get(edge.to) - ranks.get(edge.from)).toBe(1);
  });

  it("puts what hangs above a node (a leaf and the ops that only feed it) right above it", () => {
    // forward view: a long chain, and at its foot an op reading x -> select -> x[t]
    const n = 30;
    const from = [];
    const to = [];
    for (let i = 1; i < n; i++) from.push(i - 1), to.push(i);
    const [x, select, xt] = [n, n + 1, n + 2];
    from.push(x, select, xt);
    to.push(select, xt, n - 1);
    const ranks = rankLayers(n + 3, from, to);
    expect(ranks[xt]).toBe(ranks[n - 1] - 1);
    expect(ranks[select]).toBe(ranks[n - 1] - 2);
    expect(ranks[x]).toBe(ranks[n - 1] - 3);
  });

  it("draws the MLP with each TBackward0 one rank below its layer, in dagre and in our layout", () => {
    for (const layers of [10, 300]) {
      // 10 layers: 51 nodes, laid out by dagre; 300: 1,501 nodes, by layered.js
      const view = mlpBackward(layers);
      const laid = layout(view);
      const rankGap = laid.positions.get("relu0").y - laid.positions.get("addmm1").y;
      expect(rankGap).toBeGreaterThan(0);
      for (let i = 0; i < layers; i++) {
        expect(laid.positions.get(`t${i}`).y - laid.positions.get(`addmm${i}`).y).toBeCloseTo(rankGap, 5);
      }
    }
  });
});

describe("our layered layout", () => {
  const overlaps = (a, b) => Math.abs(a.x - b.x) < (a.width + b.width) / 2 && Math.abs(a.y - b.y) < (a.height + b.height) / 2;

  it("places parents above children, no two boxes overlapping, edges from box to box", () => {
    const view = copySharedLeaves(rnnBackward(60));
    const input = layoutInput(view);
    const laid = layeredLayout(input);
    for (const edge of input.edges) expect(laid.positions.get(edge.v).y).toBeLessThan(laid.positions.get(edge.w).y);
    const boxes = [...laid.positions.values()].sort((a, b) => a.y - b.y || a.x - b.x);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length && boxes[j].y - boxes[i].y < 40; j++) expect(overlaps(boxes[i], boxes[j])).toBe(false);
    }
    laid.points.forEach((line, i) => {
      const from = laid.positions.get(input.edges[i].v);
      const to = laid.positions.get(input.edges[i].w);
      expect(line[0]).toEqual({ x: from.x, y: from.y + from.height / 2 });
      expect(line[line.length - 1]).toEqual({ x: to.x, y: to.y - to.height / 2 });
    });
  });

  it("keeps a chain with a leaf beside every node straight (no drift sideways)", () => {
    const laid = layout(mlpBackward(300));
    const xs = Array.from({ length: 300 }, (_, i) => laid.positions.get(`relu${i}`).x);
    expect(Math.max(...xs) - Math.min(...xs)).toBeLessThan(100);
    expect(laid.width).toBeLessThan(800);
  });

  it("lays out 20,000 nodes (no recursion, no quadratic pass)", () => {
    const laid = layout(mlpBackward(4000));
    expect(laid.positions.size).toBe(20001);
  }, 60000);
});

describe("a shared leaf is drawn once per use", () => {
  it("gives each step of an RNN its own copy of W's AccumulateGrad, linked to the node", () => {
    const view = copySharedLeaves(rnnBackward(40));
    expect(view.nodes.some((n) => n.id === "accW")).toBe(false);
    const copies = view.nodes.filter((n) => n.copyOf === "accW");
    expect(copies).toHaveLength(40);
    for (const copy of copies) {
      expect(originalId(copy.id)).toBe("accW");
      expect(copy.id.startsWith(`accW${COPY_SEPARATOR}`)).toBe(true);
      expect(copy.role).toContain("copy");
      const into = view.edges.filter((e) => e.to === copy.id);
      expect(into).toHaveLength(1);
      expect(into[0].from).toMatch(/^mm\d+$/);
    }
    // every step's MmBackward0 reaches its own copy
    for (let t = 0; t < 40; t++) expect(view.edges.filter((e) => e.from === `mm${t}` && originalId(e.to) === "accW")).toHaveLength(1);
    // the drawing: the node stands in its first copy, and knows them all (selection lights all)
    const visible = visibleGraph(view, new Set());
    expect(visible.copies.get("accW")).toHaveLength(40);
    expect(visible.standIn.get("accW")).toBe(visible.copies.get("accW")[0]);
  });

  it("copies the chain a shared node hangs on: TBackward0 -> AccumulateGrad", () => {
    const view = rnnBackward(20);
    // W.t() taken once before the loop: every step reads one TBackward0 over W's AccumulateGrad
    view.nodes.push({ id: "tW", label: "TBackward0", kind: "node", sub: "", role: "function", group: null });
    for (const edge of view.edges) if (edge.to === "accW") edge.to = "tW";
    view.edges.push({ from: "tW", to: "accW" });
    const copied = copySharedLeaves(view);
    const ts = copied.nodes.filter((n) => n.copyOf === "tW");
    const accs = copied.nodes.filter((n) => n.copyOf === "accW");
    expect(ts).toHaveLength(20);
    expect(accs).toHaveLength(20);
    for (const t of ts) expect(copied.edges.filter((e) => e.from === t.id).map((e) => originalId(e.to))).toEqual(["accW"]);
  });

  it("leaves a leaf whose uses are close together drawn once (gradients meet there)", () => {
    const view = {
      nodes: ["mul", "a1", "a2", "acc"].map((id) => ({ id, label: id, kind: "node", sub: "", role: "function", group: null })),
      edges: [
        { from: "mul", to: "a1" },
        { from: "mul", to: "a2" },
        { from: "a1", to: "acc" },
        { from: "a2", to: "acc" },
      ],
    };
    expect(copySharedLeaves(view)).toBe(view);
  });

  it("copies a forward view's leaf tensor read at every step, upwards", () => {
    const nodes = [{ id: "W", kind: "tensor", label: "W" }];
    const edges = [];
    for (let t = 0; t < 30; t++) {
      nodes.push({ id: `h${t}`, kind: "tensor", label: "h" }, { id: `mm${t}`, kind: "op", label: "mm" });
      if (t) edges.push({ from: `h${t - 1}`, to: `mm${t}` });
      edges.push({ from: "W", to: `mm${t}` }, { from: `mm${t}`, to: `h${t}` });
    }
    const view = copySharedLeaves({ nodes, edges }, "up");
    expect(view.nodes.filter((n) => n.copyOf === "W")).toHaveLength(30);
    for (let t = 0; t < 30; t++) expect(view.edges.filter((e) => e.to === `mm${t}` && originalId(e.from) === "W")).toHaveLength(1);
  });
});

describe("folding what has no modules", () => {
  it("finds the longest stretch where one block of names repeats", () => {
    const body = ["Tanh", "Add", "Add", "Mm"];
    const labels = ["Sum", "Mean", ...Array.from({ length: 12 }, () => body).flat(), "Acc"];
    expect(findRepeat(labels)).toEqual({ start: 2, period: 4, repeats: 12 });
    expect(findRepeat(["a", "b", "c", "d"])).toBe(null);
  });

  it("folds an unrolled RNN into one group per step inside one loop group", () => {
    const steps = 40;
    const { view, modules, labels } = foldRepeats(copySharedLeaves(rnnBackward(steps)));
    const loopGroups = Object.keys(modules).filter((p) => /^loop\d+\.\d+$/.test(p));
    expect(modules.loop1).toBe(`loop ×${loopGroups.length}`);
    expect(loopGroups.length).toBeGreaterThanOrEqual(steps - 2);
    expect(labels.loop1).toMatch(/^×\d+ /);
    // the repetitions are alike: the same number of nodes each, W's copy in each
    const sizes = new Map();
    for (const node of view.nodes) if (node.group) sizes.set(node.group, (sizes.get(node.group) || 0) + 1);
    const inner = [...sizes.entries()].filter(([p]) => p.startsWith("loop1.")).map(([, size]) => size);
    const alike = inner.filter((size) => size === 6).length; // loss, mean, tanh, add, mm, W's copy
    expect(alike).toBeGreaterThanOrEqual(inner.length - 4); // the ends of a loop may differ
    expect(view.nodes.filter((n) => n.copyOf === "accW" && n.group?.startsWith("loop1.")).length).toBeGreaterThanOrEqual(steps - 2);
  });

  it("opens a large folded loop on its repetitions, the top one unfolded; unfolds on click", () => {
    const modules = {};
    const view = prepareView(rnnBackward(80), modules, "down");
    const collapsed = initialCollapsed(view, modules, 300);
    expect(collapsed.has("loop1")).toBe(false);
    expect(collapsed.has("loop1.0")).toBe(false);
    expect(collapsed.has("loop1.5")).toBe(true);
    const folded = visibleGraph(view, collapsed, modules);
    expect(folded.nodes.length).toBeLessThan(view.nodes.length / 3);
    const node = folded.nodes.find((n) => n.id === "group:loop1.5");
    expect(node.label).toMatch(/\(6\/\d+\)$/);
    collapsed.delete("loop1.5");
    expect(visibleGraph(view, collapsed, modules).nodes.length).toBeGreaterThan(folded.nodes.length);
  });

  it("folds a long chain of single-input nodes", () => {
    const nodes = [];
    const edges = [];
    for (let i = 0; i < 200; i++) {
      nodes.push({ id: `v${i}`, kind: "node", label: `Op${i % 7}x${Math.floor(i / 7) % 3}${i}`, sub: "", group: null });
      if (i) edges.push({ from: `v${i - 1}`, to: `v${i}` });
    }
    const { view, modules } = foldRepeats({ nodes, edges });
    expect(modules.chain1).toBe("chain of 198"); // the two ends have one neighbour only
    expect(view.nodes.filter((n) => n.group === "chain1")).toHaveLength(198);
  });

  it("leaves small views without a repeated block as they are", () => {
    const nodes = ["Sum", "Mul", "Exp", "Add", "Log", "Sub", "Div", "Acc"].map((label, i) => ({ id: `v${i}`, kind: "node", label, sub: "", group: null }));
    const edges = nodes.slice(1).map((node, i) => ({ from: nodes[i].id, to: node.id }));
    expect(foldRepeats({ nodes, edges }).view.nodes).toBe(nodes);
  });
});

describe("the cost estimate before a layout", () => {
  it("opens groups outermost first while the drawing stays within the budget", () => {
    const modules = {};
    const view = prepareView(rnnBackward(80), modules, "down");
    const all = withinBudget(view, modules, new Set(), 100000);
    expect(all.complete).toBe(true);
    expect(all.drawn).toBe(view.nodes.length);
    const some = withinBudget(view, modules, new Set(), 120);
    expect(some.complete).toBe(false);
    expect(some.drawn).toBeLessThanOrEqual(120);
    expect(visibleGraph(view, some.collapsed, modules).nodes.length).toBe(some.drawn);
    expect(some.collapsed.has("loop1")).toBe(false); // the outer group opened first
    expect(groupPaths(view, modules).filter((p) => !some.collapsed.has(p)).length).toBeGreaterThan(1);
  });
});

describe("a huge view with nothing to fold by", () => {
  it("is cut into bands of ranks, so that the budget can keep it folded", () => {
    // 16,000 nodes of a random-looking DAG: no names repeat, no chains, no modules
    const nodes = [];
    const edges = [];
    for (let i = 0; i < 16000; i++) {
      nodes.push({ id: `v${i}`, kind: "node", label: `Op${i}`, sub: "", group: null });
      if (i >= 2) edges.push({ from: `v${i - 1}`, to: `v${i}` }, { from: `v${i - 2}`, to: `v${i}` });
    }
    const modules = {};
    const view = prepareView({ nodes, edges }, modules, "down");
    const parts = groupPaths(view, modules).filter((p) => p.startsWith("part"));
    expect(parts.length).toBe(16);
    const affordable = withinBudget(view, modules, new Set(), 12000);
    expect(affordable.complete).toBe(false);
    expect(visibleGraph(view, affordable.collapsed, modules).nodes.length).toBeLessThanOrEqual(12000);
  }, 60000);
});

describe("a loop inside a module", () => {
  it("is folded inside the module's group (an RNN module runs its steps inside itself)", () => {
    const rnn = rnnBackward(60);
    const view = { ...rnn, nodes: rnn.nodes.map((n) => ({ ...n, group: "model.rnn" })) };
    const modules = { model: "Net", "model.rnn": "RNN" };
    const prepared = prepareView(view, modules, "down");
    expect(modules["model.rnn.loop1"]).toMatch(/^loop ×\d+$/);
    expect(prepared.nodes.filter((n) => n.group?.startsWith("model.rnn.loop1.")).length).toBeGreaterThan(250);
    // opening the module shows its loop folded, not its 300 nodes
    const paths = groupPaths(prepared, modules);
    const collapsed = new Set(paths.filter((p) => p.startsWith("model.rnn.")));
    expect(visibleGraph(prepared, collapsed, modules).nodes.length).toBeLessThan(20);
  });
});

describe("both views of one trace", () => {
  it("name their new groups apart (they share one table of class names)", () => {
    const modules = {};
    const first = prepareView(rnnBackward(50), modules, "down");
    const classOfFirst = modules[first.loopPaths[0]];
    const second = prepareView(rnnBackward(60), modules, "down");
    expect(second.loopPaths[0]).not.toBe(first.loopPaths[0]);
    expect(modules[first.loopPaths[0]]).toBe(classOfFirst);
  });
});
