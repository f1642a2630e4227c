// Where each drawn node goes, top to bottom: dagre up to DAGRE_LIMIT drawn nodes (module groups
// need its clusters), our own linear layered layout (layered.js) above it.
//
// Ranks come from rankLayers (layered.js): each node right below its lowest parent, and the
// nodes that only feed one consumer (a Linear's TBackward0 -> AccumulateGrad) right above it, so
// no edge runs down the whole graph. dagre is handed those ranks as its ranker; small graphs get
// its crossing minimisation. js/README.md has the measurements behind these choices.

import dagre from "@dagrejs/dagre";
import { inGroup } from "./groups.js";
import { layeredLayout, rankLayers } from "./layered.js";
import { nodeSize } from "./labels.js";

export const FULL_ORDERING_LIMIT = 400; // nodes; above it, the depth-first order is kept
export const CLUSTER_LIMIT = 80; // nodes; above it, group boxes are bounding boxes (see layout)
export const DAGRE_LIMIT = 80; // nodes; above it, our own layered layout (layered.js) instead of dagre
export { CHAR_WIDTH, NODE_HEIGHT, nodeSize, shorten } from "./labels.js"; // box sizes: labels.js

/** What dagre is given: node boxes and edges, in the view's order (tested on its own). */
export function layoutInput(graph) {
  return {
    nodes: graph.nodes.map((node) => ({ id: node.id, ...nodeSize(node) })),
    edges: graph.edges.map((edge) => ({ v: edge.from, w: edge.to })),
  };
}

/** dagre's ranker: the real nodes ranked by `rankLayers` (each node near its parents, see
 * layered.js), then, with module groups laid out as dagre clusters, the nodes dagre adds for
 * nesting (its root, each cluster's top and bottom border), as tight around the real nodes as
 * their edges allow. Nothing here is recursive (dagre's own longest path overflows the stack
 * on deep graphs). */
export function longestPathRanks(g) {
  const isReal = (v) => !g.node(v).dummy;
  const real = g.nodes().filter(isReal);
  const indexOf = new Map(real.map((v, i) => [v, i]));
  const from = [];
  const to = [];
  const minlen = [];
  for (const e of g.edges()) {
    if (!indexOf.has(e.v) || !indexOf.has(e.w)) continue;
    from.push(indexOf.get(e.v));
    to.push(indexOf.get(e.w));
    minlen.push(g.edge(e).minlen ?? 1);
  }
  const ranks = rankLayers(real.length, from, to, minlen);
  real.forEach((v, i) => (g.node(v).rank = ranks[i]));
  rankNestingNodes(g, isReal);
}

/** Rank dagre's nesting nodes once the real nodes have ranks: the root and each cluster's top
 * border go as low as their edges down allow (right above what they hold), each bottom border
 * as high as its edges up allow (right below). Inner clusters are placed before outer ones. */
