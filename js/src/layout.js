// Where each drawn node goes: dagre's layered layout, top to bottom.
//
// Ranks are dagre's longest-path ranking (sinks at the bottom, each node as low as its
// successors allow); it is passed to dagre as a ranker function written without recursion,
// because dagre's own recursive one overflows the stack on deep graphs (thousands of chained
// ops). Small graphs get dagre's crossing-minimisation; large ones keep the depth-first initial
// order (dagre's own first step, also without recursion): good enough for a chain of layers,
// and much faster. js/README.md has the measurements behind this.

import dagre from "@dagrejs/dagre";

export const CHAR_WIDTH = 7; // px of one character at the label font size
export const NODE_HEIGHT = 38;
export const FULL_ORDERING_LIMIT = 400; // nodes; above it, the depth-first order is kept
export const MAX_LABEL_CHARS = 32; // longer labels are shortened in the drawing (not in data-label)

/** A text shortened to `max` characters, with an ellipsis in the middle. */
export function shorten(text, max = MAX_LABEL_CHARS) {
  const t = String(text ?? "");
  if (t.length <= max) return t;
  const head = Math.ceil((max - 1) * 0.6);
  return `${t.slice(0, head)}…${t.slice(t.length - (max - 1 - head))}`;
}

/** A drawn node's box size, from its (shortened) texts. */
export function nodeSize(node) {
  const chars = Math.max(shorten(node.label).length, shorten(node.sub).length * 0.85);
  return { width: Math.max(56, Math.ceil(chars * CHAR_WIDTH) + 24), height: NODE_HEIGHT };
}

/** What dagre is given: node boxes and edges, in the view's order (tested on its own). */
export function layoutInput(graph) {
  return {
    nodes: graph.nodes.map((node) => ({ id: node.id, ...nodeSize(node) })),
    edges: graph.edges.map((edge) => ({ v: edge.from, w: edge.to })),
  };
}

/** dagre's longest-path ranking, iteratively (from the sinks up, in reverse topological order),
 * then each sink moved up under its lowest parent. */
export function longestPathRanks(g) {
  const waiting = new Map();
  const ready = [];
  for (const v of g.nodes()) {
    const out = g.outEdges(v).length;
    waiting.set(v, out);
    if (out === 0) {
      g.node(v).rank = 0;
      ready.push(v);
    }
  }
  while (ready.length) {
    const w = ready.pop();
    const rankW = g.node(w).rank;
    for (const e of g.inEdges(w)) {
      const label = g.node(e.v);
      const rank = rankW - g.edge(e).minlen;
      if (label.rank === undefined || rank < label.rank) label.rank = rank;
      const left = waiting.get(e.v) - 1;
      waiting.set(e.v, left);
      if (left === 0) ready.push(e.v);
    }
  }
  for (const v of g.nodes()) if (g.node(v).rank === undefined) g.node(v).rank = 0; // a cycle
  // Longest path puts every sink on the bottom rank: each leaf's AccumulateGrad would hang at
  // the foot of the graph on an edge hundreds of ranks long (one dummy node per rank, and the
  // layout takes seconds). A sink has nothing below it, so it moves up under its lowest parent.
  for (const v of g.nodes()) {
    if (g.outEdges(v).length) continue;
    const into = g.inEdges(v);
    if (!into.length) continue;
    let rank = -Infinity;
    for (const e of into) rank = Math.max(rank, g.node(e.v).rank + g.edge(e).minlen);
    g.node(v).rank = rank;
  }
}

/** dagre's initial order (depth-first from the top rank, successors in order), iteratively. */
export function depthFirstOrder(g) {
  const layers = [];
  const seen = new Set();
  const starts = g.nodes().filter((v) => !g.children(v).length);
  starts.sort((a, b) => g.node(a).rank - g.node(b).rank);
  for (const start of starts) {
    const stack = [start];
    while (stack.length) {
      const v = stack.pop();
      if (seen.has(v)) continue;
      seen.add(v);
      const rank = g.node(v).rank;
      if (!layers[rank]) layers[rank] = [];
      layers[rank].push(v);
      const next = g.successors(v) || [];
      for (let i = next.length - 1; i >= 0; i--) if (!seen.has(next[i])) stack.push(next[i]);
    }
  }
  for (const layer of layers) if (layer) layer.forEach((v, i) => (g.node(v).order = i));
}

/** Lay out a drawn graph: positions (centres) and edge polylines, with the overall size. */
export function layout(graph) {
  const input = layoutInput(graph);
  const g = new dagre.graphlib.Graph();
  g.setGraph({
    rankdir: "TB",
    ranker: longestPathRanks,
    acyclicer: "greedy",
    nodesep: 24,
    ranksep: 34,
    edgesep: 8,
    marginx: 16,
    marginy: 16,
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of input.nodes) g.setNode(node.id, { width: node.width, height: node.height });
  for (const edge of input.edges) g.setEdge(edge.v, edge.w);
  const full = input.nodes.length <= FULL_ORDERING_LIMIT;
  dagre.layout(g, full ? {} : { customOrder: (graph) => depthFirstOrder(graph) });
  const positions = new Map();
  for (const node of input.nodes) {
    const { x, y, width, height } = g.node(node.id);
    positions.set(node.id, { x, y, width, height });
  }
  const edges = graph.edges.map((edge) => ({
    ...edge,
    points: (g.edge(edge.from, edge.to) || { points: [] }).points,
  }));
  const { width = 0, height = 0 } = g.graph();
  return { positions, edges, width, height };
}
