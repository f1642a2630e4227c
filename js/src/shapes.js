// "hide shape-only nodes": views, reshapes, expands, clones, transposes, permutes, (un)squeezes
// move or copy numbers without computing anything, and in a transformer block they bury the few
// nodes that do (q.k^T -> softmax -> .v). Hiding them joins their edges: whatever pointed into a
// hidden node now points to whatever the hidden node pointed to.

/** grad_fn classes of shape-only ops (PyTorch's names; the trailing digit is the overload). */
export const SHAPE_ONLY_NODE = /^(View|UnsafeView|Reshape|ReshapeAlias|Expand|Clone|Transpose|T|Permute|Unsqueeze|Squeeze|Alias)Backward\d*$/;

/** Forward ops that only change shape or copy, for ops that made no grad_fn (no grad needed). */
export const SHAPE_ONLY_OPS = new Set([
  "view", "view_as", "reshape", "reshape_as", "_unsafe_view", "expand", "expand_as", "clone", "contiguous",
  "transpose", "t", "T", "mT", "permute", "unsqueeze", "squeeze", "flatten", "unflatten", "swapaxes", "swapdims", "movedim", "alias",
]);

/** Whether a drawn node (views.js) is shape-only: a backward node by its class, a forward op by
 * the grad_fn it made (its `sub`) or, without one, by its name. */
export function isShapeOnly(node) {
  if (node.kind === "node") return SHAPE_ONLY_NODE.test(node.label);
  if (node.kind === "op") return node.sub && node.sub !== "no grad_fn" ? SHAPE_ONLY_NODE.test(node.sub) : SHAPE_ONLY_OPS.has(node.label);
  return false;
}

/** The nodes to hide in a view: shape-only nodes; in the forward view also their output
 * tensors, unless a tensor is a leaf or an output, or another op wrote it too. A shape op whose
 * output must stay is kept as well, so tensors stay joined through ops. */
export function shapeOnlyIds(graph) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const outputsOf = new Map();
  const producers = new Map();
  for (const edge of graph.edges) {
    const from = byId.get(edge.from);
    const to = byId.get(edge.to);
    if (from && to && from.kind === "op" && to.kind === "tensor") {
      if (!outputsOf.has(from.id)) outputsOf.set(from.id, []);
      outputsOf.get(from.id).push(to);
      producers.set(to.id, (producers.get(to.id) || 0) + 1);
    }
  }
  const hidden = new Set();
  for (const node of graph.nodes) {
    if (!isShapeOnly(node)) continue;
    if (node.kind === "op") {
      const outputs = outputsOf.get(node.id) || [];
      const keepsOne = outputs.some((t) => /\b(leaf|output)\b/.test(t.role || "") || producers.get(t.id) > 1);
      if (keepsOne) continue;
      for (const t of outputs) hidden.add(t.id);
    }
    hidden.add(node.id);
  }
  return hidden;
}

/** The graph without the `hidden` nodes, their edges joined: an edge u -> v for every path from
 * a kept u to a kept v whose inner nodes are all hidden (the first edge's slot is kept). */
export function withoutNodes(graph, hidden) {
  if (!hidden.size) return graph;
  const out = new Map();
  for (const edge of graph.edges) {
    if (!out.has(edge.from)) out.set(edge.from, []);
    out.get(edge.from).push(edge);
  }
  const edges = [];
  const seenEdge = new Set();
  for (const edge of graph.edges) {
    if (hidden.has(edge.from)) continue;
    // walk through hidden nodes (without recursion: chains of views can be long)
    const stack = [edge.to];
    const visited = new Set();
    while (stack.length) {
      const v = stack.pop();
      if (!hidden.has(v)) {
        const key = `${edge.from}>${v}`;
        if (!seenEdge.has(key)) {
          seenEdge.add(key);
          edges.push({ ...edge, to: v });
        }
        continue;
      }
      if (visited.has(v)) continue;
      visited.add(v);
      for (const next of out.get(v) || []) stack.push(next.to);
    }
  }
  return { ...graph, nodes: graph.nodes.filter((n) => !hidden.has(n.id)), edges, hidden };
}

/** The view with its shape-only nodes hidden. */
export function hideShapeOnly(graph) {
  return withoutNodes(graph, shapeOnlyIds(graph));
}