function rankNestingNodes(g, isReal) {
  let pending = g.nodes().filter((v) => !isReal(v));
  while (pending.length) {
    const next = [];
    for (const v of pending) {
      const down = g.outEdges(v);
      const up = g.inEdges(v);
      if (down.length && down.every((e) => g.node(e.w).rank !== undefined)) {
        let rank = Infinity;
        for (const e of down) rank = Math.min(rank, g.node(e.w).rank - g.edge(e).minlen);
        g.node(v).rank = rank;
      } else if (up.length && up.every((e) => g.node(e.v).rank !== undefined)) {
        let rank = -Infinity;
        for (const e of up) rank = Math.max(rank, g.node(e.v).rank + g.edge(e).minlen);
        g.node(v).rank = rank;
      } else if (!down.length && !up.length) {
        g.node(v).rank = 0;
      } else {
        next.push(v);
      }
    }
    if (next.length === pending.length) throw new Error("nesting nodes that cannot be ranked");
    pending = next;
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

/** The clusters to lay out: each expanded group that has drawn members, with its parent
 * cluster, and the cluster each drawn node sits in directly. */
export function clustersOf(graph, expanded) {
  const open = new Set(expanded);
  const enclosing = (path) => {
    // the nearest open group that is `path` or contains it (a path need not be a group itself)
    for (let p = path; p; p = p.includes(".") ? p.slice(0, p.lastIndexOf(".")) : null) {
      if (open.has(p)) return p;
    }
    return null;
  };
  const parentOf = new Map(); // cluster path -> parent cluster path (or null)
  const clusterOfNode = new Map(); // node id -> cluster path
  for (const node of graph.nodes) {
    let path = enclosing(node.group);
    if (!path) continue;
    clusterOfNode.set(node.id, path);
    while (path && !parentOf.has(path)) {
      const parent = path.includes(".") ? enclosing(path.slice(0, path.lastIndexOf("."))) : null;
      parentOf.set(path, parent);
      path = parent;
    }
  }
  return { parentOf, clusterOfNode };
}

const CLUSTER_PREFIX = "cluster:";
const TITLE_SPACE = 14; // px above a group box's first row, for its title

/** Lay out a drawn graph: positions (centres), edge polylines, the boxes of the expanded
 * groups (`expanded`, group paths) and the overall size.
 *
 * Up to CLUSTER_LIMIT nodes the groups are dagre clusters: dagre keeps each group's members
 * together, out of the other nodes' way, and gives its box. Clusters make dagre's ordering much
 * slower as a graph grows (js/README.md), so a larger graph is laid out flat, and its boxes are
 * the bounding boxes of their members, which other nodes may cross. */
export function layout(graph, expanded = []) {
  const input = layoutInput(graph);
  if (input.nodes.length > DAGRE_LIMIT) {
    // large: our own layered layout, linear in the graph (layered.js); boxes bound their members
    const laid = layeredLayout(input);
    const edges = graph.edges.map((edge, i) => ({ ...edge, points: laid.points[i] }));
    const groups = boundingBoxes(graph, laid.positions, expanded);
    return { positions: laid.positions, edges, groups, width: laid.width, height: laid.height };
  }
  const full = input.nodes.length <= FULL_ORDERING_LIMIT;
  const clustered = input.nodes.length <= CLUSTER_LIMIT;
  const { parentOf, clusterOfNode } = clustered ? clustersOf(graph, expanded) : { parentOf: new Map(), clusterOfNode: new Map() };
  const g = new dagre.graphlib.Graph({ compound: parentOf.size > 0 });
  g.setGraph({
    rankdir: "TB",
    ranker: longestPathRanks,
    acyclicer: "greedy",
    // compact enough that a small model (a 3-layer MLP's 10 nodes) is read whole at 1024x768
    nodesep: 16,
    ranksep: 22,
    edgesep: 8,
    marginx: 8,
    marginy: 16 + (parentOf.size ? TITLE_SPACE : 0),
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of input.nodes) g.setNode(node.id, { width: node.width, height: node.height });
  for (const [path, parent] of parentOf) {
    g.setNode(CLUSTER_PREFIX + path, {});
    if (parent) g.setParent(CLUSTER_PREFIX + path, CLUSTER_PREFIX + parent);
  }
  for (const [id, path] of clusterOfNode) g.setParent(id, CLUSTER_PREFIX + path);
  for (const edge of input.edges) g.setEdge(edge.v, edge.w);
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
  const groups = clustered ? clusterBoxes(g, parentOf, graph, positions) : boundingBoxes(graph, positions, expanded);
  const { width = 0, height = 0 } = g.graph();
  return { positions, edges, groups, width, height };
}

/** Group boxes from dagre's clusters, title space added above. dagre sizes a cluster by its
 * borders on its last rank, which in a tangled graph may leave a member outside: the box also
 * covers every member. */
function clusterBoxes(g, parentOf, graph, positions) {
  const members = new Map(boundingBoxes(graph, positions, parentOf.keys(), 0).map((b) => [b.path, b]));
  return [...parentOf.keys()].map((path) => {
    const { x, y, width, height } = g.node(CLUSTER_PREFIX + path);
    const inner = members.get(path);
    const x0 = Math.min(x - width / 2, inner.x);
    const y0 = Math.min(y - height / 2 - TITLE_SPACE, inner.y);
    const x1 = Math.max(x + width / 2, inner.x + inner.width);
    const y1 = Math.max(y + height / 2, inner.y + inner.height);
    return { path, x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
  });
}

/** Group boxes as the bounding boxes of their drawn members, padded (more for outer groups),
 * title space above; one per group that has drawn members. Linear: each node extends the boxes
 * of its group and of that group's ancestors among `paths`. */
function boundingBoxes(graph, positions, paths, padding = null) {
  const extent = new Map([...paths].map((path) => [path, null]));
  for (const node of graph.nodes) {
    if (!node.group) continue;
    const b = positions.get(node.id);
    for (let p = node.group; p; p = p.includes(".") ? p.slice(0, p.lastIndexOf(".")) : null) {
      if (!extent.has(p)) continue;
      const e = extent.get(p);
      if (!e) extent.set(p, { x0: b.x - b.width / 2, y0: b.y - b.height / 2, x1: b.x + b.width / 2, y1: b.y + b.height / 2 });
      else {
        e.x0 = Math.min(e.x0, b.x - b.width / 2);
        e.y0 = Math.min(e.y0, b.y - b.height / 2);
        e.x1 = Math.max(e.x1, b.x + b.width / 2);
        e.y1 = Math.max(e.y1, b.y + b.height / 2);
      }
    }
  }
  // a box whose open groups nest `k` deep inside it gets k more title rows on top, so that
  // nested boxes starting on the same node do not print their titles over each other
  const depth = (path) => path.split(".").length;
  const nested = new Map();
  for (const [path, e] of extent) {
    if (!e) continue;
    for (let p = path; p.includes("."); ) {
      p = p.slice(0, p.lastIndexOf("."));
      if (extent.get(p)) nested.set(p, Math.max(nested.get(p) || 0, depth(path) - depth(p)));
    }
  }
  const boxes = [];
  for (const [path, e] of extent) {
    if (!e) continue;
    const pad = padding ?? 10 + Math.max(0, 4 - depth(path)) * 2;
    const title = TITLE_SPACE * (1 + (padding === null ? nested.get(path) || 0 : 0));
    boxes.push({ path, x: e.x0 - pad, y: e.y0 - pad - title, width: e.x1 - e.x0 + 2 * pad, height: e.y1 - e.y0 + 2 * pad + title });
  }
  return boxes;
}
